"""Merge-on-write with deletion vectors: compaction marks replaced rows deleted in the older
files' vectors, reads take files above level 0 as they are (no merging), and the index files
follow Paimon's format; plus the read-optimized system table."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from paimonflow.core import Catalog
from paimonflow.core.errors import CommitConflictError, CorruptMetadataError, InvalidOptionError
from paimonflow.core.meta.index_files import (
    DELETION_VECTORS,
    DeletionVectorMeta,
    IndexFileMeta,
    deleted_mask,
    read_dv_file,
    serialize_dv,
    write_dv_file,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def rows(*items) -> pa.Table:
    return pa.table({"id": [i[0] for i in items], "v": [i[1] for i in items], "n": [i[2] for i in items]},
                    schema=SCHEMA)


def state(table, **kwargs) -> dict:
    return {r["id"]: (r["v"], r["n"]) for r in table.read(**kwargs).to_pylist()}


def dv_table(catalog, name="t", **options):
    return catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["id"],
                                options={"bucket": "1", "deletion-vectors.enabled": "true", **options})


def test_updates_mark_old_rows_deleted_and_reads_do_not_merge(catalog):
    t = dv_table(catalog)
    t.write(rows((1, "a", 1), (2, "b", 2), (3, "c", 3)))
    t.write(rows((2, "B", 20), (4, "d", 4)))
    t.write(rows((3, None, None)), row_kinds="-D")
    assert state(t) == {1: ("a", 1), 2: ("B", 20), 4: ("d", 4)}
    index = t.system_table("index_files").to_pylist()
    assert [e["index_type"] for e in index] == [DELETION_VECTORS] and index[0]["deleted_rows"] == 2
    levels = t.system_table("files").column("level").to_pylist()
    assert 0 not in levels and len(levels) == 2  # nothing waits in level 0; no file was rewritten twice
    # every split is read file by file: the deleted rows are gone without any merge
    (split,) = t.plan()
    assert sum(len(b) for b in split.deletion_vectors.values()) == 2
    assert state(t, snapshot_id=2) == {1: ("a", 1), 2: ("b", 2), 3: ("c", 3)}  # time travel keeps old vectors


def test_write_only_rows_stay_invisible_until_compacted(catalog):
    t = dv_table(catalog, "wo", **{"write-only": "true"})
    t.write(rows((1, "a", 1)))
    assert state(t) == {}  # level 0 is not read on tables with deletion vectors (as in Paimon)
    t.compact(full=False)
    t.write(rows((1, "b", 2)))
    assert state(t) == {1: ("a", 1)}
    result = t.compact(full=False)
    assert result.snapshot_id is not None
    assert state(t) == {1: ("b", 2)}


@pytest.mark.parametrize("options", [
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "fields.v.aggregate-function": "listagg"},
    {"sequence.field": "n"},
], ids=["partial-update", "aggregation", "sequence-field"])
def test_merge_engines_give_the_same_rows_with_and_without_vectors(catalog, options):
    with_dv = dv_table(catalog, "dv", **options)
    without = catalog.create_table("db.plain", SCHEMA, primary_keys=["id"], options={"bucket": "1", **options})
    batches = [rows((1, "a", 1), (2, None, 5)), rows((1, None, 7), (3, "c", 3)), rows((2, "x", 2), (1, "z", 4))]
    for batch in batches:
        with_dv.write(batch)
        without.write(batch)
    assert state(with_dv) == state(without)
    with_dv.compact(full=True)
    assert state(with_dv) == state(without)
    assert with_dv.latest_snapshot().index_manifest is None  # a full compaction leaves no vectors


@pytest.mark.parametrize("options,refusal", [
    ({"merge-engine": "first-row"}, "first-row merge engine never deletes old rows"),
    ({"changelog-producer": "full-compaction"}, "only with changelog-producer none, input or lookup"),
])
def test_combinations_paimon_refuses_are_refused_at_creation(catalog, options, refusal):
    with pytest.raises(InvalidOptionError, match=refusal):
        dv_table(catalog, "refused", **options)
    assert catalog.list_tables("db") == []


def test_two_compactions_of_one_bucket_conflict_cleanly(catalog):
    t = dv_table(catalog, "race", **{"write-only": "true"})
    t.write(rows((1, "a", 1), (2, "b", 2)))
    t.compact(full=False)
    t.write(rows((1, "c", 3)))
    first = t.new_write()
    second = t.new_write()
    first.compact((), 0)
    second.compact((), 0)
    t.new_commit().commit(first.prepare_commit())
    with pytest.raises(CommitConflictError):
        t.new_commit().commit(second.prepare_commit())
    assert state(t) == {1: ("c", 3), 2: ("b", 2)}


def test_read_optimized_reads_only_what_needs_no_merging(catalog):
    t = catalog.create_table("db.ro", SCHEMA, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    t.write(rows((1, "a", 1), (2, "b", 2)))
    assert t.system_table("read_optimized").num_rows == 0  # nothing at the top level yet
    t.compact(full=True)
    t.write(rows((1, "new", 9)))
    ro = {r["id"]: r["v"] for r in t.system_table("ro").to_pylist()}
    assert ro == {1: "a", 2: "b"}  # the last full compaction's view
    assert state(t)[1] == ("new", 9)
    d = dv_table(catalog, "dvro")
    d.write(rows((1, "a", 1)))
    d.write(rows((1, "b", 2)))
    assert {r["id"]: r["v"] for r in d.system_table("read_optimized").to_pylist()} == {1: "b"}


def test_dv_file_format_round_trip_and_corruption(tmp_path):
    from paimonflow.core.fs import LocalFileIO

    io = LocalFileIO()
    vectors = {"data-a.parquet": BitMap([0, 5, 70000]), "data-b.parquet": BitMap(range(100, 200))}
    meta = write_dv_file(io, str(tmp_path), vectors)
    raw = (tmp_path / meta.file_name).read_bytes()
    assert raw[0] == 1 and meta.row_count == 2
    assert read_dv_file(io, str(tmp_path), meta) == vectors
    first = meta.dv_ranges[0]
    assert raw[first.offset:first.offset + 8][4:] == (1581511376).to_bytes(4, "big")  # the magic number
    assert serialize_dv(vectors["data-a.parquet"])[4:8] == (1581511376).to_bytes(4, "big")
    broken = bytearray(raw)
    broken[-1] ^= 0xFF  # the last vector's checksum
    (tmp_path / meta.file_name).write_bytes(bytes(broken))
    with pytest.raises(CorruptMetadataError, match="checksum"):
        read_dv_file(io, str(tmp_path), meta)
    bad_range = IndexFileMeta(index_type=DELETION_VECTORS, file_name=meta.file_name, file_size=len(raw), row_count=1,
                              dv_ranges=(DeletionVectorMeta("x", 10_000, 4, 1),))
    with pytest.raises(CorruptMetadataError, match="outside"):
        read_dv_file(io, str(tmp_path), bad_range)
    assert deleted_mask(BitMap([1, 3]), 5).tolist() == [True, False, True, False, True]
    assert deleted_mask(BitMap(), 3) is None


def test_a_corrupt_vector_file_is_a_typed_error_on_read(catalog):
    t = dv_table(catalog, "corrupt")
    t.write(rows((1, "a", 1), (2, "b", 2)))
    t.write(rows((1, "b", 3)))
    (entry,) = t.index_entries(t.latest_snapshot())
    path = f"{t.index_dir}/{entry.file.file_name}"
    with open(path, "r+b") as f:
        f.seek(0)
        f.write(b"\x07")  # wrong version byte
    with pytest.raises(CorruptMetadataError, match="version"):
        t.read()


OPS = st.lists(st.tuples(st.sampled_from(["upsert", "delete", "compact", "full"]),
                         st.lists(st.integers(0, 12), min_size=1, max_size=6)), min_size=1, max_size=10)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_vectors_table_matches_a_model(tmp_path_factory, ops):
    catalog = Catalog(str(tmp_path_factory.mktemp("dvmodel")))
    catalog.create_database("db")
    t = catalog.create_table("db.m", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true",
                                      "num-sorted-run.compaction-trigger": "2", "target-file-size": "1kb"})
    model: dict[int, tuple] = {}
    for step, (op, keys) in enumerate(ops):
        keys = sorted(set(keys))
        if op == "upsert":
            t.write(rows(*((k, f"s{step}", step) for k in keys)))
            model.update({k: (f"s{step}", step) for k in keys})
        elif op == "delete":
            t.write(rows(*((k, None, None) for k in keys)), row_kinds="-D")
            for k in keys:
                model.pop(k, None)
        else:
            t.compact(full=op == "full")
        assert state(t) == model
