"""Tables written by the Spark jobs and the data source read the same in the core and in pypaimon
2.1.0 (primary-key upserts through the write job, a data source append with tasks sharing
buckets, a compaction job, an append table)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.jobs.compact import compact
from paimonflow.jobs.location import TableLocation
from paimonflow.jobs.write import write
from tests.interop.oracle import Oracle, canonical

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


def test_pypaimon_reads_what_spark_wrote(spark, tmp_path):
    wh = str(tmp_path / "wh")
    c = Catalog(wh)
    c.create_database("db")
    c.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
    c.create_table("db.log", SCHEMA, partition_keys=["dt"])
    pk, log = TableLocation(wh, "db.pk"), TableLocation(wh, "db.log")
    first = spark.range(0, 300).selectExpr("id", "concat('a', id) as v", "concat('d', id % 3) as dt")
    write(spark, pk, first)
    write(spark, log, first)
    # tasks sharing buckets through the data source, then a compaction job
    update = spark.range(0, 300, numPartitions=3).selectExpr("id % 100 as id", "concat('b', id) as v",
                                                             "concat('d', (id % 100) % 3) as dt")
    update.write.format("paimonflow").option("warehouse", wh).mode("append").save("db.pk")
    compact(spark, pk, full=False)
    oracle = Oracle(tmp_path)
    oracle.read(wh, "db.pk")
    oracle.read(wh, "db.log")
    theirs_pk, theirs_log = oracle.run()
    assert canonical(theirs_pk) == canonical(c.get_table("db.pk").read())
    assert canonical(theirs_log) == canonical(c.get_table("db.log").read())
    ours = {r["id"]: r["v"] for r in c.get_table("db.pk").read().to_pylist()}
    assert len(ours) == 300 and all(ours[k] == f"b{200 + k}" for k in range(100))
