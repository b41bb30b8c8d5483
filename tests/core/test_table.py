"""End-to-end behaviour of tables through the public API (real files on local disk)."""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog, col
from paimonflow.core.errors import (
    CommitConflictError,
    DataError,
    InvalidOptionError,
    SchemaChangeError,
    SchemaError,
    SnapshotNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TagNotFoundError,
    UnsupportedError,
)
from paimonflow.core.meta.schema_changes import (
    AddColumn,
    DropColumn,
    RenameColumn,
    SetOption,
    UpdateColumnType,
)
from paimonflow.core.write.commit import BATCH_COMMIT_IDENTIFIER

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                ("name", pa.string()), ("amount", pa.float64())])


@pytest.fixture
def catalog(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def rows(table, **kw):
    return sorted(table.read(**kw).to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


def kv(ids, dts, names=None, amounts=None):
    return pa.table({"id": ids, "dt": dts, "name": names or [f"n{i}" for i in ids],
                     "amount": amounts or [float(i) for i in ids]}, schema=KV)


@pytest.mark.parametrize("bucket", ["1", "3"])
def test_primary_key_upsert_delete_and_time_travel(catalog, bucket):
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": bucket})
    assert t.write(kv([1, 2, 3], ["a", "a", "b"])).snapshot_id == 1
    t.write(kv([2, 4], ["a", "b"], ["two", "four"]))
    t.write(kv([1], ["a"]), row_kinds="-D")
    assert rows(t) == [
        {"id": 2, "dt": "a", "name": "two", "amount": 2.0},
        {"id": 3, "dt": "b", "name": "n3", "amount": 3.0},
        {"id": 4, "dt": "b", "name": "four", "amount": 4.0},
    ]
    assert [r["id"] for r in rows(t, snapshot_id=1)] == [1, 2, 3]
    assert t.read(snapshot_id=2).num_rows == 4
    # the same key in other partitions is another row
    t.write(kv([3], ["a"]))
    assert sorted((r["id"], r["dt"]) for r in rows(t)) == [(2, "a"), (3, "a"), (3, "b"), (4, "b")]


def test_duplicate_keys_in_one_batch_keep_the_last(catalog):
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], options={"bucket": "2"})
    t.write(kv([7, 7, 7, 8], ["x", "x", "x", "x"], ["first", "second", "third", "other"]))
    assert [(r["id"], r["name"]) for r in rows(t)] == [(7, "third"), (8, "other")]
    files = t.system_table("files")
    assert sum(files.column("record_count").to_pylist()) == 2  # folded in the writer


def test_row_kinds_from_a_column(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])
    t = catalog.create_table("db.rk", schema, primary_keys=["id"], options={"bucket": "1", "rowkind.field": "op"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I", "+I", "+I"]}, schema=schema))
    t.write(pa.table({"id": [2, 3, 3], "v": ["b", "c", "c2"], "op": ["-D", "-U", "+U"]}, schema=schema))
    assert [(r["id"], r["v"]) for r in rows(t)] == [(1, "a"), (3, "c2")]
    with pytest.raises(DataError, match="op"):
        t.write(pa.table({"id": [9], "v": ["z"], "op": ["*"]}, schema=schema))
    assert t.latest_snapshot().id == 2


def test_ignore_delete(catalog):
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], options={"bucket": "1", "ignore-delete": "true"})
    t.write(kv([1, 2], ["a", "a"]))
    t.write(kv([1], ["a"]), row_kinds="-D")
    assert [r["id"] for r in rows(t)] == [1, 2]


