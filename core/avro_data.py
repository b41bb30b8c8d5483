"""Avro data files (``file.format=avro``) through fastavro.

Avro is a row format, so this path converts through Python rows; it exists for compatibility
with tables that use it, not for speed (Parquet is the default and the fast path). The writer
schema follows Paimon's conventions: a top-level record named ``record``, nullable fields as
``["null", T]`` unions with a null default, and Avro logical types for decimals, dates, times
and timestamps.
"""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pyarrow as pa

from .errors import UnsupportedError

_CODECS = {"zstd": "zstandard", "snappy": "snappy", "none": "null", "gzip": "deflate", "lz4": "lz4"}


def _avro_type(t: pa.DataType, name: str) -> Any:
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "bytes"
    if pa.types.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_timestamp(t):
        local = t.tz is None
        if t.unit in ("s", "ms"):
            return {"type": "long", "logicalType": "local-timestamp-millis" if local else "timestamp-millis"}
        return {"type": "long", "logicalType": "local-timestamp-micros" if local else "timestamp-micros"}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "items": _nullable(_avro_type(t.value_type, name + "_element"), t.value_field.nullable)}
    if pa.types.is_map(t):
        if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
            raise UnsupportedError(f"Avro data files support MAP with STRING keys only (column {name!r})")
        return {"type": "map", "values": _nullable(_avro_type(t.item_type, name + "_value"), t.item_field.nullable)}
    if pa.types.is_struct(t):
        return {
            "type": "record",
            "name": f"record_{name}",
            "fields": [{"name": f.name, "type": _nullable(_avro_type(f.type, f"{name}_{f.name}"), f.nullable),
                        **({"default": None} if f.nullable else {})} for f in t],
        }
    raise UnsupportedError(f"type {t} of column {name!r} cannot be stored in an Avro data file")


def _nullable(avro: Any, nullable: bool) -> Any:
    return ["null", avro] if nullable else avro


def avro_schema(schema: pa.Schema) -> dict[str, Any]:
    return {
        "type": "record",
        "name": "record",
        "namespace": "org.apache.paimon.avro.generated",
        "fields": [{"name": f.name, "type": _nullable(_avro_type(f.type, f.name), f.nullable),
                    **({"default": None} if f.nullable else {})} for f in schema],
    }


def write_avro_table(table: pa.Table, codec: str) -> bytes:
    sink = io.BytesIO()
    parsed = fastavro.parse_schema(avro_schema(table.schema))
    rows = table.to_pylist()
    for name, f in zip(table.column_names, table.schema, strict=True):
        if pa.types.is_map(f.type):
            for row in rows:
                if row[name] is not None:
                    row[name] = dict(row[name])
    fastavro.writer(sink, parsed, rows, codec=_CODECS.get(codec, "null"))
    return sink.getvalue()


def _arrow_type(avro: Any) -> tuple[pa.DataType, bool]:
    nullable = False
    if isinstance(avro, list):
        rest = [a for a in avro if a != "null"]
        nullable = len(rest) != len(avro)
        avro = rest[0] if len(rest) == 1 else rest
    if isinstance(avro, str):
        simple = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
                  "double": pa.float64(), "string": pa.string(), "bytes": pa.binary()}
        return simple[avro], nullable
    logical = avro.get("logicalType")
    kind = avro["type"]
    if logical == "decimal":
        return pa.decimal128(avro["precision"], avro.get("scale", 0)), nullable
    if logical == "date":
        return pa.date32(), nullable
    if logical == "time-millis":
        return pa.time32("ms"), nullable
    if logical == "time-micros":
        return pa.time64("us"), nullable
    if logical in ("timestamp-millis", "local-timestamp-millis"):
        return pa.timestamp("ms", tz="UTC" if logical == "timestamp-millis" else None), nullable
    if logical in ("timestamp-micros", "local-timestamp-micros"):
        return pa.timestamp("us", tz="UTC" if logical == "timestamp-micros" else None), nullable
    if kind == "array":
        item, item_null = _arrow_type(avro["items"])
        return pa.list_(pa.field("element", item, item_null)), nullable
    if kind == "map":
        value, value_null = _arrow_type(avro["values"])
        return pa.map_(pa.string(), pa.field("value", value, value_null)), nullable
    if kind == "record":
        fields = []
        for f in avro["fields"]:
            t, n = _arrow_type(f["type"])
            fields.append(pa.field(f["name"], t, n))
        return pa.struct(fields), nullable
    if isinstance(kind, (str, list, dict)):
        return _arrow_type(kind)[0], nullable
    raise UnsupportedError(f"Avro type {avro!r} is not supported")


def read_avro_table(source: Any) -> pa.Table:
    stream = source if hasattr(source, "read") else io.BytesIO(source)
    reader = fastavro.reader(stream)
    fields = []
    for f in reader.writer_schema["fields"]:
        t, n = _arrow_type(f["type"])
        fields.append(pa.field(f["name"], t, n))
    schema = pa.schema(fields)
    rows = list(reader)
    for f in schema:
        if pa.types.is_map(f.type):
            for row in rows:
                if row[f.name] is not None:
                    row[f.name] = list(row[f.name].items())
    return pa.Table.from_pylist(rows, schema=schema)
