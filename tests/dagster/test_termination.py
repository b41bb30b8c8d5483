"""Terminating a run stops its submitted job: the run worker (a process running a piped write op,
as ``dagster api execute_run`` does) gets SIGINT, Dagster Pipes forwards it to spark-submit, and the
job's Python driver, left without its JVM mid-write, stops before it commits anything (here its
Spark work fails; a driver in a pure-Python phase stops by watching its parent, which
tests/test_job_orphan_watch.py shows, with a negative control)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from tests.processes import python_processes, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.spark]
SCRIPT = Path(__file__).parent / "scripts" / "run_piped_write.py"


def test_terminating_the_run_stops_the_submitted_job_before_it_commits(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "2"})
    rows = 3_000_000  # long enough to be interrupted mid-write on local[1]
    pq.write_table(pa.table({"id": np.arange(rows), "v": pa.array(["x" * 20] * rows)}, schema=schema),
                   tmp_path / "in.parquet")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    worker = subprocess.Popen([sys.executable, str(SCRIPT), str(tmp_path / "wh"), str(tmp_path / "in.parquet")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              start_new_session=True)
    try:
        wait_for("the submitted job's driver", lambda: python_processes("jobs/submit.py", str(tmp_path)), timeout=180, every=0.2)
        time.sleep(3)
        worker.send_signal(signal.SIGINT)  # the run's termination
        out, _ = worker.communicate(timeout=180)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    report = json.loads(out.strip().splitlines()[-1])
    assert report["success"] is False
    assert "[pipes] execution interrupted, sending SIGINT to subprocess." in report["logs"]
    wait_for("the driver to stop", lambda: not python_processes("jobs/submit.py", str(tmp_path)), timeout=60, every=0.5)
    assert catalog.get_table("db.t").snapshot_manager.latest_id() is None  # nothing committed
