"""Avro data files and time travel across schema evolution, against Apache Paimon's Java core (0.9).

Java writes Avro data files under the union ``["null", record]`` with ``timestamp-*`` for
TIMESTAMP and ``local-timestamp-*`` for TIMESTAMP_LTZ; we read them, and Java reads ours. A read
by snapshot id or tag uses that snapshot's schema in both engines; ``incremental-between`` uses
the latest schema in both.
"""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.meta.schema_changes import AddColumn, DropColumn, RenameColumn

from .java_peer import JavaPeer, without_kinds
from .oracle import canonical

pytestmark = [pytest.mark.interop, pytest.mark.java]

# The Java peer moves data as Arrow; it has no struct or map vectors, so nested types stay in
# tests/core/data/test_avro_data.py (hand-written Java schemas).
FLAT = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("tiny", pa.int8()), ("small", pa.int16()),
    ("flag", pa.bool_()), ("ratio", pa.float32()), ("big", pa.float64()), ("price", pa.decimal128(10, 2)),
    ("day", pa.date32()), ("at", pa.time32("ms")), ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")),
    ("ltz3", pa.timestamp("ms", tz="UTC")), ("ltz6", pa.timestamp("us", tz="UTC")),
    ("tags", pa.list_(pa.string())), ("blob", pa.binary()),
])


def _flat_rows(ids) -> pa.Table:
    rows = []
    for i in ids:
        ts = datetime(2024, 3, 1, 12, 30, 15) + timedelta(days=i, microseconds=123457 * i)
        rows.append({
            "id": i, "name": None if i % 5 == 2 else f"n{i}", "tiny": i % 100 - 50, "small": 300 * i, "flag": i % 2 == 0,
            "ratio": i / 4, "big": i / 3, "price": Decimal(i * 101) / 100 if i % 7 else None,
            "day": date(1969, 12, 20) + timedelta(i), "at": time(i % 24, 59, 59, 999000),
            "ts3": ts.replace(microsecond=ts.microsecond // 1000 * 1000), "ts6": ts if i % 6 else None,
            "ltz3": (ts - timedelta(days=20000)).replace(microsecond=0, tzinfo=UTC), "ltz6": ts.replace(tzinfo=UTC),
            "tags": None if i % 4 == 1 else [f"t{i}", None], "blob": bytes([i % 256, 0, 255]),
        })
    return pa.Table.from_pylist(rows, schema=FLAT)


@pytest.mark.parametrize("primary_key", [True, False], ids=["pk", "append"])
def test_avro_data_files_both_ways(java_peer: JavaPeer, tmp_path, primary_key):
    keys = {"primary_keys": ["id"], "options": {"bucket": "2", "file.format": "avro"}} if primary_key else \
        {"options": {"file.format": "avro"}}
    data = _flat_rows(range(40))
    # Java writes, we read
    java_peer.create_table(tmp_path / "java", "db.t", FLAT, **keys)
    java_peer.write(tmp_path / "java", "db.t", data)
    # we write, Java reads
    catalog = Catalog(str(tmp_path / "ours"))
    catalog.create_database("db")
    ours = catalog.create_table("db.t", FLAT, **keys)
    ours.write(data)
    expected = canonical(data)
    if primary_key:
        java_peer.write(tmp_path / "java", "db.t", data.slice(5, 3), kinds=["-D"] * 3)
        ours.write(data.slice(5, 3), row_kinds="-D")
        expected = canonical(pa.concat_tables([data.slice(0, 5), data.slice(8)]))
    java_peer.read(tmp_path / "ours", "db.t")
    (ours_by_java,) = java_peer.run()
    assert canonical(without_kinds(ours_by_java)) == expected
    theirs = Catalog(str(tmp_path / "java")).get_table("db.t")
    (path, *_) = theirs.system_table("files").column("file_path").to_pylist()
    with open(path, "rb") as f:
        assert fastavro.reader(io.BytesIO(f.read())).writer_schema[0] == "null"  # Java's union-topped schema
    assert canonical(theirs.read()) == expected
    assert theirs.read().schema == ours.read().schema == theirs.arrow_schema


@pytest.mark.parametrize("primary_key", [True, False], ids=["pk", "append"])
def test_time_travel_after_add_rename_drop_agrees_with_java(java_peer: JavaPeer, tmp_path, primary_key):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int32())])
    evolved = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a2", pa.string()), ("c", pa.float64())])
    first = pa.table({"id": [1, 2], "a": ["x", "y"], "b": [10, 20]}, schema=schema)
    second = pa.table({"id": [2, 3], "a2": ["Y", "z"], "c": [2.5, 3.5]}, schema=evolved)
    keys = {"primary_keys": ["id"], "options": {"bucket": "1"}} if primary_key else {}
    java_wh, our_wh = tmp_path / "java", tmp_path / "ours"
    java_peer.create_table(java_wh, "db.t", schema, **keys)
    java_peer.write(java_wh, "db.t", first)
    java_peer.create_tag(java_wh, "db.t", "v1")
    java_peer.alter_table(java_wh, "db.t", [{"kind": "add_column", "name": "c", "type": pa.float64()},
                                            {"kind": "rename_column", "name": "a", "new_name": "a2"},
                                            {"kind": "drop_column", "name": "b"}])
    java_peer.write(java_wh, "db.t", second)
    catalog = Catalog(str(our_wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, **keys)
    t.write(first)
    t.tags.create("v1")
    t = t.alter([AddColumn("c", pa.float64()), RenameColumn("a", "a2"), DropColumn("b")])
    t.write(second)
    travels = [{"snapshot_id": 1}, {"tag": "v1"}, {}]
    for warehouse in (java_wh, our_wh):
        for travel in travels:
            java_peer.read(warehouse, "db.t", **travel)
        java_peer.read(warehouse, "db.t", options={"incremental-between": "1,2"})
    by_java = [without_kinds(r) for r in java_peer.run()]
    theirs = Catalog(str(java_wh)).get_table("db.t")
    for i, table in enumerate((theirs, t)):
        java_reads = by_java[4 * i:4 * i + 4]
        for travel, java_read in zip(travels, java_reads, strict=False):
            ours = table.read(**travel)
            assert ours.column_names == java_read.column_names, travel
            assert canonical(ours) == canonical(java_read), travel
        assert java_reads[0].column_names == ["id", "a", "b"] and java_reads[2].column_names == ["id", "a2", "c"]
        incremental = table.read_changes(1, 2, mode="delta").drop_columns(["rowkind"])
        assert incremental.column_names == java_reads[3].column_names == ["id", "a2", "c"]
        assert canonical(incremental) == canonical(java_reads[3]) == [(2, "Y", 2.5), (3, "z", 3.5)]
