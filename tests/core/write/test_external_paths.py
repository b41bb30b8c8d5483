"""``data-file.external-paths``: new data files go to the external roots by Paimon's strategies,
their full path in the manifest; reads, compaction, expiry and aborted writes follow it, orphan
removal never deletes there; roots on another storage than the table's are refused."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import UnsupportedFeatureError
from paimonflow.core.meta.layout import ExternalPaths

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


def rows(ids, v="a", dt="x"):
    return pa.table({"id": list(ids), "v": [v] * len(ids), "dt": [dt] * len(ids)}, schema=SCHEMA)


def external_table(tmp_path, strategy="round-robin", keys=("id", "dt"), **extra):
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    options = {"bucket": "2" if keys else "-1", "data-file.external-paths": ",".join(f"file://{r}" for r in roots),
               "data-file.external-paths.strategy": strategy, **extra}
    return catalog, catalog.create_table("db.t", SCHEMA, primary_keys=list(keys), partition_keys=["dt"],
                                         options=options), roots


def live_files(table):
    return [f for s in table.plan(all_levels=True) for f in s.files]


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject", "weight-robin", "specific-fs"])
def test_files_land_under_the_external_roots_and_read_back(tmp_path, strategy):
    extra = {"data-file.external-paths.weights": "1,3"} if strategy == "weight-robin" else (
        {"data-file.external-paths.specific-fs": "file"} if strategy == "specific-fs" else {})
    catalog, table, roots = external_table(tmp_path, strategy, **extra)
    for i in range(6):
        table.write(rows(range(i * 10, i * 10 + 10), v=f"w{i}", dt="x" if i % 2 else "y"))
    table = catalog.get_table("db.t")
    files = live_files(table)
    assert files and all(f.external_path and f.external_path.startswith("file://") for f in files)
    for f in files:
        path = f.external_path[len("file://"):]
        assert os.path.exists(path) and any(path.startswith(str(r)) for r in roots)
        assert "/dt=" in path and "/bucket-" in path and path.endswith(f.file_name)
    assert not glob.glob(str(tmp_path / "wh" / "db.db" / "t" / "dt=*" / "bucket-*" / "*.parquet"))
    if strategy in ("round-robin", "weight-robin"):
        assert {str(r) for r in roots} == {str(r) for r in roots if any(
            f.external_path.startswith(f"file://{r}/") for f in files)}  # both roots used
    assert table.read().num_rows == 60


def test_compaction_expiry_and_orphan_removal_follow_external_paths(tmp_path):
    catalog, table, _roots = external_table(tmp_path, **{"snapshot.num-retained.min": "1",
                                                         "snapshot.num-retained.max": "1"})
    for i in range(4):
        table.write(rows(range(i, i + 20), v=f"w{i}"))
    before = {f.external_path for f in live_files(catalog.get_table("db.t"))}
    table = catalog.get_table("db.t")
    table.compact(full=True)
    table = catalog.get_table("db.t")
    after = live_files(table)
    assert all(f.external_path for f in after) and not before & {f.external_path for f in after}
    expected = {(r["id"], r["v"]) for r in table.read().to_pylist()}
    table.expire_snapshots(retain_min=1, retain_max=1)
    for path in before:  # the compacted files left with the expired snapshots
        assert not os.path.exists(path[len("file://"):])
    for f in after:
        assert os.path.exists(f.external_path[len("file://"):])
    result = catalog.get_table("db.t").remove_orphan_files(older_than_millis=0, min_older_than_millis=0)
    assert all(os.path.exists(f.external_path[len("file://"):]) for f in after), result
    assert {(r["id"], r["v"]) for r in catalog.get_table("db.t").read().to_pylist()} == expected


def test_an_aborted_write_deletes_its_external_files(tmp_path):
    _catalog, table, _roots = external_table(tmp_path)
    write = table.new_write()
    write.write(rows(range(50)))
    messages = write.prepare_commit()
    written = [f.external_path for m in messages for f in m.all_written_files()]
    assert written and all(os.path.exists(p[len("file://"):]) for p in written)
    table.manifest_io.delete_data_files(messages)
    assert not any(os.path.exists(p[len("file://"):]) for p in written)


def test_strategy_none_keeps_files_in_the_table_and_foreign_roots_are_refused(tmp_path):
    catalog, table, _roots = external_table(tmp_path, strategy="none")
    table.write(rows(range(5)))
    assert all(f.external_path is None for f in live_files(catalog.get_table("db.t")))
    other = catalog.create_table("db.s3", SCHEMA, primary_keys=["id", "dt"], options={
        "bucket": "1", "data-file.external-paths": "s3://bucket/ext", "data-file.external-paths.strategy": "round-robin"})
    with pytest.raises(UnsupportedFeatureError, match="another storage"):
        other.write(rows(range(5)))
    assert other.read().num_rows == 0  # reads are fine: files are read where the manifest says


def test_bad_strategy_options_are_one_typed_line():
    from paimonflow.core.errors import InvalidOptionError

    with pytest.raises(InvalidOptionError, match="specific-fs"):
        ExternalPaths.of({"data-file.external-paths": "file:///a", "data-file.external-paths.strategy": "specific-fs"})
    with pytest.raises(InvalidOptionError, match="2 positive integers"):
        ExternalPaths.of({"data-file.external-paths": "file:///a,file:///b",
                          "data-file.external-paths.strategy": "weight-robin", "data-file.external-paths.weights": "1"})
    with pytest.raises(InvalidOptionError, match="no scheme"):
        ExternalPaths.of({"data-file.external-paths": "/a", "data-file.external-paths.strategy": "round-robin"})


@pytest.mark.s3
def test_external_roots_on_the_tables_object_store(s3_bucket, s3_storage_options):
    """A table on S3 with external roots in the same store (another prefix of the bucket): files
    land under the roots, reads, compaction, expiry and orphan removal follow them there."""
    roots = [f"s3://{s3_bucket}/ext1", f"s3://{s3_bucket}/ext2"]
    catalog = Catalog(f"s3://{s3_bucket}/wh", storage_options=s3_storage_options)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={
        "bucket": "2", "data-file.external-paths": ",".join(roots),
        "data-file.external-paths.strategy": "round-robin",
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    for i in range(4):
        table.write(rows(range(i, i + 20), v=f"w{i}"))
    table = catalog.get_table("db.t")
    before = {f.external_path for f in live_files(table)}
    assert {p.split("/")[3] for p in before} == {"ext1", "ext2"}  # both roots, inside the bucket
    assert all(table.file_io.exists(p) for p in before)
    expected = {(r["id"], r["v"]) for r in table.read().to_pylist()}
    assert len(expected) == 23
    table.compact(full=True)
    table = catalog.get_table("db.t")
    after = {f.external_path for f in live_files(table)}
    assert after and all(p.startswith(tuple(roots)) for p in after) and not before & after
    table.expire_snapshots(retain_min=1, retain_max=1)
    assert not any(table.file_io.exists(p) for p in before)
    catalog.get_table("db.t").remove_orphan_files(older_than_millis=0, min_older_than_millis=0)
    assert all(table.file_io.exists(p) for p in after)
    assert {(r["id"], r["v"]) for r in catalog.get_table("db.t").read().to_pylist()} == expected
