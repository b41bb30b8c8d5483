"""Which Paimon table, and which part of it, an asset's output or input is: Dagster's database
IO manager conventions, mapped onto Paimon.

* Table: the asset key's last part. Database: the ``schema`` definition metadata, else the IO
  manager's ``database``, else the key's part before the last, else ``default``. So
  ``sales/orders`` and ``returns/orders`` are ``sales.orders`` and ``returns.orders``. An op
  output (no asset key) names its table with a ``table`` metadata value.
* Partitions: ``partition_expr`` metadata names the column holding the partition (a mapping
  dimension -> column for multi-partitions). Static and dynamic keys select ``column IN keys``;
  a time window selects ``start <= column < end`` on a date or timestamp column, and its keys on
  a string column. The core turns that predicate into the partitions an overwrite replaces and a
  read prunes to.
* ``columns`` input metadata: the columns to load (projection pushed into the read).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import dagster as dg
import pyarrow as pa

from paimonflow.core.errors import InvalidArgumentError
from paimonflow.core.predicate import Predicate, col

DEFAULT_DATABASE = "default"


class SliceError(InvalidArgumentError):
    """An asset's metadata cannot be mapped to a table slice (one line, shown as the step's failure)."""


@dataclass(frozen=True)
class Dimension:
    """One partition dimension: its column, the keys selected, the time window (if any) and the
    Dagster partitions definition the keys belong to."""

    column: str
    keys: tuple[str, ...]
    window: tuple[datetime, datetime] | None
    partitions_def: Any


@dataclass(frozen=True)
class TableSlice:
    database: str
    table: str
    dimensions: tuple[Dimension, ...] = ()
    columns: tuple[str, ...] | None = None

    @property
    def identifier(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def partitioned(self) -> bool:
        return bool(self.dimensions)

    def predicate(self, arrow_schema: pa.Schema) -> Predicate | None:
        """The rows of this slice as a predicate on the table's columns (None: the whole table)."""
        parts = [_dimension_predicate(d, arrow_schema) for d in self.dimensions]
        if not parts:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = out & p
        return out

    def describe(self) -> str:
        """The slice in one short token (for commit identities and messages)."""
        if not self.dimensions:
            return "all"
        return ",".join(f"{d.column}={d.keys[0]}" + (f"..{d.keys[-1]}" if len(d.keys) > 1 else "")
                        for d in self.dimensions)


def table_slice(context: Any, output_context: Any, *, database: str | None) -> TableSlice:
    """The slice for an output (``context`` is the OutputContext) or an input (the InputContext,
    with the upstream output's context for the definition metadata)."""
    meta = dict(getattr(output_context, "definition_metadata", None) or {})
    if context.has_asset_key:
        path = context.asset_key.path
        table = path[-1]
        db = meta.get("schema") or database or (path[-2] if len(path) > 1 else DEFAULT_DATABASE)
        dimensions = _dimensions(context, meta) if context.has_asset_partitions else ()
    else:
        if not meta.get("table"):
            raise SliceError(f"op output {output_context.name!r} has no asset key: give it a 'table' metadata value "
                             f"naming its Paimon table")
        table, dimensions = str(meta["table"]), ()
        db = meta.get("schema") or database or DEFAULT_DATABASE
    columns = (getattr(context, "definition_metadata", None) or {}).get("columns")
    return TableSlice(database=str(db), table=str(table), dimensions=dimensions,
                      columns=tuple(columns) if columns else None)


def _dimensions(context: Any, meta: dict) -> tuple[Dimension, ...]:
    expr = meta.get("partition_expr")
    if not expr:
        raise SliceError(f"asset {context.asset_key.to_user_string()} is partitioned but has no 'partition_expr' "
                         f"metadata naming the column that holds the partition, e.g. "
                         f"metadata={{'partition_expr': 'dt'}}")
    definition = context.asset_partitions_def
    keys = list(context.asset_partition_keys)
    if isinstance(definition, dg.MultiPartitionsDefinition):
        if not isinstance(expr, dict):
            raise SliceError(f"asset {context.asset_key.to_user_string()} has multi-partitions: 'partition_expr' must "
                             f"map each dimension ({', '.join(d.name for d in definition.partitions_defs)}) to a column")
        out = []
        for dim in definition.partitions_defs:
            if dim.name not in expr:
                raise SliceError(f"'partition_expr' of asset {context.asset_key.to_user_string()} names no column for "
                                 f"the partition dimension {dim.name!r}")
            values = tuple(sorted({k.keys_by_dimension[dim.name] for k in keys}))
            out.append(Dimension(str(expr[dim.name]), values, None, dim.partitions_def))
        return tuple(out)
    if not isinstance(expr, str):
        raise SliceError(f"'partition_expr' of asset {context.asset_key.to_user_string()} must be a column name")
    window = None
    if isinstance(definition, dg.TimeWindowPartitionsDefinition) and keys:
        w = context.asset_partitions_time_window
        window = (w.start, w.end)
    return (Dimension(expr, tuple(keys), window, definition),)


def _dimension_predicate(d: Dimension, arrow_schema: pa.Schema) -> Predicate:
    index = arrow_schema.get_field_index(d.column)
    if index < 0:
        raise SliceError(f"partition_expr column {d.column!r} is not a column of the table "
                         f"({', '.join(arrow_schema.names)})")
    arrow_type = arrow_schema.field(index).type
    temporal = pa.types.is_date(arrow_type) or pa.types.is_timestamp(arrow_type)
    if d.window is not None and temporal:
        start, end = (_temporal(t, arrow_type) for t in d.window)
        return (col(d.column) >= start) & (col(d.column) < end)
    return col(d.column).isin([_key_value(k, arrow_type, d) for k in d.keys])


def _temporal(moment: datetime, arrow_type: pa.DataType) -> Any:
    if pa.types.is_date(arrow_type):
        return moment.date()
    if arrow_type.tz is None:  # a naive timestamp holds the wall clock of the partitions' time zone
        return moment.replace(tzinfo=None)
    return moment


def _key_value(key: str, arrow_type: pa.DataType, d: Dimension) -> Any:
    """A partition key as a value of the column's type."""
    try:
        if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            return key
        if isinstance(d.partitions_def, dg.TimeWindowPartitionsDefinition) and \
                (pa.types.is_date(arrow_type) or pa.types.is_timestamp(arrow_type)):
            return _temporal(d.partitions_def.time_window_for_partition_key(key).start, arrow_type)
        if pa.types.is_date(arrow_type):
            return date.fromisoformat(key)
        if pa.types.is_timestamp(arrow_type):
            return datetime.fromisoformat(key)
        return pa.scalar(key).cast(arrow_type).as_py()
    except (ValueError, TypeError, pa.ArrowInvalid) as err:
        raise SliceError(f"partition key {key!r} is not a value of column {d.column!r} ({arrow_type}): {err}") from None


__all__ = ["DEFAULT_DATABASE", "Dimension", "SliceError", "TableSlice", "table_slice"]
