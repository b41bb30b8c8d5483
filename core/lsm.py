"""Compaction of one primary-key bucket: pick, rewrite or upgrade, and the changelog it produces.

Shared by the writer (which compacts the buckets it wrote unless ``write-only``) and by the
dedicated compaction (:mod:`paimonflow.core.compactor`). Nothing here commits: the caller gets
the files to delete and add and the changelog files, and commits them as a COMPACT snapshot.

Changelog producers (Paimon's ``FullChangelogMergeFunctionWrapper`` and
``LookupChangelogMergeFunctionWrapper`` rules, computed per key over whole columns):

* ``full-compaction``: when the output is the top level, the state before is the top level's
  row of each key and the state after is the merge of every picked row. New key → ``+I``; key
  gone (merged to a retraction) → ``-D`` of the old row; changed → ``-U`` old, ``+U`` new.
* ``lookup``: level 0 is always compacted up (force-up-level-0); the state before is the merge
  of the bucket's files above level 0, after is the merge including the level-0 files, for keys
  present in level 0. Same rules as above.

With ``changelog-producer.row-deduplicate`` a ``-U``/``+U`` pair whose values are equal is
left out. A key whose newest row did not change (same sequence number) produces nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from . import data_file as df
from .binary_row import deserialize_row
from .compact import (
    CompactionOptions,
    Levels,
    RewriteStep,
    may_drop_delete,
    pick,
    pick_force_up_level0,
    pick_full_compaction,
    plan_compact_task,
)
from .manifest import DataFileMeta
from .options import ChangelogProducer, MergeEngine
from .read import ROW_POSITION, Split, SplitReader

_ADD_KINDS = (df.ROW_KIND_INSERT, df.ROW_KIND_UPDATE_AFTER)


@dataclass(frozen=True, slots=True)
class BucketCompaction:
    """What compacting one bucket changed (nothing is committed yet). ``vectors`` is the
    bucket's complete new set of deletion vectors (tables with deletion vectors), else None."""

    before: tuple[DataFileMeta, ...]
    after: tuple[DataFileMeta, ...]
    changelog: tuple[DataFileMeta, ...]
    output_level: int
    vectors: dict[str, BitMap] | None = None


