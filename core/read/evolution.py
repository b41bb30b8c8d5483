"""Reading data files written under an older schema: columns matched by field id, renamed, added
(null), dropped or widened to the current (or time-travelled) schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from ..data.types import (
    DataField,
    DataType,
    TypeRoot,
    to_arrow,
)
from ..data.variant import holds_variant, require_unshredded
from ..errors import (
    SchemaError,
)
from ..meta.schema import TableSchema
from ..meta.schema_changes import rename_columns_in_options

# -- reading data files written under an older schema ------------------------------------------


def index_mapping(read_fields: Sequence[DataField], data_fields: Sequence[DataField]) -> tuple[int, ...] | None:
    """For each read field, the index of the data field with the same id (-1 if the data file
    has none: the column was added later). None when the mapping is the identity."""
    position = {f.id: i for i, f in enumerate(data_fields)}
    mapping = tuple(position.get(f.id, -1) for f in read_fields)
    if len(read_fields) == len(data_fields) and mapping == tuple(range(len(read_fields))):
        return None
    return mapping


def current_names(data_schema: TableSchema, read_schema: TableSchema) -> dict[str, str | None]:
    """Each column name of ``data_schema`` -> its name in ``read_schema`` (None if dropped)."""
    now = {f.id: f.name for f in read_schema.fields}
    return {f.name: now.get(f.id) for f in data_schema.fields}


def schema_for_time_travel(snapshot_schema: TableSchema, current: TableSchema) -> TableSchema:
    """The schema a read of an older (or newer) snapshot uses, as in Paimon's time travel: the
    columns, keys and id of ``snapshot_schema`` (the schema the snapshot was committed under)
    with the table's current options (``current``). Options that name columns are mapped to the
    snapshot's column names through field ids (a column renamed since keeps its options), and
    options of columns the snapshot's schema lacks are left out."""
    if snapshot_schema.id == current.id:
        return current
    then = {f.id: f.name for f in snapshot_schema.fields}
    names = {f.name: then.get(f.id) for f in current.fields}
    return replace(snapshot_schema, options=rename_columns_in_options(current.options, names))


def file_columns(data_schema: TableSchema, read_schema: TableSchema,
                 columns: Sequence[str] | None = None) -> list[str]:
    """The column names to read from a file written under ``data_schema`` to produce
    ``columns`` (default: all) of ``read_schema``; columns added later are left out.

    Raises SchemaError for a column ``read_schema`` does not have.
    """
    by_id = {f.id: f.name for f in data_schema.fields}
    out = []
    for name in columns if columns is not None else read_schema.field_names:
        target = read_schema.field(name)
        if target is None:
            raise SchemaError(f"unknown column {name!r}; the table has {read_schema.field_names}")
        if target.id in by_id:
            out.append(by_id[target.id])
    return out


