"""Full compaction of a primary-key table with 5 overlapping sorted runs of 1,000,000 keys each,
against the floor of reading and writing the same rows with plain pyarrow; and the merge-on-read
of that table (before compaction) against pypaimon 2.1.0 (pure and with pypaimon-rust).

    .venv/bin/python bench/compaction.py --reps 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from foundation_data import make

from paimonflow.core import Catalog

REPO = Path(__file__).resolve().parents[1]
RUNS = 5

PYPAIMON_READ = """
import sys, time, json
from pypaimon import CatalogFactory
wh, mode = sys.argv[1], sys.argv[2]
t = CatalogFactory.create({'warehouse': wh}).get_table('b.pk')
if mode == 'rust':
    t = t.copy({'read.native.enabled': 'true'})
times = []
for _ in range(int(sys.argv[3])):
    s = time.perf_counter()
    rb = t.new_read_builder(); out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    times.append(time.perf_counter() - s)
print(json.dumps({'rows': out.num_rows, 'seconds': sorted(times)[len(times) // 2]}))
"""


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def runs() -> list[pa.Table]:
    base, _ = make()
    out = []
    for i in range(RUNS):
        amount = pc.add(base.column("amount"), float(i))
        out.append(base.set_column(3, "amount", amount))
    return out


def spread_runs() -> list[pa.Table]:
    """The 1,000,000-row base, then 4 runs each updating a random quarter of the keys: the newest
    row of a key can be in any run, so no run's values can be skipped."""
    import numpy as np

    base, _ = make()
    rng = np.random.default_rng(11)
    out = [base]
    for i in range(1, RUNS):
        chosen = np.sort(rng.choice(base.num_rows, base.num_rows // 4, replace=False))
        part = base.take(pa.array(chosen))
        out.append(part.set_column(3, "amount", pc.add(part.column("amount"), float(i))))
    return out


def build(work: str, tables: list[pa.Table]):
    catalog = Catalog(tempfile.mkdtemp(dir=work))
    catalog.create_database("b")
    t = catalog.create_table("b.pk", tables[0].schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "4", "num-sorted-run.compaction-trigger": "10"})
    for table in tables:
        t.write(table)
    return catalog, t


def pypaimon_read(python: str, warehouse: str, mode: str, reps: int):
    """Median seconds of pypaimon's merge-on-read (``mode`` python or rust), or the failure."""
    proc = subprocess.run([python, "-c", PYPAIMON_READ, warehouse, mode, str(reps)], capture_output=True, text=True)
    if proc.returncode != 0:
        return f"failed: {proc.stderr[-300:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="paimonflow-compact-bench-")
    tables = runs()
    compact_times, floor_times, mor_times = [], [], []
    for rep in range(args.reps):
        _, t = build(work, tables)
        if rep == 0:
            seconds, merged = timed(t.read)
            assert merged.num_rows == 1_000_000
        mor_times.append(timed(t.read)[0])
        seconds, result = timed(lambda: t.compact(full=True))
        assert result.rows_written == 1_000_000, result
        compact_times.append(seconds)
        # floor: read the same 5 runs' rows from plain Parquet and write 1M rows back
        paths = []
        for i, table in enumerate(tables):
            path = os.path.join(work, f"run-{rep}-{i}.parquet")
            pq.write_table(table, path, compression="zstd")
            paths.append(path)

        def floor() -> None:
            read = [pq.read_table(p) for p in paths]
            pq.write_table(read[-1], os.path.join(work, f"floor-out-{rep}.parquet"), compression="zstd")

        floor_times.append(timed(floor)[0])
    result = {"paimonflow_full_compaction": statistics.median(compact_times),
              "pyarrow_floor_read5_write1": statistics.median(floor_times),
              "paimonflow_merge_on_read_5_runs": statistics.median(mor_times)}
    catalog2, _ = build(work, tables)  # an uncompacted table for pypaimon's merge-on-read
    python = os.environ.get("PAIMONFLOW_PYPAIMON_PYTHON") or str(REPO / ".venv-pypaimon" / "bin" / "python")
    for mode in ("python", "rust"):
        result[f"pypaimon_{mode}_merge_on_read_5_runs"] = pypaimon_read(python, catalog2.warehouse, mode, args.reps)
    # merge-on-read when winners are spread over every run (2,000,000 rows, 1,000,000 live)
    catalog3, spread = build(work, spread_runs())
    spread_times = [timed(spread.read)[0] for _ in range(args.reps)]
    result["paimonflow_merge_on_read_spread"] = statistics.median(spread_times)
    result["pypaimon_rust_merge_on_read_spread"] = pypaimon_read(python, catalog3.warehouse, "rust", args.reps)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
