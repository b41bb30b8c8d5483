"""A Spark program that reads a table again after others changed it, run as its own process by
tests/spark/test_fresh_reads.py on the standalone cluster and on a Spark Connect server:
``python -m tests.spark.fresh_client <master or sc://url> <warehouse>``. Between its reads a
second program (another process with its own Spark session, ``python -m tests.spark.fresh_client
append <warehouse> <first id> <rows>``) appends rows, and it inserts rows through its own view;
it prints what each read saw as one JSON object."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def append(warehouse: str, first: int, rows: int) -> None:
    """The second program: ``rows`` rows from ``first`` on, written by its own local session."""
    from paimonflow.jobs.session import spark_session

    spark = spark_session(master="local[1]", app_name="paimonflow-fresh-writer")
    spark.range(first, first + rows).selectExpr("id", "cast(id as string) as v", "'y' as dt") \
        .write.format("paimonflow").option("warehouse", warehouse).mode("append").save("db.t")
    spark.stop()


def main(master: str, warehouse: str) -> dict:
    from paimonflow.jobs.session import spark_session

    spark = spark_session(master=master, app_name="paimonflow-fresh-reader", conf={"spark.ui.enabled": "false"})
    path = f"{warehouse}/db.db/t"
    df = spark.read.format("paimonflow").load(path)
    df.createOrReplaceTempView("by_dataframe")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW by_sql USING paimonflow OPTIONS (path '{path}')")
    pinned = spark.read.format("paimonflow").option("snapshot-id", "1").load(path)

    def counts() -> dict:
        return {"dataframe": df.count(), "view_of_dataframe": spark.sql("SELECT count(*) FROM by_dataframe").first()[0],
                "view": spark.sql("SELECT count(*) FROM by_sql").first()[0], "pinned": pinned.count(),
                "x_only": df.filter("dt = 'x'").count(), "sum": df.groupBy().sum("id").first()[0]}

    seen = {"before": counts()}
    # a Connect session marks its interpreter's environment as Connect mode: the writer is classic
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    subprocess.run([sys.executable, "-m", "tests.spark.fresh_client", "append", warehouse, "1000", "2"], check=True,
                   env=env)
    seen["after_other_process"] = counts()
    spark.sql("INSERT INTO by_sql VALUES (2000, 'mine', 'x')")
    seen["after_own_insert"] = counts()
    return seen


if __name__ == "__main__":
    if sys.argv[1] == "append":
        append(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        print(json.dumps(main(sys.argv[1], sys.argv[2])))
