"""Avro data files (``file.format=avro``) through fastavro.

Avro is a row format. Flat tables are written by the vectorized encoder of :mod:`.avro_encode`
(byte-identical to fastavro) and flat files read by the vectorized decoder of :mod:`.avro_decode`
(value for value what fastavro reads); nested ones go through Python rows (fastavro encodes and
decodes them), as does any file the decoder finds inconsistent, so errors are fastavro's. Everything around the row codec is columnar: temporal values travel as integers,
and maps are rebuilt from their key/value arrays.

The schema is the one Apache Paimon's ``AvroSchemaConverter`` derives (Java 0.9 to 2.x):

* the file schema is a nullable union ``["null", record]`` around a record named
  ``org.apache.paimon.avro.generated.record`` (Paimon's readers, Java and pypaimon, also accept a
  bare record, which paimonflow wrote before);
* a nullable field is ``["null", T]`` with a null default; a NOT NULL field is ``T``;
* nested records are named ``<parent record>_<field>``; array elements and string-keyed map
  values keep their parent's name;
* DECIMAL is ``bytes`` with the ``decimal`` logical type, DATE ``int``/``date``, TIME ``int``/
  ``time-millis`` (Paimon keeps milliseconds), TIMESTAMP(p) ``long``/``timestamp-millis`` (p <= 3)
  or ``timestamp-micros`` (p <= 6), TIMESTAMP_LTZ(p) the same with ``local-timestamp-*``;
  precisions above 6 cannot be stored (as in Paimon);
* MAP and MULTISET with CHAR/VARCHAR keys are Avro maps; with other keys an ``array`` (logical
  type ``map``) of records named after the column with fields ``key`` and ``value``.

The reader accepts all of the above in either form (union or bare record, either timestamp
flavour, named type references, ``fixed``), and gives each column the Arrow type of its Avro
type: timestamps without a local flavour as zone-less, ``local-timestamp-*`` as UTC. Reads cast
the columns to the table's types afterwards.
"""

from __future__ import annotations

import importlib
import io
import itertools
import zlib
from collections.abc import Iterator
from typing import Any

import fastavro
import pyarrow as pa

from ..errors import DataError, UnsupportedError
from . import avro_decode, avro_encode

_CODECS = {"zstd": "zstandard", "snappy": "snappy", "none": "null", "gzip": "deflate", "lz4": "lz4"}
NAMESPACE = "org.apache.paimon.avro.generated"
RECORD_NAME = "record"

# -- writing -------------------------------------------------------------------------------------


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _avro_type(t: pa.DataType, row_name: str, column: str) -> Any:
    """The Avro type of a NOT NULL ``t``; ``row_name`` names the records nested in it."""
    T = pa.types
    if T.is_boolean(t):
        return "boolean"
    if T.is_int8(t) or T.is_int16(t) or T.is_int32(t):
        return "int"
    if T.is_int64(t):
        return "long"
    if T.is_float32(t):
        return "float"
    if T.is_float64(t):
        return "double"
    if _is_string(t):
        return "string"
    if T.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if T.is_binary(t) or T.is_large_binary(t) or T.is_fixed_size_binary(t) or T.is_binary_view(t):
        return "bytes"
    if T.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if T.is_time(t):
        return {"type": "int", "logicalType": "time-millis"}
    if T.is_timestamp(t):
        if t.unit == "ns":
            raise UnsupportedError(f"column {column!r}: Avro data files hold timestamps of precision 6 at most "
                                   "(as in Paimon); use TIMESTAMP(6) or Parquet")
        flavour = "local-timestamp" if t.tz else "timestamp"
        return {"type": "long", "logicalType": f"{flavour}-{'millis' if t.unit in ('s', 'ms') else 'micros'}"}
    if T.is_list(t) or T.is_large_list(t):
        return {"type": "array", "items": _field_type(t.value_type, t.value_field.nullable, row_name, column)}
    if T.is_map(t):
        if _is_string(t.key_type):
            return {"type": "map", "values": _field_type(t.item_type, t.item_field.nullable, row_name, column)}
        entry = {"type": "record", "name": row_name, "fields": [
            {"name": "key", "type": _field_type(t.key_type, False, f"{row_name}_key", column)},
            _field("value", t.item_type, t.item_field.nullable, f"{row_name}_value", column)]}
        return {"type": "array", "logicalType": "map", "items": entry}
    if T.is_struct(t):
        return {"type": "record", "name": row_name,
                "fields": [_field(f.name, f.type, f.nullable, f"{row_name}_{f.name}", column) for f in t]}
    raise UnsupportedError(f"type {t} of column {column!r} cannot be stored in an Avro data file")


