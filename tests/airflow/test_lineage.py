"""The OpenLineage naming of tables and files (``operators/airflow/lineage.py``); the emitted events
themselves are checked in the real deployment (``test_deployment.py``)."""

from __future__ import annotations

import os

import pytest

from paimonflow.operators.airflow.lineage import _file_dataset, namespace_of


@pytest.mark.parametrize(("uri", "namespace"), [
    ("/data/lake/", "file:///data/lake"),
    ("s3://bucket/lake", "s3://bucket/lake"),
    ("s3://AKIAFAKE:fake-secret@bucket/lake/", "s3://bucket/lake"),  # credentials never in a namespace
    ("hdfs://namenode:8020/warehouse", "hdfs://namenode:8020/warehouse"),
    ("oss://bucket/wh?token=abc#x", "oss://bucket/wh"),
])
def test_a_warehouse_uri_is_its_namespace_without_credentials(uri: str, namespace: str) -> None:
    assert namespace_of(uri) == namespace


def test_a_relative_path_is_made_absolute() -> None:
    assert namespace_of("lake") == "file://" + os.path.abspath("lake")


@pytest.mark.parametrize(("path", "dataset"), [
    ("/landing/2026-11-26T13", ("file", "/landing/2026-11-26T13")),
    ("s3://bucket/landing/day", ("s3://bucket", "landing/day")),
    ("s3://key:secret@bucket/landing", ("s3://bucket", "landing")),
])
def test_files_are_named_as_openlineage_names_them(path: str, dataset: tuple[str, str]) -> None:
    assert _file_dataset(path) == dataset


def _table(tmp_path):
    import pyarrow as pa

    from paimonflow.core import Catalog

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "2"})
    for n in range(3):
        table.write(pa.table({"id": [n, 10 + n, 20 + n], "v": ["a", "b", "c"]}, schema=schema))
    return table


def test_a_writes_lineage_names_the_table_in_its_warehouse_and_the_files_it_read(tmp_path):
    from paimonflow.core.meta.manifest import FileKind
    from paimonflow.operators.airflow import PaimonHook, PaimonWriteOperator
    from paimonflow.operators.airflow.lineage import operator_lineage

    table = _table(tmp_path)
    warehouse = str(tmp_path / "wh")
    write = PaimonWriteOperator(task_id="load", table="db.t", path=str(tmp_path / "landing"), warehouse=warehouse)
    lineage = operator_lineage(write, PaimonHook(None, warehouse=warehouse), {"snapshot_id": 2, "already_committed": False})
    [source], [output] = lineage.inputs, lineage.outputs
    assert (source.namespace, source.name) == ("file", str(tmp_path / "landing"))
    assert (output.namespace, output.name) == ("file://" + warehouse, "db.t")
    assert output.facets["version"].datasetVersion == "2"
    added = [e.file for e in table.manifest_io.delta_entries(table.snapshot_manager.snapshot(2)) if e.kind is FileKind.ADD]
    statistics = output.outputFacets["outputStatistics"]
    assert (statistics.rowCount, statistics.fileCount, statistics.size) == (
        3, len(added), sum(f.file_size for f in added))


def test_a_job_that_commits_nothing_shows_the_table_as_it_is(tmp_path):
    """An expiry reports its earliest snapshot as ``snapshot_id``: not the table's version."""
    from paimonflow.operators.airflow import PaimonExpireSnapshotsOperator, PaimonHook, PaimonWriteOperator
    from paimonflow.operators.airflow.lineage import operator_lineage

    _table(tmp_path)
    warehouse = str(tmp_path / "wh")
    hook = PaimonHook(None, warehouse=warehouse)
    expire = PaimonExpireSnapshotsOperator(task_id="expire", table="db.t", warehouse=warehouse)
    [output] = operator_lineage(expire, hook, {"snapshot_id": 1, "expired_snapshots": 0}).outputs
    assert output.facets["version"].datasetVersion == "3" and "outputStatistics" not in output.outputFacets
    retried = PaimonWriteOperator(task_id="load", table="db.t", path="/landing", warehouse=warehouse)
    [output] = operator_lineage(retried, hook, {"snapshot_id": 3, "already_committed": True}).outputs
    assert output.facets["version"].datasetVersion == "3" and "outputStatistics" not in output.outputFacets