class BucketCompactor:
    """Compacts the buckets of one table with one reader and one writer."""

    def __init__(self, table, *, reader: SplitReader | None = None, writer=None) -> None:
        self._table = table
        self._options = table.options
        self._reader = reader if reader is not None else table._reader()
        self._writer = writer if writer is not None else table.new_write()
        self._settings = CompactionOptions.from_options(table.schema.options, primary_key=True)
        self._value_names = list(table.arrow_schema.names)
        self._keys = list(table.schema.trimmed_primary_keys)
        key_types = [table.arrow_schema.field(k).type for k in self._keys]
        self._key_of = lambda f: (deserialize_row(f.min_key, key_types), deserialize_row(f.max_key, key_types))
        producer = self._options.changelog_producer
        self._dv = self._options.deletion_vectors
        self._lookup = (producer is ChangelogProducer.LOOKUP or self._settings.force_up_level_0
                        or self._options.merge_engine is MergeEngine.FIRST_ROW or self._dv)
        self._producer = producer

    @property
    def num_levels(self) -> int:
        return self._settings.num_levels

    def sorted_runs(self, files: Sequence[DataFileMeta]) -> int:
        return len(Levels.from_files(files, num_levels=self._settings.num_levels, key_of=self._key_of).sorted_runs())

    def compact(self, partition: tuple[object, ...], bucket: int, total_buckets: int,
                files: Sequence[DataFileMeta], *, full: bool,
                vectors: Mapping[str, BitMap] | None = None) -> BucketCompaction | None:
        """Compact ``files`` (the bucket's live files, with their deletion ``vectors``) once;
        None when nothing needs doing."""
        vectors = dict(vectors or {})
        levels = Levels.from_files(files, num_levels=self._settings.num_levels, key_of=self._key_of)
        runs = levels.sorted_runs()
        if full:
            unit = pick_full_compaction(levels.num_levels, runs,
                                        force_rewrite_all_files=self._settings.force_rewrite_all_files,
                                        needs_rewrite=lambda f: _may_hold_retractions(f) or f.file_name in vectors)
        elif self._lookup:
            unit = pick_force_up_level0(levels.num_levels, runs, self._settings).unit
        else:
            unit = pick(levels.num_levels, runs, self._settings)
        if unit is None or (unit.is_trivial and not unit.file_rewrite):
            return None
        if self._dv:
            return self._merge_on_write(partition, bucket, total_buckets, files, unit, levels, vectors)
        plan = plan_compact_task(unit, key_of=self._key_of, compaction_file_size=self._settings.compaction_file_size,
                                 max_level=levels.max_level,
                                 drop_delete=may_drop_delete(unit.output_level, levels),
                                 force_rewrite_all_files=self._settings.force_rewrite_all_files)
        before: list[DataFileMeta] = []
        after: list[DataFileMeta] = []
        for step in plan.steps:
            if isinstance(step, RewriteStep):
                merged = self._merge(partition, bucket, total_buckets, step.files, drop=plan.drop_delete)
                after += self._writer.write_rewritten(
                    partition, bucket, merged.select(self._value_names).combine_chunks(),
                    merged.column(df.VALUE_KIND).to_numpy().astype(np.int8),
                    merged.column(df.SEQUENCE_NUMBER).to_numpy(), level=plan.output_level)
                before += step.files
            else:  # upgrade: the same file one level up; only metadata changes
                before.append(step.file)
                after.append(replace(step.file, level=plan.output_level))
        if not before:
            return None
        changelog = self._changelog(partition, bucket, total_buckets, files, unit.files, plan.output_level,
                                    levels.max_level)
        return BucketCompaction(before=tuple(before), after=tuple(after), changelog=tuple(changelog),
                                output_level=plan.output_level)

    # -- merge-on-write with deletion vectors -------------------------------------------------

    def _merge_on_write(self, partition, bucket, total_buckets, files, unit, levels, vectors) -> BucketCompaction:
        """Rewrite the picked files in one merge; older rows of their keys that live in files
        outside the pick are pulled into that merge and marked deleted in those files' vectors,
        so every key is live in at most one file above level 0 and reads need no merging."""
        picked = {f.file_name for f in unit.files}
        others = [f for f in files if f.file_name not in picked and f.level > 0]
        pulled, marks = self._pull_older_rows(partition, bucket, total_buckets, unit.files, others, vectors)
        merged = self._merge(partition, bucket, total_buckets, unit.files, drop=True, extra=pulled, vectors=vectors)
        after = self._writer.write_rewritten(
            partition, bucket, merged.select(self._value_names).combine_chunks(),
            merged.column(df.VALUE_KIND).to_numpy().astype(np.int8),
            merged.column(df.SEQUENCE_NUMBER).to_numpy(), level=unit.output_level)
        changelog = self._changelog(partition, bucket, total_buckets, files, unit.files, unit.output_level,
                                    levels.max_level, vectors)
        remaining = {name: bm for name, bm in vectors.items() if name not in picked}
        for name, positions in marks.items():
            bitmap = BitMap(remaining.get(name, BitMap()))
            bitmap.update(positions.tolist())
            remaining[name] = bitmap
        return BucketCompaction(before=tuple(unit.files), after=tuple(after), changelog=tuple(changelog),
                                output_level=unit.output_level, vectors=remaining)

    def _pull_older_rows(self, partition, bucket, total_buckets, picked, others, vectors):
        """Rows of ``others`` whose key occurs in the picked files, and their positions per file."""
        if not others:
            return None, {}
        split = Split(partition=partition, bucket=bucket, total_buckets=total_buckets, files=tuple(picked),
                      deletion_vectors=vectors)
        keys = pa.concat_tables([self._reader._read_file(split, f, self._keys) for f in picked])
        keys = keys.group_by(self._keys).aggregate([])
        columns = list(dict.fromkeys([*self._keys, *self._value_names,
                                      *(self._options.sequence_field or ())]))
        system = [df.SEQUENCE_NUMBER, df.VALUE_KIND]
        pulled, marks = [], {}
        for f in others:
            split = Split(partition=partition, bucket=bucket, total_buckets=total_buckets, files=(f,),
                          deletion_vectors=vectors)
            rows = self._reader._read_file(split, f, columns, system=system, positions=True)
            index = rows.select(self._keys).append_column("__row", pa.array(np.arange(rows.num_rows)))
            found = index.join(keys, keys=self._keys, join_type="inner").column("__row")
            # by row number; nested value columns cannot ride through a join, so only keys join
            hits = rows.take(pa.array(np.sort(found.to_numpy())))
            if hits.num_rows:
                marks[f.file_name] = hits.column(ROW_POSITION).to_numpy()
                pulled.append(hits.select([*columns, *system]))
        if not pulled:
            return None, {}
        return pa.concat_tables(pulled), marks

    # -- changelog ---------------------------------------------------------------------------

    def _changelog(self, partition, bucket, total_buckets, files, picked, output_level, max_level, vectors=None):
        if self._producer is ChangelogProducer.FULL_COMPACTION and output_level == max_level:
            top = [f for f in picked if f.level == max_level]
            old = self._merge(partition, bucket, total_buckets, top, drop=False, vectors=vectors) if top else None
            new = self._merge(partition, bucket, total_buckets, picked, drop=False, vectors=vectors)
        elif self._producer is ChangelogProducer.LOOKUP and any(f.level == 0 for f in picked):
            high = [f for f in files if f.level > 0]
            old = self._merge(partition, bucket, total_buckets, high, drop=False, vectors=vectors) if high else None
            new = self._merge(partition, bucket, total_buckets, [*high, *(f for f in picked if f.level == 0)],
                              drop=False, vectors=vectors)
        else:
            return []
        rows, kinds, sequence = changelog_between(old, new, self._keys, self._value_names,
                                                  deduplicate=self._options.changelog_row_deduplicate)
        if rows.num_rows == 0:
            return []
        return self._writer.write_changelog(partition, bucket, rows, kinds, sequence)

    def _merge(self, partition, bucket, total_buckets, files, *, drop: bool, extra: pa.Table | None = None,
               vectors: Mapping[str, BitMap] | None = None) -> pa.Table:
        split = Split(partition=partition, bucket=bucket, total_buckets=total_buckets,
                      files=tuple(sorted(files, key=lambda f: (f.min_sequence_number, f.file_name))),
                      deletion_vectors=vectors or None)
        return self._reader.merge_files(split, drop_retractions=drop, extra=extra)