def evolve_table(table: pa.Table, data_schema: TableSchema, read_schema: TableSchema,
                 columns: Sequence[str] | None = None) -> pa.Table:
    """``columns`` (default: all) of ``read_schema`` from ``table``, read from a file written
    under ``data_schema`` (columns named as in ``data_schema``; extra columns are ignored).

    Columns are matched by field id: renamed columns take their new name, dropped columns are
    left out, columns added later (or missing from ``table``) are all null, widened types are cast
    (vectorized). ROW fields are matched by id too, at any depth. The result has exactly the
    fields of ``read_schema.arrow_schema()``. Raises SchemaError for an unknown column or data
    that cannot be cast.
    """
    wanted = list(columns) if columns is not None else read_schema.field_names
    target_schema = read_schema.arrow_schema()
    targets = {f.name: f for f in read_schema.fields}
    sources = {f.id: f for f in data_schema.fields}
    present = set(table.column_names)
    arrays, out_fields = [], []
    for name in wanted:
        target = targets.get(name)
        if target is None:
            raise SchemaError(f"unknown column {name!r}; the table has {read_schema.field_names}")
        out_field = target_schema.field(name)
        source = sources.get(target.id)
        if source is None or source.name not in present:
            column = pa.chunked_array([pa.nulls(table.num_rows, out_field.type)], out_field.type)
        else:
            if holds_variant(source.type):
                require_unshredded(name, source.type, table.schema.field(source.name).type)
            try:
                column = _evolve_column(table.column(source.name), source.type, target.type, out_field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise SchemaError(
                    f"column {name!r}: data written as {source.type} cannot be read as {target.type}: {exc}"
                ) from None
        arrays.append(column)
        out_fields.append(out_field)
    if not arrays:
        return pa.table({"_": pa.nulls(table.num_rows)}).drop_columns(["_"])
    return pa.Table.from_arrays(arrays, schema=pa.schema(out_fields))


def _evolve_column(column: pa.ChunkedArray, source: DataType, target: DataType,
                   arrow_type: pa.DataType) -> pa.ChunkedArray:
    if _needs_restructure(source, target):
        column = pa.chunked_array([_evolve_array(chunk, source, target) for chunk in column.chunks],
                                  to_arrow(target))
    return column if column.type == arrow_type else pc.cast(column, arrow_type)


def _needs_restructure(source: DataType, target: DataType) -> bool:
    """True if nested ROW fields were added, dropped, renamed or reordered between the two types."""
    if source.root is TypeRoot.ROW and target.root is TypeRoot.ROW:
        s_fields, t_fields = source.fields or (), target.fields or ()
        if [(f.id, f.name) for f in s_fields] != [(f.id, f.name) for f in t_fields]:
            return True
        return any(_needs_restructure(a.type, b.type) for a, b in zip(s_fields, t_fields, strict=True))
    if source.root is target.root and source.root in (TypeRoot.ARRAY, TypeRoot.MULTISET, TypeRoot.MAP):
        return any(_needs_restructure(a, b) for a, b in zip(source.children(), target.children(), strict=True))
    return False


def _evolve_array(array: pa.Array, source: DataType, target: DataType) -> pa.Array:
    """One array of ``source`` values as ``to_arrow(target)`` (ROW fields matched by id)."""
    target_type = to_arrow(target)
    mask = array.is_null() if array.null_count else None
    if source.root is TypeRoot.ROW and target.root is TypeRoot.ROW:
        children = {f.id: (f, child) for f, child in zip(source.fields or (), array.flatten(), strict=True)}
        arrays = []
        for f in target.fields or ():
            child_type = to_arrow(f.type)
            if f.id in children:
                source_field, child = children[f.id]
                child = _evolve_array(child, source_field.type, f.type)
            else:
                child = pa.nulls(len(array), child_type)
            arrays.append(child)
        return pa.StructArray.from_arrays(arrays, fields=list(target_type), mask=mask)
    if source.root is target.root and source.root in (TypeRoot.ARRAY, TypeRoot.MULTISET, TypeRoot.MAP):
        if len(array) == 0:
            return pa.array([], target_type)
        # Rebase a sliced array on its own values: Arrow cannot combine sliced offsets and a mask.
        offsets, start = array.offsets, array.offsets[0].as_py()
        children = array.values.slice(start, array.offsets[-1].as_py() - start)
        if start or array.offset or pa.types.is_large_list(array.type):
            offsets = pc.cast(pc.subtract(offsets, pa.scalar(start, offsets.type)), pa.int32())
        if source.root is TypeRoot.ARRAY:
            values = _evolve_array(children, source.element, target.element)  # type: ignore[arg-type]
            return pa.ListArray.from_arrays(offsets, values, type=target_type, mask=mask)
        keys, items = children.flatten()
        key_target = target.key if target.root is TypeRoot.MAP else target.element
        key_source = source.key if source.root is TypeRoot.MAP else source.element
        keys = _evolve_array(keys, key_source, key_target)  # type: ignore[arg-type]
        if source.root is TypeRoot.MAP:
            items = _evolve_array(items, source.value, target.value)  # type: ignore[arg-type]
        return pa.MapArray.from_arrays(offsets, keys, items, type=target_type, mask=mask)
    return array if array.type == target_type else pc.cast(array, target_type)
