"""``paimonflow``: create, describe, write and read Paimon tables from a shell (``verbs.py``),
with one error contract (``contract.py``) and one way of printing (``output.py``)."""

from __future__ import annotations

from . import lifecycle, maintain  # noqa: F401  (their verbs register on verbs.app)
from .verbs import app, main

__all__ = ["app", "main"]
