"""Dynamic bucket mode: keys keep their bucket across commits through the HASH index, buckets
fill up to ``dynamic-bucket.target-row-num``, and the index follows overwrites and restarts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.data.bucket import hash_codes
from paimonflow.core.errors import InvalidOptionError, UnsupportedError
from paimonflow.core.meta.index_files import HASH, read_hash_file
from paimonflow.core.write.bucket_index import DynamicBucketOptions, PartitionBucketIndex

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def rows(ids, dt="a", v="x") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def bucket_of_key(table) -> dict[tuple, int]:
    out = {}
    for split in table.plan():
        for r in table.split_reader().read_split(split).to_pylist():
            out[(r["id"], r["dt"])] = split.bucket
    return out


def test_keys_keep_their_bucket_and_buckets_fill_to_the_target(catalog):
    t = catalog.create_table("db.d", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "25"})
    t.write(rows(range(60)))
    first = bucket_of_key(t)
    assert sorted(set(first.values())) == [0, 1, 2]
    assert sorted(np.bincount(list(first.values())).tolist()) == [10, 25, 25]
    t.write(rows(range(50, 80), v="y"))  # 10 updates, 20 new keys
    second = bucket_of_key(t)
    assert all(second[k] == b for k, b in first.items())  # updated keys stayed where they were
    assert np.bincount(list(second.values())).tolist() == [25, 25, 25, 5]
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == {**{i: "x" for i in range(50)},
                                                               **{i: "y" for i in range(50, 80)}}
    # the HASH index files hold exactly the hashes of each bucket's keys
    for (_, bucket), metas in t.index_files_of(t.latest_snapshot(), HASH).items():
        (meta,) = metas
        stored = np.sort(read_hash_file(t.file_io, t.index_dir, meta))
        keys = [k for k, b in second.items() if b == bucket]
        expected = np.sort(hash_codes([pa.array([k[0] for k in keys], pa.int64())]))
        assert stored.tolist() == expected.tolist()


def test_partitions_have_their_own_buckets_and_overwrite_resets_the_index(catalog):
    t = catalog.create_table("db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "10"})
    t.write(pa.concat_tables([rows(range(15), "a"), rows(range(5), "b")]))
    index = t.system_table("index_files").to_pylist()
    assert sorted((e["partition"], e["bucket"], e["row_count"]) for e in index) == [
        ("{dt=a}", 0, 10), ("{dt=a}", 1, 5), ("{dt=b}", 0, 5)]
    t.write(rows(range(100, 103), "a"), overwrite={"dt": "a"})
    index = t.system_table("index_files").to_pylist()
    assert sorted((e["partition"], e["bucket"], e["row_count"]) for e in index) == [
        ("{dt=a}", 0, 3), ("{dt=b}", 0, 5)]
    assert sorted(r["id"] for r in t.read().to_pylist() if r["dt"] == "a") == [100, 101, 102]


def test_compaction_and_merge_engines_work_per_dynamic_bucket(catalog):
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "8",
                                      "merge-engine": "partial-update", "num-sorted-run.compaction-trigger": "2"})
    t.write(rows(range(20), v="a"))
    t.write(pa.table({"id": list(range(0, 20, 2)), "dt": ["a"] * 10, "v": [None] * 10}, schema=SCHEMA))
    t.write(rows(range(0, 20, 5), v="b"))
    assert "COMPACT" in [t.snapshot_manager.snapshot(i).commit_kind.value for i in t.snapshot_manager.list_ids()]
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == {i: ("b" if i % 5 == 0 else "a") for i in range(20)}
    t.compact(full=True)
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == {i: ("b" if i % 5 == 0 else "a") for i in range(20)}


def test_bad_dynamic_bucket_options_are_refused(catalog):
    with pytest.raises(InvalidOptionError, match="target-row-num"):
        DynamicBucketOptions.from_options({"dynamic-bucket.target-row-num": "0"})


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(st.lists(st.integers(-50, 50), max_size=30), min_size=1, max_size=6),
       target=st.integers(1, 12), max_buckets=st.sampled_from([-1, 1, 2, 3]))
def test_assignment_is_stable_and_bounded(batches, target, max_buckets):
    index = PartitionBucketIndex(DynamicBucketOptions(target_row_num=target, max_buckets=max_buckets))
    seen: dict[int, int] = {}
    for batch in batches:
        hashes = np.array(batch, dtype=np.int32)
        buckets = index.assign(hashes)
        for h, b in zip(hashes.tolist(), buckets.tolist(), strict=True):
            assert seen.setdefault(h, b) == b  # one hash, one bucket, forever
    sizes = {b: len(h) for b, h in index.hashes.items()}
    if max_buckets == -1:
        assert all(n <= target for n in sizes.values())
        assert sorted(sizes) == list(range(len(sizes)))  # ids are used from 0 up
    else:
        assert all(b < max_buckets for b in sizes)
    assert sum(sizes.values()) == len(seen)


XSCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                     ("v", pa.int64())])


def xrows(*items) -> pa.Table:
    return pa.table({"id": [i[0] for i in items], "dt": [i[1] for i in items], "v": [i[2] for i in items]},
                    schema=XSCHEMA)


@pytest.mark.parametrize("engine,expected", [
    # seed 004: deduplicate moves the key (deletes it from the old partition)
    ("deduplicate", [(1, "b", 5), (2, "d", 2), (3, "b", 30)]),
    # partial-update and aggregation update the key where it already lives
    ("partial-update", [(1, "a", 5), (2, "a", 2), (3, "b", 30)]),
    ("aggregation", [(1, "a", 15), (2, "a", 23), (3, "b", 30)]),
    # first-row keeps the old row and ignores the new one
    ("first-row", [(1, "a", 10), (2, "a", 20), (3, "b", 30)]),
])
def test_cross_partition_upsert_follows_the_merge_engine(catalog, engine, expected):
    options = {"bucket": "-1", "merge-engine": engine}
    if engine == "aggregation":
        options["fields.v.aggregate-function"] = "sum"
    t = catalog.create_table("db.x", XSCHEMA, primary_keys=["id"], partition_keys=["dt"], options=options)
    t.write(xrows((1, "a", 10), (2, "a", 20)))
    t.write(xrows((1, "b", 5), (3, "b", 30)))
    t.write(xrows((2, "c", 1), (2, "d", 2)))  # one key, two partitions, one batch
    assert sorted((r["id"], r["dt"], r["v"]) for r in t.read().to_pylist()) == expected
    assert t.read(columns=["id"]).num_rows == 3  # never a key in two partitions
    t.compact(full=True)
    assert sorted((r["id"], r["dt"], r["v"]) for r in t.read().to_pylist()) == expected


def test_cross_partition_deletes_go_where_the_key_lives(catalog):
    t = catalog.create_table("db.xd", XSCHEMA, primary_keys=["id"], partition_keys=["dt"], options={"bucket": "-1"})
    t.write(xrows((1, "a", 1), (2, "b", 2)))
    t.write(xrows((1, "zzz", 0)), row_kinds="-D")  # the partition value of a delete does not matter
    assert [(r["id"], r["dt"]) for r in t.read().to_pylist()] == [(2, "b")]
    with pytest.raises(UnsupportedError, match="overwrite"):
        t.write(xrows((3, "a", 3)), overwrite=True)


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.lists(st.tuples(st.integers(0, 8), st.sampled_from("abc")),
                                                       min_size=1, max_size=6)), min_size=1, max_size=6))
def test_cross_partition_deduplicate_matches_a_model(tmp_path_factory, ops):
    catalog = Catalog(str(tmp_path_factory.mktemp("xmodel")))
    catalog.create_database("db")
    t = catalog.create_table("db.m", XSCHEMA, primary_keys=["id"], partition_keys=["dt"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "3"})
    model: dict[int, tuple] = {}
    for step, (delete, items) in enumerate(ops):
        batch = xrows(*((k, p, step) for k, p in items))
        if delete:
            t.write(batch, row_kinds="-D")
            for k, _ in items:
                model.pop(k, None)
        else:
            t.write(batch)
            for k, p in items:
                model[k] = (p, step)
        assert {r["id"]: (r["dt"], r["v"]) for r in t.read().to_pylist()} == model
