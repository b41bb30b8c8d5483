"""10,000,000 rows into a primary-key table (8 buckets, 10 partitions) and back, beside pyarrow's floor.

    .venv/bin/python bench/write_10m.py [--rows 10000000]     # `make bench` runs it after foundation.py

The rows are made once (a first process writes them to an uncompressed Arrow IPC file); every side
then runs in a fresh process of its own and reads them into memory before its clock starts. Its
peak RSS is that process's ``VmHWM``, restarted once the input is in memory (``settle``), so it is
the input plus what the side's work takes. CPU seconds (all threads) are printed beside the wall
time: on a shared machine they show the work done whatever the load.

* floor write: ``pq.write_table(table, path, compression="zstd")``, one file; floor read: ``pq.read_table``;
* ``Table.write(table)`` of the whole in-memory Arrow table (one commit);
* the streaming writer (``new_write().write(batches)``, ``prepare_commit``, commit) fed 100,000-row
  record batches made one at a time from the row numbers (the same rows; the input never exists whole);
* ``Table.read()`` of the table ``Table.write`` wrote, whole.

The memory bound of a write is the input's own size in memory (the whole table; for the stream,
one batch) + ``write-buffer-size`` + a fixed allowance (:data:`ALLOWANCE_MB`); of a read, its
result's size + the allowance.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROWS = 10_000_000
BATCH = 100_000
BUCKETS, PARTITIONS = 8, 10
WRITE_BUFFER = 256 << 20  # the default write-buffer-size
#: What a process holds beyond its input and the write buffer: the interpreter with pyarrow, numpy
#: and paimonflow imported (~110 MB), Arrow's and the allocator's retained pages, the Parquet
#: encoders' buffers of the files being written by two threads, and the routing codes of a whole
#: table (a few bytes a row).
ALLOWANCE_MB = 300
SIDES = ("floor_write", "floor_read", "table_write", "table_read", "stream_write")
MIX = 0x9E3779B1  # odd, prime to 10^k: row i -> key (i * MIX) mod rows is a permutation


def rows_of(start: int, stop: int, total: int):
    """Rows ``start``..``stop`` of the data set, as an Arrow table: made from the row number
    alone, so the whole table and its batches hold the same rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    i = np.arange(start, stop, dtype=np.int64)
    ids = (i * MIX) % total  # unique keys in a shuffled order
    mixed = (ids * 2654435761) % 1_000_003
    customer = pa.array(mixed % 50_000)
    days = pa.array([f"2026-11-{d:02d}" for d in range(1, PARTITIONS + 1)])
    categories = pa.array(["books", "games", "garden", "grocery", "health", "kitchen", "music", "outdoor",
                           "sports", "toys", "tools", "travel"])
    return pa.table({
        "id": pa.array(ids),
        "dt": days.take(pa.array(ids % PARTITIONS)),
        "customer_id": customer,
        "customer": pc.binary_join_element_wise("customer-", pc.cast(customer, pa.string()), ""),
        "category": categories.take(pa.array(mixed % len(categories))),
        "amount": pa.array((mixed % 100_000) / 100.0),
        "quantity": pa.array((mixed % 20 + 1).astype(np.int32)),
        "ts": pa.array(1_795_000_000_000_000 + ids * 1_000, pa.timestamp("us")),
    }, schema=schema())


def whole(rows: int):
    """All rows as one table of one chunk per column, made a million rows at a time and joined
    column by column (the process holds little beyond the table once it is made)."""
    import pyarrow as pa

    parts = [rows_of(s, min(s + 1_000_000, rows), rows) for s in range(0, rows, 1_000_000)]
    columns = []
    for name in schema().names:
        columns.append(pa.concat_arrays([c for p in parts for c in p.column(name).chunks]))
        parts = [p.drop_columns([name]) for p in parts]
    del parts
    pa.default_memory_pool().release_unused()
    return pa.Table.from_arrays(columns, schema=schema())


def schema():
    import pyarrow as pa

    return pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                      ("customer_id", pa.int64()), ("customer", pa.string()), ("category", pa.string()),
                      ("amount", pa.float64()), ("quantity", pa.int32()), ("ts", pa.timestamp("us"))])