def test_append_tables_unaware_and_fixed_bucket(catalog):
    schema = pa.schema([("k", pa.int32()), ("v", pa.string())])
    plain = catalog.create_table("db.plain", schema)
    plain.write(pa.table({"k": [1, 1], "v": ["a", "a"]}, schema=schema))
    plain.write(pa.table({"k": [1], "v": ["a"]}, schema=schema))
    assert plain.read().num_rows == 3  # duplicates kept
    with pytest.raises(SchemaError, match="'bucket' = 4 needs 'bucket-key'"):  # refused at creation, as Paimon does
        catalog.create_table("db.bad", schema, options={"bucket": "4"})
    assert "bad" not in catalog.list_tables("db")
    fixed = catalog.create_table("db.fixed", schema, options={"bucket": "4", "bucket-key": "k"})
    fixed.write(pa.table({"k": list(range(100)), "v": ["x"] * 100}, schema=schema))
    files = fixed.system_table("files")
    assert set(files.column("bucket").to_pylist()) <= {0, 1, 2, 3} and len(set(files.column("bucket").to_pylist())) > 1
    with pytest.raises(DataError, match="append table"):
        fixed.write(pa.table({"k": [1], "v": ["x"]}, schema=schema), row_kinds="-D")


def test_overwrite_static_dynamic_and_truncate(catalog):
    schema = pa.schema([("dt", pa.string()), ("n", pa.int64())])
    t = catalog.create_table("db.o", schema, partition_keys=["dt"])
    t.write(pa.table({"dt": ["a", "b", "c"], "n": [1, 2, 3]}, schema=schema))
    r = t.write(pa.table({"dt": ["a"], "n": [10]}, schema=schema), overwrite={"dt": "a"})
    assert r.commit_kind.value == "OVERWRITE" and r.deleted_files == 1
    assert sorted(x["n"] for x in t.read().to_pylist()) == [2, 3, 10]
    t.write(pa.table({"dt": ["b", "d"], "n": [20, 40]}, schema=schema), overwrite=True)  # dynamic
    assert sorted(x["n"] for x in t.read().to_pylist()) == [3, 10, 20, 40]
    with pytest.raises(SchemaError, match="partition"):
        t.write(pa.table({"dt": ["z"], "n": [0]}, schema=schema), overwrite={"dt": "a"})
    t.truncate()
    assert t.read().num_rows == 0
    assert t.read(snapshot_id=1).num_rows == 3
    assert t.latest_snapshot().total_record_count == 0


def test_exactly_once_with_commit_identity(catalog):
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], options={"bucket": "1"})
    first = t.write(kv([1], ["a"]), commit_user="dag.task", commit_identifier=20261121)
    again = t.write(kv([1], ["a"]), commit_user="dag.task", commit_identifier=20261121)
    assert again.already_committed and again.snapshot_id == first.snapshot_id
    assert t.latest_snapshot().id == 1
    nxt = t.write(kv([2], ["a"]), commit_user="dag.task", commit_identifier=20261122)
    assert nxt.snapshot_id == 2 and not nxt.already_committed
    # batch commits (no identifier) are never deduplicated, as in Paimon
    t.write(kv([3], ["a"]), commit_user="adhoc")
    t.write(kv([3], ["a"]), commit_user="adhoc")
    assert t.latest_snapshot().id == 4
    assert t.latest_snapshot().commit_identifier == BATCH_COMMIT_IDENTIFIER


def test_writers_and_one_committer(catalog):
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    messages = []
    for part in (kv([1, 2], ["a", "b"]), kv([3, 4], ["a", "b"])):
        w = t.new_write()
        w.write(part)
        messages += w.prepare_commit()
    result = t.new_commit("driver").commit(messages, commit_identifier=1)
    assert result.snapshot_id == 1 and result.added_rows == 4
    assert [r["id"] for r in rows(t)] == [1, 2, 3, 4]


