"""The Spark compaction job on a postpone-bucket table (``bucket = -2``): one task per partition
replays its postpone files into real buckets; one COMPACT snapshot; exactly-once."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.meta.layout import POSTPONE_BUCKET
from paimonflow.jobs.compact import compact
from paimonflow.jobs.location import TableLocation
from paimonflow.jobs.write import write

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


@pytest.fixture
def table(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    return catalog.create_table("db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "-2", "postpone.default-bucket-num": "4"})


def _rows(ids, dt, tag):
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def test_spark_job_gives_postponed_rows_buckets_in_one_compact_snapshot(spark, table, tmp_path):
    location = TableLocation(warehouse=str(tmp_path / "wh"), identifier="db.p")
    for dt in ("a", "b", "c"):
        table.write(_rows(list(range(100)), dt, "old"))
    write(spark, location, spark.createDataFrame(_rows(list(range(50, 150)), "a", "new").to_pandas()))
    assert table.refresh().read().num_rows == 0  # everything waits in the postpone bucket

    out = compact(spark, location, commit_user="compactor", commit_identifier=7).to_dict()
    assert out["postpone"] and out["tasks"] == 3 and out["files_read"] == 4 and out["rows_read"] == 400
    t = table.refresh()
    snapshot = t.latest_snapshot()
    assert snapshot.commit_kind.value == "COMPACT" and out["snapshot_id"] == snapshot.id
    entries = t.manifest_io.live_entries(snapshot)
    assert {e.bucket for e in entries} == {0, 1, 2, 3} and {e.total_buckets for e in entries} == {4}
    assert not any(e.bucket == POSTPONE_BUCKET for e in entries)
    got = {(r["id"], r["dt"]): r["v"] for r in t.read().to_pylist()}
    assert len(got) == 350 and got[(60, "a")] == "new60" and got[(10, "a")] == "old10" and got[(60, "b")] == "old60"
    again = compact(spark, location, commit_user="compactor", commit_identifier=7).to_dict()
    assert again["already_committed"] and again["snapshot_id"] == snapshot.id
