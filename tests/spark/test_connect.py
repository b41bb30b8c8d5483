"""Spark Connect: the jobs and the ``paimonflow`` data source on a Connect session
(``sc://127.0.0.1:<port>``, a Connect server started from PySpark's jars, tests/spark/cluster.py),
and a job interrupted on its client cancelled on the server. Clients run as their own processes,
as users run them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from tests.spark.cluster import spark_env

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def new_table(tmp_path, **options: str):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "2", **options})


def job(server, tmp_path, name: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "paimonflow.jobs", name, "-w", str(tmp_path / "wh"), "-t", "db.t",
                           "--master", server.url, *args], capture_output=True, text=True, timeout=300,
                          env=spark_env(), cwd=tmp_path)
    assert proc.returncode == 0, f"{name}: {proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(1200)
def test_jobs_run_on_a_spark_connect_session(spark_connect, tmp_path):
    table = new_table(tmp_path, **{"changelog-producer": "input"})
    before = len(spark_connect.jobs())
    source = tmp_path / "a.csv"
    source.write_text("id,v,dt\n" + "".join(f"{i},v{i},2026-11-{21 + i % 2}\n" for i in range(300)))
    written = job(spark_connect, tmp_path, "write", "--path", str(source), "--format", "csv")
    assert written["rows_written"] == 300 and written["master"] == spark_connect.master
    assert written["executors"] == 1  # the server's driver ran the tasks (its master is local)
    compacted = job(spark_connect, tmp_path, "compact")
    assert compacted["snapshot_id"] == 2 and compacted["tasks"] == compacted["buckets"]
    job(spark_connect, tmp_path, "create-tag", "--name", "compacted")
    changes = job(spark_connect, tmp_path, "read-changes", "--start", "0", "--output", str(tmp_path / "out"))
    assert changes["rows"] == 300 and changes["executors"] == 1  # observed on the server's one (local) executor
    stray = tmp_path / "wh" / "db.db" / "t" / "dt=2026-11-21" / "bucket-0" / "data-stray.parquet"
    stray.write_bytes(b"left by a killed writer")
    orphans = job(spark_connect, tmp_path, "remove-orphan-files", "--older-than", "0 ms", "--min-older-than", "0 ms")
    assert orphans["orphans"] == 1 and not stray.exists()
    table = Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert table.read().num_rows == 300 and table.tags.get("compacted").id == 2
    assert len(spark_connect.jobs()) > before  # the server ran Spark jobs for them


@pytest.mark.timeout(600)
def test_the_data_source_on_a_spark_connect_session(spark_connect, tmp_path):
    new_table(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "tests.spark.connect_client", spark_connect.url,
                           str(tmp_path / "wh")], capture_output=True, text=True, timeout=400, env=spark_env(),
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["rows"] == [[1, "a", "x"], [2, "B", "x"], [3, "c", "y"]]
    assert seen["filtered"] == [[2, "B", "x"]]
    assert seen["first_snapshot"] == [[1, "a", "x"], [2, "b", "x"], [3, "c", "y"]]
    assert seen["by_path"] == 3 and seen["sql"] == [["x", 2], ["y", 1]]
    table = Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert table.snapshot_manager.latest_id() == 2


@pytest.mark.timeout(600)
def test_an_interrupted_job_is_cancelled_on_the_connect_server(spark_connect, tmp_path):
    """SIGTERM to the job's process (a scheduler killing its task) interrupts the job's operations
    on the server by their tag: the server stops working on them and nothing is committed."""
    table = new_table(tmp_path)
    endless = "select id, cast(id as string) as v, 'x' as dt from range(0, 5000000000, 1, 2)"
    proc = subprocess.Popen([sys.executable, "-m", "paimonflow.jobs", "write", "-w", str(tmp_path / "wh"), "-t", "db.t",
                             "--sql", endless, "--master", spark_connect.url], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=spark_env(), cwd=tmp_path)
    deadline = time.monotonic() + 240
    while not spark_connect.jobs("running"):
        assert proc.poll() is None and time.monotonic() < deadline, "the job never started on the server"
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr[-3000:]  # 128 + SIGTERM
    assert json.loads(stderr.strip().splitlines()[-1])["error"] == "JobInterrupted"
    deadline = time.monotonic() + 60
    while spark_connect.jobs("running"):  # the server itself stopped, not just the client
        assert time.monotonic() < deadline, spark_connect.jobs("running")
        time.sleep(0.5)
    assert any(j["status"] == "FAILED" for j in spark_connect.jobs())
    assert table.snapshot_manager.latest_id() is None