def test_filters_projection_and_pruning(catalog):
    schema = pa.schema([("dt", pa.string()), ("n", pa.int64()), ("s", pa.string())])
    t = catalog.create_table("db.p", schema, partition_keys=["dt"], options={"metadata.stats-mode": "full"})
    for day in ("a", "b", "c"):
        t.write(pa.table({"dt": [day] * 100, "n": list(range(100)), "s": [f"{day}{i}" for i in range(100)]}, schema=schema))
    assert len(t.plan()) == 3
    assert len(t.plan(filter=col("dt") == "b")) == 1
    assert t.plan(filter=col("n") > 1000) == []  # value statistics skip every file
    got = t.read(filter=(col("dt") == "b") & (col("n") >= 98), columns=["s"])
    assert got.column_names == ["s"] and got.column("s").to_pylist() == ["b98", "b99"]
    assert sum(b.num_rows for b in t.to_batches(filter=col("n") < 10)) == 30


def test_time_travel_by_timestamp_and_tag(catalog):
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], options={"bucket": "1"})
    t.write(kv([1], ["a"]))
    between = int(time.time() * 1000)
    time.sleep(0.01)
    t.write(kv([2], ["a"]))
    assert [r["id"] for r in rows(t, timestamp=between)] == [1]
    with pytest.raises(SnapshotNotFoundError):
        t.read(timestamp=1)
    t.tag_manager.create("first", t.snapshot_manager.snapshot(1))
    assert [r["id"] for r in rows(t, tag="first")] == [1]
    with pytest.raises(TagNotFoundError):
        t.read(tag="nope")
    with pytest.raises(SnapshotNotFoundError):
        t.read(snapshot_id=99)


def test_schema_evolution_reads_old_files_by_field_id(catalog):
    t = catalog.create_table("db.e", KV, primary_keys=["id", "dt"], options={"bucket": "1"})
    t.write(kv([1, 2], ["a", "a"]))
    t = t.alter([AddColumn("extra", pa.int32()), RenameColumn("name", "label"), DropColumn("amount")])
    assert t.schema.id == 1 and t.schema.highest_field_id == 4
    new_schema = t.arrow_schema
    t.write(pa.table({"id": [2], "dt": ["a"], "label": ["new"], "extra": [7]}, schema=new_schema))
    assert rows(t) == [{"id": 1, "dt": "a", "label": "n1", "extra": None}, {"id": 2, "dt": "a", "label": "new", "extra": 7}]
    t = t.alter([UpdateColumnType("extra", pa.int64())])
    assert t.read().schema.field("extra").type == pa.int64()
    with pytest.raises(SchemaChangeError, match="extra"):
        t.alter([UpdateColumnType("extra", pa.int16())])
    with pytest.raises(SchemaChangeError, match="id"):
        t.alter([DropColumn("id")])
    with pytest.raises(InvalidOptionError):
        t.alter([SetOption("no-such-option", "1")])
    assert t.refresh().schema.id == 2


def test_wrong_data_is_refused_and_nothing_is_committed(catalog):
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], options={"bucket": "1"})
    t.write(kv([1], ["a"]))
    before = sorted(p.name for p in (catalog.file_io and __import__("pathlib").Path(t.path)).rglob("*"))
    with pytest.raises(SchemaError, match="missing columns"):
        t.write(pa.table({"id": [2], "dt": ["a"]}))
    with pytest.raises(SchemaError, match="amount"):
        t.write(pa.table({"id": [2], "dt": ["a"], "name": ["x"], "amount": ["not a number"]}))
    with pytest.raises(DataError, match="primary key column 'id'"):
        t.write(pa.table({"id": [None], "dt": ["a"], "name": ["x"], "amount": [1.0]}))
    after = sorted(p.name for p in __import__("pathlib").Path(t.path).rglob("*"))
    assert before == after
    assert t.latest_snapshot().id == 1 and rows(t)[0]["id"] == 1


def test_catalog_lifecycle(catalog):
    assert catalog.list_databases() == ["db"]
    catalog.create_table("db.t", KV, primary_keys=["id", "dt"])
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.t", KV)
    assert catalog.create_table("db.t", KV, ignore_if_exists=True).identifier == "db.t"
    assert catalog.list_tables("db") == ["t"]
    catalog.drop_table("db.t")
    with pytest.raises(TableNotFoundError):
        catalog.get_table("db.t")
    with pytest.raises(SchemaError, match="nope"):
        catalog.create_table("db.x", KV, primary_keys=["nope"])
    with pytest.raises(SchemaError, match="partition"):
        catalog.create_table("db.x", KV, primary_keys=["dt"], partition_keys=["dt"])