def _field_type(t: pa.DataType, nullable: bool, row_name: str, column: str) -> Any:
    avro = _avro_type(t, row_name, column)
    return ["null", avro] if nullable else avro


def _field(name: str, t: pa.DataType, nullable: bool, row_name: str, column: str) -> dict[str, Any]:
    return {"name": name, "type": _field_type(t, nullable, row_name, column), **({"default": None} if nullable else {})}


def avro_schema(schema: pa.Schema) -> list[Any]:
    """The Avro schema of a data file with ``schema``'s columns: ``["null", record]``, as Paimon writes."""
    record = {"type": "record", "name": RECORD_NAME, "namespace": NAMESPACE,
              "fields": [_field(f.name, f.type, f.nullable, f"{RECORD_NAME}_{f.name}", f.name) for f in schema]}
    return ["null", record]


def _needs_wire(t: pa.DataType) -> bool:
    """True if values of ``t`` must change before fastavro encodes them (see :func:`_wire`)."""
    T = pa.types
    if T.is_timestamp(t) or T.is_date(t) or T.is_time(t):
        return True
    if T.is_list(t) or T.is_large_list(t):
        return _needs_wire(t.value_type)
    if T.is_map(t):
        return not _is_string(t.key_type) or _needs_wire(t.key_type) or _needs_wire(t.item_type)
    if T.is_struct(t):
        return any(_needs_wire(f.type) for f in t)
    return False


def _rebased(array: pa.Array) -> tuple[pa.Array, int, int]:
    """Offsets of a (possibly sliced) list or map array starting at 0, and the child range."""
    offsets = array.offsets
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    if start:
        offsets = pa.array(offsets.to_numpy() - start, offsets.type)
    return offsets, start, end - start


def _wire(array: pa.Array) -> pa.Array:
    """``array`` as fastavro encodes it without Python-side conversion: timestamps as epoch
    milliseconds or microseconds, dates as days, times as milliseconds of the day, and maps with
    non-string keys as lists of ``{key, value}`` structs. Vectorized; other values unchanged."""
    t, T = array.type, pa.types
    if not _needs_wire(t):
        return array
    mask = array.is_null() if array.null_count else None
    if T.is_timestamp(t):
        unit = "ms" if t.unit in ("s", "ms") else "us"
        return array.cast(pa.timestamp(unit, t.tz)).cast(pa.int64())
    if T.is_date(t):
        return array.cast(pa.date32()).cast(pa.int32())
    if T.is_time(t):
        return array.cast(pa.time32("ms")).cast(pa.int32())
    if T.is_struct(t):
        children = [_wire(child) for child in array.flatten()]
        return pa.StructArray.from_arrays(children, names=[f.name for f in t], mask=mask)
    offsets, start, length = _rebased(array)
    if T.is_map(t):
        keys = _wire(array.keys.slice(start, length))
        items = _wire(array.items.slice(start, length))
        if _is_string(t.key_type):
            return pa.MapArray.from_arrays(offsets, keys, items, mask=mask)
        entries = pa.StructArray.from_arrays([keys, items], names=["key", "value"])
        return pa.ListArray.from_arrays(offsets, entries, mask=mask)
    values = _wire(array.values.slice(start, length))
    lists = pa.LargeListArray if T.is_large_list(t) else pa.ListArray
    return lists.from_arrays(offsets, values, mask=mask)


