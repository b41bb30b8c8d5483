"""File indexes (``file-index.*``): written with every new data file (writes and compaction), in
the manifest or as ``<data file>.index``; used by reads to skip files whose bloom filter or bitmap
proves no row matches; kept and deleted with their data files by orphan removal and expiry."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog, Table, col
from paimonflow.core.errors import InvalidOptionError, UnsupportedFeatureError
from paimonflow.core.meta.fileindex import FileIndexBuilder, FileIndexSettings
from paimonflow.core.meta.fileindex.container import read_container
from paimonflow.core.meta.schema_changes import RenameColumn

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("code", pa.int32())])
FILES = 4
ROWS = 200


def batch(i: int) -> pa.Table:
    """Rows whose names and codes span the same range in every batch (statistics cannot prune),
    but each batch holds its own names and codes."""
    ids = list(range(i, FILES * ROWS, FILES))[:ROWS]
    return pa.table({"id": ids, "name": [f"user-{n:05d}" for n in ids],
                     "code": pa.array([None if n % 10 == 0 else (n % FILES) * 1000 + n % 7 + (n // 400) * 10
                                       for n in ids], pa.int32())}, schema=SCHEMA)


def make(tmp_path: Path, options: dict[str, str], *, primary_keys=(), batches=FILES) -> Table:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table("db.t", SCHEMA, primary_keys=list(primary_keys),
                                 options={"bucket": "1" if primary_keys else "-1", **options})
    for i in range(batches):
        table.write(batch(i))
    return table


def files_planned(table: Table, predicate) -> int:
    return sum(len(s.files) for s in table.plan(filter=predicate))


def data_files(table: Table) -> list:
    return [f for s in table.plan() for f in s.files]


def on_disk(table: Table, suffix: str) -> set[str]:
    return {n for _, _, names in os.walk(table.path) for n in names if n.endswith(suffix)}


BLOOM = {"file-index.bloom-filter.columns": "name"}
ABSENT = "user-00100a"  # inside every file's name range: only an index can skip
BITMAP = {"file-index.bitmap.columns": "code"}


def test_bloom_filter_in_index_files_skips_files(tmp_path):
    table = make(tmp_path, BLOOM)  # Paimon's default 1,000,000 items: far above 500 bytes
    files = data_files(table)
    assert len(files) == FILES
    for f in files:
        assert f.extra_files == (f.file_name + ".index",) and f.embedded_index is None
    assert on_disk(table, ".index") == {f.file_name + ".index" for f in files}
    wanted = batch(2).column("name")[17].as_py()
    assert files_planned(table, col("name") == "user-00000") == 1
    assert files_planned(table, col("name") == wanted) == 1
    assert table.read(filter=col("name") == wanted).column("id").to_pylist() == [batch(2).column("id")[17].as_py()]
    assert files_planned(table, col("name").isin(["user-00001", "user-00002"])) == 2
    assert files_planned(table, col("name") == ABSENT) == 0
    assert files_planned(table, col("name") >= "user-00000") == FILES  # ranges: unknown to a bloom filter
    assert files_planned(table, (col("name") == "user-00001") | (col("id") >= 0)) == FILES


def test_small_indexes_are_embedded_in_the_manifest(tmp_path):
    table = make(tmp_path, {**BLOOM, "file-index.bloom-filter.name.items": "200",
                            "file-index.bloom-filter.name.fpp": "0.05", "file-index.in-manifest-threshold": "1 kb"})
    for f in data_files(table):
        assert f.extra_files == () and f.embedded_index is not None
        container = read_container(f.embedded_index)
        assert container is not None and set(container.bodies) == {"name"}
    assert on_disk(table, ".index") == set()
    assert files_planned(table, col("name") == "user-00003") == 1


def test_bitmap_skips_files_by_equality_in_and_null(tmp_path):
    table = make(tmp_path, {**BITMAP, "file-index.in-manifest-threshold": "100 kb"})
    assert all(f.embedded_index is not None for f in data_files(table))
    code = batch(1).column("code")[3].as_py()
    assert files_planned(table, col("code") == code) == 1
    assert table.read(filter=col("code") == code).num_rows == \
        pa.concat_tables([batch(i) for i in range(FILES)]).filter(pc.field("code") == code).num_rows
    assert files_planned(table, col("code").isin([code, 999_999])) == 1
    assert files_planned(table, col("code") == 999_999) == 0
    assert files_planned(table, col("code").is_null()) == 2  # rows n % 10 == 0 are in batches 0 and 2
    assert files_planned(table, col("code") != code) == FILES


def test_bitmap_proves_no_nulls(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1", **BITMAP})
    table.write(pa.table({"id": [1, 2], "name": ["a", "b"], "code": pa.array([1, 2], pa.int32())}, schema=SCHEMA))
    table.write(pa.table({"id": [3, 4], "name": ["c", "d"], "code": pa.array([None, 2], pa.int32())}, schema=SCHEMA))
    assert files_planned(table, col("code").is_null()) == 1


def test_compaction_writes_indexes_and_expiry_deletes_the_old(tmp_path):
    table = make(tmp_path, {**BLOOM, **BITMAP, "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    before = on_disk(table, ".index")
    table.compact(full=True)
    after = data_files(table)
    assert len(after) == 1 and after[0].extra_files == (after[0].file_name + ".index",)
    container = read_container(Path(table.path, "bucket-0", after[0].extra_files[0]).read_bytes())
    assert container is not None and set(container.bodies) == {"name", "code"}
    assert files_planned(table, col("name") == ABSENT) == 0
    assert files_planned(table, col("name") == "user-00005") == 1
    table.expire_snapshots(retain_min=1, retain_max=1)
    assert on_disk(table, ".index") == {after[0].extra_files[0]}
    assert not before & on_disk(table, ".index")


def test_orphan_removal_keeps_referenced_index_files(tmp_path):
    table = make(tmp_path, BLOOM)
    stray = Path(table.path, "bucket-0", "data-stray-0.parquet.index")
    stray.write_bytes(b"x")
    os.utime(stray, (0, 0))
    for f in data_files(table):  # make every file old enough to be a candidate
        for name in (f.file_name, *f.extra_files):
            os.utime(Path(table.path, "bucket-0", name), (0, 0))
    table.remove_orphan_files(older_than_millis=1)
    assert not stray.exists()
    assert on_disk(table, ".index") == {f.file_name + ".index" for f in data_files(table)}
    assert table.read().num_rows == FILES * ROWS


def test_primary_key_tables_prune_by_key_indexes_only(tmp_path):
    table = make(tmp_path, {"file-index.bloom-filter.columns": "id,name", "write-only": "true"},
                 primary_keys=["id"])
    table.write(pa.table({"id": [1], "name": ["renamed"], "code": pa.array([5], pa.int32())}, schema=SCHEMA))
    # a value filter must see merged rows: the old name of id 1 is still in an older file's index
    assert table.read(filter=col("name") == "user-00001").num_rows == 0
    assert table.read(filter=col("name") == "renamed").column("id").to_pylist() == [1]
    assert files_planned(table, col("name") == "renamed") == FILES + 1
    assert files_planned(table, col("id") == 1) == 2  # its first file and the update
    assert table.read(filter=col("id") == 1).column("name").to_pylist() == ["renamed"]


def test_a_corrupt_index_file_is_not_used(tmp_path):
    table = make(tmp_path, BLOOM)
    for f in data_files(table):
        Path(table.path, "bucket-0", f.extra_files[0]).write_bytes(b"not an index")
    assert files_planned(table, col("name") == ABSENT) == FILES
    assert table.read(filter=col("name") == "user-00002").num_rows == 1


def test_reads_can_turn_indexes_off(tmp_path):
    table = make(tmp_path, {**BLOOM, "file-index.read.enabled": "false"})
    assert files_planned(table, col("name") == ABSENT) == FILES


def test_renamed_column_keeps_its_index(tmp_path):
    table = make(tmp_path, BLOOM)
    table = table.alter([RenameColumn("name", "label")])
    assert files_planned(table, col("label") == ABSENT) == 0
    assert files_planned(table, col("label") == "user-00003") == 1


def test_unsupported_index_types_are_refused_in_one_line(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1", "file-index.bsi.columns": "code"})
    with pytest.raises(UnsupportedFeatureError, match=r"file-index\.bsi\.columns=code") as info:
        table.write(batch(0))
    assert "\n" not in str(info.value)
    assert on_disk(table, ".parquet") == set()


@pytest.mark.parametrize(("options", "message"), [
    ({"file-index.bloom-filter.columns": "missing"}, "does not exist"),
    ({"file-index.bitmap.columns": "id", "file-index.bloom-filter.columns": "name",
      "file-index.bloom-filter.name.fpp": "2"}, "between 0 and 1"),
    ({"file-index.bloom-filter.columns": "name", "file-index.in-manifest-threshold": "lots"}, "memory size"),
])
def test_bad_index_options_are_one_typed_error(options, message):
    with pytest.raises(InvalidOptionError, match=message):
        FileIndexSettings.from_options(options, _fields())


def test_boolean_bloom_filter_is_refused_as_paimon_does():
    fields = _fields(pa.schema([("flag", pa.bool_())]))
    with pytest.raises(InvalidOptionError, match="BOOLEAN"):
        FileIndexSettings.from_options({"file-index.bloom-filter.columns": "flag"}, fields)
    assert FileIndexSettings.from_options({"file-index.bitmap.columns": "flag"}, fields).enabled


def test_builder_handles_chunks_like_one_table():
    fields = _fields()
    settings = FileIndexSettings.from_options({**BLOOM, **BITMAP}, fields)
    whole, chunked = FileIndexBuilder(settings), FileIndexBuilder(settings)
    whole.add(pa.concat_tables([batch(0), batch(1)]))
    chunked.add(batch(0))
    chunked.add(batch(1))
    assert whole.finish() == chunked.finish()


def _fields(schema: pa.Schema = SCHEMA):
    from paimonflow.core.meta.schema import Schema

    return Schema.from_arrow(schema).to_table_schema().fields


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(st.tuples(st.integers(0, 30), st.one_of(st.none(), st.integers(-5, 5))),
                                 min_size=1, max_size=20), min_size=1, max_size=4),
       probes=st.lists(st.integers(-6, 31), min_size=1, max_size=4))
def test_pruned_reads_equal_unpruned_filtering(batches, probes):
    """Whatever the data, a read that skips files by bloom filters and bitmaps returns exactly the
    rows a filter over every row returns (no false negatives, end to end)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("code", pa.int32())])
    with tempfile.TemporaryDirectory() as wh:
        catalog = Catalog(wh)
        catalog.create_database("db")
        table = catalog.create_table("db.t", schema, options={
            "bucket": "-1", "file-index.bloom-filter.columns": "name", "file-index.bitmap.columns": "code",
            "file-index.bloom-filter.name.items": "50", "metadata.stats-mode": "none"})
        for rows in batches:
            table.write(pa.table({"id": [i for i, _ in rows], "name": [f"n{i}" for i, _ in rows],
                                  "code": pa.array([c for _, c in rows], pa.int32())}, schema=schema))
        everything = table.read()
        for probe in probes:
            for predicate, expression in ((col("name") == f"n{probe}", pc.field("name") == f"n{probe}"),
                                          (col("code") == probe, pc.field("code") == probe),
                                          (col("code").isin([probe, probe + 1]), pc.field("code").isin([probe, probe + 1])),
                                          (col("code").is_null(), pc.field("code").is_null())):
                got = table.read(filter=predicate)
                assert sorted(got.column("id").to_pylist()) == \
                    sorted(everything.filter(expression).column("id").to_pylist())


def test_index_files_of_external_data_files_sit_beside_them(tmp_path):
    root = tmp_path / "external"
    table = make(tmp_path, {**BLOOM, "data-file.external-paths": f"file://{root}",
                            "data-file.external-paths.strategy": "round-robin",
                            "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    files = data_files(table)
    assert all(f.external_path for f in files)
    beside = {n for _, _, names in os.walk(root) for n in names if n.endswith(".index")}
    assert beside == {f.file_name + ".index" for f in files} and on_disk(table, ".index") == set()
    assert files_planned(table, col("name") == ABSENT) == 0
    table.compact(full=True)
    table.expire_snapshots(retain_min=1, retain_max=1)
    (after,) = data_files(table)
    assert {n for _, _, names in os.walk(root) for n in names if n.endswith(".index")} == {after.file_name + ".index"}
