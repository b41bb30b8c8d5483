"""paimonflow.plugins (built by later issues)."""
