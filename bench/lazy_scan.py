"""A DuckDB aggregate over one partition and two columns of a 10M-row table, three ways.

    .venv/bin/python bench/lazy_scan.py [--rows 10000000] [--dir /var/tmp/pf/lazy]

The same rows (10 daily partitions, one file per partition and 1M rows per file; columns id,
customer, amount, category, note (a 40-character text), dt) are written once as a paimonflow
append table and once as plain Parquet files laid out ``dt=<day>/part-0.parquet`` (pyarrow,
zstd, the same row groups). Each side then runs in a fresh process; its clock and its peak RSS
(``VmHWM``, restarted just before the side's work, beside the RSS then) cover only the work:

* ``scan``: ``table.scan().to_duckdb("t")`` and ``select category, sum(amount) from t where dt = '<day>' group by 1``;
* ``read``: ``table.read()`` of the whole table, then the same aggregate in DuckDB over the result;
* ``parquet``: DuckDB's own ``read_parquet('<dir>/*/*.parquet', hive_partitioning = true)`` and the same aggregate.

Files opened are counted with inotify (``IN_OPEN`` on every directory of the data, whoever opens
them: pyarrow's readers, DuckDB's threads).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DAYS = [f"2026-11-{d:02d}" for d in range(1, 11)]
QUERY = "select category, round(sum(amount), 2) as total from {source} where dt = '2026-11-05' group by 1 order by 1"


def make(rows: int, where: str) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paimonflow.core import Catalog

    schema = pa.schema([("id", pa.int64()), ("customer", pa.int64()), ("amount", pa.float64()),
                        ("category", pa.string()), ("note", pa.string()), ("dt", pa.string())])
    catalog = Catalog(os.path.join(where, "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.orders", schema, partition_keys=["dt"], options={"target-file-size": "1 gb"})
    per_day = rows // len(DAYS)
    categories = np.array(["books", "games", "garden", "grocery", "health", "kitchen", "music", "toys"])
    for d, day in enumerate(DAYS):
        part = _day(np.arange(d * per_day, (d + 1) * per_day, dtype=np.int64), day, categories, schema)
        table.write(part)
        target = os.path.join(where, "parquet", f"dt={day}")
        os.makedirs(target)
        pq.write_table(part.drop_columns(["dt"]), os.path.join(target, "part-0.parquet"), compression="zstd")


def _day(i, day, categories, schema):
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    note = pc.utf8_lpad(pa.array(i % 1_000_003).cast(pa.string()), 40, "0")
    return pa.table({"id": i, "customer": (i * 2654435761) % 50_000, "amount": (i % 10_000) / 100.0,
                     "category": categories[i % len(categories)], "note": note,
                     "dt": pa.array(np.repeat(day, len(i)))}, schema=schema)


_SIDE = """
import json, os, sys, time
sys.path.insert(0, sys.argv[3])
import duckdb, psutil
from paimonflow.core import Catalog
from tests.file_opens import FileOpens
where, side = sys.argv[1], sys.argv[2]
QUERY = sys.argv[4]
connection = duckdb.connect()
connection.sql("select 1").fetchall()
table = Catalog(os.path.join(where, "wh")).get_table("db.orders")
with open("/proc/self/clear_refs", "w") as reset:
    reset.write("5")
rss = psutil.Process().memory_info().rss
process = psutil.Process()
cpu, clock = sum(process.cpu_times()[:2]), time.perf_counter()
with FileOpens(where) as opens:
    if side == "scan":
        table.scan().to_duckdb("t", connection)
        answer = connection.sql(QUERY.format(source="t")).fetchall()
    elif side == "read":
        whole = table.read()
        answer = connection.sql(QUERY.format(source="whole")).fetchall()
    else:
        answer = connection.sql(QUERY.format(
            source=f"read_parquet('{where}/parquet/*/*.parquet', hive_partitioning = true)")).fetchall()
seconds, cpu = time.perf_counter() - clock, sum(process.cpu_times()[:2]) - cpu
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) * 1024
print(json.dumps({"side": side, "seconds": seconds, "cpu_seconds": cpu, "files_opened": len(opens.data_files),
                  "peak_rss_mb": peak / 2**20, "rss_before_mb": rss / 2**20, "answer": answer}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--dir", default="/var/tmp/pf/lazy")
    args = parser.parse_args()
    where = os.path.join(args.dir, str(args.rows))
    if not os.path.isdir(where):
        started = time.perf_counter()
        make(args.rows, where)
        print(f"made {args.rows:,} rows in {time.perf_counter() - started:.1f} s under {where}", file=sys.stderr)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    results = []
    for side in ("scan", "read", "parquet"):
        done = subprocess.run([sys.executable, "-c", _SIDE, where, side, root, QUERY], capture_output=True, text=True,
                              check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    answers = {json.dumps(r.pop("answer")) for r in results}
    assert len(answers) == 1, answers  # every side computed the same aggregate
    print(json.dumps({"rows": args.rows, "results": results}, indent=1))


if __name__ == "__main__":
    main()