def test_bucket_count_change_without_overwrite_is_a_conflict(catalog):
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], options={"bucket": "2"})
    t.write(kv([1], ["a"]))
    w = t.new_write()
    w.write(kv([2], ["a"]))
    messages = w.prepare_commit()
    from dataclasses import replace

    changed = [replace(m, total_buckets=4) for m in messages]
    with pytest.raises(CommitConflictError, match="buckets"):
        t.new_commit().commit(changed)
    assert t.latest_snapshot().id == 1


def test_deleting_an_already_deleted_file_is_a_conflict(catalog):
    schema = pa.schema([("n", pa.int64())])
    t = catalog.create_table("db.t", schema)
    t.write(pa.table({"n": [1]}, schema=schema))
    entry = t.manifest_io.live_entries(t.latest_snapshot())[0]
    from paimonflow.core.write.messages import CommitMessage

    drop = CommitMessage(partition=(), bucket=entry.bucket, total_buckets=entry.total_buckets, new_files=(),
                         deleted_files=(entry.file,))
    t.new_commit().commit([drop])
    with pytest.raises(CommitConflictError, match="already deleted"):
        t.new_commit().commit([drop])


def test_files_roll_at_target_size_and_formats(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string())])
    data = pa.table({"id": list(range(20000)), "s": [f"value-{i:08d}" for i in range(20000)]}, schema=schema)
    rolled = catalog.create_table("db.roll", schema, primary_keys=["id"], options={"bucket": "1", "target-file-size": "64kb"})
    rolled.write(data)
    assert len(rolled.system_table("files")) > 3
    assert rolled.read().sort_by("id").equals(data)
    for fmt in ("orc", "avro"):
        t = catalog.create_table(f"db.{fmt}", schema, primary_keys=["id"], options={"bucket": "2", "file.format": fmt})
        t.write(data.slice(0, 500))
        t.write(data.slice(250, 10), row_kinds="-D")
        assert t.read().num_rows == 490
        assert all(p.endswith(f".{fmt}") for p in t.system_table("files").column("file_path").to_pylist())


def test_parquet_layout_is_paimons(catalog):
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    t.write(kv([2, 1], ["a", "a"]))
    path = t.system_table("files").column("file_path")[0].as_py()
    assert "/dt=a/bucket-0/data-" in path
    f = pq.read_table(path)
    assert f.column_names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "dt", "name", "amount"]
    assert f.column("_KEY_id").to_pylist() == [1, 2]  # sorted by key
    assert f.schema.field("_VALUE_KIND").type == pa.int8()


def test_manifests_merge_and_the_table_stays_correct(catalog):
    schema = pa.schema([("n", pa.int64())])
    t = catalog.create_table("db.m", schema, options={"manifest.merge-min-count": "3"})
    for i in range(12):
        t.write(pa.table({"n": [i]}, schema=schema))
    metas = t.system_table("manifests")
    assert len(metas) < 12
    assert sorted(t.read().column("n").to_pylist()) == list(range(12))
    t.write(pa.table({"n": [99]}, schema=schema), overwrite=True)
    assert t.read().column("n").to_pylist() == [99]


def test_system_tables(catalog):
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], options={"bucket": "1"})
    t.write(kv([1, 2], ["a", "a"]))
    snaps = t.system_table("snapshots")
    assert snaps.column("snapshot_id").to_pylist() == [1] and snaps.column("total_record_count").to_pylist() == [2]
    assert t.system_table("schemas").column("schema_id").to_pylist() == [0]
    options = t.system_table("options")
    assert dict(zip(options.column("key").to_pylist(), options.column("value").to_pylist(), strict=True)) == {"bucket": "1"}
    assert t.system_table("files").column("record_count").to_pylist() == [2]
    assert len(t.system_table("manifests")) == 1
    assert catalog.load_system_table("db.t$snapshots").num_rows == 1
    with pytest.raises(LookupError):
        t.system_table("nope")


