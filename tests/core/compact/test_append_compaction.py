"""Compaction of append tables through the table API: unaware-bucket bin packing, bucketed
sliding window in writers and dedicated jobs, data and order preserved."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("n", pa.int64())])


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def rows(i: int, dt: str = "a", count: int = 3) -> pa.Table:
    return pa.table({"k": [i] * count, "dt": [dt] * count, "n": list(range(i * 10, i * 10 + count))}, schema=SCHEMA)


def files(table) -> list[dict]:
    return table.system_table("files").to_pylist()


def kinds(table) -> list[str]:
    return [table.snapshot_manager.snapshot(i).commit_kind.value for i in table.snapshot_manager.list_ids()]


def test_unaware_bucket_minor_compaction_waits_for_min_file_num(catalog):
    t = catalog.create_table("db.u", SCHEMA, partition_keys=["dt"], options={"compaction.min.file-num": "4"})
    for i in range(3):
        t.write(rows(i, "a"))
    t.write(rows(9, "b"))
    assert t.compact(full=False).snapshot_id is None  # 3 small files in a, 1 in b: below min.file-num
    t.write(rows(3, "a"))
    before = t.read().to_pylist()
    result = t.compact(full=False)
    assert result.snapshot_id is not None and result.files_read == 4 and result.files_written == 1
    by_dt = {}
    for f in files(t):
        by_dt.setdefault(f["partition"], []).append(f)
    assert [len(v) for _, v in sorted(by_dt.items())] == [1, 1]
    assert sorted(t.read().to_pylist(), key=str) == sorted(before, key=str)
    assert kinds(t)[-1] == "COMPACT"


def test_unaware_bucket_full_compaction_sweeps_leftovers_and_keeps_row_order(catalog):
    t = catalog.create_table("db.uf", SCHEMA)
    for i in range(3):
        t.write(rows(i))
    result = t.compact(full=True)
    assert result.files_read == 3 and result.files_written == 1
    assert t.read().column("n").to_pylist() == [0, 1, 2, 10, 11, 12, 20, 21, 22]  # sequence order kept
    assert t.compact(full=True).snapshot_id is None


def test_bucketed_writers_compact_with_the_sliding_window(catalog):
    t = catalog.create_table("db.b", SCHEMA, options={"bucket": "1", "bucket-key": "k",
                                                      "compaction.min.file-num": "3"})
    for i in range(2):
        t.write(rows(i))
    assert kinds(t) == ["APPEND", "APPEND"] and len(files(t)) == 2
    t.write(rows(2))
    assert kinds(t) == ["APPEND", "APPEND", "APPEND", "COMPACT"]
    assert len(files(t)) == 1
    assert t.read().column("n").to_pylist() == [0, 1, 2, 10, 11, 12, 20, 21, 22]


def test_bucketed_write_only_writers_leave_compaction_to_the_dedicated_job(catalog):
    t = catalog.create_table("db.bw", SCHEMA, options={"bucket": "2", "bucket-key": "k", "write-only": "true",
                                                       "compaction.min.file-num": "3"})
    for i in range(6):
        t.write(rows(i, count=2))
    assert set(kinds(t)) == {"APPEND"}
    before = sorted(t.read().to_pylist(), key=str)
    counts = {}
    for f in files(t):
        counts[f["bucket"]] = counts.get(f["bucket"], 0) + 1
    result = t.compact(full=True)
    # a bucketed full compaction rewrites a bucket only from 3 files on (Paimon's FullCompactTask)
    assert result.snapshot_id is not None and result.buckets == sum(1 for n in counts.values() if n >= 3)
    after = {}
    for f in files(t):
        after[f["bucket"]] = after.get(f["bucket"], 0) + 1
    assert after == {b: 1 if n >= 3 else n for b, n in counts.items()}
    assert sorted(t.read().to_pylist(), key=str) == before
