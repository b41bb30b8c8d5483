"""paimonflow.core: a pure-Python engine for the Apache Paimon table format."""
