"""PaimonReadChangesOperator on the core engine: the export the Spark job makes (its
``output_format``, a directory of part files on the connection's storage, local or S3) and the
result keys the Spark job returns (``row_kinds``, ``start_snapshot``, ``end_snapshot``)."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.orc as porc
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError
from paimonflow.core.fs import get_file_io
from paimonflow.operators.airflow.hook import PaimonHook
from paimonflow.operators.airflow.operators import PaimonReadChangesOperator

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def changed_table(warehouse: str, storage_options=None):
    catalog = Catalog(warehouse, storage_options=storage_options)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1",
                                                                                "changelog-producer": "input"})
    table.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    table.write(pa.table({"id": [2, 4], "v": ["B", "d"]}, schema=SCHEMA))
    table.write(pa.table({"id": [3]}, schema=pa.schema([SCHEMA.field("id")])).append_column(
        "v", pa.array([None], pa.string())), row_kinds="-D")
    return table.refresh()


def run(hook: PaimonHook, output: str, output_format: str, start: int = 1, end: int | None = None) -> dict:
    operator = PaimonReadChangesOperator(task_id="changes", table="db.t", start_snapshot=start, end_snapshot=end,
                                         output_path=output, output_format=output_format, engine="core")
    return operator.run_core(hook, operator.arguments({}))


@pytest.mark.parametrize("output_format", ["parquet", "orc", "csv"])
def test_the_core_export_writes_the_asked_format_and_the_spark_job_s_result(tmp_path, output_format):
    table = changed_table(str(tmp_path / "wh"))
    hook = PaimonHook(None, warehouse=str(tmp_path / "wh"))
    out = tmp_path / "out"
    result = run(hook, str(out), output_format)
    expected = table.read_changes(1, 3)
    assert result == {"job": "read-changes", "table": "db.t", "snapshot_id": 3, "start_snapshot": 1, "end_snapshot": 3,
                      "rows": expected.num_rows, "row_kinds": {"+I": 2, "-D": 1}, "output": str(out)}
    parts = glob.glob(str(out / "part-*"))
    assert len(parts) == 1 and parts[0].endswith(f".{output_format}") and (out / "_SUCCESS").exists()
    read = {"parquet": pq.read_table, "orc": porc.read_table,  # a CSV's empty field is its null
            "csv": lambda p: pcsv.read_csv(p, convert_options=pcsv.ConvertOptions(strings_can_be_null=True))
            }[output_format]
    got = read(parts[0])
    assert sorted(got.to_pylist(), key=str) == sorted(expected.to_pylist(), key=str)
    run(hook, str(out), "parquet", start=2)  # an export again: the earlier part files go, as Spark's overwrite
    assert [os.path.basename(p).rsplit(".", 1)[1] for p in glob.glob(str(out / "part-*"))] == ["parquet"]


def test_an_object_store_output_goes_to_the_bucket_with_the_connection_s_credentials(
        tmp_path, s3_bucket, s3_storage_options, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a URI taken for a local path would show up here as ./s3:/...
    warehouse = f"s3://{s3_bucket}/wh"
    changed_table(warehouse, s3_storage_options)
    hook = PaimonHook(None, warehouse=warehouse, storage_options=s3_storage_options)
    result = run(hook, f"s3://{s3_bucket}/landing/changes", "parquet")
    assert result["rows"] == 3 and not os.path.exists(tmp_path / "s3:")
    file_io = get_file_io(warehouse, s3_storage_options)
    parts = file_io.list_files(f"s3://{s3_bucket}/landing/changes", "part-")
    assert len(parts) == 1 and pq.read_table(file_io.open_input(parts[0].path)).num_rows == 3


def test_a_format_the_core_engine_does_not_write_is_refused_in_one_line(tmp_path):
    changed_table(str(tmp_path / "wh"))
    with pytest.raises(InvalidArgumentError, match="output_format must be one of parquet, orc, csv"):
        run(PaimonHook(None, warehouse=str(tmp_path / "wh")), str(tmp_path / "out"), "json")
    assert not (tmp_path / "out").exists()
    with pytest.raises(InvalidArgumentError, match="0 <= start < end"):
        run(PaimonHook(None, warehouse=str(tmp_path / "wh")), str(tmp_path / "out"), "parquet", start=3)


def test_the_core_result_has_the_keys_and_counts_of_the_spark_job(tmp_path, spark):
    from paimonflow.jobs.location import TableLocation
    from paimonflow.jobs.maintenance import read_changes

    changed_table(str(tmp_path / "wh"))
    core = run(PaimonHook(None, warehouse=str(tmp_path / "wh")), str(tmp_path / "core"), "parquet")
    job = read_changes(spark, TableLocation(str(tmp_path / "wh"), "db.t"), start_snapshot=1,
                       output=str(tmp_path / "spark")).to_dict()
    assert set(core) <= set(job)
    assert {k: job[k] for k in core if k != "output"} == {k: v for k, v in core.items() if k != "output"}
    assert sorted(pq.read_table(str(tmp_path / "spark")).to_pylist(), key=str) == \
        sorted(pq.read_table(glob.glob(str(tmp_path / "core" / "part-*"))[0]).to_pylist(), key=str)
