"""A Spark Connect client, run as its own process by tests/spark/test_connect.py (a Connect session
switches its whole interpreter to Connect mode, so it cannot share the tests' classic session):
``python -m tests.spark.connect_client <sc://url> <warehouse>`` uses the ``paimonflow`` data source
as a user would on a Connect session and prints what it saw as one JSON object."""

from __future__ import annotations

import json
import sys


def main(url: str, warehouse: str) -> dict:
    from pyspark.sql import SparkSession

    from paimonflow.jobs.session import spark_session
    from paimonflow.jobs.spark_info import is_connect

    spark = spark_session(master=url)
    assert is_connect(spark) and type(spark) is not SparkSession
    seen: dict = {"connect": True}
    rows = spark.createDataFrame([(1, "a", "x"), (2, "b", "x"), (3, "c", "y")], "id long, v string, dt string")
    rows.write.format("paimonflow").option("warehouse", warehouse).mode("append").save("db.t")
    spark.createDataFrame([(2, "B", "x")], "id long, v string, dt string") \
        .write.format("paimonflow").option("warehouse", warehouse).mode("append").save("db.t")
    table = spark.read.format("paimonflow").option("warehouse", warehouse).load("db.t")
    seen["rows"] = sorted(tuple(r) for r in table.collect())
    seen["filtered"] = sorted(tuple(r) for r in table.filter("dt = 'x' and id >= 2").collect())
    seen["first_snapshot"] = sorted(tuple(r) for r in spark.read.format("paimonflow").option("warehouse", warehouse)
                                    .option("scan.snapshot-id", "1").load("db.t").collect())
    path = f"{warehouse}/db.db/t"
    seen["by_path"] = spark.read.format("paimonflow").load(path).count()
    spark.sql(f"CREATE TEMPORARY VIEW connect_t USING paimonflow OPTIONS (path '{path}')")
    seen["sql"] = [tuple(r) for r in spark.sql("SELECT dt, count(*) FROM connect_t GROUP BY dt ORDER BY dt").collect()]
    return seen


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