def write_avro_table(table: pa.Table, codec: str, *, sync_marker: bytes = b"") -> bytes:
    """``table`` as an Avro data file (Paimon's schema, see the module docstring).

    Flat tables (every column a primitive, decimal or temporal type) are encoded column-wise by
    :mod:`.avro_encode`, byte-identical to fastavro's encoding of the same rows; others go through
    Python rows and fastavro. ``sync_marker`` is the file's 16-byte sync marker, random if empty
    (give one for reproducible files).
    """
    schema = avro_schema(table.schema)
    parsed = fastavro.parse_schema(schema)
    plan = avro_encode.flat_record_plan(schema, [_wire_type(t) for t in table.schema.types])
    if plan is not None and table.num_columns:
        columns = [_wire(column.combine_chunks()) for column in table.columns]
        try:
            for column in columns:
                column.validate(full=True)  # UTF-8 and decimal precision, which the row path checks
            records = avro_encode.encode_records(plan, columns)
        except ValueError:  # pa.ArrowInvalid included
            pass  # the row path raises its own error for these values
        else:
            return avro_encode.container_file(parsed, records, codec=_CODECS.get(codec, "null"),
                                              sync_marker=sync_marker)
    return _write_avro_rows(table, parsed, codec, sync_marker=sync_marker)


def _wire_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type of :func:`_wire`'s result for a column of type ``t``."""
    return _wire(pa.array([], t)).type


def _write_avro_rows(table: pa.Table, parsed: Any, codec: str, *, sync_marker: bytes = b"") -> bytes:
    """``table`` as an Avro data file through Python rows and ``fastavro.writer``."""
    columns = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        if _needs_wire(column.type):
            column = pa.chunked_array([_wire(chunk) for chunk in column.chunks]) if column.num_chunks else \
                pa.chunked_array([_wire(pa.array([], column.type))])
        columns[name] = column
    rows = pa.table(columns).to_pylist(maps_as_pydicts="strict") if columns else [{}] * table.num_rows
    sink = io.BytesIO()
    # (name, row): fastavro's union notation, which picks the record branch without validating each row
    fastavro.writer(sink, parsed, zip(itertools.repeat(f"{NAMESPACE}.{RECORD_NAME}"), rows),
                    codec=_CODECS.get(codec, "null"), sync_marker=sync_marker)
    return sink.getvalue()


# -- reading -------------------------------------------------------------------------------------

_PRIMITIVES = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
               "double": pa.float64(), "string": pa.string(), "bytes": pa.binary()}
_TEMPORAL = {"date": pa.date32(), "time-millis": pa.time32("ms"), "time-micros": pa.time64("us"),
             "timestamp-millis": pa.timestamp("ms"), "timestamp-micros": pa.timestamp("us"),
             "local-timestamp-millis": pa.timestamp("ms", tz="UTC"),
             "local-timestamp-micros": pa.timestamp("us", tz="UTC")}


