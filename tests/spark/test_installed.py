"""An installed paimonflow in a SparkSession nobody configured: built as a wheel, installed into a
plain directory on ``PYTHONPATH`` (the layout ``pip install`` gives), used from a Python program
that builds ``SparkSession.builder.master(...).getOrCreate()`` with no registration call and no
setting. PySpark finds ``pyspark_paimonflow`` by itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
path = sys.argv[1]
rows = spark.read.format("paimonflow").load(path).filter("id > 1").collect()
spark.createDataFrame([(9, "nine")], "id long, v string").write.format("paimonflow").mode("append").save(path)
print(json.dumps({"pushdown": spark.conf.get("spark.sql.python.filterPushdown.enabled"),
                  "rows": sorted([r.id, r.v] for r in rows)}))
"""


def test_any_session_finds_the_installed_data_source(tmp_path):
    wheels, site, source = tmp_path / "wheels", tmp_path / "site", tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(  # a build writes into its source tree
        ".*", "build", "spark-warehouse", "*.egg-info", "__pycache__", "node_modules"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(source)], check=True, capture_output=True, timeout=300)
    wheel = next(wheels.glob("paimonflow-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    assert (site / "pyspark_paimonflow" / "__init__.py").exists()

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]),
                                 primary_keys=["id"], options={"bucket": "1"})
    table.write(pa.table({"id": [1, 2, 3], "v": ["one", "two", "three"]}))
    env = {**os.environ, "PYTHONPATH": str(site), "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    proc = subprocess.run([sys.executable, "-c", PROGRAM, table.path], capture_output=True, text=True, env=env,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"pushdown": "false", "rows": [[2, "two"], [3, "three"]]}  # the setting is off: read without it
    assert sorted(catalog.get_table("db.t").read().column("id").to_pylist()) == [1, 2, 3, 9]
