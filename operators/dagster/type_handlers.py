"""What the Paimon IO manager stores and loads: pyarrow, pandas and (when installed) polars.

Each handler converts between its frame type and a pyarrow Table, the one form the core writes
and reads; projection and partition filters are applied by the core's read before conversion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class TypeHandler:
    """A frame type the IO manager handles: ``to_arrow`` for outputs, ``from_arrow`` for inputs."""

    name: str
    types: tuple[type, ...]

    def to_arrow(self, obj: Any) -> pa.Table:
        raise NotImplementedError

    def from_arrow(self, table: pa.Table, wanted: type) -> Any:
        raise NotImplementedError


class ArrowHandler(TypeHandler):
    def to_arrow(self, obj: Any) -> pa.Table:
        return pa.Table.from_batches([obj]) if isinstance(obj, pa.RecordBatch) else obj

    def from_arrow(self, table: pa.Table, wanted: type) -> Any:
        return table


class PandasHandler(TypeHandler):
    def to_arrow(self, obj: Any) -> pa.Table:
        return pa.Table.from_pandas(obj, preserve_index=False)

    def from_arrow(self, table: pa.Table, wanted: type) -> Any:
        return table.to_pandas()


class PolarsHandler(TypeHandler):
    def to_arrow(self, obj: Any) -> pa.Table:
        import polars as pl

        frame = obj.collect() if isinstance(obj, pl.LazyFrame) else obj
        return frame.to_arrow()

    def from_arrow(self, table: pa.Table, wanted: type) -> Any:
        import polars as pl

        frame = pl.DataFrame(table)
        return frame.lazy() if issubclass(wanted, pl.LazyFrame) else frame


def default_handlers() -> list[TypeHandler]:
    """pyarrow always; pandas and polars when they can be imported."""
    handlers: list[TypeHandler] = [ArrowHandler("pyarrow", (pa.Table, pa.RecordBatch))]
    try:
        import pandas as pd

        handlers.append(PandasHandler("pandas", (pd.DataFrame,)))
    except ImportError:
        pass
    try:
        import polars as pl

        handlers.append(PolarsHandler("polars", (pl.DataFrame, pl.LazyFrame)))
    except ImportError:
        pass
    return handlers


def handler_for(handlers: list[TypeHandler], wanted: type) -> TypeHandler | None:
    for handler in handlers:
        if isinstance(wanted, type) and issubclass(wanted, handler.types):
            return handler
    return None


__all__ = ["ArrowHandler", "PandasHandler", "PolarsHandler", "TypeHandler", "default_handlers", "handler_for"]
