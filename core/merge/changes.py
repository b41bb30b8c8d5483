"""The changelog between two versions of a bucket's rows (by key): inserts, updates as -U/+U pairs,
deletes; shared by lookup/full-compaction changelog producers and diff-mode incremental reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..data import data_file as df

ADD_KINDS = (df.ROW_KIND_INSERT, df.ROW_KIND_UPDATE_AFTER)


def changelog_between(old: pa.Table | None, new: pa.Table, keys: Sequence[str], values: Sequence[str], *,
                      deduplicate: bool) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The changelog turning merged state ``old`` into ``new`` (both one row per key, sorted by
    key, with ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``): rows, kinds and sequence numbers, in key
    order (``-U`` before ``+U`` of one key); keys that only ``old`` holds follow as ``-D``. A key
    in both is updated unless ``deduplicate`` finds its values equal (an equal merged sequence
    number proves nothing: with ``sequence.field`` a late record can change the merged values
    without becoming the newest)."""
    new_kinds = new.column(df.VALUE_KIND).to_numpy()
    new_add = np.isin(new_kinds, ADD_KINDS)
    if old is not None and old.num_rows:
        old = old.filter(pa.array(np.isin(old.column(df.VALUE_KIND).to_numpy(), ADD_KINDS)))
    if old is None or old.num_rows == 0:
        pick_new = np.flatnonzero(new_add)
        kinds = np.full(len(pick_new), df.ROW_KIND_INSERT, dtype=np.int8)
        table = new.take(pa.array(pick_new))
        return table.select(list(values)), kinds, table.column(df.SEQUENCE_NUMBER).to_numpy()
    left = pa.table({**{f"k{i}": old.column(k) for i, k in enumerate(keys)},
                     "o": pa.array(np.arange(old.num_rows, dtype=np.int64))})
    right = pa.table({**{f"k{i}": new.column(k) for i, k in enumerate(keys)},
                      "n": pa.array(np.arange(new.num_rows, dtype=np.int64))})
    joined = right.join(left, keys=[f"k{i}" for i in range(len(keys))], join_type="left outer")
    n_idx = joined.column("n").to_numpy()
    o_col = joined.column("o")
    has_old = pc.is_valid(o_col).to_numpy(zero_copy_only=False)
    o_idx = pc.fill_null(o_col, 0).to_numpy()
    add = new_add[n_idx]
    unchanged = np.zeros(len(n_idx), dtype=bool)
    if deduplicate:
        both = np.flatnonzero(has_old & add)
        if len(both):
            same = rows_equal(old.select(list(values)).take(pa.array(o_idx[both])),
                               new.select(list(values)).take(pa.array(n_idx[both])))
            unchanged[both[same]] = True
    insert = ~has_old & add
    delete = has_old & ~add
    update = has_old & add & ~unchanged
    # one output slot per change: (join row, rank) with rank 0 = the old row, 1 = the new row
    rows_o = np.flatnonzero(delete | update)
    rows_n = np.flatnonzero(insert | update)
    sources = np.concatenate([np.zeros(len(rows_o), np.int8), np.ones(len(rows_n), np.int8)])
    join_rows = np.concatenate([rows_o, rows_n])
    kinds = np.concatenate([
        np.where(delete[rows_o], df.ROW_KIND_DELETE, df.ROW_KIND_UPDATE_BEFORE).astype(np.int8),
        np.where(insert[rows_n], df.ROW_KIND_INSERT, df.ROW_KIND_UPDATE_AFTER).astype(np.int8),
    ])
    # key order = position of the new row (``new`` is sorted by key); old before new within a key
    order = np.lexsort((sources, n_idx[join_rows]))
    sources, join_rows, kinds = sources[order], join_rows[order], kinds[order]
    from_old = sources == 0
    parts_index = np.where(from_old, o_idx[join_rows], n_idx[join_rows] + old.num_rows)
    both_tables = pa.concat_tables([old.select([*values, df.SEQUENCE_NUMBER]),
                                    new.select([*values, df.SEQUENCE_NUMBER])]).combine_chunks()
    # keys only the old state holds (absent from ``new`` altogether): deleted
    gone = left.join(right.select([f"k{i}" for i in range(len(keys))]),
                     keys=[f"k{i}" for i in range(len(keys))], join_type="left anti").column("o").to_numpy()
    if len(gone):
        parts_index = np.concatenate([parts_index, np.sort(gone)])
        kinds = np.concatenate([kinds, np.full(len(gone), df.ROW_KIND_DELETE, np.int8)])
    table = both_tables.take(pa.array(parts_index, pa.int64()))
    return table.select(list(values)), kinds, table.column(df.SEQUENCE_NUMBER).to_numpy()


def rows_equal(a: pa.Table, b: pa.Table) -> np.ndarray:
    """Row-wise equality of two tables with one schema (nulls equal nulls)."""
    equal = np.ones(a.num_rows, dtype=bool)
    for x, y in zip(a.columns, b.columns, strict=True):
        if pa.types.is_nested(x.type) or pa.types.is_dictionary(x.type):
            equal &= np.array([u == v for u, v in zip(x.to_pylist(), y.to_pylist(), strict=True)], dtype=bool)
            continue
        same = pc.fill_null(pc.equal(x, y), False).to_numpy(zero_copy_only=False)
        both_null = pc.and_(pc.is_null(x), pc.is_null(y)).to_numpy(zero_copy_only=False)
        equal &= same | both_null
    return equal
