"""Each action on a DataFrame or view of the ``paimonflow`` source reads the table as it is then
(PySpark 4.3 runs a Python data source's first plan again for later actions: see
jobs/datasource.py), on the suite's standalone cluster and Spark Connect server, with rows
appended by another process between the reads; a read pinned to a snapshot stays there."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from tests.spark.cluster import spark_env

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


def seeded(tmp_path) -> Catalog:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2"})
    ids = list(range(1, 101))
    table.write(pa.table({"id": ids, "v": [str(i) for i in ids], "dt": ["x" if i % 2 else "y" for i in ids]},
                         schema=SCHEMA))
    return catalog


def run_client(master: str, warehouse: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "tests.spark.fresh_client", master, warehouse], capture_output=True,
                          text=True, timeout=600, env=spark_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def expected(catalog: Catalog) -> dict:
    rows = catalog.get_table("db.t").read().to_pylist()
    return {"dataframe": len(rows), "view_of_dataframe": len(rows), "view": len(rows), "pinned": 100,
            "x_only": sum(r["dt"] == "x" for r in rows), "sum": sum(r["id"] for r in rows)}


def check(seen: dict, catalog: Catalog) -> None:
    assert seen["before"] == {"dataframe": 100, "view_of_dataframe": 100, "view": 100, "pinned": 100,
                              "x_only": 50, "sum": 5050}
    assert seen["after_other_process"] == {"dataframe": 102, "view_of_dataframe": 102, "view": 102, "pinned": 100,
                                           "x_only": 50, "sum": 5050 + 1000 + 1001}
    assert seen["after_own_insert"] == expected(catalog) == {
        "dataframe": 103, "view_of_dataframe": 103, "view": 103, "pinned": 100, "x_only": 51,
        "sum": 5050 + 1000 + 1001 + 2000}


@pytest.mark.timeout(900)
def test_reads_follow_the_table_on_the_standalone_cluster(spark_cluster, tmp_path):
    catalog = seeded(tmp_path)
    check(run_client(spark_cluster.url, catalog.warehouse), catalog)


@pytest.mark.timeout(900)
def test_reads_follow_the_table_on_spark_connect(spark_connect, tmp_path):
    catalog = seeded(tmp_path)
    check(run_client(spark_connect.url, catalog.warehouse), catalog)
