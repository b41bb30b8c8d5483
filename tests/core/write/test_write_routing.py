"""Routing of a write into (partition, bucket) files: each bucket's rows are sorted by key and
gathered once while routing, partition columns are repeated rather than gathered, and a bucket
written by several calls is sorted again at the flush. Checked against a model: the files hold
every bucket's rows in key order, the newest row of each key, arrival sequence numbers, and
footer statistics that match the rows."""

from __future__ import annotations

import datetime
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from paimonflow.core.data import data_file as df
from paimonflow.core.data.binary_row import deserialize_row

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("name", pa.string()), ("amount", pa.float64())])


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def rows(ids: np.ndarray, tag: str) -> pa.Table:
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"id": ids, "dt": pa.array(np.array(["d0", "d1", "d2"])[ids % 3]),
                     "name": pa.array([f"{tag}{i}" for i in ids.tolist()]),
                     "amount": ids.astype(np.float64)}, schema=SCHEMA)


def data_files(table) -> list[tuple[str, pa.Table]]:
    """(directory, content) of every live data file."""
    paths = table.system_table("files").column("file_path").to_pylist()
    return [(os.path.dirname(p), pq.read_table(p)) for p in sorted(paths)]


def check_files(table, expected: dict[int, str]) -> None:
    """Every data file is sorted by key with one row per key; together they hold ``expected``."""
    seen: dict[int, str] = {}
    for root, content in data_files(table):
        keys = content.column(df.KEY_PREFIX + "id").to_numpy()
        assert (np.diff(keys) > 0).all(), f"{root}: keys not strictly ascending"
        assert content.column("id").equals(content.column(df.KEY_PREFIX + "id"))
        dts = set(content.column("dt").to_pylist())
        assert len(dts) == 1 and f"dt={dts.pop()}" in root
        seen |= dict(zip(keys.tolist(), content.column("name").to_pylist(), strict=True))
    assert seen == expected


