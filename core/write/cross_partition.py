"""Cross-partition upsert: dynamic buckets on a primary-key table whose key lacks a partition field.

A key then lives in exactly one partition, wherever its rows say. The writer keeps a global
index key -> partition, bootstrapped by reading every key of the table (as Paimon does, which
keeps it in RocksDB; here it is an Arrow table in memory, so a table's keys must fit in memory),
and routes each row by the merge engine's rule (seed 004, Paimon's ``GlobalIndexAssigner``):

* ``deduplicate``: a row whose key lives in another partition moves it: a -D of the key goes to
  the old partition, the row to its own. Retractions go where the key lives.
* ``partial-update`` / ``aggregation``: every row goes to the partition the key already lives in
  (or the partition of its first row, for a new key).
* ``first-row``: rows for another partition than the key's are dropped.

Everything is vectorized over the batch: rows are grouped by key in arrival order, and each row's
previous location is the previous row of its key in the batch, else the index.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..data import data_file as df
from ..data.keys import last_per_key, merge_order
from ..data.partition import group_by_partition
from ..options.registry import MergeEngine

_PID = "__partition_id"
_ROW = "__row"


class CrossPartitionRouter:
    def __init__(self, keys: Sequence[str], partition_keys: Sequence[str], engine: MergeEngine,
                 partition_schema: pa.Schema, existing: pa.Table | None) -> None:
        self._keys, self._partition_keys, self._engine = list(keys), list(partition_keys), engine
        self._partition_schema = partition_schema
        self._ids: dict[tuple, int] = {}
        self._partitions: list[tuple] = []
        empty = pa.table({**{k: pa.array([], existing.schema.field(k).type if existing is not None else pa.null())
                             for k in self._keys}, _PID: pa.array([], pa.int32())})
        self._index = empty
        if existing is not None and existing.num_rows:
            pids = self._partition_ids(existing)
            self._index = existing.select(self._keys).append_column(_PID, pa.array(pids, pa.int32()))

    def _partition_ids(self, table: pa.Table) -> np.ndarray:
        groups = group_by_partition(table, self._partition_keys)
        pids = np.empty(table.num_rows, dtype=np.int32)
        for values, rows in zip(groups.values, groups.row_indices, strict=True):
            key = tuple(values)
            pid = self._ids.get(key)
            if pid is None:
                pid = self._ids[key] = len(self._partitions)
                self._partitions.append(key)
            pids[rows] = pid
        return pids

    def route(self, table: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray]:
        """The rows to write (partition columns rewritten, -D rows added or rows dropped) and their kinds."""
        n = table.num_rows
        own = self._partition_ids(table)
        located = table.select(self._keys).append_column(_ROW, pa.array(np.arange(n, dtype=np.int64)))
        if self._index.num_rows:
            joined = located.join(self._index.cast(pa.schema([*(table.schema.field(k) for k in self._keys),
                                                               pa.field(_PID, pa.int32())])),
                                  keys=self._keys, join_type="left outer")
            existing = np.full(n, -1, dtype=np.int64)
            existing[joined.column(_ROW).to_numpy()] = pc.fill_null(joined.column(_PID), -1).to_numpy()
        else:
            existing = np.full(n, -1, dtype=np.int64)
        order = merge_order(located, self._keys, np.arange(n, dtype=np.int64))  # by key, then arrival
        last = last_per_key(located.select(self._keys).take(pa.array(order)), self._keys)
        first = np.ones(n, dtype=bool)
        first[1:] = last[:-1]  # a group starts after the previous group's last row
        own_s, existing_s = own[order], existing[order]
        retract_s = (kinds[order] == df.ROW_KIND_UPDATE_BEFORE) | (kinds[order] == df.ROW_KIND_DELETE)
        extra_deletes = np.zeros(n, dtype=bool)
        if self._engine is MergeEngine.DEDUPLICATE:
            before_s, after_s = _locations(own_s, existing_s, retract_s, first)
            extra_s = ~retract_s & (before_s >= 0) & (before_s != own_s)
            target_s = np.where(retract_s & (before_s >= 0), before_s, own_s)
            target, moved_from = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
            target[order], moved_from[order] = target_s, before_s
            extra_deletes[order] = extra_s
            keep = np.ones(n, dtype=bool)
            final_s = after_s
        else:
            group_ids = np.cumsum(first) - 1
            starts = np.flatnonzero(first)
            established_g = np.where(existing_s[starts] >= 0, existing_s[starts], own_s[starts])
            target_s = established_g[group_ids]
            keep_s = np.ones(n, dtype=bool)
            if self._engine is MergeEngine.FIRST_ROW:
                keep_s = retract_s | (own_s == target_s)
            target = np.empty(n, dtype=np.int64)
            target[order] = target_s
            keep = np.empty(n, dtype=bool)
            keep[order] = keep_s
            moved_from = target
            final_s = target_s
        # output: each kept row, preceded by the -D that moves its key out of its old partition
        out_rows = np.concatenate([np.flatnonzero(extra_deletes), np.flatnonzero(keep)])
        out_first = np.concatenate([np.zeros(extra_deletes.sum(), np.int8), np.ones(keep.sum(), np.int8)])
        arrange = np.lexsort((out_first, out_rows))
        out_rows, out_first = out_rows[arrange], out_first[arrange]
        pids = np.where(out_first == 0, moved_from[out_rows], target[out_rows])
        out_kinds = np.where(out_first == 0, df.ROW_KIND_DELETE, kinds[out_rows]).astype(np.int8)
        result = table.take(pa.array(out_rows))
        parts = self._partition_table()
        for name in self._partition_keys:
            i = result.schema.get_field_index(name)
            result = result.set_column(i, result.schema.field(i), parts.column(name).take(pa.array(pids)))
        self._remember(located.take(pa.array(order[last])), final_s[last])
        return result, out_kinds

    def _partition_table(self) -> pa.Table:
        columns: list[Sequence[object]] = (list(zip(*self._partitions, strict=True)) if self._partitions
                                           else [[] for _ in self._partition_keys])
        return pa.table({name: pa.array(list(values), self._partition_schema.field(name).type)
                         for name, values in zip(self._partition_keys, columns, strict=True)})

    def _remember(self, keys: pa.Table, pids: np.ndarray) -> None:
        update = keys.select(self._keys).append_column(_PID, pa.array(pids.astype(np.int32), pa.int32()))
        if self._index.num_rows == 0:
            self._index = update
            return
        both = pa.concat_tables([self._index.cast(update.schema), update])
        order = merge_order(both, self._keys, np.arange(both.num_rows, dtype=np.int64))
        newest = last_per_key(both.select(self._keys).take(pa.array(order)), self._keys)
        self._index = both.take(pa.array(order[newest]))


def _locations(own: np.ndarray, existing: np.ndarray, retract: np.ndarray, first: np.ndarray):
    """For rows sorted by key then arrival (``first`` marks each key's first row): the partition
    the key lives in before and after each row (-1: nowhere). An insert or update moves the key
    to its own partition; a retraction leaves it where it was."""
    n = len(own)
    value = np.where(retract, -2, own).astype(np.int64)
    value = np.where(first & retract, existing, value)  # every key's first row has a value
    filled = np.where(value != -2, np.arange(n), 0)
    np.maximum.accumulate(filled, out=filled)
    after = value[filled]
    before = np.where(first, existing, np.concatenate([[-1], after[:-1]]))
    return before, after
