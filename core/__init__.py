"""paimonflow.core: a pure-Python engine for the Apache Paimon table format.

    >>> from paimonflow.core import Catalog, col
    >>> catalog = Catalog("/data/warehouse")
    >>> orders = catalog.get_table("shop.orders")
    >>> orders.read(filter=col("dt") == "2026-11-21", columns=["id", "amount"])

Layers, lowest first (each imports only those below it; docs/architecture.md):
``errors``/``names``/``predicate``/``faults``, then ``fs`` and ``data``, ``merge``, ``options``,
``meta``, ``read`` and ``write``, ``maintenance``, ``compact``, and the public face ``table``,
``catalog``, ``cli``.
"""

from importlib import import_module

_EXPORTS = {
    "Catalog": "catalog",
    "Table": "table",
    "CommitResult": "write.commit",
    "PaimonflowError": "errors",
    "UnsupportedFeatureError": "errors",
    "Operation": "meta.capabilities",
    "TableCapabilities": "meta.capabilities",
    "col": "predicate",
    "TableScan": "read.lazy_scan",
    "Observation": "read.watch",
    "WatchResult": "read.watch",
    "watch": "read.watch",
    # schema evolution: Table.alter([...]) (docs/schema-evolution.md)
    "AddColumn": "meta.schema_changes",
    "DropColumn": "meta.schema_changes",
    "RenameColumn": "meta.schema_changes",
    "UpdateColumnType": "meta.schema_changes",
    "UpdateColumnNullability": "meta.schema_changes",
    "UpdateColumnComment": "meta.schema_changes",
    "UpdateColumnPosition": "meta.schema_changes",
    "ColumnPosition": "meta.schema_changes",
    "UpdateComment": "meta.schema_changes",
    "SetOption": "meta.schema_changes",
    "RemoveOption": "meta.schema_changes",
    "SchemaChange": "meta.schema_changes",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    # Lazy, so that importing one submodule does not import the whole engine.
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
