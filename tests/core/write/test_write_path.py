"""The LSM write path: write buffer with spill and k-way merge, level-0 flushes, stop-trigger
back-pressure, write-only writers, writers that compact, and the lookup / full-compaction
changelog producers."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.data import data_file as df
from paimonflow.core.data.binary_row import deserialize_row
from paimonflow.core.errors import CommitConflictError, InvalidOptionError
from paimonflow.core.meta.snapshots import CommitKind
from paimonflow.core.write.buffer import merge_runs

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def batch(ids, v="x", n=None) -> pa.RecordBatch:
    ids = list(ids)
    values = [f"{v}{i}" for i in ids] if isinstance(v, str) else list(v)
    return pa.RecordBatch.from_arrays(
        [pa.array(ids, pa.int64()), pa.array(values, pa.string()),
         pa.array(n if n is not None else ids, pa.int64())], schema=SCHEMA)


def state(table) -> dict[int, tuple]:
    return {r["id"]: (r["v"], r["n"]) for r in table.read().to_pylist()}


def kinds_of(table) -> list[str]:
    return [table.snapshot_manager.snapshot(i).commit_kind.value for i in table.snapshot_manager.list_ids()]


def level0_runs(table) -> int:
    return sum(1 for level in table.system_table("files").column("level").to_pylist() if level == 0)


# -- spilling ----------------------------------------------------------------------------------


def test_spilled_runs_merge_into_one_level0_run_with_newest_rows(catalog, tmp_path):
    t = catalog.create_table("db.spill", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "write-buffer-size": "64kb", "write-only": "true",
                                      "target-file-size": "32kb"})
    rng = np.random.default_rng(7)
    model: dict[int, tuple] = {}
    batches = []
    for round_ in range(40):
        ids = rng.choice(5_000, size=1_000, replace=False)
        batches.append(batch(ids, v=f"r{round_}-", n=np.full(len(ids), round_)))
        for i in ids:
            model[int(i)] = (f"r{round_}-{i}", round_)
    spill_root = tmp_path / "spill"
    spill_root.mkdir()
    with t.new_write(spill_dir=str(spill_root)) as w:
        w.write(iter(batches))
        assert w.spilled_runs >= 5 and w.spilled_bytes > 0
        messages = w.prepare_commit()
    assert os.listdir(spill_root) == []  # spill files are gone once the writer closes
    t.new_commit().commit(messages)
    assert state(t) == model
    (split,) = t.plan()
    assert {f.level for f in split.files} == {0}
    # one flush = one sorted run: the files' key ranges do not overlap
    ranges = sorted((deserialize_row(f.min_key, [pa.int64()]), deserialize_row(f.max_key, [pa.int64()]))
                    for f in split.files)
    assert len(ranges) > 1 and all(a[1] < b[0] for a, b in itertools.pairwise(ranges))
    assert sum(f.row_count for f in split.files) == len(model)  # folded: one row per key


def test_spill_merge_with_few_file_handles_and_a_merge_engine(catalog):
    t = catalog.create_table("db.spill_pu", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "write-buffer-size": "16kb", "write-only": "true",
                                      "local-sort.max-num-file-handles": "2", "merge-engine": "partial-update"})
    with t.new_write() as w:
        for round_ in range(12):
            ids = list(range(round_ * 50, round_ * 50 + 600))
            # even rounds set v, odd rounds set n; nulls never overwrite
            v = [f"v{round_}"] * len(ids) if round_ % 2 == 0 else [None] * len(ids)
            n = [round_] * len(ids) if round_ % 2 else [None] * len(ids)
            w.write(pa.table({"id": ids, "v": v, "n": n}, schema=SCHEMA))
        assert w.spilled_runs > 2
        t.new_commit().commit(w.prepare_commit())
    got = state(t)
    for key in (0, 49, 50, 300, 599, 1149):
        rounds = [r for r in range(12) if r * 50 <= key < r * 50 + 600]
        v_rounds = [r for r in rounds if r % 2 == 0]
        n_rounds = [r for r in rounds if r % 2]
        assert got[key] == (f"v{max(v_rounds)}" if v_rounds else None, max(n_rounds) if n_rounds else None)


def test_without_spilling_a_full_buffer_flushes_level0_files(catalog):
    t = catalog.create_table("db.flush", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "write-buffer-size": "16kb", "write-buffer-spillable": "false",
                                      "write-only": "true"})
    t.write(iter([batch(range(i * 500, i * 500 + 800)) for i in range(10)]))
    assert level0_runs(t) >= 5  # several flushes, several sorted runs
    assert state(t) == {i: (f"x{i}", i) for i in range(5_300)}
    assert kinds_of(t) == ["APPEND"]


def test_stop_trigger_makes_a_compacting_writer_wait_for_compaction(catalog):
    options = {"bucket": "1", "write-buffer-size": "16kb", "write-buffer-spillable": "false",
               "num-sorted-run.compaction-trigger": "2", "num-sorted-run.stop-trigger": "3"}
    t = catalog.create_table("db.stop", SCHEMA, primary_keys=["id"], options=options)
    t.write(iter([batch(range(i * 500, i * 500 + 800)) for i in range(10)]))
    assert kinds_of(t) == ["APPEND", "COMPACT"]
    assert level0_runs(t) <= 3
    assert state(t) == {i: (f"x{i}", i) for i in range(5_300)}


def test_write_only_writers_never_compact_and_others_do(catalog):
    lazy = catalog.create_table("db.lazy", SCHEMA, primary_keys=["id"],
                                options={"bucket": "1", "write-only": "true", "num-sorted-run.compaction-trigger": "2"})
    eager = catalog.create_table("db.eager", SCHEMA, primary_keys=["id"],
                                 options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"})
    for i in range(5):
        lazy.write(batch([i, 100]))
        eager.write(batch([i, 100]))
    assert kinds_of(lazy) == ["APPEND"] * 5 and level0_runs(lazy) == 5
    assert "COMPACT" in kinds_of(eager) and level0_runs(eager) < 5
    assert state(lazy) == state(eager) == {i: (f"x{i}", i) for i in [0, 1, 2, 3, 4, 100]}
    # the dedicated compaction beside write-only writers does the work instead
    result = lazy.compact(full=False)
    assert result.snapshot_id is not None and level0_runs(lazy) == 0


def test_a_reused_writer_keeps_its_bucket_state_across_commits(catalog):
    t = catalog.create_table("db.reuse", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"})
    commit = t.new_commit()
    with t.new_write() as w:
        for i in range(6):
            w.write(batch([i, 50], v=f"c{i}-"))
            commit.commit(w.prepare_commit())
    assert "COMPACT" in kinds_of(t)
    assert state(t) == {**{i: (f"c{i}-{i}", i) for i in range(6)}, 50: ("c5-50", 50)}


def test_full_compaction_delta_commits_keeps_one_sorted_run(catalog):
    t = catalog.create_table("db.cow", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "full-compaction.delta-commits": "1"})
    for i in range(4):
        t.write(batch([i, i + 1]))
        levels = t.system_table("files").column("level").to_pylist()
        assert set(levels) == {t.options.num_levels - 1}  # copy-on-write: always fully compacted
    assert state(t) == {i: (f"x{i}", i) for i in range(5)}


# -- changelog producers -------------------------------------------------------------------------


def changelog(table, snapshot_id: int) -> list[tuple]:
    snap = table.snapshot_manager.snapshot(snapshot_id)
    out = []
    for e in table.manifest_io.changelog_entries(snap):
        assert e.file.file_name.startswith("changelog-")
        rows = pq.read_table(f"{table.path}/bucket-{e.bucket}/{e.file.file_name}").to_pylist()
        out += [(df.ROW_KIND_NAMES[r["_VALUE_KIND"]], r["id"], r["v"]) for r in rows]
    return out


def last_changelog(table) -> list[tuple]:
    return changelog(table, table.latest_snapshot().id)


@pytest.mark.parametrize("producer", ["full-compaction", "lookup"])
def test_changelog_producers_emit_the_change_of_each_key(catalog, producer):
    options = {"bucket": "1", "changelog-producer": producer}
    if producer == "full-compaction":
        options["full-compaction.delta-commits"] = "1"
    t = catalog.create_table(f"db.cl_{producer.replace('-', '_')}", SCHEMA, primary_keys=["id"], options=options)
    t.write(batch([1, 2], v=["a", "b"]))
    assert kinds_of(t) == ["APPEND", "COMPACT"]
    assert last_changelog(t) == [("+I", 1, "a"), ("+I", 2, "b")]
    t.write(pa.table({"id": [1, 2, 3], "v": ["a2", None, "c"], "n": [1, 2, 3]}, schema=SCHEMA),
            row_kinds=pa.array(["+U", "-D", "+I"]))
    assert last_changelog(t) == [("-U", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b"), ("+I", 3, "c")]
    assert state(t) == {1: ("a2", 1), 3: ("c", 3)}


@pytest.mark.parametrize("producer", ["full-compaction", "lookup"])
def test_row_deduplicate_drops_updates_that_change_nothing(catalog, producer):
    options = {"bucket": "1", "changelog-producer": producer, "changelog-producer.row-deduplicate": "true"}
    if producer == "full-compaction":
        options["full-compaction.delta-commits"] = "1"
    t = catalog.create_table("db.dedup_cl", SCHEMA, primary_keys=["id"], options=options)
    t.write(batch([1, 2], v=["a", "b"], n=[1, 2]))
    t.write(batch([1, 2], v=["a", "b2"], n=[1, 2]))
    assert last_changelog(t) == [("-U", 2, "b"), ("+U", 2, "b2")]


def test_lookup_changelog_comes_from_the_dedicated_compaction_beside_write_only_writers(catalog):
    t = catalog.create_table("db.cl_wo", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "lookup", "write-only": "true"})
    t.write(batch([1], v=["a"]))
    t.write(batch([1], v=["b"]))
    assert kinds_of(t) == ["APPEND", "APPEND"] and last_changelog(t) == []
    t.compact(full=False)
    # both level-0 rows are merged in one compaction: the key is new, so one insert of the newest
    assert last_changelog(t) == [("+I", 1, "b")]
    t.write(batch([1], v=["c"]))
    t.compact(full=False)
    assert last_changelog(t) == [("-U", 1, "b"), ("+U", 1, "c")]


def test_lookup_with_delta_commits_is_refused(catalog):
    with pytest.raises(InvalidOptionError, match=r"full-compaction\.delta-commits"):
        catalog.create_table("db.bad", SCHEMA, primary_keys=["id"],
                             options={"changelog-producer": "lookup", "full-compaction.delta-commits": "1"}).write(
            batch([1]))


# -- the k-way merge -----------------------------------------------------------------------------


def _run(keys: list[int], first_sequence: int) -> pa.Table:
    keys = sorted(set(keys))
    return pa.table({"k": pa.array(keys, pa.int64()),
                     df.SEQUENCE_NUMBER: pa.array(range(first_sequence, first_sequence + len(keys)), pa.int64())})


def _slices(table: pa.Table, size: int):
    return [table.slice(i, size) for i in range(0, table.num_rows, size)] or [table]


@settings(max_examples=60, deadline=None)
@given(runs=st.lists(st.lists(st.integers(0, 60), max_size=40), min_size=1, max_size=6),
       size=st.integers(1, 9))
def test_merge_runs_matches_a_global_sort(runs, size):
    tables, sequence = [], 0
    for keys in runs:
        tables.append(_run(keys, sequence))
        sequence += tables[-1].num_rows
    chunks = list(merge_runs([_slices(t, size) for t in tables], ["k"]))
    merged = pa.concat_tables(chunks) if chunks else tables[0].slice(0, 0)
    expected = pa.concat_tables(tables).sort_by([("k", "ascending"), (df.SEQUENCE_NUMBER, "ascending")])
    assert merged.to_pylist() == expected.to_pylist()
    seen: set[int] = set()
    for chunk in chunks:  # a key never straddles two chunks
        keys = set(chunk.column("k").to_pylist())
        assert not keys & seen
        seen |= keys


@pytest.mark.s3
def test_spilled_writes_stream_files_to_object_storage(s3_bucket, s3_storage_options):
    catalog = Catalog(f"s3://{s3_bucket}/wh", storage_options=s3_storage_options)
    catalog.create_database("db")
    t = catalog.create_table("db.s3spill", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "write-buffer-size": "32kb", "changelog-producer": "lookup"})
    t.write(iter([batch(range(i * 300, i * 300 + 1_000), v=f"b{i}-") for i in range(8)]))
    expected = {}
    for i in range(8):
        for k in range(i * 300, i * 300 + 1_000):
            expected[k] = (f"b{i}-{k}", k)
    assert state(t) == expected
    assert kinds_of(t) == ["APPEND", "COMPACT"]
    assert sorted(r[1] for r in last_changelog_any_bucket(t)) == sorted(expected)


def last_changelog_any_bucket(table) -> list[tuple]:
    snap = table.latest_snapshot()
    out = []
    reader = table.split_reader()
    for e in table.manifest_io.changelog_entries(snap):
        from paimonflow.core.read.scan import Split

        split = Split(partition=(), bucket=e.bucket, total_buckets=e.total_buckets, files=(e.file,))
        rows = reader._read_file(split, e.file, ["id", "v"], system=[df.VALUE_KIND]).to_pylist()
        out += [(df.ROW_KIND_NAMES[r["_VALUE_KIND"]], r["id"], r["v"]) for r in rows]
    return out


@pytest.mark.parametrize("one_commit", [True, False])
def test_row_kind_flag_padding_lets_an_update_beat_its_retraction(catalog, one_commit):
    """Paimon's ``sequence.auto-padding = row-kind-flag``: with equal sequence fields a -U/-D is
    older than a +I/+U whatever their arrival; without it, arrival decides."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("ts", pa.int64())])
    flagged = catalog.create_table("db.flag", schema, primary_keys=["id"], options={
        "bucket": "1", "sequence.field": "ts", "sequence.auto-padding": "row-kind-flag,millis-to-micro"})
    plain = catalog.create_table("db.noflag", schema, primary_keys=["id"], options={"bucket": "1", "sequence.field": "ts"})
    update = pa.table({"id": [1], "v": ["new"], "ts": [5]}, schema=schema)
    retract = pa.table({"id": [1], "v": ["old"], "ts": [5]}, schema=schema)
    for t in (flagged, plain):
        t.write(pa.table({"id": [1], "v": ["old"], "ts": [1]}, schema=schema))
        if one_commit:
            t.write(pa.concat_tables([update, retract]), row_kinds=pa.array(["+U", "-U"]))
        else:
            t.write(update, row_kinds="+U")
            t.write(retract, row_kinds="-U")
    assert flagged.read().to_pylist() == [{"id": 1, "v": "new", "ts": 5}]
    assert plain.read().to_pylist() == []
    flagged.compact(full=True)
    assert flagged.read().to_pylist() == [{"id": 1, "v": "new", "ts": 5}]


