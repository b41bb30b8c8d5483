"""paimonflow.jobs (built by later issues)."""
