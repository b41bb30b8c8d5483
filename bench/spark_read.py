"""Reading a table through the ``paimonflow`` data source vs Spark's own Parquet reader of the
same data files (the floor): 5,000,000 rows in 10 partitions x 8 buckets, on local[1], local[2]
and a two-worker standalone cluster (tests/spark/cluster.py), each side in the same Spark
process, one after the other, the median of --reps runs after one warm-up.

    .venv/bin/python bench/spark_read.py --rows 5000000 [--no-cluster]

Both sides read every column of every row (``write.format("noop")``). Then one partition and two
columns of the same table: with the source's ``partitions`` and ``columns`` options (the plan reads
only that partition's files and columns), with Spark's ``filter``/``select`` on a whole-table read
(PySpark 4.3 gives a Python source no columns and paimonflow takes no filters from it: see
docs/spark.md), and the floor reading that partition's files and columns with Spark's Parquet
reader. The table is written once
by the core; the floor reads its data files with ``spark.read.parquet`` (a primary-key table
written in one commit has one file per bucket, so there is nothing to merge and both sides return
the same rows).
"""

from __future__ import annotations

import glob
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.spark_write import SCHEMA, arguments, make_source, new_table, run_script

RUN = """
import json, statistics, sys, time
from paimonflow.jobs.session import spark_session
master, wh, files, reps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
spark = spark_session(master=master, conf={"spark.executor.memory": "900m", "spark.driver.memory": "3g"})
spark.sparkContext.setLogLevel("ERROR")

def timed(frame):
    start = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start

source = lambda: spark.read.format("paimonflow").option("warehouse", wh)
day = "2026-11-10"
sides = {"datasource": lambda: source().load("b.pk"),
         "parquet": lambda: spark.read.parquet(*files),
         "pruned_by_options": lambda: source().option("partitions", f"dt={day}").option("columns", "id,amount").load("b.pk"),
         "pruned_by_spark": lambda: source().load("b.pk").filter(f"dt = '{day}'").select("id", "amount"),
         "parquet_pruned": lambda: spark.read.parquet(*[f for f in files if f"dt={day}/" in f]).select("id", "amount")}
out = {"master": master, "parallelism": spark.sparkContext.defaultParallelism}
for name, frame in sides.items():
    timed(frame())  # warm-up: Python workers, JIT, page cache
    out[name] = statistics.median(timed(frame()) for _ in range(reps))
    out[name + "_partitions"] = frame().rdd.getNumPartitions()
print(json.dumps(out))
"""


def run(master: str, wh: str, files: list[str], reps: int, env=None) -> dict:
    return run_script(RUN, [master, wh, json.dumps(files), str(reps)], env)


def main() -> None:
    args = arguments()
    import pyarrow.parquet as pq

    from paimonflow.core import Catalog

    root = Path(tempfile.mkdtemp(prefix="spark-read-bench-"))
    source = root / "source.parquet"
    make_source(source, args.rows)
    wh = new_table(root)
    Catalog(wh).get_table("b.pk").write(pq.read_table(source, schema=SCHEMA))
    files = sorted(glob.glob(f"{wh}/b.db/pk/dt=*/bucket-*/*.parquet"))
    report: dict = {"rows": args.rows, "files": len(files)}
    for master in ("local[1]", "local[2]"):
        report[master] = run(master, wh, files, args.reps)
        print(master, json.dumps(report[master]), file=sys.stderr, flush=True)  # partial results
    if not args.no_cluster:
        from tests.spark.cluster import StandaloneCluster, spark_env

        cluster = StandaloneCluster().start()
        try:
            report["standalone"] = run(cluster.url, wh, files, args.reps, env=spark_env())
        finally:
            cluster.stop()
    for side in [k for k in report if isinstance(report[k], dict)]:
        report[side]["ratio"] = round(report[side]["datasource"] / report[side]["parquet"], 2)
        report[side]["pruned_ratio"] = round(report[side]["pruned_by_options"] / report[side]["parquet_pruned"], 2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
