"""The core starts small: creating, writing, reading and compacting a table imports none of the
optional parts (Spark, Airflow, Dagster, boto3, the command line's rich and typer)."""

from __future__ import annotations

import json
import subprocess
import sys

OPTIONAL = ("pyspark", "airflow", "dagster", "boto3", "botocore", "rich", "typer", "polars")

_SCRIPT = """
import json, sys, tempfile
import pyarrow as pa
from paimonflow.core import Catalog
with tempfile.TemporaryDirectory() as wh:
    catalog = Catalog(wh)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema), commit_user="u", commit_identifier=1)
    t.write(pa.table({"id": [2, 3], "v": ["c", "d"]}, schema=schema))
    assert t.read().num_rows == 3
    t.compact(full=True)
    t.expire_snapshots()
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_the_core_imports_no_optional_part():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], check=True, capture_output=True, text=True).stdout
    loaded = set(json.loads(out.strip().splitlines()[-1]))
    assert "pyarrow" in loaded and "paimonflow" in loaded
    assert not loaded & set(OPTIONAL), f"the core imported {sorted(loaded & set(OPTIONAL))}"
