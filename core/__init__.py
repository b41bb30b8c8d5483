"""paimonflow.core: a pure-Python engine for the Apache Paimon table format.

    >>> from paimonflow.core import Catalog, col
    >>> catalog = Catalog("/data/warehouse")
    >>> orders = catalog.get_table("shop.orders")
    >>> orders.read(filter=col("dt") == "2026-11-21", columns=["id", "amount"])
"""

from importlib import import_module

_EXPORTS = {
    "Catalog": "catalog",
    "Table": "table",
    "CommitResult": "commit",
    "PaimonflowError": "errors",
    "col": "predicate",
    "Observation": "watch",
    "WatchResult": "watch",
    "watch": "watch",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    # Lazy, so that importing one submodule does not import the whole engine.
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
