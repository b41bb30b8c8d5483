"""pypaimon 2.1.0's side of the Foundation benchmark. Runs inside .venv-pypaimon.

usage: python foundation_pypaimon.py DATA_DIR WORK_DIR REPS MODE   (MODE: python | rust)
Prints one JSON object: medians in seconds of pk_write, pk_update, pk_read, append_write, append_read.
"""

import json
import statistics
import sys
import tempfile
import time

import pyarrow.parquet as pq
from pypaimon import CatalogFactory, Schema


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def write(table, data):
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(data)
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def read(table):
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def main():
    data_dir, work, reps, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    warmup = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    base = pq.read_table(f"{data_dir}/base.parquet")
    update = pq.read_table(f"{data_dir}/update.parquet")
    native = {"write.native.enabled": "true", "commit.native.enabled": "true", "read.native.enabled": "true"}
    extra = native if mode == "rust" else {}
    times = {k: [] for k in ("pk_write", "pk_update", "pk_read", "append_write", "append_read")}
    for rep in range(warmup + reps):
        if rep == warmup:  # the warm-up rounds are not counted
            times = {k: [] for k in times}
        cat = CatalogFactory.create({"warehouse": tempfile.mkdtemp(dir=work)})
        cat.create_database("b", True)
        cat.create_table("b.pk", Schema.from_pyarrow_schema(base.schema, partition_keys=["dt"], primary_keys=["id", "dt"],
                                                           options={"bucket": "4", **extra}), False)
        pk = cat.get_table("b.pk")
        times["pk_write"].append(timed(lambda: write(pk, base))[0])
        times["pk_update"].append(timed(lambda: write(pk, update))[0])
        seconds, out = timed(lambda: read(pk))
        assert out.num_rows == base.num_rows, out.num_rows
        times["pk_read"].append(seconds)
        cat.create_table("b.ap", Schema.from_pyarrow_schema(base.schema, partition_keys=["dt"], options=dict(extra)), False)
        ap = cat.get_table("b.ap")
        times["append_write"].append(timed(lambda: write(ap, base))[0])
        seconds, out = timed(lambda: read(ap))
        assert out.num_rows == base.num_rows
        times["append_read"].append(seconds)
    print(json.dumps({k: statistics.median(v) for k, v in times.items()}))


if __name__ == "__main__":
    main()
