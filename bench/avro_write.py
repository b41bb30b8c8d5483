"""Rows per second of writing an Avro data file: the row path (fastavro) against the vectorized encoder.

    .venv/bin/python bench/avro_write.py [--rows 1000000] [--codec zstd]

One table of ``--rows`` rows (int64 id, string, double, nullable int32 with a tenth null,
timestamp(us)), written once by each path; the files are checked to be byte-identical (same sync
marker) before the rates are printed.
"""

from __future__ import annotations

import argparse
import time

import fastavro
import numpy as np
import pyarrow as pa

from paimonflow.core.data.avro_data import _write_avro_rows, avro_schema, write_avro_table


def table(rows: int, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)
    qty = pa.array(rng.integers(-1000, 1000, rows).astype(np.int32), mask=rng.random(rows) < 0.1)
    return pa.table({
        "id": ids,
        "name": pa.array(np.char.add("customer-", (ids % 50_000).astype(str)).astype(object), pa.string()),
        "amount": rng.random(rows) * 1000,
        "qty": qty,
        "at": pa.array(1_700_000_000_000_000 + rng.integers(0, 10**12, rows), pa.timestamp("us")),
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--codec", default="zstd", help="Paimon's file.compression: zstd, gzip, none, ...")
    args = parser.parse_args()
    data, marker = table(args.rows), b"paimonflow-bench"
    parsed = fastavro.parse_schema(avro_schema(data.schema))

    started = time.perf_counter()
    old = _write_avro_rows(data, parsed, args.codec, sync_marker=marker)
    old_seconds = time.perf_counter() - started
    started = time.perf_counter()
    new = write_avro_table(data, args.codec, sync_marker=marker)
    new_seconds = time.perf_counter() - started

    assert old == new, "the vectorized file differs from fastavro's"
    print(f"rows={args.rows} codec={args.codec} bytes={len(new)} identical={old == new}")
    print(f"row path (fastavro):  {old_seconds:7.2f} s  {args.rows / old_seconds:12,.0f} rows/s")
    print(f"vectorized encoder:   {new_seconds:7.2f} s  {args.rows / new_seconds:12,.0f} rows/s")
    print(f"speed-up: {old_seconds / new_seconds:.1f}x")


if __name__ == "__main__":
    main()
