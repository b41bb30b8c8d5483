"""Rows per second of reading an Avro data file: the row path (fastavro) against the vectorized decoder.

    .venv/bin/python bench/avro_read.py [--rows 1000000] [--codec zstd]

The table of ``bench/avro_write.py`` (int64 id, string, double, nullable int32 with a tenth null,
timestamp(us)), written once as Paimon writes Avro data files, then read by each path; the two
tables are checked to be equal before the rates are printed.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from avro_write import table

from paimonflow.core.data.avro_data import _read_avro_rows, read_avro_table, write_avro_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--codec", default="zstd", help="Paimon's file.compression: zstd, gzip, none, ...")
    args = parser.parse_args()
    data = write_avro_table(table(args.rows), args.codec, sync_marker=b"paimonflow-bench")

    started = time.perf_counter()
    old = _read_avro_rows(io.BytesIO(data))
    old_seconds = time.perf_counter() - started
    started = time.perf_counter()
    new = read_avro_table(data)
    new_seconds = time.perf_counter() - started

    assert new.equals(old), "the vectorized read differs from fastavro's"
    print(f"rows={args.rows} codec={args.codec} bytes={len(data)} equal={new.equals(old)}")
    print(f"row path (fastavro):  {old_seconds:7.2f} s  {args.rows / old_seconds:12,.0f} rows/s")
    print(f"vectorized decoder:   {new_seconds:7.2f} s  {args.rows / new_seconds:12,.0f} rows/s")
    print(f"speed-up: {old_seconds / new_seconds:.1f}x")


if __name__ == "__main__":
    main()
