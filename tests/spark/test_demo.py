"""``make demo`` end to end (in its own process: it starts and stops its own SparkSession)."""

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
    assert orders.read().num_rows == 5004  # 4 rows from the core, 5,000 from the Spark write job
    assert orders.latest_snapshot().commit_kind.value == "COMPACT"