class _FlakyPublish:
    """A real LocalFileIO whose snapshot publish fails once, after (or before) it really happened."""

    def __init__(self, inner, *, landed: bool) -> None:
        self._inner, self._landed, self.failures = inner, landed, 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def create_if_absent(self, path, data):
        from paimonflow.core.errors import StorageError

        if "/snapshot/snapshot-" in path and self.failures == 0:
            self.failures += 1
            if self._landed:
                self._inner.create_if_absent(path, data)
            raise StorageError("connection reset while publishing")
        return self._inner.create_if_absent(path, data)


@pytest.mark.parametrize("landed", [True, False])
def test_unknown_publish_outcome_commits_exactly_once(tmp_path, landed):
    from paimonflow.core.fs import LocalFileIO

    flaky = _FlakyPublish(LocalFileIO(), landed=landed)
    catalog = Catalog(str(tmp_path / "wh"), file_io=flaky)
    catalog.create_database("db")
    t = catalog.create_table("db.t", KV, primary_keys=["id", "dt"], options={"bucket": "1"})
    result = t.write(kv([1, 2], ["a", "a"]), commit_user="job", commit_identifier=7)
    assert flaky.failures == 1
    assert result.snapshot_id == 1
    assert t.snapshot_manager.list_ids() == [1]
    assert [r["id"] for r in rows(t)] == [1, 2]


def test_input_changelog_producer_keeps_every_input_row(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.cl", schema, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [2, 1], "v": ["b", "a"]}, schema=schema))
    t.write(pa.table({"id": [1, 3, 1], "v": ["a1", "c", "a2"]}, schema=schema), row_kinds=pa.array(["-U", "+I", "+U"]))
    snap = t.latest_snapshot()
    assert snap.changelog_record_count == 3 and snap.changelog_manifest_list
    (entry,) = t.manifest_io.changelog_entries(snap)
    assert entry.file.file_name.startswith("changelog-")
    path = f"{t.path}/bucket-0/{entry.file.file_name}"
    rows_ = pq.read_table(path).select(["id", "_VALUE_KIND", "v"]).to_pylist()
    # every input row, unfolded, sorted by key then arrival
    assert [(r["id"], r["_VALUE_KIND"], r["v"]) for r in rows_] == [(1, 1, "a1"), (1, 2, "a2"), (3, 0, "c")]
    assert [(r["id"], r["v"]) for r in rows(t)] == [(1, "a2"), (2, "b"), (3, "c")]  # data files are folded
    t.write(pa.table({"id": [9], "v": ["z"]}, schema=schema), overwrite=True)
    assert t.latest_snapshot().changelog_manifest_list is None  # overwrites never commit changelog


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_sequence_field_decides_which_row_is_newer(catalog, order):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("ts", pa.int64())])
    t = catalog.create_table(f"db.seq_{order}", schema, primary_keys=["id"],
                             options={"bucket": "1", "sequence.field": "ts", "sequence.field.sort-order": order})
    t.write(pa.table({"id": [1, 2, 3], "v": ["first", "first", "first"], "ts": [100, 100, None]}, schema=schema))
    # a later write with an older sequence value loses (ascending); in one batch too
    t.write(pa.table({"id": [1, 2, 2, 3], "v": ["second", "second", "third", "second"], "ts": [50, 200, 150, 1]},
                     schema=schema))
    got = {r["id"]: r["v"] for r in t.read().to_pylist()}
    if order == "ascending":
        assert got == {1: "first", 2: "second", 3: "second"}  # null is the oldest
    else:
        assert got == {1: "second", 2: "first", 3: "second"}
    t.write(pa.table({"id": [1], "v": ["x"], "ts": [0 if order == "ascending" else 10_000]}, schema=schema),
            row_kinds="-D")
    assert 1 in {r["id"] for r in t.read().to_pylist()}  # an older delete does not delete
    with pytest.raises(SchemaError, match="nope"):
        catalog.create_table("db.badseq", schema, primary_keys=["id"], options={"sequence.field": "nope"})


