"""A submitted job's result travels through the warehouse's storage (``jobs/results.py``): the
driver writes it wherever it runs (client or cluster deploy mode), the submitter reads it back and
deletes it. Locally, on the S3 test server, and from the jobs CLI (a real driver) to S3."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.fs import get_file_io
from paimonflow.jobs.results import RESULTS_DIR, ResultFile, write_result


def test_a_result_is_written_read_back_once_and_deleted(tmp_path):
    warehouse = str(tmp_path / "wh")
    with ResultFile(warehouse + "/") as result:
        assert result.uri.startswith(f"{warehouse}/{RESULTS_DIR}/") and result.uri.endswith(".json")
        assert ResultFile(warehouse).uri != result.uri  # one place per job
        write_result(result.uri, json.dumps({"job": "compact", "snapshot_id": 3}))
        assert result.take() == {"job": "compact", "snapshot_id": 3}
        assert result.take() is None  # deleted: a second read finds nothing
    assert list((tmp_path / "wh" / RESULTS_DIR).iterdir()) == []


def test_a_result_nobody_took_is_deleted_on_the_way_out_and_the_error_kept(tmp_path):
    with pytest.raises(RuntimeError, match="spark-submit failed"), ResultFile(str(tmp_path)) as result:
        write_result(result.uri, "{}")
        raise RuntimeError("spark-submit failed")
    assert list((tmp_path / RESULTS_DIR).iterdir()) == []
    with ResultFile(str(tmp_path)):  # nothing written: leaving is quiet
        pass


def test_the_results_folder_is_no_database(tmp_path):
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    write_result(ResultFile(str(tmp_path)).uri, "{}")
    assert catalog.list_databases() == ["db"]


def test_a_result_through_the_s3_server(s3_bucket, s3_storage_options):
    with ResultFile(f"s3://{s3_bucket}/wh", s3_storage_options) as result:
        write_result(result.uri, '{"job": "write", "rows_written": 12}', s3_storage_options)
        assert result.take() == {"job": "write", "rows_written": 12}
        assert not get_file_io(result.uri, s3_storage_options).exists(result.uri)


@pytest.mark.slow
@pytest.mark.spark
def test_the_jobs_cli_writes_its_result_to_the_warehouse_on_s3(s3_bucket, s3_storage_options):
    """A real driver (the jobs CLI, as spark-submit runs it) writes its result to S3 with the
    storage options of ``PAIMONFLOW_STORAGE_OPTIONS``; the submitter's side reads it back."""
    warehouse = f"s3://{s3_bucket}/wh"
    catalog = Catalog(warehouse, storage_options=s3_storage_options)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"}).write(
        pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    result = ResultFile(warehouse, s3_storage_options)
    env = {**os.environ, "PAIMONFLOW_STORAGE_OPTIONS": json.dumps(s3_storage_options),
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run([sys.executable, "-m", "paimonflow.jobs.cli", "--result-file", result.uri, "analyze", "-w",
                           warehouse, "-t", "db.t", "--master", "local[1]"], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result.take() == printed and printed["job"] == "analyze"