def test_auto_padding_values_are_checked(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.int64())])
    with pytest.raises(InvalidOptionError, match="auto-padding"):
        catalog.create_table("db.p1", schema, primary_keys=["id"],
                             options={"sequence.field": "ts", "sequence.auto-padding": "days-to-years"})
    with pytest.raises(InvalidOptionError, match=r"sequence\.field"):
        catalog.create_table("db.p2", schema, primary_keys=["id"], options={"sequence.auto-padding": "row-kind-flag"})


def test_compact_manifest_merges_every_manifest_without_changing_rows(catalog):
    t = catalog.create_table("db.mani", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "write-only": "true", "manifest.merge-min-count": "100"})
    for i in range(6):
        t.write(batch(range(i * 10, i * 10 + 15)))
    t.compact(full=True)
    before = state(t)
    assert len(t.system_table("manifests")) > 1
    result = t.compact_manifest()
    snap = t.latest_snapshot()
    assert result.snapshot_id == snap.id and snap.commit_kind is CommitKind.COMPACT and snap.delta_record_count == 0
    manifests = t.system_table("manifests").to_pylist()
    assert len(manifests) == 1 and manifests[0]["num_deleted_files"] == 0
    assert state(t) == before and snap.total_record_count == t.snapshot_manager.snapshot(snap.id - 1).total_record_count
    assert t.compact_manifest().snapshot_id is None  # nothing left to merge


