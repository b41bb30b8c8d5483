"""The Foundation benchmark: paimonflow vs pypaimon 2.1.0 (pure Python and with pypaimon-rust)
vs plain pyarrow.parquet, on the same data, in one run.

    make bench            # or: .venv/bin/python bench/foundation.py --reps 5

Workloads (medians over --reps, after --warmup uncounted rounds on every side: the first
rounds of a fresh process pay for growing its heaps): (a) write 1,000,000 rows into a primary-key table (keys id, dt;
partitioned by dt; bucket 4) in one commit, (b) one commit updating 200,000 of those keys,
(c) read the merged table, (d) write and read the same rows as an append table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from foundation_data import make

from paimonflow.core import Catalog

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = ("pk_write", "pk_update", "pk_read", "append_write", "append_read")


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def run_paimonflow(base: pa.Table, update: pa.Table, work: str, reps: int, warmup: int) -> dict[str, float]:
    times = {k: [] for k in WORKLOADS}
    for rep in range(warmup + reps):
        if rep == warmup:  # the warm-up rounds are not counted
            times = {k: [] for k in WORKLOADS}
        catalog = Catalog(tempfile.mkdtemp(dir=work))
        catalog.create_database("b")
        pk = catalog.create_table("b.pk", base.schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                                  options={"bucket": "4"})
        times["pk_write"].append(timed(lambda: pk.write(base))[0])
        times["pk_update"].append(timed(lambda: pk.write(update))[0])
        seconds, out = timed(pk.read)
        assert out.num_rows == base.num_rows
        times["pk_read"].append(seconds)
        ap = catalog.create_table("b.ap", base.schema, partition_keys=["dt"])
        times["append_write"].append(timed(lambda: ap.write(base))[0])
        seconds, out = timed(ap.read)
        assert out.num_rows == base.num_rows
        times["append_read"].append(seconds)
    return {k: statistics.median(v) for k, v in times.items()}


def run_floor(base: pa.Table, work: str, reps: int, warmup: int) -> dict[str, float]:
    writes, reads = [], []
    for i in range(warmup + reps):
        if i == warmup:  # the warm-up rounds are not counted
            writes, reads = [], []
        path = os.path.join(work, f"floor-{i}.parquet")
        writes.append(timed(lambda: pq.write_table(base, path, compression="zstd"))[0])
        reads.append(timed(lambda: pq.read_table(path))[0])
    return {"write": statistics.median(writes), "read": statistics.median(reads)}


def run_pypaimon(data_dir: str, work: str, reps: int, warmup: int, mode: str) -> dict[str, float] | None:
    python = os.environ.get("PAIMONFLOW_PYPAIMON_PYTHON") or str(REPO / ".venv-pypaimon" / "bin" / "python")
    proc = subprocess.run([python, str(Path(__file__).with_name("foundation_pypaimon.py")), data_dir, work, str(reps), mode,
                           str(warmup)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"pypaimon ({mode}) failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="uncounted rounds first, on every side")
    parser.add_argument("--skip-pypaimon", action="store_true")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="paimonflow-bench-")
    base, update = make()
    pq.write_table(base, f"{work}/base.parquet")
    pq.write_table(update, f"{work}/update.parquet")
    results = {"paimonflow": run_paimonflow(base, update, work, args.reps, args.warmup)}
    if not args.skip_pypaimon:
        results["pypaimon (pure Python)"] = run_pypaimon(work, work, args.reps, args.warmup, "python")
        results["pypaimon + pypaimon-rust"] = run_pypaimon(work, work, args.reps, args.warmup, "rust")
    floor = run_floor(base, work, args.reps, args.warmup)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"pyarrow {pa.__version__}; medians of {args.reps} runs after {args.warmup} uncounted, seconds")
    print("| side | (a) PK write 1M | (b) PK update 200k | (c) PK merged read | (d) append write | (d) append read |")
    print("|---|---|---|---|---|---|")
    for side, r in results.items():
        cells = " | ".join(f"{r[k]:.3f}" if r else "failed" for k in WORKLOADS) if r else "failed | " * 4 + "failed"
        print(f"| {side} | {cells} |")
    print(f"| plain pyarrow.parquet (zstd) | {floor['write']:.3f} | | {floor['read']:.3f} | {floor['write']:.3f} | "
          f"{floor['read']:.3f} |")
    print(json.dumps({"results": results, "floor": floor}))


if __name__ == "__main__":
    main()