def test_batches_stream_append_files_in_pieces(catalog):
    schema = pa.schema([("n", pa.int64()), ("s", pa.string())])
    t = catalog.create_table("db.big", schema)
    for part in range(3):
        t.write(pa.table({"n": list(range(part * 100_000, (part + 1) * 100_000)), "s": ["x"] * 100_000}, schema=schema))
    sizes = [b.num_rows for b in t.to_batches(columns=["n"])]
    assert sum(sizes) == 300_000 and max(sizes) <= 65536  # never a whole file at once
    filtered = list(t.to_batches(columns=["s"], filter=col("n") >= 299_990))
    assert sum(b.num_rows for b in filtered) == 10 and filtered[0].schema.names == ["s"]


def test_full_compaction_rewrites_buckets_into_one_top_level_run(catalog):
    t = catalog.create_table("db.c", KV, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    t.write(kv([1, 2, 3, 4], ["a", "a", "b", "b"]))
    t.write(kv([2, 5], ["a", "b"], ["two", "five"]))
    t.write(kv([1], ["a"]), row_kinds="-D")
    before = rows(t)
    result = t.compact(full=True, commit_user="maint", commit_identifier=1)
    # files that overlap nothing and hold no retractions are upgraded (metadata only), not rewritten
    assert result.snapshot_id == 4 and result.output_level == 5 and 0 < result.rows_written <= len(before)
    assert result.files_read > result.files_written
    snap = t.latest_snapshot()
    assert snap.commit_kind.value == "COMPACT" and snap.total_record_count == len(before)
    files = t.system_table("files")
    assert set(files.column("level").to_pylist()) == {5} and "COMPACT" in files.column("file_source").to_pylist()
    assert rows(t) == before
    assert [r["id"] for r in rows(t, snapshot_id=3)] == [r["id"] for r in before]
    again = t.compact(full=True, commit_user="maint", commit_identifier=1)
    assert again.already_committed and t.latest_snapshot().id == 4
    assert t.compact(full=True).snapshot_id is None  # nothing left to do
    t.write(kv([6], ["a"]))
    only_b = t.compact(full=True, partitions=[{"dt": "b"}])
    assert only_b.snapshot_id is None  # partition b is already compacted
    assert t.compact(full=True, partitions=[{"dt": "a"}]).buckets >= 1
    assert set(t.system_table("files").column("level").to_pylist()) == {5}


def test_compaction_partition_specs_are_text_parsed_as_the_partition_columns_type(catalog):
    """``compact --partition hh=10`` gives text: it names the INT partition 10 (once it named no
    partition the filter could compare, and every partition was compacted)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("hh", pa.int32(), nullable=False)])
    t = catalog.create_table("db.hours", schema, primary_keys=["id", "hh"], partition_keys=["hh"],
                             options={"bucket": "1", "write-only": "true"})
    for _ in range(2):
        t.write(pa.table({"id": [1, 2], "hh": pa.array([9, 10], pa.int32())}, schema=schema))
    result = t.compact(full=True, partitions=[{"hh": "10"}])
    assert result.files_read == 2
    levels = {(r["partition"], r["level"]) for r in t.system_table("files").to_pylist()}
    assert levels == {("{hh=9}", 0), ("{hh=10}", 5)}
    assert t.compact(full=True, partitions=[{"hh": 9}]).files_read == 2  # a value of the column's type
    with pytest.raises(DataError, match="partition value 'ten' of hh"):
        t.compact(full=True, partitions=[{"hh": "ten"}])
    with pytest.raises(SchemaError, match="column 'hh' has type INT"):
        t.compact(full=True, partitions=[{"hh": 9.5}])


def test_compaction_of_the_default_partition_by_its_name(catalog):
    """``--partition dt=__DEFAULT_PARTITION__`` (the table's ``partition.default-name``) names the
    null partition, as the Spark source's ``partitions`` option does (once it compared with None
    and compacted nothing)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string())])
    t = catalog.create_table("db.nulls", schema, partition_keys=["dt"],
                             options={"write-only": "true", "partition.default-name": "none"})
    for _ in range(2):
        t.write(pa.table({"id": [1, 2], "dt": [None, "a"]}, schema=schema))
    result = t.compact(full=True, partitions=[{"dt": "none"}])
    assert result.files_read == 2
    files = sorted(r["partition"] for r in t.system_table("files").to_pylist())
    assert files == ["{dt=None}", "{dt=a}", "{dt=a}"]  # the null partition's two files are one