class _Types:
    """Arrow types of Avro types, resolving named types as they are defined."""

    def __init__(self) -> None:
        self._named: dict[str, Any] = {}

    def of(self, avro: Any) -> tuple[pa.DataType, pa.DataType, bool]:
        """``(decoded, final, nullable)``: the Arrow type fastavro's values convert to, the Arrow
        type of the column (they differ only where maps travel as lists of key/value records)."""
        nullable = False
        if isinstance(avro, list):
            branches = [a for a in avro if a != "null"]
            nullable = len(branches) != len(avro)
            if len(branches) != 1:
                raise UnsupportedError(f"Avro union {avro!r} is not supported in a data file")
            avro = branches[0]
        if isinstance(avro, str):
            if avro in _PRIMITIVES:
                return _PRIMITIVES[avro], _PRIMITIVES[avro], nullable
            if avro not in self._named:
                raise UnsupportedError(f"Avro type {avro!r} is not supported")
            decoded, final, _ = self.of(self._named[avro])
            return decoded, final, nullable
        if not isinstance(avro, dict):
            raise UnsupportedError(f"Avro type {avro!r} is not supported")
        kind, logical = avro.get("type"), avro.get("logicalType")
        if isinstance(kind, (list, dict)):  # {"type": {...}}: a wrapped type
            decoded, final, _ = self.of(kind)
            return decoded, final, nullable
        if "name" in avro and kind in ("record", "fixed", "enum"):
            self._named[avro["name"]] = avro
            self._named.setdefault(avro["name"].rpartition(".")[2], avro)
            if avro.get("namespace"):
                self._named[f"{avro['namespace']}.{avro['name']}"] = avro
        if logical == "decimal" and kind in ("bytes", "fixed"):
            t = pa.decimal128(avro["precision"], avro.get("scale", 0))
            return t, t, nullable
        if logical in _TEMPORAL and kind in ("int", "long"):
            return _TEMPORAL[logical], _TEMPORAL[logical], nullable
        if kind in _PRIMITIVES:
            return _PRIMITIVES[kind], _PRIMITIVES[kind], nullable
        if kind == "fixed":
            return pa.binary(), pa.binary(), nullable
        if kind == "enum":
            return pa.string(), pa.string(), nullable
        if kind == "array":
            decoded, final, item_null = self.of(avro["items"])
            if logical == "map" and pa.types.is_struct(decoded) and decoded.num_fields == 2 and not item_null:
                key, value = final.field(0), final.field(1)  # Paimon's entries: key, then value
                final = pa.map_(pa.field("key", key.type, False), pa.field("value", value.type, value.nullable))
                return pa.list_(pa.field("item", decoded, False)), final, nullable
            return (pa.list_(pa.field("item", decoded, item_null)), pa.list_(pa.field("item", final, item_null)),
                    nullable)
        if kind == "map":
            decoded, final, value_null = self.of(avro["values"])
            return (pa.map_(pa.string(), pa.field("value", decoded, value_null)),
                    pa.map_(pa.string(), pa.field("value", final, value_null)), nullable)
        if kind == "record":
            decoded_fields, final_fields = [], []
            for f in avro["fields"]:
                decoded, final, n = self.of(f["type"])
                decoded_fields.append(pa.field(f["name"], decoded, n))
                final_fields.append(pa.field(f["name"], final, n))
            return pa.struct(decoded_fields), pa.struct(final_fields), nullable
        raise UnsupportedError(f"Avro type {avro!r} is not supported")


def _top_record(schema: Any) -> dict[str, Any]:
    """The record of a data file's schema: a bare record or Paimon's ``["null", record]``."""
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) == 1 and isinstance(branches[0], dict) and branches[0].get("type") == "record":
            return branches[0]
    elif isinstance(schema, dict) and schema.get("type") == "record":
        return schema
    raise UnsupportedError(f"an Avro data file must hold records, not {schema!r}")


def _maps_from_entries(array: pa.Array, final: pa.DataType) -> pa.Array:
    """``array`` (decoded, maps as lists of key/value structs) as ``final``. Vectorized."""
    t, T = array.type, pa.types
    if t == final:
        return array
    mask = array.is_null() if array.null_count else None
    if T.is_struct(t):
        children = [_maps_from_entries(child, f.type) for child, f in zip(array.flatten(), final, strict=True)]
        return pa.StructArray.from_arrays(children, fields=list(final), mask=mask)
    offsets, start, length = _rebased(array)
    if T.is_map(t):
        keys = _maps_from_entries(array.keys.slice(start, length), final.key_type)
        items = _maps_from_entries(array.items.slice(start, length), final.item_type)
        return pa.MapArray.from_arrays(offsets, keys, items, type=final, mask=mask)
    values = array.values.slice(start, length)
    if T.is_map(final):  # a list of {key, value} entries
        keys, items = values.flatten()
        keys, items = _maps_from_entries(keys, final.key_type), _maps_from_entries(items, final.item_type)
        return pa.MapArray.from_arrays(offsets, keys, items, type=final, mask=mask)
    return pa.ListArray.from_arrays(offsets, _maps_from_entries(values, final.value_type), type=final, mask=mask)