@pytest.mark.parametrize("count", [5_000, 140_000])  # the small write routes in one thread, the large in two
def test_one_write_with_repeated_keys_keeps_the_newest_row(catalog, count):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "3"})
    rng = np.random.default_rng(3)
    ids = rng.integers(0, count // 2, size=count)  # about a third of the keys arrive more than once
    batch = rows(ids, "r")
    batch = batch.set_column(2, "name", pa.array([f"r{i}-{p}" for p, i in enumerate(ids.tolist())]))
    t.write(batch)
    newest = {int(i): f"r{i}-{p}" for p, i in enumerate(ids.tolist())}
    check_files(t, newest)
    assert dict(zip(*t.read().select(["id", "name"]).to_pydict().values(), strict=True)) == newest


def test_unique_keys_get_their_arrival_sequence_numbers(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2"})
    ids = np.random.default_rng(5).permutation(100_000)
    t.write(rows(ids, "a"))
    for _, content in data_files(t):
        keys = content.column("id").to_numpy()
        sequence = content.column(df.SEQUENCE_NUMBER).to_numpy()
        # numbered per bucket in arrival order: sorting a bucket's rows by sequence restores arrival
        position = {int(k): p for p, k in enumerate(ids.tolist())}
        by_sequence = keys[np.argsort(sequence)]
        assert [position[k] for k in by_sequence.tolist()] == sorted(position[k] for k in keys.tolist())
        assert sorted(sequence.tolist()) == list(range(len(keys)))
        assert set(content.column(df.VALUE_KIND).to_pylist()) == {0}


def test_the_manifest_describes_the_sorted_rows(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(rows(np.random.default_rng(9).permutation(90_000), "n"))
    splits = t.plan()
    assert sum(len(split.files) for split in splits) == 6
    for split in splits:
        (meta,) = split.files
        (path,) = [p for p in t.system_table("files").column("file_path").to_pylist() if p.endswith(meta.file_name)]
        content = pq.read_table(path)
        ids = content.column("id")
        assert meta.row_count == content.num_rows
        assert deserialize_row(meta.min_key, [pa.int64()]) == (ids[0].as_py(),)
        assert deserialize_row(meta.max_key, [pa.int64()]) == (ids[-1].as_py(),)
        assert deserialize_row(meta.key_stats.min_values, [pa.int64()]) == (pc.min(ids).as_py(),)
        assert deserialize_row(meta.key_stats.max_values, [pa.int64()]) == (pc.max(ids).as_py(),)
        lo = deserialize_row(meta.value_stats.min_values, SCHEMA.types)
        hi = deserialize_row(meta.value_stats.max_values, SCHEMA.types)
        assert lo[0] == pc.min(ids).as_py() and hi[0] == pc.max(ids).as_py()
        assert lo[1] == hi[1] == split.partition[0]
        assert lo[3] == pc.min(content.column("amount")).as_py()
        assert (meta.min_sequence_number, meta.max_sequence_number) == (0, content.num_rows - 1)


def test_several_writes_before_one_commit_sort_together(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2"})
    first = np.random.default_rng(1).permutation(80_000)
    second = np.random.default_rng(2).choice(80_000, 30_000, replace=False)
    third = second[:1_000]
    with t.new_write() as w:
        w.write(rows(first, "a"))
        w.write(rows(second, "b"))
        w.write(rows(third, "c"))
        t.new_commit().commit(w.prepare_commit())
    expected = {int(i): f"a{i}" for i in first} | {int(i): f"b{i}" for i in second} | {int(i): f"c{i}" for i in third}
    check_files(t, expected)


def test_sequence_field_orders_a_batch_before_arrival(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("ver", pa.int64())])
    t = catalog.create_table("db.s", schema, primary_keys=["id"], options={"bucket": "2", "sequence.field": "ver"})
    ids = np.concatenate([np.arange(70_000), np.arange(70_000)])
    ver = np.concatenate([np.full(70_000, 2), np.full(70_000, 1)])  # the later arrival is older
    v = ["new"] * 70_000 + ["old"] * 70_000
    t.write(pa.table({"id": ids, "v": v, "ver": ver}, schema=schema))
    got = t.read()
    assert got.num_rows == 70_000 and set(got.column("v").to_pylist()) == {"new"}


@pytest.mark.parametrize("value", [datetime.date(2026, 11, 21), None])
def test_repeated_partition_columns_keep_type_and_nulls(catalog, value):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("day", pa.date32()), ("n", pa.int32())])
    t = catalog.create_table("db.p", schema, partition_keys=["day"])  # an append table, partition may be null
    n = 100_000
    t.write(pa.table({"id": np.arange(n), "day": pa.array([value] * n, pa.date32()),
                      "n": pa.array(np.arange(n) % 7, pa.int32())}, schema=schema))
    got = t.read()
    assert got.schema.field("day").type == pa.date32()
    assert got.column("day").to_pylist() == [value] * n
    assert got.column("id").to_pylist() == list(range(n))  # an append bucket keeps arrival order


def _content(table) -> list[tuple[str, int, list]]:
    """Every data file as (bucket directory, level, rows with system columns), file names aside."""
    out = []
    for root, content in data_files(table):
        out.append((os.path.relpath(root, table.path), content.num_rows, content.to_pylist()))
    return sorted(out, key=lambda f: (f[0], str(f[2][:1])))


@pytest.mark.parametrize("options", [
    {"bucket": "4"},
    {"bucket": "4", "changelog-producer": "input"},
    {"bucket": "-1"},
    {"bucket": "2", "deletion-vectors.enabled": "true"},
])
@pytest.mark.parametrize("count", [3_000, 140_000])
def test_a_whole_table_written_at_once_makes_the_files_of_a_buffered_write(tmp_path, options, count):
    """Table.write (write_all: each bucket written as soon as it is gathered) and a writer that
    buffers then prepares the commit produce the same files: rows, order, sequence numbers and
    row kinds."""
    rng = np.random.default_rng(count)
    ids = rng.integers(0, count // 2, count)  # repeated keys: folded to the newest row
    tables = []
    for fused in (True, False):
        c = Catalog(str(tmp_path / f"wh-{fused}"))
        c.create_database("db")
        t = c.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=options)
        t.write(rows(ids[: count // 3], "a"))  # an earlier snapshot: sequence numbers continue from it
        if fused:
            t.write(rows(ids, "b"))
        else:
            with t.new_write() as writer:
                writer.write(rows(ids, "b"))
                messages = writer.prepare_commit()
            t.new_commit().commit(messages)
        tables.append(t)
    fused_table, buffered_table = tables
    assert _content(fused_table) == _content(buffered_table)
    assert fused_table.read().sort_by("id").equals(buffered_table.read().sort_by("id"))


def test_a_whole_append_write_makes_the_files_of_a_buffered_write(tmp_path):
    rng = np.random.default_rng(9)
    data = rows(rng.integers(0, 10**6, 150_000), "x")
    tables = []
    for fused in (True, False):
        c = Catalog(str(tmp_path / f"wh-{fused}"))
        c.create_database("db")
        t = c.create_table("db.t", SCHEMA, partition_keys=["dt"], options={"bucket": "3", "bucket-key": "id"})
        if fused:
            t.write(data)
        else:
            with t.new_write() as writer:
                writer.write(data)
                messages = writer.prepare_commit()
            t.new_commit().commit(messages)
        tables.append(t)
    assert _content(tables[0]) == _content(tables[1])


def test_a_bucket_failing_mid_write_leaves_no_file_behind(catalog, monkeypatch):
    """When one bucket's files fail while the other thread is still writing its own, the write
    waits for every bucket before raising, so the files it wrote are all deleted: none lands
    after the clean-up, nothing becomes visible and the table reads as before."""
    import glob
    import time

    from paimonflow.core.write.file_writer import DataFileWriter

    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
    t.write(rows(np.arange(10), "old"))
    before = sorted(glob.glob(f"{t.path}/**/*.parquet", recursive=True))
    original = DataFileWriter.write_sorted

    def failing(self, partition, bucket, chunks, **kwargs):
        if partition == ("d1",) and bucket == 0:
            raise OSError("disk full (injected)")
        time.sleep(0.05)  # the other buckets are still being written when the failure is raised
        return original(self, partition, bucket, chunks, **kwargs)

    monkeypatch.setattr(DataFileWriter, "write_sorted", failing)
    with pytest.raises(OSError, match="injected"):
        t.write(rows(np.arange(140_000), "new"))
    time.sleep(0.3)  # a job still running after the raise would write its file now
    assert sorted(glob.glob(f"{t.path}/**/*.parquet", recursive=True)) == before
    assert t.read().sort_by("id").column("name").to_pylist() == [f"old{i}" for i in range(10)]
