"""Time travel reads a snapshot with the schema it was committed under (Paimon's rule).

Java Paimon (``AbstractFileStoreTable.tryTimeTravel``) and pypaimon 2.1.0 both switch a read
with ``scan.snapshot-id``, ``scan.tag-name`` or a timestamp to the schema recorded in the chosen
snapshot (its columns, with the table's current options). Incremental reads are not time
travel: they use the table's current schema.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog, col
from paimonflow.core.errors import SchemaError
from paimonflow.core.meta.schema_changes import AddColumn, DropColumn, RenameColumn, SetOption

FIRST = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int32())])


@pytest.fixture
def catalog(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _sorted(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def _evolved(catalog, name: str, **kw):
    """Snapshot 1 (schema 0: id, a, b), then add c, rename a to a2, drop b (schema 1), snapshot 2."""
    t = catalog.create_table(f"db.{name}", FIRST, **kw)
    t.write(pa.table({"id": [1, 2], "a": ["x", "y"], "b": [10, 20]}, schema=FIRST))
    t.tags.create("before")
    t = t.alter([AddColumn("c", pa.float64()), RenameColumn("a", "a2"), DropColumn("b")])
    t.write(pa.table({"id": [2, 3], "a2": ["Y", "z"], "c": [2.5, 3.5]}, schema=t.arrow_schema))
    return t


@pytest.mark.parametrize("keys", [{}, {"primary_keys": ["id"], "options": {"bucket": "1"}}], ids=["append", "pk"])
def test_snapshot_tag_and_timestamp_read_the_snapshots_own_columns(catalog, keys):
    t = _evolved(catalog, "t", **keys)
    old = [{"id": 1, "a": "x", "b": 10}, {"id": 2, "a": "y", "b": 20}]
    first = t.snapshot_manager.snapshot(1)
    for travel in ({"snapshot_id": 1}, {"tag": "before"}, {"timestamp": first.time_millis}):
        got = t.read(**travel)
        assert got.schema == FIRST, travel  # not id, a2, c with nulls
        assert _sorted(got) == old
        assert t.read_schema(**travel).id == 0
        batches = list(t.to_batches(**travel))
        assert _sorted(pa.Table.from_batches(batches, schema=FIRST)) == old
    latest = t.read()
    assert latest.column_names == ["id", "a2", "c"]
    assert t.read(snapshot_id=2).column_names == ["id", "a2", "c"]


def test_time_travel_columns_and_filters_name_the_snapshots_columns(catalog):
    t = _evolved(catalog, "t", primary_keys=["id"], options={"bucket": "1"})
    assert t.read(snapshot_id=1, columns=["b", "a"]).to_pylist() == [{"b": 10, "a": "x"}, {"b": 20, "a": "y"}]
    assert t.read(snapshot_id=1, filter=col("a") == "y").to_pylist() == [{"id": 2, "a": "y", "b": 20}]
    assert t.read(snapshot_id=1, filter=col("b") > 15, columns=["id"]).to_pylist() == [{"id": 2}]
    with pytest.raises(SchemaError, match="a2"):
        t.read(snapshot_id=1, columns=["a2"])
    with pytest.raises(SchemaError, match="b"):
        t.read(columns=["b"])


def test_a_snapshot_of_a_newer_schema_than_the_latest_write(catalog):
    """The table's schema moved on without a write: the latest snapshot still has its own."""
    t = _evolved(catalog, "t")
    t = t.alter([AddColumn("d", pa.string())])
    assert t.read().column_names == ["id", "a2", "c", "d"]  # no time travel: the table's schema
    assert t.read(snapshot_id=2).column_names == ["id", "a2", "c"]
    assert t.read_schema(snapshot_id=2).id == 1 and t.read_schema().id == 2


def test_merged_old_snapshots_use_the_options_of_now_under_their_old_names(catalog):
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])
    t = catalog.create_table("db.agg", schema, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    t.write(pa.table({"k": [1], "v": [1]}, schema=schema))
    t.write(pa.table({"k": [1], "v": [2]}, schema=schema))
    t = t.alter([RenameColumn("v", "total"), AddColumn("top", pa.int64()),
                 SetOption("fields.top.aggregate-function", "max")])
    t.write(pa.table({"k": [1], "total": [4], "top": [9]}, schema=t.arrow_schema))
    assert t.read(snapshot_id=2).to_pylist() == [{"k": 1, "v": 3}]  # still summed; "top" is not there
    assert t.read().to_pylist() == [{"k": 1, "total": 7, "top": 9}]


def test_incremental_reads_use_the_tables_schema(catalog):
    """Paimon's incremental-between is not time travel: the current schema, for every snapshot."""
    t = _evolved(catalog, "t")
    got = t.read_changes(0, 2)
    assert got.column_names == ["rowkind", "id", "a2", "c"]
    assert sorted(got.to_pylist(), key=lambda r: (r["id"], r["a2"])) == [
        {"rowkind": "+I", "id": 1, "a2": "x", "c": None}, {"rowkind": "+I", "id": 2, "a2": "Y", "c": 2.5},
        {"rowkind": "+I", "id": 2, "a2": "y", "c": None}, {"rowkind": "+I", "id": 3, "a2": "z", "c": 3.5}]
    pk = _evolved(catalog, "k", primary_keys=["id"], options={"bucket": "1"})
    assert sorted(pk.read_changes(1, 2).to_pylist(), key=lambda r: (r["id"], r["rowkind"])) == [
        {"rowkind": "+U", "id": 2, "a2": "Y", "c": 2.5}, {"rowkind": "-U", "id": 2, "a2": "y", "c": None},
        {"rowkind": "+I", "id": 3, "a2": "z", "c": 3.5}]


def test_streams_and_statistics_keep_the_tables_schema_after_an_alter_without_a_write(catalog):
    """Neither is time travel: a stream's full snapshot and ANALYZE use the table's columns."""
    from paimonflow.core.maintenance.statistics import read_statistics
    from paimonflow.core.read.stream import StreamingScan

    t = catalog.create_table("db.s", FIRST, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "a": ["x"], "b": [10]}, schema=FIRST))
    t = t.alter([AddColumn("c", pa.float64()), RenameColumn("a", "a2")])
    for mode, start in (("latest-full", {}), ("from-snapshot-full", {"snapshot_id": 1})):
        batch = StreamingScan(t, mode=mode, **start).poll()
        assert batch.rows.to_pylist() == [{"rowkind": "+I", "id": 1, "a2": "x", "b": 10, "c": None}], mode
    t.analyze()
    stats = read_statistics(t)
    assert stats["schemaId"] == t.schema.id and set(stats["colStats"]) == {"id", "a2", "b", "c"}
