"""``python -m paimonflow.jobs <job> ...``."""

from .cli import main

main()
