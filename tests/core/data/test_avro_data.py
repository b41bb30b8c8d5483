"""Avro data files as Apache Paimon writes them (``AvroSchemaConverter``, Java 0.9 to 2.x).

Java writes the file schema as the union ``["null", record]``, not a bare record, names nested
records ``record_<column>``, encodes maps with non-string keys as arrays of key/value records
(logical type ``map``) and uses ``timestamp-*`` for TIMESTAMP and ``local-timestamp-*`` for
TIMESTAMP_LTZ. The schemas below are written out by hand from that converter, so they check our
reader and writer against Paimon's rules rather than against our own code.
"""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.data.avro_data import avro_schema, read_avro_table, write_avro_table
from paimonflow.core.errors import DataError, UnsupportedError

EPOCH = datetime(1970, 1, 1)


@pytest.fixture
def catalog(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _null(t):
    return ["null", t]


def _opt(name, t):
    return {"name": name, "type": _null(t), "default": None}


def java_file_schema(fields: list[dict]) -> list:
    return ["null", {"type": "record", "name": "record", "namespace": "org.apache.paimon.avro.generated",
                     "fields": fields}]


# Every type family Paimon's Avro writer has a rule for, as Java spells it.
ALL_TYPES = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("name", pa.string()),
    ("tiny", pa.int8()),
    ("small", pa.int16()),
    ("flag", pa.bool_()),
    ("ratio", pa.float32()),
    ("price", pa.decimal128(10, 2)),
    ("day", pa.date32()),
    ("at", pa.time32("ms")),
    ("ts3", pa.timestamp("ms")),
    ("ts6", pa.timestamp("us")),
    ("ltz3", pa.timestamp("ms", tz="UTC")),
    ("ltz6", pa.timestamp("us", tz="UTC")),
    ("tags", pa.list_(pa.string())),
    ("attrs", pa.map_(pa.string(), pa.int32())),
    ("codes", pa.map_(pa.int32(), pa.string())),
    ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
    ("items", pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int32())]))),
    ("blob", pa.binary()),
])

