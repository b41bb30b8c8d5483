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
from paimonflow.jobs.results import RESULTS_DIR, result_uri, take_result, write_result


def test_a_result_is_written_read_back_once_and_deleted(tmp_path):
    uri = result_uri(str(tmp_path / "wh") + "/")
    assert uri.startswith(f"{tmp_path / 'wh'}/{RESULTS_DIR}/") and uri.endswith(".json")
    assert result_uri(str(tmp_path)) != result_uri(str(tmp_path))  # one place per job
    write_result(uri, json.dumps({"job": "compact", "snapshot_id": 3}))
    assert take_result(uri) == {"job": "compact", "snapshot_id": 3}
    assert take_result(uri) is None  # deleted: a second read finds nothing
    assert list((tmp_path / "wh" / RESULTS_DIR).iterdir()) == []


def test_the_results_folder_is_no_database(tmp_path):
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    write_result(result_uri(str(tmp_path)), "{}")
    assert catalog.list_databases() == ["db"]


def test_a_result_through_the_s3_server(s3_bucket, s3_storage_options):
    uri = result_uri(f"s3://{s3_bucket}/wh")
    write_result(uri, '{"job": "write", "rows_written": 12}', s3_storage_options)
    assert take_result(uri, s3_storage_options) == {"job": "write", "rows_written": 12}
    assert not get_file_io(uri, s3_storage_options).exists(uri)


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
    uri = result_uri(warehouse)
    env = {**os.environ, "PAIMONFLOW_STORAGE_OPTIONS": json.dumps(s3_storage_options),
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run([sys.executable, "-m", "paimonflow.jobs.cli", "--result-file", uri, "analyze", "-w",
                           warehouse, "-t", "db.t", "--master", "local[1]"], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert take_result(uri, s3_storage_options) == printed and printed["job"] == "analyze"


def test_discarding_a_result_never_raises(tmp_path):
    from paimonflow.jobs.results import discard_result

    uri = result_uri(str(tmp_path))
    discard_result(uri)  # nothing written: nothing to do
    write_result(uri, "{}")
    discard_result(uri)
    assert take_result(uri) is None