def settle() -> None:
    """Hand what making the input left behind back to the system and restart the peak from here
    (``clear_refs`` 5 resets ``VmHWM``), so a side's peak is its input plus what its work takes."""
    import ctypes
    import gc

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def peak_mb() -> float:
    """This process's peak RSS (``VmHWM``: ``ru_maxrss`` would carry the forking parent's over exec)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _table(warehouse: str, name: str, create: bool):
    from paimonflow.core import Catalog

    catalog = Catalog(warehouse)
    if not create:
        return catalog.get_table(f"b.{name}")
    catalog.create_database("b", ignore_if_exists=True)
    return catalog.create_table(f"b.{name}", schema(), primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": str(BUCKETS), "write-buffer-size": str(WRITE_BUFFER)})


def child(side: str, rows: int, work: str) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    floor_path = os.path.join(work, "floor.parquet")
    input_mb = 0.0
    if side == "make":
        table = whole(rows)
        with pa.OSFile(os.path.join(work, "input.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
            out.write_table(table)
        return {"side": side, "rows": table.num_rows}
    if side in ("floor_write", "table_write"):
        # the rows read back from the one file made for every side: buffers of exactly the
        # table's size (made here, the process would keep ~80 MB of what making them left behind)
        with pa.OSFile(os.path.join(work, "input.arrow"), "rb") as source:
            table = pa.ipc.open_file(source).read_all()
        input_mb = table.nbytes / 2**20
    if side not in ("floor_write", "floor_read"):
        import paimonflow.core  # noqa: F401  (imported before the clock starts, as pyarrow is)
    settle()
    before = peak_mb()
    cpu = time.process_time()
    start = time.perf_counter()
    if side == "floor_write":
        pq.write_table(table, floor_path, compression="zstd")
        out_rows = table.num_rows
    elif side == "floor_read":
        result = pq.read_table(floor_path)
        out_rows, input_mb = result.num_rows, result.nbytes / 2**20
    elif side == "table_write":
        t = _table(work, "pk", create=True)
        t.write(table)
        out_rows = t.latest_snapshot().total_record_count
    elif side == "stream_write":
        t = _table(work, "stream", create=True)
        input_mb = rows_of(0, min(BATCH, rows), rows).nbytes / 2**20
        batches = (b for s in range(0, rows, BATCH) for b in rows_of(s, min(s + BATCH, rows), rows).to_batches())
        with t.new_write() as writer:
            writer.write(batches)
            messages = writer.prepare_commit()
        t.new_commit().commit(messages)
        out_rows = t.latest_snapshot().total_record_count
    elif side == "table_read":
        result = _table(work, "pk", create=False).read()
        out_rows, input_mb = result.num_rows, result.nbytes / 2**20
    else:
        raise SystemExit(f"unknown side {side}")
    seconds = time.perf_counter() - start
    return {"side": side, "seconds": seconds, "cpu_seconds": time.process_time() - cpu, "rows": out_rows, "input_mb": input_mb, "rss_before_mb": before,
            "peak_rss_mb": peak_mb()}


def run(side: str, rows: int, work: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", side, "--rows", str(rows), "--work", work],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{side} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--sides", default=",".join(SIDES), help="a comma-separated subset of: " + ", ".join(SIDES))
    parser.add_argument("--child")
    parser.add_argument("--work")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.rows, args.work)))
        return
    with tempfile.TemporaryDirectory(prefix="paimonflow-bench-10m-") as work:
        run("make", args.rows, work)
        r = {side: run(side, args.rows, work) for side in args.sides.split(",")}
    for side in ("table_write", "stream_write", "table_read"):
        assert side not in r or r[side]["rows"] == args.rows, (side, r[side]["rows"])
    import pyarrow as pa

    try:
        load = "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    except OSError:
        load = ""
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"pyarrow {pa.__version__}; {load}; {args.rows:,} rows, {BUCKETS} buckets, {PARTITIONS} partitions; "
          f"one run per side, each in a fresh process")
    print("| side | seconds | × floor | CPU seconds | peak RSS (MB) | input in memory (MB) | bound: input + buffer + "
          f"{ALLOWANCE_MB} MB | within |")
    print("|---|---|---|---|---|---|---|---|")
    rows = [("plain pyarrow `write_table` (zstd, one file)", "floor_write", None, None),
            ("paimonflow `Table.write` (whole table)", "table_write", "floor_write", WRITE_BUFFER),
            ("paimonflow streaming writer (100k-row batches)", "stream_write", "floor_write", WRITE_BUFFER),
            ("plain pyarrow `read_table`", "floor_read", None, None),
            ("paimonflow `Table.read()` (merged, whole)", "table_read", "floor_read", 0)]
    for label, side, floor, buffer in rows:
        if side not in r:
            continue
        x = r[side]
        ratio = f"{x['seconds'] / r[floor]['seconds']:.2f}×" if floor in r else ""
        if buffer is None:
            bound = within = ""
        else:
            limit = x["input_mb"] + buffer / 2**20 + ALLOWANCE_MB
            bound, within = f"{limit:.0f}", "yes" if x["peak_rss_mb"] <= limit else "**no**"
        print(f"| {label} | {x['seconds']:.2f} | {ratio} | {x['cpu_seconds']:.2f} | {x['peak_rss_mb']:.0f} | {x['input_mb']:.0f} | {bound} | "
              f"{within} |", flush=True)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