JAVA_ALL_TYPES = java_file_schema([
    {"name": "id", "type": "long"},
    _opt("name", "string"),
    _opt("tiny", "int"),
    _opt("small", "int"),
    _opt("flag", "boolean"),
    _opt("ratio", "float"),
    _opt("price", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}),
    _opt("day", {"type": "int", "logicalType": "date"}),
    _opt("at", {"type": "int", "logicalType": "time-millis"}),
    _opt("ts3", {"type": "long", "logicalType": "timestamp-millis"}),
    _opt("ts6", {"type": "long", "logicalType": "timestamp-micros"}),
    _opt("ltz3", {"type": "long", "logicalType": "local-timestamp-millis"}),
    _opt("ltz6", {"type": "long", "logicalType": "local-timestamp-micros"}),
    _opt("tags", {"type": "array", "items": _null("string")}),
    _opt("attrs", {"type": "map", "values": _null("int")}),
    _opt("codes", {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": "record_codes", "fields": [{"name": "key", "type": "int"}, _opt("value", "string")]}}),
    _opt("point", {"type": "record", "name": "record_point", "fields": [_opt("x", "double"), _opt("y", "double")]}),
    _opt("items", {"type": "array", "items": _null({"type": "record", "name": "record_items",
                                                   "fields": [_opt("sku", "string"), _opt("qty", "int")]})}),
    _opt("blob", "bytes"),
])


def _rows(n: int) -> list[dict]:
    out = []
    for i in range(n):
        ts = datetime(2024, 3, 1, 12, 30, 15) + timedelta(days=i, microseconds=123456 * i)
        out.append({
            "id": i, "name": None if i == 2 else f"n{i}", "tiny": i - 3, "small": 300 * i, "flag": i % 2 == 0,
            "ratio": i / 4, "price": Decimal(f"{i}.{i:02d}") if i != 3 else None, "day": date(1969, 12, 30) + timedelta(i),
            "at": time(23, 59, 59, 999000) if i == 1 else time(0, 0, i), "ts3": ts.replace(microsecond=ts.microsecond // 1000 * 1000),
            "ts6": ts if i != 4 else None, "ltz3": (ts - timedelta(days=20000)).replace(microsecond=0, tzinfo=UTC),
            "ltz6": ts.replace(tzinfo=UTC), "tags": None if i == 1 else [f"t{i}", None],
            "attrs": {"a": i, "b": None} if i != 2 else None, "codes": [(i, "x"), (-i - 1, None)] if i != 4 else None,
            "point": None if i == 1 else {"x": float(i), "y": None}, "items": [{"sku": f"s{i}", "qty": i}, None],
            "blob": bytes([i, 0, 255]),
        })
    return out


def _micros(value: datetime) -> int:
    return (value.replace(tzinfo=None) - EPOCH) // timedelta(microseconds=1)


def _as_java_record(row: dict) -> dict:
    """One row as Java's field writers encode it: epoch millis/micros, days, millis of the day,
    maps with non-string keys as key/value records."""
    def opt(value, f):
        return None if value is None else f(value)

    return {
        **row,
        "day": opt(row["day"], lambda d: (d - date(1970, 1, 1)).days),
        "at": opt(row["at"], lambda t: ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000),
        "ts3": opt(row["ts3"], lambda v: _micros(v) // 1000), "ts6": opt(row["ts6"], _micros),
        "ltz3": opt(row["ltz3"], lambda v: _micros(v) // 1000), "ltz6": opt(row["ltz6"], _micros),
        "codes": opt(row["codes"], lambda kv: [{"key": k, "value": v} for k, v in kv]),
    }


def _rewrite_as_java(path: str, schema: list, records: list[dict]) -> None:
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(schema), records, codec="zstandard")
    Path(path).write_bytes(sink.getvalue())


def _data_files(table) -> list[str]:
    return table.system_table("files").column("file_path").to_pylist()


def test_an_append_table_reads_a_data_file_written_by_java(catalog):
    expected = pa.Table.from_pylist(_rows(6), schema=ALL_TYPES)
    t = catalog.create_table("db.a", ALL_TYPES, options={"file.format": "avro"})
    t.write(expected)
    (path,) = _data_files(t)
    _rewrite_as_java(path, JAVA_ALL_TYPES, [_as_java_record(r) for r in _rows(6)])
    assert fastavro.reader(io.BytesIO(Path(path).read_bytes())).writer_schema[0] == "null"
    got = t.read().sort_by("id")
    assert got.schema == t.arrow_schema
    assert got.equals(expected.cast(t.arrow_schema))


def test_a_primary_key_table_reads_java_data_files_with_system_columns(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("ts", pa.timestamp("ms"))])
    t = catalog.create_table("db.k", schema, primary_keys=["id"], options={"bucket": "1", "file.format": "avro"})
    first = pa.table({"id": [1, 2, 3], "v": ["a", "b", None], "ts": [datetime(2024, 1, 1, 0, 0, 0, 5000)] * 3},
                     schema=schema)
    t.write(first)
    t.write(first.slice(1, 1), row_kinds="-D")
    java = java_file_schema([{"name": "_KEY_id", "type": "long"}, {"name": "_SEQUENCE_NUMBER", "type": "long"},
                             {"name": "_VALUE_KIND", "type": "int"}, {"name": "id", "type": "long"}, _opt("v", "string"),
                             _opt("ts", {"type": "long", "logicalType": "timestamp-millis"})])
    for path in _data_files(t):
        ours = list(fastavro.reader(io.BytesIO(Path(path).read_bytes())))
        records = [{**r, "ts": None if r["ts"] is None else _micros(r["ts"]) // 1000} for r in ours]
        _rewrite_as_java(path, java, records)
    assert t.read().sort_by("id").to_pylist() == [
        {"id": 1, "v": "a", "ts": datetime(2024, 1, 1, 0, 0, 0, 5000)},
        {"id": 3, "v": None, "ts": datetime(2024, 1, 1, 0, 0, 0, 5000)}]


def test_our_avro_schema_is_the_one_paimon_derives():
    assert fastavro.parse_schema(avro_schema(ALL_TYPES)) == fastavro.parse_schema(JAVA_ALL_TYPES)


def test_our_data_files_round_trip_every_type_and_slice():
    table = pa.Table.from_pylist(_rows(7), schema=ALL_TYPES).slice(2, 4)
    data = write_avro_table(table, "zstd")
    assert read_avro_table(data).cast(ALL_TYPES).equals(table)
    # what Java decodes: the same records as a Java-written file holds
    assert list(fastavro.reader(io.BytesIO(data))) == list(
        fastavro.reader(io.BytesIO(_java_bytes([_as_java_record(r) for r in _rows(7)[2:6]]))))


def _java_bytes(records: list[dict]) -> bytes:
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(JAVA_ALL_TYPES), records)
    return sink.getvalue()


def test_files_paimonflow_wrote_before_still_read():
    """Bare top-level record, ``local-timestamp-*`` for zone-less timestamps, ``time-micros``."""
    schema = {"type": "record", "name": "record", "namespace": "org.apache.paimon.avro.generated", "fields": [
        {"name": "id", "type": "long"},
        _opt("ts", {"type": "long", "logicalType": "local-timestamp-millis"}),
        _opt("at", {"type": "long", "logicalType": "time-micros"}),
        _opt("m", {"type": "map", "values": _null({"type": "record", "name": "record_m_value", "fields": [
            _opt("x", "int")]})})]}
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(schema), [{"id": 1, "ts": 1000, "at": 1500, "m": {"k": {"x": 2}}}])
    got = read_avro_table(sink.getvalue())
    assert got.to_pylist() == [{"id": 1, "ts": datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC), "at": time(0, 0, 0, 1500),
                                "m": [("k", {"x": 2})]}]


def test_named_type_references_and_null_rows():
    record = {"type": "record", "name": "record_a", "fields": [_opt("x", "int")]}
    schema = java_file_schema([_opt("a", record), _opt("b", "org.apache.paimon.avro.generated.record_a")])
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(schema), [{"a": {"x": 1}, "b": {"x": 2}}, None])
    with pytest.raises(DataError, match="null row"):
        read_avro_table(sink.getvalue())
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(schema), [{"a": {"x": 1}, "b": {"x": 2}}])
    assert read_avro_table(sink.getvalue()).to_pylist() == [{"a": {"x": 1}, "b": {"x": 2}}]


def test_nanosecond_timestamps_are_refused_as_in_paimon():
    with pytest.raises(UnsupportedError, match="precision 6"):
        write_avro_table(pa.table({"t": pa.array([0], pa.timestamp("ns"))}), "zstd")
