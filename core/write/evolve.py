"""A write that evolves the table's schema from its data (``Table.write(..., schema_mode="merge")``,
pyiceberg's ``union_by_name``, delta-rs' ``schema_mode="merge"``), and the Dagster IO manager's rule.

The rule, column by column of the data against the table:

* a column the table lacks is added (nullable; older rows read it as null), unless it would be a
  key column;
* a column whose values the table's type holds as they are (the same type, or one the table's type
  safely widens) is written as the table's type;
* a column whose type safely widens the table's (``INT`` → ``BIGINT``, ``FLOAT`` → ``DOUBLE``, a
  longer ``VARCHAR``...) widens the table's column, unless it is a key column;
* a nullable column of the table that the data lacks is written as null.

Anything else (a narrower or unrelated type, a key column to add or widen, a missing NOT NULL
column) is refused in one :class:`SchemaError` naming every such column, and nothing changes.
The data is checked against the evolved schema (types, nulls in NOT NULL columns) before the
schema change is committed, so a write refused for its values leaves no unused schema behind.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ..data.types import equals_ignoring_ids, from_arrow, holding_signed, is_safe_widening
from ..errors import SchemaError
from ..meta.schema import TableSchema
from ..meta.schema_changes import AddColumn, SchemaChange, UpdateColumnType, apply_changes

SCHEMA_MODES = ("strict", "merge")


def merge_changes(schema: TableSchema, data: pa.Schema, *, identifier: str = "the table",
                  what: str = "data") -> list[SchemaChange]:
    """The schema changes that let ``schema`` take rows of ``data``'s schema by the rule above
    (empty when it already does); :class:`SchemaError` naming every column that cannot fit
    (``what`` names the rows in it: "data", the Dagster IO manager's "output")."""
    fields = {f.name: f for f in schema.fields}
    keys = {*schema.primary_keys, *schema.partition_keys}
    changes: list[SchemaChange] = []
    problems: list[str] = []
    for f in data:
        current = fields.get(f.name)
        if current is None:
            if f.name in keys:
                problems.append(f"new column {f.name!r} cannot be a key column")
            else:
                changes.append(AddColumn(f.name, holding_signed(f.type)))
            continue
        incoming = from_arrow(holding_signed(f.type), nullable=current.type.nullable)
        if equals_ignoring_ids(incoming, current.type) or is_safe_widening(incoming, current.type):
            continue  # stored as the table's type
        if f.name not in keys and is_safe_widening(current.type, incoming):
            changes.append(UpdateColumnType(f.name, holding_signed(f.type)))
        else:
            problems.append(f"column {f.name!r} is {current.type} in the table, {incoming} in the {what}")
    for name, f in fields.items():
        if name not in data.names and not f.type.nullable:
            problems.append(f"NOT NULL column {name!r} is missing from the {what}")
    if problems:
        raise SchemaError(f"{identifier}: the {what} does not fit the table: {'; '.join(problems)} (nothing written)")
    return changes


def merged_schema(schema: TableSchema, changes: Sequence[SchemaChange]) -> TableSchema:
    """The schema ``changes`` would make (nothing written)."""
    return apply_changes(schema, changes) if changes else schema


def with_missing_columns_as_null(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """``data`` with a null column for each (nullable) column of ``schema`` it lacks; ordering
    and safe casts are the write's (``core/write/conform.py``)."""
    for f in schema:
        if f.name not in data.schema.names:
            data = data.append_column(f, pa.nulls(data.num_rows, f.type))
    return data
