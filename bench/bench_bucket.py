"""Time Paimon's fixed-bucket assignment over 1M rows for a few bucket-key shapes.

Run: ``.venv/bin/python bench/bench_bucket.py [rows] [repetitions]``. Prints the median and the
fastest wall time of ``bucket_ids`` (BinaryRow encoding + MurmurHash3 + ``abs(h % n)``) per shape.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from paimonflow.core.data.binary_row import serialize_columns
from paimonflow.core.data.bucket import bucket_ids


def _strings(rng: np.random.Generator, rows: int, length: int) -> pa.Array:
    """``rows`` random lowercase strings of ``length`` characters, built without a Python loop."""
    codes = rng.integers(ord("a"), ord("z") + 1, rows * length, dtype=np.uint8)
    offsets = np.arange(rows + 1, dtype=np.int32) * length
    return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(codes))


def _time(fn: Callable[[], object], repetitions: int) -> tuple[float, float]:
    fn()  # warm up
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000, min(samples) * 1000


def main(rows: int = 1_000_000, repetitions: int = 7) -> None:
    rng = np.random.default_rng(7)
    ids = pa.array(rng.permutation(rows).astype(np.int64))
    shapes: dict[str, list[pa.Array]] = {
        "BIGINT": [ids],
        "BIGINT + STRING(2)": [ids, _strings(rng, rows, 2)],
        "BIGINT + STRING(20) (variable-length rows)": [ids, _strings(rng, rows, 20)],
        "INT + DATE + DOUBLE": [
            pa.array(rng.integers(0, 1000, rows, dtype=np.int32)),
            pa.array(rng.integers(0, 20_000, rows, dtype=np.int32), pa.date32()),
            pa.array(rng.standard_normal(rows)),
        ],
    }
    print(f"{rows:,} rows, median / best of {repetitions}, 16 buckets")
    for name, columns in shapes.items():
        median, best = _time(lambda columns=columns: bucket_ids(columns, 16), repetitions)
        encode, _ = _time(lambda columns=columns: serialize_columns(columns), repetitions)
        print(
            f"  {name:<44} bucket_ids {median:7.1f} / {best:7.1f} ms   (BinaryRow encoding {encode:6.1f} ms)"
        )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    main(*args)