def _may_hold_retractions(f: DataFileMeta) -> bool:
    return f.delete_row_count is None or f.delete_row_count > 0


def changelog_between(old: pa.Table | None, new: pa.Table, keys: Sequence[str], values: Sequence[str], *,
                      deduplicate: bool) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The changelog turning merged state ``old`` into ``new`` (both one row per key, sorted by
    key, with ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``): rows, kinds and sequence numbers, in key
    order (``-U`` before ``+U`` of one key); keys that only ``old`` holds follow as ``-D``."""
    new_kinds = new.column(df.VALUE_KIND).to_numpy()
    new_add = np.isin(new_kinds, _ADD_KINDS)
    if old is not None and old.num_rows:
        old = old.filter(pa.array(np.isin(old.column(df.VALUE_KIND).to_numpy(), _ADD_KINDS)))
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
    new_seq = new.column(df.SEQUENCE_NUMBER).to_numpy()[n_idx]
    old_seq = old.column(df.SEQUENCE_NUMBER).to_numpy()[o_idx]
    unchanged = has_old & add & (new_seq == old_seq)
    if deduplicate:
        both = np.flatnonzero(has_old & add & ~unchanged)
        if len(both):
            same = _rows_equal(old.select(list(values)).take(pa.array(o_idx[both])),
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


def _rows_equal(a: pa.Table, b: pa.Table) -> np.ndarray:
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