def test_full_compaction_of_an_append_table_and_its_conflict(catalog):
    schema = pa.schema([("n", pa.int64())])
    t = catalog.create_table("db.ac", schema)
    for i in range(4):
        t.write(pa.table({"n": [i]}, schema=schema))
    w = t.new_write()  # plan a competing compaction of the same files first
    result = t.compact(full=True)
    assert result.files_read == 4 and result.files_written == 1
    assert sorted(t.read().column("n").to_pylist()) == [0, 1, 2, 3]
    stale = t.plan(snapshot_id=4)[0]
    new = w.write_rewritten((), 0, pa.table({"n": [0, 1, 2, 3]}, schema=schema), np.zeros(4, np.int8),
                            np.arange(4), level=0)
    from paimonflow.core.meta.snapshots import CommitKind
    from paimonflow.core.write.messages import CommitMessage

    msg = CommitMessage(partition=(), bucket=0, total_buckets=-1, new_files=tuple(new), deleted_files=stale.files)
    with pytest.raises(CommitConflictError, match="already deleted"):
        t.new_commit().commit([msg], kind=CommitKind.COMPACT)
    assert sorted(t.read().column("n").to_pylist()) == [0, 1, 2, 3]


def test_minor_compaction_follows_universal_picking(catalog):
    t = catalog.create_table("db.minor", KV, primary_keys=["id", "dt"], options={"bucket": "1", "write-only": "true"})
    for i in range(4):
        t.write(kv([i, i + 10], ["a", "a"]))
    assert t.compact(full=False).snapshot_id is None  # 4 runs < num-sorted-run.compaction-trigger (5)
    t.write(kv([1], ["a"]), row_kinds="-D")
    before = rows(t)
    result = t.compact(full=False)
    assert result.snapshot_id == 6 and result.files_read == 5
    levels = t.system_table("files").column("level").to_pylist()
    assert 0 not in levels and len(levels) == 1  # all runs picked: one run at the top, deletes dropped
    assert rows(t) == before and 1 not in [r["id"] for r in before]
    for i in range(5):
        t.write(kv([100 + i], ["a"]))
    again = t.compact(full=False)
    assert again.snapshot_id is not None and rows(t) == sorted(before + [
        {"id": 100 + i, "dt": "a", "name": f"n{100 + i}", "amount": float(100 + i)} for i in range(5)],
        key=lambda r: tuple(str(v) for v in r.values()))


ENGINE_SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("price", pa.float64()), ("count", pa.int64()),
                           ("name", pa.string())])


def _engine_rows(*rows_):
    return pa.table({"k": [r[0] for r in rows_], "price": [r[1] for r in rows_], "count": [r[2] for r in rows_],
                     "name": [r[3] for r in rows_]}, schema=ENGINE_SCHEMA)


