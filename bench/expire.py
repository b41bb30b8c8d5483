"""Expiring 1,000 snapshots of a table with 10,000 data files.

    .venv/bin/python bench/expire.py [--commits 1000] [--buckets 10]

A primary-key table with 10 buckets (write-only) gets 1,000 commits of 10 rows, one file per
bucket each: 10,000 data files. A full compaction then replaces them all, and one expiry
(retain 1 snapshot, limit 1,000,000) removes the 1,000 older snapshots with every file only they
used. Prints the plan size, seconds, and files deleted per second.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import pyarrow as pa

from paimonflow.core import Catalog


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--buckets", type=int, default=10)
    args = parser.parse_args()
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
    with tempfile.TemporaryDirectory() as wh:
        catalog = Catalog(wh)
        catalog.create_database("b")
        t = catalog.create_table("b.t", schema, primary_keys=["id"],
                                 options={"bucket": str(args.buckets), "write-only": "true",
                                          "snapshot.num-retained.min": "1"})
        start = time.perf_counter()
        commit = t.new_commit("bench")
        for i in range(args.commits):
            ids = list(range(i * 64, i * 64 + 64))
            with t.new_write() as w:
                w.write(pa.table({"id": ids, "v": [i] * len(ids)}, schema=schema))
                commit.commit(w.prepare_commit(), commit_identifier=i + 1)
        setup = time.perf_counter() - start
        files = t.system_table("files").num_rows
        t.compact(full=True)
        plan = t.expire_snapshots(retain_min=1, older_than_millis=0, max_deletes=10**6, dry_run=True)
        start = time.perf_counter()
        result = t.expire_snapshots(retain_min=1, older_than_millis=0, max_deletes=10**6)
        seconds = time.perf_counter() - start
        assert t.read().num_rows == args.commits * 64
        print(json.dumps({
            "commits": args.commits, "live_files_before_compaction": files, "setup_seconds": round(setup, 1),
            "expired_snapshots": result.expired_snapshots, "data_files_deleted": len(plan.plan.data_files),
            "metadata_files_deleted": len(plan.plan.metadata_files), "files_deleted": result.deleted_files,
            "seconds": round(seconds, 2), "files_per_second": round(result.deleted_files / seconds),
        }, indent=2))


if __name__ == "__main__":
    main()
