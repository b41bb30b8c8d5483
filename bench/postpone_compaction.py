"""Postpone-bucket compaction of 5,000,000 rows: a primary-key table with ``bucket = -2``
(4 partitions, ``postpone.default-bucket-num=4``) whose rows wait in the postpone bucket, written
in 5 commits of 1,000,000 rows (a fifth of them updates of earlier keys); then the postpone
compaction that gives them real buckets, by the core (one process) and by the Spark job
(``local[2]``, one task per partition), each on its own copy of the table.

    .venv/bin/python bench/postpone_compaction.py [--rows 5000000] [--commits 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).parent))
from foundation_data import make

from paimonflow.core import Catalog

OPTIONS = {"bucket": "-2", "postpone.default-bucket-num": "4"}


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def commits(rows: int, count: int) -> list[pa.Table]:
    """``count`` batches of ``rows // count`` rows: the first all new keys, each later one a mix of
    new keys and updates (a fifth) of keys already written."""
    base, _ = make(rows=rows, updates=1)
    rng = np.random.default_rng(5)
    size = rows // count
    out = []
    for i in range(count):
        part = base.slice(i * size, size)
        if i:
            updated = base.take(pa.array(np.sort(rng.choice(i * size, size // 5, replace=False))))
            updated = updated.set_column(3, "amount", pc.multiply(updated.column("amount"), -1.0))
            part = pa.concat_tables([part.slice(0, size - size // 5), updated])
        out.append(part)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--commits", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-postpone-"))
    try:
        catalog = Catalog(str(work / "core"))
        catalog.create_database("b")
        table = catalog.create_table("b.p", make(rows=1, updates=1)[0].schema, primary_keys=["id", "dt"],
                                     partition_keys=["dt"], options=OPTIONS)
        batches = commits(args.rows, args.commits)
        written = sum(b.num_rows for b in batches)
        write_s = 0.0
        for batch in batches:
            seconds, _ = timed(lambda batch=batch: table.write(batch))
            write_s += seconds
        shutil.copytree(work / "core", work / "spark")

        core_s, core = timed(lambda: catalog.get_table("b.p").compact())
        core_rows = catalog.get_table("b.p").read(columns=["id"]).num_rows

        from paimonflow.jobs.compact import compact
        from paimonflow.jobs.location import TableLocation
        from paimonflow.jobs.session import spark_session

        spark = spark_session(master=args.master, app_name="bench-postpone",
                              conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"})
        spark.sparkContext.setLogLevel("ERROR")
        try:
            location = TableLocation(warehouse=str(work / "spark"), identifier="b.p")
            spark_s, job = timed(lambda: compact(spark, location))
        finally:
            spark.stop()
        spark_rows = Catalog(str(work / "spark")).get_table("b.p").read(columns=["id"]).num_rows
        assert core_rows == spark_rows, (core_rows, spark_rows)
        print(json.dumps({
            "rows_written": written, "commits": args.commits, "postpone_write_s": round(write_s, 2),
            "postpone_files": core.files_read, "distinct_keys": core_rows,
            "core_compaction_s": round(core_s, 2), "core_rows_per_s": round(written / core_s),
            "core_files_written": core.files_written, "core_bytes_written": core.bytes_written,
            "spark_master": args.master, "spark_compaction_s": round(spark_s, 2),
            "spark_rows_per_s": round(written / spark_s), "spark_tasks": job.metrics["tasks"],
        }, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
