"""Spilled sorted runs of a write buffer and their k-way merge.

When a writer's buffered rows outgrow ``write-buffer-size`` the rows of a bucket are sorted,
folded (one row per key) and spilled to a local Arrow IPC file as one sorted run. At flush the
runs are merged k-way into one sorted run, a bounded chunk at a time: each round takes one
batch of every run, sorts them together and emits every row up to the smallest "last key" of
the runs that may still hold more rows. Keys are unique within a run, so a key never straddles
two rounds, and memory stays at about one batch per run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from ..data import data_file as df
from ..data.keys import last_per_key, merge_order

#: Rows per record batch of a spill file (also the rows a run contributes to one merge round).
RUN_BATCH_ROWS = 32_768


class SpillDirectory:
    """A private temporary directory for one writer's spill files, removed on close."""

    def __init__(self, parent: str | None = None) -> None:
        self._parent = parent
        self._path: str | None = None
        self._count = 0

    def new_file(self) -> str:
        if self._path is None:
            self._path = tempfile.mkdtemp(prefix="paimonflow-spill-", dir=self._parent)
        self._count += 1
        return os.path.join(self._path, f"run-{self._count}.arrow")

    def close(self) -> None:
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None


def write_run(path: str, table: pa.Table) -> int:
    """Write one sorted run; returns the bytes on disk."""
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema, options=options) as writer:
        for batch in table.to_batches(max_chunksize=RUN_BATCH_ROWS):
            writer.write_batch(batch)
    return os.path.getsize(path)


def iter_run(path: str) -> Iterator[pa.Table]:
    """The batches of a spilled run, one at a time."""
    with pa.memory_map(path, "r") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield pa.Table.from_batches([reader.get_batch(i)])


def iter_slices(table: pa.Table, rows: int = RUN_BATCH_ROWS) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)


def merge_runs(runs: Sequence[Iterable[pa.Table]], keys: Sequence[str], sequence_fields: Sequence[str] = (),
               descending: bool = False, *, row_kind_flag: bool = False) -> Iterator[pa.Table]:
    """Merge sorted runs (each key-unique and sorted by key; all with ``_SEQUENCE_NUMBER``) into
    chunks sorted by key, then oldest to newest. Every row of a key lands in the same chunk."""
    iterators = [iter(r) for r in runs]
    pending: list[pa.Table | None] = [None] * len(runs)
    exhausted = [False] * len(runs)
    while True:
        for i, it in enumerate(iterators):
            head = pending[i]
            if not exhausted[i] and (head is None or head.num_rows == 0):
                batch = next(it, None)
                if batch is None:
                    exhausted[i], pending[i] = True, None
                else:
                    pending[i] = batch
        heads = [(i, t) for i, t in enumerate(pending) if t is not None and t.num_rows]
        if not heads:
            return
        live = [i for i, _ in heads]
        tables = [t for _, t in heads]
        sizes = np.array([t.num_rows for t in tables], dtype=np.int64)
        tags = np.repeat(np.array(live, dtype=np.int64), sizes)
        combined = pa.concat_tables(tables).combine_chunks()
        order = merge_order(combined, keys, df.SEQUENCE_NUMBER, sequence_fields, descending,
                            kinds=df.VALUE_KIND if row_kind_flag else None)
        limiting = [n for n, i in enumerate(live) if not exhausted[i]]
        if not limiting:
            cut = len(order)
        else:
            ends = np.cumsum(sizes) - 1
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            pos = int(rank[ends[limiting]].min())
            last = last_per_key(combined.select(list(keys)).take(pa.array(order[pos:])), keys)
            cut = pos + int(np.argmax(last)) + 1
        yield combined.take(pa.array(order[:cut]))
        rest = order[cut:]
        rest_tags = tags[rest]
        for i in live:
            mine = rest[rest_tags == i]
            pending[i] = combined.take(pa.array(mine)) if len(mine) else None


def remove_files(paths: Iterable[str]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            os.remove(path)
