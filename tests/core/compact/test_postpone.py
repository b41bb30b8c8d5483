"""Postpone-bucket tables (``bucket = -2``): writes land in ``bucket-postpone`` as Paimon's postpone
writers put them, batch reads skip them, a postpone compaction gives them real buckets in one
COMPACT snapshot, and every maintenance operation handles their files."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.compact.postpone import PostponeBucketCount, plan_postpone_compaction
from paimonflow.core.data.bucket import bucket_ids
from paimonflow.core.errors import InvalidArgumentError, InvalidOptionError
from paimonflow.core.meta.layout import POSTPONE_BUCKET
from paimonflow.core.meta.snapshots import CommitKind
from paimonflow.core.read.stream import StreamingScan

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64())])


@pytest.fixture
def catalog(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    return catalog


def _table(catalog, name="t", **options):
    return catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "-2", **options})


def _rows(ids, v, dt="a"):
    ids = list(ids)
    values = [v] * len(ids) if isinstance(v, int) else list(v)
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": values}, schema=SCHEMA)


def _entries(table):
    return table.manifest_io.live_entries(table.latest_snapshot())


def _state(table) -> dict:
    return {(r["id"], r["dt"]): r["v"] for r in table.read().to_pylist()}


def test_writes_land_in_the_postpone_bucket_as_paimon_writes_them(catalog):
    t = _table(catalog)
    t.write(_rows([5, 3, 5, 1], [1, 2, 3, 4]), commit_user="alice")
    (entry,) = _entries(t)
    f = entry.file
    assert (entry.bucket, entry.total_buckets, f.level, f.file_source) == (POSTPONE_BUCKET, POSTPONE_BUCKET, 0, 0)
    assert f.file_name.startswith("data--u-alice-s-") and "-w-" in f.file_name and f.file_name.endswith(".avro")
    assert (f.min_sequence_number, f.max_sequence_number, f.row_count) == (-1, -1, 4)  # unmerged, unknown order
    assert f.value_stats_cols == ()  # metadata.stats-mode=none
    assert os.listdir(os.path.join(t.path, "dt=a")) == ["bucket-postpone"]
    # the rows as written: arrival order, duplicates kept (the compaction merges them)
    split = plan_postpone_compaction(t).tasks[0]
    rows = t.split_reader().read_file(split_of(split), f, ["id", "v"], system=["_VALUE_KIND"])
    assert rows.column("id").to_pylist() == [5, 3, 5, 1] and rows.column("v").to_pylist() == [1, 2, 3, 4]
    # many writes never compact: each is one more file in the postpone bucket
    for i in range(6):
        t.write(_rows([i], i))
    assert len(_entries(t.refresh())) == 7 and all(e.bucket == POSTPONE_BUCKET for e in _entries(t.refresh()))


def split_of(task):
    from paimonflow.core.read.scan import Split

    return Split(partition=task.partition, bucket=POSTPONE_BUCKET, total_buckets=POSTPONE_BUCKET,
                 files=task.postpone_files)


def test_batch_and_incremental_reads_skip_the_postpone_bucket_streaming_delta_reads_it(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "2"})
    stream = StreamingScan(t, mode="from-snapshot", snapshot_id=1)
    t.write(_rows([1, 2], 10))
    t.write(_rows([2], 20))
    assert t.read().num_rows == 0 and t.plan() == []
    assert t.read_changes(0, 2, mode="delta").num_rows == 0  # Paimon's batch incremental reads: real buckets only
    batch = stream.poll()
    assert batch is not None and sorted(batch.rows.column("v").to_pylist()) == [10, 10, 20]
    t.compact()
    assert stream.poll().rows.num_rows == 0  # the COMPACT snapshot adds no delta
    assert _state(t.refresh()) == {(1, "a"): 10, (2, "a"): 20}


def test_streaming_with_a_changelog_producer_reads_only_real_buckets(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "1", "changelog-producer": "input"})
    stream = StreamingScan(t, mode="from-snapshot", snapshot_id=1)
    t.write(_rows([1], 10))
    assert stream.poll().rows.num_rows == 0  # no changelog before the compaction
    assert not [p for p in os.listdir(t.path) if p == "changelog"]
    t.compact()  # the real-bucket writer's 'input' changelog is the stream
    rows = stream.poll().rows
    assert rows.column("v").to_pylist() == [10]


def test_compaction_replays_in_write_order_merges_and_commits_once(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "3"})
    t.write(pa.concat_tables([_rows(range(20), 1), _rows(range(10), 1, dt="b")]))
    t.write(_rows(range(5, 15), 2))
    t.write(_rows([0, 1], 0), row_kinds="-D")
    t.write(_rows([7], 3, dt="b"))
    before = t.latest_snapshot().id
    result = t.compact()
    t = t.refresh()
    snapshot = t.latest_snapshot()
    assert snapshot.id == before + 1 and snapshot.commit_kind is CommitKind.COMPACT
    assert result.files_read == 5 and result.rows_read == 43
    entries = _entries(t)
    assert {e.total_buckets for e in entries} == {3} and POSTPONE_BUCKET not in {e.bucket for e in entries}
    expected = {(i, "a"): 2 if 5 <= i < 15 else 1 for i in range(2, 20)}
    expected.update({(i, "b"): 3 if i == 7 else 1 for i in range(10)})
    assert _state(t) == expected
    # each row sits in the bucket Paimon's hash of its bucket key chooses
    reader = t.split_reader()
    for split in t.plan():
        ids = reader.read_split(split, columns=["id", "dt"])
        assert set(bucket_ids([ids.column("id")], 3).tolist()) == {split.bucket}  # bucket key: id
    # postpone files are gone from the snapshot, not yet from storage (expiry deletes them)
    assert len(os.listdir(os.path.join(t.path, "dt=a", "bucket-postpone"))) == 3
    assert t.compact().snapshot_id is None  # nothing left to compact


def test_compaction_merges_with_the_merge_engine_in_write_order(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "2", "merge-engine": "aggregation",
                           "fields.v.aggregate-function": "sum"})
    for v in (1, 2, 4):
        t.write(_rows(range(3), v))
    t.compact()
    t.write(_rows(range(2), 8))
    t.compact()
    assert _state(t.refresh()) == {(0, "a"): 15, (1, "a"): 15, (2, "a"): 7}


def test_sequence_numbers_continue_in_each_bucket(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "1"})
    t.write(_rows(range(4), 1))
    t.compact()
    t.write(_rows(range(4), 2))
    t.compact()
    files = [e.file for e in _entries(t.refresh())]
    assert sorted((f.min_sequence_number, f.max_sequence_number) for f in files)[-1] == (4, 7)
    assert set(_state(t.refresh()).values()) == {2}


def test_bucket_count_existing_then_default_then_estimated(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "2"})
    t.write(_rows(range(50), 1))
    t.compact()
    t.write(_rows(range(50), 2))
    t.write(_rows(range(50), 2, dt="b"))
    plan = plan_postpone_compaction(t.refresh())
    assert {task.partition: task.total_buckets for task in plan.tasks} == {("a",): 2, ("b",): 2}
    # a partition with real buckets keeps their count whatever the default says now
    raw = {**t.schema.options, "postpone.default-bucket-num": "5"}
    counts = PostponeBucketCount.from_options(raw)
    assert counts.estimate([]) == 5 and plan_postpone_compaction(t.refresh()).tasks[0].total_buckets == 2
    by_rows = PostponeBucketCount.from_options({"postpone.target-row-num-per-bucket": "30"})
    by_size = PostponeBucketCount.from_options({})
    files = [e.file for e in _entries(t.refresh()) if e.bucket == POSTPONE_BUCKET]
    assert by_rows.estimate(files) == 4 and by_size.estimate(files) == 1  # 100 rows; 1 GiB per bucket
    assert PostponeBucketCount.from_options({"postpone.target-size-per-bucket": "1 b"}).estimate(files) == sum(
        f.file_size for f in files)
    with pytest.raises(InvalidOptionError, match=r"postpone\.default-bucket-num"):
        PostponeBucketCount.from_options({"postpone.default-bucket-num": "0"})


def test_estimated_bucket_count_without_a_default(catalog):
    t = _table(catalog, **{"postpone.target-row-num-per-bucket": "10"})
    t.write(_rows(range(35), 1))
    t.compact()
    assert {e.total_buckets for e in _entries(t.refresh())} == {4}
    assert len(_state(t.refresh())) == 35


def test_partition_or_bucket_selection_is_refused_as_in_paimon(catalog):
    t = _table(catalog)
    t.write(_rows([1], 1))
    with pytest.raises(InvalidArgumentError, match="compacted whole"):
        t.compact(partitions=[{"dt": "a"}])
    with pytest.raises(InvalidArgumentError, match="compacted whole"):
        t.compact(buckets=[0])


def test_exactly_once_with_a_commit_identity(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "2"})
    t.write(_rows(range(10), 1))
    first = t.compact(commit_user="c", commit_identifier=3)
    again = t.refresh().compact(commit_user="c", commit_identifier=3)
    assert again.already_committed and again.snapshot_id == first.snapshot_id


def test_orphan_removal_and_expiry_handle_postpone_files(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "2"})
    t.write(_rows(range(10), 1))
    postponed = os.path.join(t.path, "dt=a", "bucket-postpone")
    stray = os.path.join(postponed, "data--u-x-s-1-w-stray-1.avro")
    with open(stray, "wb") as f:
        f.write(b"junk")
    orphans = t.remove_orphan_files(older_than_millis=0, min_older_than_millis=0)
    assert [os.path.basename(p) for p in orphans.orphans] == ["data--u-x-s-1-w-stray-1.avro"]
    assert len(os.listdir(postponed)) == 1  # the live postpone file stays
    t.compact()
    t = t.refresh()
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)
    assert os.listdir(postponed) == []  # the compacted postpone file goes with its last snapshot
    assert len(_state(t.refresh())) == 10


def test_tags_and_branches_keep_what_waits_in_the_postpone_bucket(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "2"})
    t.write(_rows(range(10), 1))
    t.tags.create("staged", snapshot_id=1)
    t.compact()
    t = t.refresh()
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)
    postponed = os.path.join(t.path, "dt=a", "bucket-postpone")
    assert len(os.listdir(postponed)) == 1  # the tag still needs it
    assert t.read(tag="staged").num_rows == 0  # a batch read of the tag skips the postpone bucket
    t.branches.create("b", tag="staged")
    branch = t.switch_to_branch("b")
    assert branch.read().num_rows == 0
    branch.compact()
    assert len(_state(branch.refresh())) == 10 and len(_state(t.refresh())) == 10


def test_rollback_to_before_the_compaction_puts_the_rows_back_in_waiting(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "2"})
    t.write(_rows(range(10), 1))
    t.compact()
    assert len(_state(t.refresh())) == 10
    t.refresh().rollback(snapshot_id=1)
    t = t.refresh()
    assert t.read().num_rows == 0 and [e.bucket for e in _entries(t)] == [POSTPONE_BUCKET]
    t.compact()
    assert len(_state(t.refresh())) == 10


def test_postpone_buckets_need_a_primary_key(catalog):
    t = catalog.create_table("db.append", SCHEMA, partition_keys=["dt"], options={"bucket": "-2"})
    with pytest.raises(InvalidOptionError, match="primary-key"):
        t.write(_rows([1], 1))


def test_large_partition_memory_is_bounded_by_the_write_buffer(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "4", "write-buffer-size": "256 kb"})
    ids = np.arange(20_000)
    t.write(_rows(ids, 1))
    t.write(_rows(ids[::2], 2))
    t.compact()
    state = _state(t.refresh())
    assert len(state) == 20_000 and sum(v == 2 for v in state.values()) == 10_000


def test_the_cli_compact_verb_runs_the_postpone_compaction(catalog, tmp_path):
    import json

    from typer.testing import CliRunner

    from paimonflow.core.cli import app

    t = _table(catalog, **{"postpone.default-bucket-num": "2"})
    t.write(_rows(range(10), 1))
    result = CliRunner().invoke(app, ["--json", "compact", "db.t", "-w", str(tmp_path / "wh")],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["files_read"] == 1 and out["rows_written"] == 10
    assert len(_state(t.refresh())) == 10


def test_a_retraction_the_merge_engine_refuses_is_refused_at_write_time(catalog):
    from paimonflow.core.errors import DataError

    t = _table(catalog, **{"merge-engine": "first-row"})
    t.write(_rows([1], 1))
    with pytest.raises(DataError):
        t.write(_rows([1], 1), row_kinds="-D")
    assert len(_entries(t.refresh())) == 1  # nothing committed, nothing that would fail the compaction


def test_postpone_merge_on_read_refuses_reads_that_would_miss_rows_paimon_shows(catalog):
    from paimonflow.core.errors import UnsupportedFeatureError

    t = _table(catalog, **{"postpone.default-bucket-num": "1", "postpone.merge-on-read": "true"})
    t.write(_rows([1], 1))  # writes are what they are without it
    for refused in (t.read, t.compact):
        with pytest.raises(UnsupportedFeatureError, match="postpone merge-on-read"):
            refused()
    assert [e.bucket for e in _entries(t.refresh())] == [POSTPONE_BUCKET]


def test_a_stream_starts_with_the_real_buckets_merged_and_the_postpone_bucket_as_written(catalog):
    t = _table(catalog, **{"postpone.default-bucket-num": "2"})
    t.write(_rows([1, 2], 1))
    t.compact()
    t.write(_rows([2, 3], 5))
    t.write(_rows([1], 0), row_kinds="-D")
    batch = StreamingScan(t.refresh(), mode="latest-full").poll()
    got = sorted(zip(batch.rows.column("rowkind").to_pylist(), batch.rows.column("id").to_pylist(),
                     batch.rows.column("v").to_pylist(), strict=True))
    assert got == [("+I", 1, 1), ("+I", 2, 1), ("+I", 2, 5), ("+I", 3, 5), ("-D", 1, 0)]
