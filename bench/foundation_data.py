"""The deterministic data set of the Foundation benchmarks (shared by every side).

1,000,000 rows: id BIGINT, dt STRING (4 values), name STRING (~20 chars), amount DOUBLE, ts BIGINT;
and an update set of 200,000 existing keys. Written once as Parquet, read by each side.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROWS, UPDATES = 1_000_000, 200_000
DAYS = ["2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22"]


def schema() -> pa.Schema:
    return pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                      ("name", pa.string()), ("amount", pa.float64()), ("ts", pa.int64())])


def make(rows: int = ROWS, updates: int = UPDATES, seed: int = 7) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(rows).astype(np.int64)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    chars = letters[rng.integers(0, 26, size=(rows, 20))]
    names = pa.array(chars.view("S20").ravel().astype(str))
    base = pa.table({
        "id": ids,
        "dt": pa.array(np.array(DAYS)[ids % 4]),
        "name": names,
        "amount": rng.random(rows) * 1000,
        "ts": 1_795_000_000_000 + ids,
    }, schema=schema())
    chosen = np.sort(rng.choice(rows, updates, replace=False))
    update = base.take(pa.array(chosen))
    update = update.set_column(3, "amount", pa.array(rng.random(updates) * -1))
    return base, update


if __name__ == "__main__":
    out = sys.argv[1]
    base, update = make()
    pq.write_table(base, f"{out}/base.parquet")
    pq.write_table(update, f"{out}/update.parquet")
