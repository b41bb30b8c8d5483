"""Peak memory of writing 5,000,000 rows to a primary-key table with a 64 MB write buffer.

    .venv/bin/python bench/write_memory.py [--rows 5000000] [--buffer 64mb] [--buckets 4]

Each configuration runs in a fresh process (peak RSS = ``ru_maxrss`` of that process). The rows
arrive as a stream of 100,000-row record batches (random keys over 4,000,000 ids, so about a
fifth are updates), the way a Spark partition or a file scan hands them over.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

BATCH = 100_000


def batches(rows: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("amount", pa.float64()),
                        ("qty", pa.int32())])
    for start in range(0, rows, BATCH):
        n = min(BATCH, rows - start)
        ids = rng.integers(0, 4_000_000, n)
        yield pa.RecordBatch.from_arrays([
            pa.array(ids, pa.int64()),
            pa.array(np.char.add("customer-", (ids % 50_000).astype(str)).astype(object), pa.string()),
            pa.array(rng.random(n) * 1000), pa.array(rng.integers(0, 100, n).astype(np.int32)),
        ], schema=schema)


def child(rows: int, buffer: str, buckets: int, spillable: bool) -> dict:
    from paimonflow.core import Catalog

    with tempfile.TemporaryDirectory() as wh:
        catalog = Catalog(wh)
        catalog.create_database("b")
        first = next(batches(1))
        t = catalog.create_table("b.t", first.schema, primary_keys=["id"],
                                 options={"bucket": str(buckets), "write-buffer-size": buffer,
                                          "write-buffer-spillable": str(spillable).lower(), "write-only": "true"})
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        with t.new_write() as w:
            w.write(batches(rows))
            runs = w.spilled_runs
            messages = w.prepare_commit()
        t.new_commit().commit(messages)
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        arrow_peak = pa.default_memory_pool().max_memory()
        files = sum(len(m.new_files) for m in messages)
        live = t.latest_snapshot().total_record_count
    return {"rows": rows, "buffer": buffer, "buckets": buckets, "spillable": spillable, "seconds": round(seconds, 2),
            "peak_rss_mb": round(peak / 1024), "arrow_peak_mb": round(arrow_peak / 2**20), "rss_before_mb": round(rss_before / 1024), "spilled_runs": runs,
            "files": files, "rows_after_fold": live}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--buffer", default="64mb")
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--spillable", default="true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.rows, args.buffer, args.buckets, args.spillable == "true")))
        return
    configs = [(args.buffer, "true"), (args.buffer, "false"), ("4gb", "true")]
    print("| rows | write-buffer-size | spillable | buckets | seconds | peak RSS (MB) | peak Arrow pool (MB) "
          "| RSS after imports (MB) | spilled runs | files | rows after fold |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for buffer, spillable in configs:
        out = subprocess.run([sys.executable, __file__, "--child", "--rows", str(args.rows), "--buffer", buffer,
                              "--buckets", str(args.buckets), "--spillable", spillable],
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"| {r['rows']:,} | {r['buffer']} | {r['spillable']} | {r['buckets']} | {r['seconds']} | "
              f"{r['peak_rss_mb']} | {r['arrow_peak_mb']} | {r['rss_before_mb']} | {r['spilled_runs']} | {r['files']} | "
              f"{r['rows_after_fold']:,} |", flush=True)


if __name__ == "__main__":
    main()