@pytest.mark.parametrize("one_commit", [False, True])
def test_partial_update_through_the_table(catalog, one_commit):
    """Seed 004's example: <1, 23.0, 10, NULL>, <1, NULL, NULL, 'This is a book'>, <1, 25.2, NULL, NULL>
    give <1, 25.2, 10, 'This is a book'> (whether folded by the writer or merged by the reader)."""
    t = catalog.create_table(f"db.pu{int(one_commit)}", ENGINE_SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "partial-update"})
    batches = [_engine_rows((1, 23.0, 10, None)), _engine_rows((1, None, None, "This is a book")),
               _engine_rows((1, 25.2, None, None))]
    if one_commit:
        t.write(pa.concat_tables(batches))
    else:
        for b in batches:
            t.write(b)
    assert t.read().to_pylist() == [{"k": 1, "price": 25.2, "count": 10, "name": "This is a book"}]
    t.compact(full=True)
    assert t.read().to_pylist() == [{"k": 1, "price": 25.2, "count": 10, "name": "This is a book"}]
    with pytest.raises(DataError):
        t.write(_engine_rows((1, None, None, None)), row_kinds="-D")  # needs remove-record-on-delete


def test_aggregation_through_the_table(catalog):
    """Seed 004's example: price max, count sum: <1, 23.0, 15>, <1, 30.2, 20> give <1, 30.2, 35>."""
    t = catalog.create_table("db.agg", ENGINE_SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.price.aggregate-function": "max",
        "fields.count.aggregate-function": "sum", "fields.name.aggregate-function": "listagg",
        "fields.price.ignore-retract": "true", "fields.name.ignore-retract": "true"})
    t.write(_engine_rows((1, 23.0, 15, "a"), (2, 1.0, 1, "x")))
    t.write(_engine_rows((1, 30.2, 20, "b")))
    assert rows(t) == [{"k": 1, "price": 30.2, "count": 35, "name": "a,b"}, {"k": 2, "price": 1.0, "count": 1, "name": "x"}]
    t.write(_engine_rows((1, None, 5, None)), row_kinds="-U")  # sum retracts
    assert rows(t)[0]["count"] == 30
    t.compact(full=True)
    assert rows(t)[0] == {"k": 1, "price": 30.2, "count": 30, "name": "a,b"}


def test_first_row_through_the_table(catalog):
    t = catalog.create_table("db.fr", ENGINE_SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "first-row"})
    t.write(_engine_rows((1, 1.0, 1, "first"), (2, 2.0, 2, "first")))
    t.write(_engine_rows((1, 9.0, 9, "second"), (3, 3.0, 3, "second")))
    assert [(r["k"], r["name"]) for r in rows(t)] == [(1, "first"), (2, "first"), (3, "second")]
    t.compact(full=False)
    t.compact(full=True)
    assert [(r["k"], r["name"]) for r in rows(t)] == [(1, "first"), (2, "first"), (3, "second")]


def test_unsupported_merge_options_are_refused_on_read_and_write(catalog):
    t = catalog.create_table("db.rbm", ENGINE_SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.count.aggregate-function": "rbm64"})
    with pytest.raises((UnsupportedError, InvalidOptionError)):
        t.write(_engine_rows((1, 1.0, 1, "x")))
    with pytest.raises((UnsupportedError, InvalidOptionError)):
        t.read()


def test_orc_files_hold_time_as_paimons_int_of_milliseconds(catalog):
    """ORC has no TIME type: Paimon stores milliseconds of the day in an INT (Java reads it so)."""
    import datetime as dt

    import pyarrow.orc as orc

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("t", pa.time32("ms"))])
    data = pa.table({"id": [1, 2], "t": [dt.time(1, 2, 3, 456000), None]}, schema=schema)
    t = catalog.create_table("db.orc_time", schema, primary_keys=["id"], options={"bucket": "1", "file.format": "orc"})
    t.write(data)
    assert t.read().sort_by("id").equals(data)
    stored = orc.ORCFile(t.system_table("files").column("file_path")[0].as_py()).read(columns=["t"])
    assert stored.schema.field("t").type == pa.int32() and stored.column("t").to_pylist() == [3723456, None]
