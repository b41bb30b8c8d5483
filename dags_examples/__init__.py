"""paimonflow.dags_examples (built by later issues)."""
