"""A point lookup by a bloom-indexed non-key column of a 10,000,000-row append table, with and
without the file index.

    .venv/bin/python bench/file_index_lookup.py [--rows 10000000] [--files 20] [--reps 5]

Two append tables (unaware bucket) get the same rows in the same commits, ``--files`` commits of
``rows / files`` rows each, one data file per commit: an ``id`` and a ``user`` string whose values
are a random permutation, so every file spans the whole ``user`` range and statistics prune
nothing. One table has ``file-index.bloom-filter.columns = user`` (``items`` = rows per file,
``fpp`` 0.01: one ``.index`` file per data file), the other none. Each lookup of an existing user
(``user == x``) is timed (plan + read) on both; printed: data files planned and read, rows found,
median seconds, the write time of each table and the index bytes on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimonflow.core import Catalog, Table, col

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("user", pa.string())])


def _users(ids: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise("user-", pa.array(ids).cast(pa.string()), "")


def _write(table: Table, rows: int, files: int, seed: int) -> float:
    permutation = np.random.default_rng(seed).permutation(rows)
    per_file = rows // files
    start = time.perf_counter()
    for i in range(files):
        ids = np.arange(i * per_file, (i + 1) * per_file, dtype=np.int64)
        table.write(pa.table({"id": ids, "user": _users(permutation[ids])}, schema=SCHEMA))
    return time.perf_counter() - start


def _lookup(table: Table, user: str, reps: int) -> dict[str, object]:
    seconds, planned, found = [], 0, 0
    for _ in range(reps):
        start = time.perf_counter()
        splits = table.plan(filter=col("user") == user)
        planned = sum(len(s.files) for s in splits)
        found = table.read(filter=col("user") == user).num_rows
        seconds.append(time.perf_counter() - start)
    return {"data_files_read": planned, "rows_found": found, "median_seconds": round(statistics.median(seconds), 4)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    per_file = args.rows // args.files
    with tempfile.TemporaryDirectory() as wh:
        catalog = Catalog(wh)
        catalog.create_database("b")
        plain = catalog.create_table("b.plain", SCHEMA, options={"bucket": "-1", "target-file-size": "1 gb"})
        indexed = catalog.create_table("b.indexed", SCHEMA, options={
            "bucket": "-1", "target-file-size": "1 gb", "file-index.bloom-filter.columns": "user",
            "file-index.bloom-filter.user.items": str(per_file), "file-index.bloom-filter.user.fpp": "0.01"})
        write_plain = _write(plain, args.rows, args.files, seed=7)
        write_indexed = _write(indexed, args.rows, args.files, seed=7)
        index_bytes = sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(indexed.path)
                          for n in names if n.endswith(".index"))
        users = [f"user-{n}" for n in np.random.default_rng(11).integers(0, args.rows, 3)]
        lookups = [{"user": u, "without_index": _lookup(plain, u, args.reps), "with_index": _lookup(indexed, u, args.reps)}
                   for u in users]
        print(json.dumps({
            "rows": args.rows, "data_files": len([f for s in plain.plan() for f in s.files]),
            "write_seconds_without_index": round(write_plain, 1), "write_seconds_with_index": round(write_indexed, 1),
            "index_bytes": index_bytes, "lookups": lookups,
        }, indent=2))


if __name__ == "__main__":
    main()
