"""The Airflow compaction operator on a postpone-bucket table (``bucket = -2``): it runs the
postpone compaction (core engine here; the Spark engine runs ``jobs/compact.py``'s, tested in
tests/spark/test_postpone_compaction.py) and publishes what it did."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pyarrow as pa

from paimonflow.core import Catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def test_compact_operator_gives_postponed_rows_their_buckets(tmp_path):
    from paimonflow.operators.airflow import PaimonCompactOperator

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("lab")
    t = catalog.create_table("lab.p", SCHEMA, primary_keys=["id"],
                             options={"bucket": "-2", "postpone.default-bucket-num": "2"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2], "v": ["B"]}, schema=SCHEMA))
    assert t.read().num_rows == 0
    operator = PaimonCompactOperator(task_id="compact", table="lab.p", engine="core", warehouse=str(tmp_path / "wh"))
    context = {"ti": SimpleNamespace(dag_id="postpone", task_id="compact", map_index=-1),
               "logical_date": datetime(2026, 11, 20, tzinfo=UTC)}
    out = operator.execute(context)
    assert out["files_read"] == 2 and out["rows_written"] == 3
    assert sorted(t.refresh().read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    assert operator.execute(context)["snapshot_id"] == out["snapshot_id"]  # a retried task commits nothing
