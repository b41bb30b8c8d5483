"""Spark write job vs the core's single-process write and vs Spark's own Parquet write of the same
rows (the floor): 5,000,000 rows into a primary-key table with 10 partitions x 8 buckets, on
local[1], local[2] and a two-worker standalone cluster (tests/spark/cluster.py); each master in a
fresh process, so session start-up is excluded from the job time but reported. Each Spark process
writes --reps + 1 tables: the first (cold) run also starts the Python workers; "warm" is the
median of the others. The floor (``spark.read.parquet(source).write.parquet(...)``) runs the same
way in the same process.

    .venv/bin/python bench/spark_write.py --rows 5000000 [--no-cluster]

Source: one Parquet file (id int64 0..n-1 shuffled, dt string (10 values), v string (~20 bytes),
amount double). Times are the median of --reps runs, each into a new table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("amount", pa.float64())])

SPARK_RUN = """
import json, sys, time
t0 = time.perf_counter()
from paimonflow.jobs.session import spark_session
from paimonflow.jobs.location import TableLocation
from paimonflow.jobs.write import WriteSource, write
from bench.spark_write import layout_write
master, wh, source, slots = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
spark = spark_session(master=master, conf={"spark.sql.shuffle.partitions": str(slots),
                                           "spark.driver.memory": "4g", "spark.executor.memory": "900m"})
spark.sparkContext.setLogLevel("ERROR")
started = time.perf_counter() - t0
runs, floor, layout = [], [], []
for table in sys.argv[5:]:  # the first run starts the Python workers; later runs reuse them
    result = write(spark, TableLocation(table, "b.pk"), WriteSource(path=source))
    runs.append(result.duration_s)
    t1 = time.perf_counter()
    spark.read.parquet(source).write.mode("overwrite").parquet(table + "/floor")
    floor.append(time.perf_counter() - t1)
    t1 = time.perf_counter()
    layout_write(spark, TableLocation(table, "b.pk").open(), source, table + "/layout", result.metrics["tasks"])
    layout.append(time.perf_counter() - t1)
median = lambda xs: sorted(xs)[len(xs) // 2]
print(json.dumps({"startup": started, "cold": runs[0], "warm": median(runs[1:]), "floor": median(floor[1:]),
                  "layout": median(layout[1:]),
                  "rows": result.metrics["rows_written"], "tasks": result.metrics["tasks"],
                  "executors": result.executors, "master": result.master}))
"""


def layout_write(spark, table, source: str, out: str, tasks: int) -> None:
    """What a write path in which rows never enter Python would cost at least (issue 17, item 7):
    Spark computes the bucket (``jobs/bucket_expr.py``), a sequence number in input order and the
    key and kind columns of Paimon's primary-key data files, shuffles by (partition, bucket) into as
    many tasks as the job uses, sorts each bucket by key and writes zstd Parquet, one directory per
    (partition, bucket), with its own writer. It leaves out what such a path would add (keeping the
    last row of a key, moving files to Paimon's names, metadata from the footers), so its time is a
    lower bound for that path, measured beside the job and the floor."""
    from pyspark.sql import functions as F

    from paimonflow.jobs.bucket_expr import bucket_expression

    df = spark.read.parquet(source)
    keys = [table.arrow_schema.field(k) for k in table.schema.bucket_keys]
    bucket = bucket_expression(keys, dict(df.dtypes), table.options.bucket)
    assert bucket is not None, "the bench table's bucket key is expressible in Spark"
    primary = list(table.primary_keys)
    rows = df.select(*[F.col(k).alias(f"_KEY_{k}") for k in primary],
                     F.monotonically_increasing_id().alias("_SEQUENCE_NUMBER"),
                     F.lit(0).cast("tinyint").alias("_VALUE_KIND"), *df.columns, F.expr(bucket).alias("bucket"))
    partitions = [*table.partition_keys, "bucket"]
    (rows.repartition(tasks, *partitions).sortWithinPartitions(*partitions, *[f"_KEY_{k}" for k in primary])
     .write.mode("overwrite").option("compression", "zstd").partitionBy(*partitions).parquet(out))


def make_source(path: Path, rows: int) -> None:
    rng = np.random.default_rng(7)
    ids = rng.permutation(rows)
    table = pa.table({"id": ids, "dt": pa.array([f"2026-11-{10 + i % 10}" for i in range(10)]).take(ids % 10),
                      "v": pa.array([f"value-{i:012d}" for i in range(1000)]).take(ids % 1000),
                      "amount": rng.random(rows)}, schema=SCHEMA)
    pq.write_table(table, path, row_group_size=1 << 20)


def new_table(root: Path) -> str:
    from paimonflow.core import Catalog

    wh = tempfile.mkdtemp(dir=root)
    c = Catalog(wh)
    c.create_database("b")
    c.create_table("b.pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "8"})
    return wh


def core_write(root: Path, source: Path) -> float:
    from paimonflow.core import Catalog

    wh = new_table(root)
    data = pq.read_table(source)
    start = time.perf_counter()
    Catalog(wh).get_table("b.pk").write(data)
    return time.perf_counter() - start


def run_script(script: str, arguments: list[str], env=None) -> dict:
    """Run a benchmark ``script`` in a fresh Python process (its own Spark session); its last
    stdout line, a JSON object."""
    out = subprocess.run([sys.executable, "-c", script, *arguments], capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def spark_write(root: Path, source: Path, master: str, slots: int, reps: int, env=None) -> dict:
    tables = [new_table(root) for _ in range(reps + 1)]
    result = run_script(SPARK_RUN, [master, "-", str(source), str(slots), *tables], env)
    result["vs_floor"] = round(result["warm"] / result["floor"], 2)
    result["layout_vs_floor"] = round(result["layout"] / result["floor"], 2)
    return result


def arguments() -> argparse.Namespace:
    """The Spark benchmarks' command line: --rows, --reps, --no-cluster."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-cluster", action="store_true")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    root = Path(tempfile.mkdtemp(prefix="spark-bench-"))
    source = root / "source.parquet"
    make_source(source, args.rows)
    report: dict = {"rows": args.rows, "core": statistics.median(core_write(root, source) for _ in range(args.reps))}
    for master, slots in (("local[1]", 8), ("local[2]", 8)):
        report[master] = spark_write(root, source, master, slots, args.reps)
        print(master, json.dumps(report[master]), file=sys.stderr, flush=True)  # partial results
    report["speedup_local2_vs_local1"] = round(report["local[1]"]["warm"] / report["local[2]"]["warm"], 2)
    if not args.no_cluster:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.spark.cluster import StandaloneCluster, spark_env

        cluster = StandaloneCluster().start()
        try:
            report["standalone"] = spark_write(root, source, cluster.url, 8, args.reps, env=spark_env())
        finally:
            cluster.stop()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