def test_dedicated_compaction_beside_write_only_writers_and_a_rival_compaction(catalog):
    t = catalog.create_table("db.side", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "write-only": "true", "num-sorted-run.compaction-trigger": "2"})
    for i in range(3):
        t.write(batch(range(i * 5, i * 5 + 10), v=f"w{i}-"))
    # a compaction planned now, and a writer committing new level-0 files before it commits
    compactor = t.new_write()
    compactor.compact((), 0, full=True)
    rival = t.new_write()
    rival.compact((), 0, full=False)
    t.write(batch([100, 1], v="late-"))  # write-only: adds level-0 files, deletes nothing
    first = t.new_commit().commit(compactor.prepare_commit())
    assert first.commit_kind is CommitKind.COMPACT
    with pytest.raises(CommitConflictError):  # the rival read the same files: a clean conflict
        t.new_commit().commit(rival.prepare_commit())
    got = state(t)
    assert got[1] == ("late-1", 1) and got[100] == ("late-100", 100) and got[14] == ("w2-14", 14)
    assert len(got) == 21


def test_compacting_writers_racing_lose_no_rows_and_no_files(catalog):
    """Several writers that compact commit at once: their compactions of shared buckets
    conflict, yet every write lands (a lost compaction is dropped with a note), every file a
    snapshot names exists, and ids stay contiguous."""
    import threading

    t = catalog.create_table("db.race", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "num-sorted-run.compaction-trigger": "2",
                                      "commit.min-retry-wait": "1 ms", "commit.max-retries": "50"})
    errors: list[BaseException] = []
    notes: list[str] = []

    def writer(w: int) -> None:
        table = catalog.get_table("db.race")
        try:
            for i in range(6):
                result = table.write(batch(range(w * 1000 + i * 10, w * 1000 + i * 10 + 10), v=f"w{w}-"))
                notes.extend(result.notes)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    ids = t.snapshot_manager.list_ids()
    assert ids == list(range(1, len(ids) + 1))
    kinds = [t.snapshot_manager.snapshot(i).commit_kind.value for i in ids]
    assert kinds.count("APPEND") == 18
    got = state(t)
    assert len(got) == 180 and all(v == (f"w{k // 1000}-{k}", k) for k, v in got.items())
    for split in t.plan(all_levels=True):  # every live file is on storage
        for f in split.files:
            assert t.file_io.exists(f"{t.path}/bucket-{split.bucket}/{f.file_name}")

