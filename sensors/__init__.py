"""paimonflow.sensors (built by later issues)."""