def _file_fields(writer_schema: Any) -> tuple[list[pa.Field], list[pa.Field]]:
    """The decoded and final Arrow fields of a data file's columns (see :meth:`_Types.of`)."""
    types = _Types()
    decoded_fields, final_fields = [], []
    for f in _top_record(writer_schema)["fields"]:
        decoded, final, nullable = types.of(f["type"])
        decoded_fields.append(pa.field(f["name"], decoded, nullable))
        final_fields.append(pa.field(f["name"], final, nullable))
    return decoded_fields, final_fields


def _zstd_errors() -> tuple[type[Exception], ...]:
    """The error of the zstd module fastavro decompresses with, if there is one."""
    for module in ("backports.zstd", "compression.zstd"):
        try:
            return (importlib.import_module(module).ZstdError,)
        except ImportError:
            continue
    return ()


# What reading a damaged or unusual container raises: the vectorized path then defers to the row
# path, which raises its own error (or reads the file).
_CONTAINER_ERRORS: tuple[type[Exception], ...] = (ValueError, EOFError, OSError, KeyError, TypeError, IndexError,
                                                  OverflowError, UnsupportedError, zlib.error, *_zstd_errors())


def _read_flat(data: Any) -> pa.Table | None:
    """The file's table decoded column-wise by :mod:`.avro_decode`, or None if its records are
    not flat or its bytes are anything the row path would reject or read differently."""
    try:
        blocks = fastavro.block_reader(io.BytesIO(data))
        plan = avro_decode.flat_read_plan(blocks.writer_schema)
        if plan is None:
            return None
        decoded_fields, _ = _file_fields(blocks.writer_schema)
        return avro_decode.decode_blocks(plan, pa.schema(decoded_fields), _block_bytes(blocks))
    except _CONTAINER_ERRORS:
        return None


def _block_bytes(blocks: Any) -> Iterator[tuple[int, bytes]]:
    """``(record count, decompressed bytes)`` of each block of a ``fastavro.block_reader``."""
    for block in blocks:
        # ``bytes_`` is not in fastavro's stubs, but it is what fastavro's Writer.write_block
        # reads from a block too (see avro_encode); without it, the row path reads the file
        raw = getattr(block, "bytes_", None)
        if isinstance(raw, io.BytesIO):
            yield block.num_records, raw.getvalue()
        elif isinstance(raw, bytes):
            yield block.num_records, raw
        else:
            raise UnsupportedError("fastavro's blocks do not expose their bytes")


def read_avro_table(source: Any) -> pa.Table:
    """All columns of an Avro data file (bytes or a binary stream) as an Arrow table.

    Files of flat records are decoded column-wise (:mod:`.avro_decode`); others, and any file
    whose bytes that decoder finds inconsistent, through fastavro's rows, so that damaged files
    raise fastavro's errors (or :class:`DataError` for a null row) whichever path was tried."""
    data = source.read() if hasattr(source, "read") else source
    table = _read_flat(data)
    return table if table is not None else _read_avro_rows(io.BytesIO(data))


def _read_avro_rows(stream: Any) -> pa.Table:
    """All columns of an Avro data file through Python rows (``fastavro.reader``)."""
    reader = fastavro.reader(stream)
    decoded_fields, final_fields = _file_fields(reader.writer_schema)
    rows = list(reader)
    if None in rows:
        raise DataError("an Avro data file holds a null row (Paimon never writes one)")
    table = pa.Table.from_pylist(rows, schema=pa.schema(decoded_fields))
    for i, (decoded_field, final_field) in enumerate(zip(decoded_fields, final_fields, strict=True)):
        if decoded_field.type != final_field.type:
            column = table.column(i)
            chunks = [_maps_from_entries(chunk, final_field.type) for chunk in column.chunks]
            table = table.set_column(i, final_field, pa.chunked_array(chunks, final_field.type))
    return table
