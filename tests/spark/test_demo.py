"""``make demo`` end to end (in its own process: its own SparkSession and Airflow database)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from paimonflow.core import Catalog


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    warehouse = tmp_path / "demo-warehouse"
    proc = subprocess.run([sys.executable, "-m", "paimonflow.dags_examples.demo", str(warehouse)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "already_committed=True" in proc.stdout and "Done" in proc.stdout
    orders = Catalog(str(warehouse)).get_table("shop.orders")
    # 4 rows from the core, 5,000 from the Spark write job, 2 new (and 1 updated) from the Airflow DAG,
    # 2 from the Dagster asset
    assert orders.read().num_rows == 5008
    assert "materialized paimon/shop/orders[2026-11-22-11:00]" in proc.stdout
    assert "snapshot sensor: one run request" in proc.stdout
    assert "DAG paimon_ingest_hourly: success" in proc.stdout
    assert "DAG paimon_maintenance_nightly: success" in proc.stdout
    assert any(s.commit_kind.value == "COMPACT" and "maintenance_nightly" in s.commit_user
               for s in orders.snapshot_manager.snapshots())  # the nightly compaction
    assert "2026-11-23" in orders.tags.list()
    # quiet by default: no library's debug lines, warnings or log banners; the failing check is explained
    output = proc.stdout + proc.stderr
    for noise in (" DEBUG ", "[warning", "WARN ", "log4j", "Setting default log level"):
        assert noise not in output, f"{noise!r} in the demo's output"
    assert "check small_files: FAILED" not in proc.stdout or "as expected here" in proc.stdout
