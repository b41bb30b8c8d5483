"""paimonflow.operators (built by later issues)."""
