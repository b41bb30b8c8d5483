"""Rows in: the accepted inputs (Arrow tables, batches and readers, pandas and polars frames) turned
into one Arrow table of the table's schema, by the lossless conversions of
:mod:`paimonflow.core.data.conversion`, and their row kinds."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..data import data_file as df
from ..data.conversion import convert_columns
from ..data.types import DataType
from ..errors import DataError, SchemaError

KIND_CODES = {name: code for code, name in enumerate(df.ROW_KIND_NAMES)}

#: rows a streamed write routes at once: routing costs per (partition, bucket) group and per call,
#: so small batches (Spark hands a task 10,000-row batches) multiply it (measured: 80 groups x 134
#: batches took half of a 1.25 M-row Spark writer task; in chunks of this size, a sixth)
CHUNK_ROWS = 1 << 18


def chunks(batches: Iterable[pa.RecordBatch | pa.Table], max_bytes: int, rows: int = CHUNK_ROWS) -> Iterator[pa.Table]:
    """``batches`` (of one schema) regrouped, zero-copy, into tables of ``rows`` rows or
    ``max_bytes`` bytes, whichever comes first (the last may be smaller; a batch larger than
    either is a chunk of its own)."""
    pending: list[pa.Table] = []
    count = size = 0
    for batch in batches:
        pending.append(batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch]))
        count += batch.num_rows
        size += batch.nbytes
        if count >= rows or size >= max_bytes:
            yield pa.concat_tables(pending)
            pending, count, size = [], 0, 0
    if pending:
        yield pa.concat_tables(pending)


ACCEPTED_INPUTS = ("a pyarrow Table, RecordBatch or RecordBatchReader, an iterable of RecordBatches, "
                   "a pandas DataFrame or a polars DataFrame or LazyFrame")


def not_accepted(data: object) -> SchemaError:
    """The error for a write of something that is none of :data:`ACCEPTED_INPUTS`."""
    return SchemaError(f"write() takes {ACCEPTED_INPUTS}, not {type(data).__name__}")


def dataframe_to_arrow(data: object) -> pa.Table | None:
    """A pandas or polars DataFrame (or polars LazyFrame, collected) as a pyarrow Table, its
    index left out; None for anything else. Recognized by the module of its class, so neither
    library is imported unless ``data`` comes from it. Conversion problems (a pandas object
    column of mixed values...) raise :class:`SchemaError`."""
    module = type(data).__module__.split(".", 1)[0]
    name = type(data).__name__
    try:
        if module == "pandas" and name == "DataFrame":
            return pa.Table.from_pandas(data, preserve_index=False)
        if module == "polars" and name in ("DataFrame", "LazyFrame"):
            frame: Any = data
            return (frame.collect() if name == "LazyFrame" else frame).to_arrow()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(f"the {module} DataFrame cannot be converted to Arrow: {exc}") from None
    return None


def to_arrow_table(data: object) -> pa.Table:
    """Any of :data:`ACCEPTED_INPUTS` as one pyarrow Table (batches read whole)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    frame = dataframe_to_arrow(data)
    if frame is not None:
        return frame
    if isinstance(data, Mapping | str | bytes):
        raise not_accepted(data)
    try:
        batches = list(data)  # type: ignore[call-overload]
    except TypeError:
        raise not_accepted(data) from None
    if not batches or not all(isinstance(b, pa.RecordBatch) for b in batches):
        raise SchemaError(f"write() takes {ACCEPTED_INPUTS}")
    try:
        return pa.Table.from_batches(batches)
    except pa.ArrowInvalid as exc:  # batches of different schemas; the message names the columns
        raise SchemaError(f"the record batches do not share one schema: {exc}") from None


def conform(table: pa.Table, schema: pa.Schema, key_columns: Sequence[str] = (), *,
            table_types: Mapping[str, DataType] | None = None) -> pa.Table:
    """``table``'s columns in ``schema``'s order, each converted to its column's type when the
    conversion is lossless (:mod:`paimonflow.core.data.conversion`: the accepted conversions,
    values checked where a type may not hold them all). ``table_types`` (the table's Paimon
    types by column) names the types in errors.

    Raises one :class:`SchemaError` naming every column that is missing, unknown, duplicated, of
    a refused type or holding values that do not convert exactly, and :class:`DataError` for
    nulls in a NOT NULL column.
    """
    names = table.column_names
    if len(set(names)) != len(names):
        raise SchemaError(f"duplicate column names in the data: {sorted(n for n in set(names) if names.count(n) > 1)}")
    missing = [f.name for f in schema if f.name not in names]
    extra = [n for n in names if schema.get_field_index(n) < 0]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"unknown columns {extra}")
        raise SchemaError("data does not match the table schema: " + "; ".join(parts))
    converted = convert_columns({f.name: table.column(f.name) for f in schema}, schema, table_types)
    for target in schema:
        column = converted[target.name]
        if not target.nullable and column.null_count:
            role = "primary key column" if target.name in key_columns else "column"
            raise DataError(f"{role} {target.name!r} is NOT NULL but has {column.null_count} null value(s)")
    return pa.Table.from_arrays([converted[f.name] for f in schema], schema=schema)


def row_kinds_of(table: pa.Table, row_kinds: object, rowkind_field: str | None) -> np.ndarray:
    if row_kinds is not None and rowkind_field is not None:
        raise DataError("pass row kinds either through 'rowkind.field' or the row_kinds argument, not both")
    source = row_kinds
    if rowkind_field is not None:
        source = table.column(rowkind_field)
    if source is None:
        return np.zeros(table.num_rows, dtype=np.int8)
    if isinstance(source, str):
        if source not in KIND_CODES:
            raise DataError(f"unknown row kind {source!r}; expected one of {', '.join(df.ROW_KIND_NAMES)}")
        return np.full(table.num_rows, KIND_CODES[source], dtype=np.int8)
    arr = pa.chunked_array([source]) if isinstance(source, pa.Array) else source
    if not isinstance(arr, pa.ChunkedArray):
        arr = pa.chunked_array([pa.array(source)])
    if len(arr) != table.num_rows:
        raise DataError(f"row_kinds has {len(arr)} values for {table.num_rows} rows")
    if pa.types.is_integer(arr.type):
        codes = arr.to_numpy(zero_copy_only=False)
    else:
        lookup = pa.array(df.ROW_KIND_NAMES)
        codes_arr = pc.index_in(arr, value_set=lookup)
        if codes_arr.null_count:
            bad = pc.filter(arr, pc.is_null(codes_arr)).unique().to_pylist()[:5]
            where = f"column {rowkind_field!r}" if rowkind_field else "row_kinds"
            raise DataError(f"{where} holds unknown row kinds {bad}; expected one of {', '.join(df.ROW_KIND_NAMES)}")
        codes = codes_arr.to_numpy(zero_copy_only=False)
    codes = np.asarray(codes, dtype=np.int8)
    if codes.size and (codes.min() < 0 or codes.max() > 3):
        raise DataError("row kinds must be 0..3 (+I, -U, +U, -D)")
    return codes
