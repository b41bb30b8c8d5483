"""Compaction of one primary-key bucket: pick, rewrite or upgrade, and the changelog it produces.

Shared by the writer (which compacts the buckets it wrote unless ``write-only``) and by the
dedicated compaction (:mod:`paimonflow.core.compact.dedicated`). Nothing here commits: the caller gets
the files to delete and add and the changelog files, and commits them as a COMPACT snapshot.

**Lookup tables** (Paimon's ``LookupStrategy.needLookup``: ``changelog-producer=lookup``,
deletion vectors, the ``first-row`` merge engine) compact as Paimon's
``LookupMergeTreeCompactRewriter`` does, because Paimon's readers rely on what it writes (a
deletion-vector or first-row table is read file by file without merging; the other lookup tables
are read with ``LookupMergeFunction``, which takes only the lowest level above 0 of a key):

* every level above 0 holds the *merged* state of its keys. A key's output row is the merge of its
  level-0 rows with its newest state: its row on the lowest picked level above 0, else the row
  found by looking the key up in the levels above the output level (``LookupMergeFunction``,
  ``LookupChangelogMergeFunctionWrapper``; the looked-up row is placed by sequence, after rows
  that tie with it). With deletion vectors the looked-up row is marked deleted.
* ``first-row`` (``FirstRowMergeFunctionWrapper``): the first row of the picked ones; a key with
  no picked row above level 0 that the lookup finds above the output level is dropped.
* a level-0 file that would only change level is rewritten that way too
  (``upgradeStrategy``), unless its rows already are the merged ones: output on the max level, or
  ``deduplicate`` without ``sequence.field``.

``compaction.force-up-level-0`` alone only changes the pick (``ForceUpLevel0Compaction``).

**Changelog producers** (computed per key over whole columns; ``changelog-producer.row-deduplicate``
drops a ``-U``/``+U`` pair whose values are equal, otherwise it is emitted even then):

* ``lookup`` (``LookupChangelogMergeFunctionWrapper.setChangelog``), for keys with level-0 rows:
  *before* is the newest state above (as above), *after* the merged row. No (or a retracted)
  before → ``+I`` after if it is an insert; else after retracted → ``-D`` before; else ``-U``
  before, ``+U`` after. ``first-row``: the kept row of a key found nowhere above, as it is.
* ``full-compaction`` (``FullChangelogMergeFunctionWrapper``), when the output is the max level:
  *before* is the key's row on the max level, *after* the merge of its picked rows. A key whose
  only row is on the max level changes nothing; no before → ``+I``; after retracted → ``-D``
  before; else ``-U`` before, ``+U`` after.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from ..data import data_file as df
from ..data.binary_row import deserialize_row
from ..data.keys import last_per_key, lookup_candidates, merge_order
from ..maintenance.context import TableOps
from ..merge.changes import ADD_KINDS, rows_equal
from ..meta.manifest import DataFileMeta
from ..options.registry import ChangelogProducer, MergeEngine
from ..read.scan import ROW_POSITION, Split, SplitReader
from . import (
    CompactionOptions,
    CompactStep,
    Levels,
    RewriteStep,
    SortedRun,
    UpgradeStep,
    may_drop_delete,
    pick,
    pick_force_up_level0,
    pick_full_compaction,
    plan_compact_task,
)

_LOOKED_UP = -1  # the step of a row found above the output level (not a picked row)


@dataclass(frozen=True, slots=True)
class BucketCompaction:
    """What compacting one bucket changed (nothing is committed yet). ``vectors`` is the
    bucket's complete new set of deletion vectors (tables with deletion vectors), else None."""

    before: tuple[DataFileMeta, ...]
    after: tuple[DataFileMeta, ...]
    changelog: tuple[DataFileMeta, ...]
    output_level: int
    vectors: dict[str, BitMap] | None = None


@dataclass(frozen=True, slots=True)
class _KeyStates:
    """The keys of the rows one compaction merges, in key order: one entry per key in each array."""

    rows: pa.Table  # every row read, in merge order: values, _SEQUENCE_NUMBER, _VALUE_KIND
    merged: pa.Table  # the merged rows (values and system columns), in key order
    merged_of: np.ndarray  # the key's row in ``merged``; -1 when the engine left none
    step: np.ndarray  # the step whose files hold the key
    before_of: np.ndarray  # the key's row in ``rows`` holding its state before; -1 when none
    records: np.ndarray  # how many picked rows the key has
    level0: np.ndarray  # a picked row of the key is on level 0
    high: np.ndarray  # a picked row of the key is above level 0
    above: np.ndarray  # the lookup found the key above the output level
    looked_up: dict[str, np.ndarray]  # file name -> positions of looked-up rows merged as the state before


class BucketCompactor:
    """Compacts the buckets of one table with one reader and one writer."""

    def __init__(self, table: TableOps, *, reader: SplitReader | None = None, writer=None) -> None:
        self._table = table
        self._options = table.options
        self._reader = reader if reader is not None else table.split_reader()
        self._writer = writer if writer is not None else table.new_write()
        self._settings = CompactionOptions.from_options(table.schema.options, primary_key=True)
        self._value_names = list(table.arrow_schema.names)
        self._keys = list(table.schema.trimmed_primary_keys)
        self._sequence_fields = list(self._options.sequence_field or ())
        self._columns = list(dict.fromkeys([*self._keys, *self._value_names, *self._sequence_fields]))
        key_types = [table.arrow_schema.field(k).type for k in self._keys]
        self._key_of = lambda f: (deserialize_row(f.min_key, key_types), deserialize_row(f.max_key, key_types))
        producer = self._options.changelog_producer
        self._producer = producer
        self._dv = self._options.deletion_vectors
        self._first_row = self._options.merge_engine is MergeEngine.FIRST_ROW
        # Paimon's LookupStrategy.needLookup: compaction with the lookup rewriter
        self._lookup = producer is ChangelogProducer.LOOKUP or self._first_row or self._dv
        # rows of a level-0 file already are the merged ones when it moves up (upgradeStrategy)
        self._upgrade_keeps_merged = (self._options.merge_engine is MergeEngine.DEDUPLICATE
                                      and not self._sequence_fields)

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
        elif self._lookup or self._settings.force_up_level_0:  # ForceUpLevel0Compaction
            unit = pick_force_up_level0(levels.num_levels, runs, self._settings).unit
        else:
            unit = pick(levels.num_levels, runs, self._settings)
        if unit is None or (unit.is_trivial and not unit.file_rewrite):
            return None
        if self._dv:
            return self._merge_on_write(partition, bucket, total_buckets, files, unit, vectors)
        plan = plan_compact_task(unit, key_of=self._key_of, compaction_file_size=self._settings.compaction_file_size,
                                 max_level=levels.max_level,
                                 drop_delete=may_drop_delete(unit.output_level, levels),
                                 force_rewrite_all_files=self._settings.force_rewrite_all_files)
        steps = list(plan.steps)
        if self._lookup:
            steps = [self._lookup_upgrade(step, plan.output_level, levels.max_level) for step in steps]
        full_changelog = self._producer is ChangelogProducer.FULL_COMPACTION and plan.output_level == levels.max_level
        if self._lookup or full_changelog:
            return self._rewrite_by_key(partition, bucket, total_buckets, files, unit.files, steps,
                                        output_level=plan.output_level, drop_delete=plan.drop_delete,
                                        top_level=levels.max_level if full_changelog else None)
        before: list[DataFileMeta] = []
        after: list[DataFileMeta] = []
        for step in steps:
            if isinstance(step, RewriteStep):
                merged = self._merge(partition, bucket, total_buckets, step.files, drop=plan.drop_delete)
                after += self._write(partition, bucket, merged, plan.output_level)
                before += step.files
            else:  # upgrade: the same file one level up; only metadata changes
                before.append(step.file)
                after.append(replace(step.file, level=plan.output_level))
        if not before:
            return None
        return BucketCompaction(before=tuple(before), after=tuple(after), changelog=(),
                                output_level=plan.output_level)

    def _lookup_upgrade(self, step: CompactStep, output_level: int, max_level: int) -> CompactStep:
        """``LookupMergeTreeCompactRewriter.upgradeStrategy``: a level-0 file moving up is
        rewritten with the lookup merge unless its rows already are the merged ones."""
        if isinstance(step, UpgradeStep) and step.file.level == 0 and output_level != max_level \
                and not self._upgrade_keeps_merged:
            return RewriteStep(sections=((SortedRun((step.file,)),),))
        return step

    def _rewrite_by_key(self, partition, bucket, total_buckets, files, picked, steps, *, output_level: int,
                        drop_delete: bool, top_level: int | None) -> BucketCompaction | None:
        """Carry out ``steps`` merging key by key (lookup tables, or a full compaction producing
        changelog): rewrites write the merged rows of their keys, upgrades only change level; the
        changelog covers the keys of the rewritten files and of upgraded files that produce it."""
        lookup_changelog = self._producer is ChangelogProducer.LOOKUP
        read: list[tuple[DataFileMeta, int]] = []
        for i, step in enumerate(steps):
            if isinstance(step, RewriteStep):
                read += [(f, i) for f in step.files]
            elif top_level is not None or (lookup_changelog and step.file.level == 0):
                read.append((step.file, i))
        if not steps:
            return None
        names = {f.file_name for f in picked}
        above = [f for f in files if f.file_name not in names and f.level > output_level] if self._lookup else []
        states = self._key_states(partition, bucket, total_buckets, read, above=above, top_level=top_level)
        written = self._written(states, drop_delete=drop_delete)
        before: list[DataFileMeta] = []
        after: list[DataFileMeta] = []
        for i, step in enumerate(steps):
            if isinstance(step, RewriteStep):
                rows = states.merged.take(pa.array(states.merged_of[written & (states.step == i)], pa.int64()))
                after += self._write(partition, bucket, rows, output_level)
                before += step.files
            else:
                before.append(step.file)
                after.append(replace(step.file, level=output_level))
        changelog = self._changelog(partition, bucket, states, full=top_level is not None) \
            if top_level is not None or lookup_changelog else []
        return BucketCompaction(before=tuple(before), after=tuple(after), changelog=tuple(changelog),
                                output_level=output_level)

    # -- merge-on-write with deletion vectors -------------------------------------------------

    def _merge_on_write(self, partition, bucket, total_buckets, files, unit, vectors) -> BucketCompaction:
        """Rewrite the picked files in one lookup merge; the rows the lookup found above the
        output level (the state before of keys no picked file holds above level 0) are marked
        deleted in their files' vectors, so every key is live in at most one file above level 0
        and reads need no merging."""
        names = {f.file_name for f in unit.files}
        above = [f for f in files if f.file_name not in names and f.level > unit.output_level]
        states = self._key_states(partition, bucket, total_buckets, [(f, 0) for f in unit.files], above=above,
                                  vectors=vectors)
        written = self._written(states, drop_delete=True)
        after = self._write(partition, bucket, states.merged.take(pa.array(states.merged_of[written], pa.int64())),
                            unit.output_level)
        changelog = self._changelog(partition, bucket, states, full=False) \
            if self._producer is ChangelogProducer.LOOKUP else []
        remaining = {name: bm for name, bm in vectors.items() if name not in names}
        for name, positions in states.looked_up.items():
            bitmap = BitMap(remaining.get(name, BitMap()))
            bitmap.update(positions.tolist())
            remaining[name] = bitmap
        return BucketCompaction(before=tuple(unit.files), after=tuple(after), changelog=tuple(changelog),
                                output_level=unit.output_level, vectors=remaining)

    # -- merging key by key --------------------------------------------------------------------

    def _key_states(self, partition, bucket, total_buckets, read: Sequence[tuple[DataFileMeta, int]], *,
                    above: Sequence[DataFileMeta] = (), vectors: Mapping[str, BitMap] | None = None,
                    top_level: int | None = None) -> _KeyStates:
        """Read the files of ``read`` (file, step) and merge them key by key. Lookup tables also
        look up, in the ``above`` files, the keys no read file holds above level 0 (the lowest
        level holding a key wins, as Paimon's ``LookupLevels.lookup``); the state before of a
        key is then its newest row above level 0. With ``top_level`` (full-compaction changelog)
        it is the key's row on that level."""
        system = [df.SEQUENCE_NUMBER, df.VALUE_KIND]
        split = Split(partition=partition, bucket=bucket, total_buckets=total_buckets,
                      files=tuple(f for f, _ in read), deletion_vectors=vectors or None)
        parts = [self._reader._read_file(split, f, self._columns, system=system) for f, _ in read]
        sizes = [p.num_rows for p in parts]
        level = np.repeat(np.array([f.level for f, _ in read], np.int64), sizes)
        step = np.repeat(np.array([i for _, i in read], np.int64), sizes)
        source = np.full(len(level), -1, np.int64)
        position = np.full(len(level), -1, np.int64)
        found: list[DataFileMeta] = []
        found_keys = None  # first-row: the keys the lookup found (presence is all it asks)
        if self._lookup and above and parts and self._first_row:
            looked, _ = self._look_up(partition, bucket, total_buckets, read, parts, level, above, vectors,
                                      columns=self._keys)
            if looked:
                found_keys = pa.concat_tables([rows.select(self._keys) for _, rows in looked])
        elif self._lookup and above and parts:
            looked, found = self._look_up(partition, bucket, total_buckets, read, parts, level, above, vectors,
                                          columns=self._columns)
            for index, rows in looked:
                parts.append(rows.select([*self._columns, *system]))
                n = rows.num_rows
                level = np.concatenate([level, np.full(n, found[index].level, np.int64)])
                step = np.concatenate([step, np.full(n, _LOOKED_UP, np.int64)])
                source = np.concatenate([source, np.full(n, index, np.int64)])
                position = np.concatenate([position, rows.column(ROW_POSITION).to_numpy()])
        if parts:
            table = pa.concat_tables(parts).combine_chunks()
        else:
            table = df.with_system_columns(self._reader.output_schema(self._columns).empty_table())
        if table.num_rows == 0:
            empty, nothing = np.zeros(0, np.int64), np.zeros(0, bool)
            return _KeyStates(rows=table, merged=table.select([*self._value_names, *system]), merged_of=empty,
                              step=empty, before_of=empty, records=empty, level0=nothing, high=nothing,
                              above=nothing, looked_up={})
        # looked-up rows come last: among rows tying in sequence they are the newest
        # (KeyValueBuffer.insertInto places the looked-up record after its equals)
        order = merge_order(table, self._keys, df.SEQUENCE_NUMBER, self._sequence_fields,
                            self._options.sequence_descending,
                            kinds=df.VALUE_KIND if self._options.row_kind_flag else None)
        rows = table.take(pa.array(order))
        level, step, source, position = level[order], step[order], source[order], position[order]
        n = rows.num_rows
        starts_mask = np.ones(n, dtype=bool)
        starts_mask[1:] = last_per_key(rows.select(self._keys), self._keys)[:-1]
        starts = np.flatnonzero(starts_mask)
        group = np.cumsum(starts_mask) - 1
        keys = len(starts)
        picked = step != _LOOKED_UP
        before_of = np.full(keys, -1, np.int64)
        looked_up: dict[str, np.ndarray] = {}
        if self._lookup and not self._first_row:  # LookupMergeFunction
            candidates = lookup_candidates(rows.select(self._keys), self._keys, level)
            chosen = np.flatnonzero(candidates & (level > 0))
            before_of[group[chosen]] = chosen
            looked = chosen[~picked[chosen]]
            for index in np.unique(source[looked]):
                looked_up[found[index].file_name] = np.sort(position[looked[source[looked] == index]])
            merging = rows if candidates.all() else rows.filter(pa.array(candidates))
        else:  # first-row (FirstRowMergeFunction over the picked rows) or no lookup
            if top_level is not None:
                tops = np.flatnonzero(picked & (level == top_level))
                _, first = np.unique(group[tops], return_index=True)
                before_of[group[tops[first]]] = tops[first]
            merging = rows if picked.all() else rows.filter(pa.array(picked))
        merged = self._reader.merge_sorted(merging, self._value_names, drop_retractions=False)
        found_above = np.logical_or.reduceat(~picked, starts)
        if found_keys is not None:
            first_rows = rows.select(self._keys).take(pa.array(starts)).append_column(
                "__key", pa.array(np.arange(keys, dtype=np.int64)))
            found_above[first_rows.join(found_keys, keys=self._keys, join_type="left semi")
                        .column("__key").to_numpy()] = True
        return _KeyStates(
            rows=rows, merged=merged, merged_of=self._align(rows, starts, merged), step=np.maximum.reduceat(step, starts),
            before_of=before_of, records=np.add.reduceat(picked.astype(np.int64), starts),
            level0=np.logical_or.reduceat(picked & (level == 0), starts),
            high=np.logical_or.reduceat(picked & (level > 0), starts), above=found_above, looked_up=looked_up)

    def _look_up(self, partition, bucket, total_buckets, read, parts, level, above, vectors, *, columns):
        """The rows of ``above`` holding the keys that no read file holds above level 0, level by
        level from the lowest: a key found on one level is not looked for further up. Returns
        ``([(index into found files, rows of columns, system columns, ROW_POSITION)], found files)``."""
        system = [df.SEQUENCE_NUMBER, df.VALUE_KIND]
        keyed = pa.concat_tables([p.select(self._keys) for p in parts]).append_column(
            "__high", pa.array((level > 0).astype(np.int8)))
        grouped = keyed.group_by(self._keys).aggregate([("__high", "max")])
        wanted = grouped.filter(pc.equal(grouped.column("__high_max"), 0)).select(self._keys)
        looked: list[tuple[int, pa.Table]] = []
        found: list[DataFileMeta] = []
        if wanted.num_rows == 0:
            return looked, found
        # only level-0 rows lack a row above level 0: the level-0 files bound the keys wanted
        ranges = [self._key_of(f) for f, _ in read if f.level == 0]
        if not ranges:
            return looked, found
        low, high = min(r[0] for r in ranges), max(r[1] for r in ranges)
        for lvl in sorted({f.level for f in above}):
            hits_on_level = []
            for f in sorted((f for f in above if f.level == lvl), key=lambda f: f.file_name):
                first, last = self._key_of(f)
                if last < low or first > high:
                    continue
                split = Split(partition=partition, bucket=bucket, total_buckets=total_buckets, files=(f,),
                              deletion_vectors=vectors or None)
                rows = self._reader._read_file(split, f, list(columns), system=system, positions=True)
                index = rows.select(self._keys).append_column("__row", pa.array(np.arange(rows.num_rows)))
                # by row number; nested value columns cannot ride through a join, so only keys join
                hit = index.join(wanted, keys=self._keys, join_type="left semi").column("__row").to_numpy()
                if len(hit):
                    hits = rows.take(pa.array(np.sort(hit)))
                    looked.append((len(found), hits))
                    found.append(f)
                    hits_on_level.append(hits.select(self._keys))
            if hits_on_level:
                wanted = wanted.join(pa.concat_tables(hits_on_level), keys=self._keys, join_type="left anti")
                if wanted.num_rows == 0:
                    break
        return looked, found

    def _align(self, rows: pa.Table, starts: np.ndarray, merged: pa.Table) -> np.ndarray:
        """For each key (a run of ``rows`` starting at ``starts``): its row in ``merged``, or -1."""
        keys = len(starts)
        if merged.num_rows == keys:  # one merged row per key, both in key order
            return np.arange(keys, dtype=np.int64)
        groups = rows.select(self._keys).take(pa.array(starts)).append_column(
            "__key", pa.array(np.arange(keys, dtype=np.int64)))
        results = merged.select(self._keys).append_column("__merged", pa.array(np.arange(merged.num_rows,
                                                                                           dtype=np.int64)))
        joined = results.join(groups, keys=self._keys, join_type="inner")
        merged_of = np.full(keys, -1, np.int64)
        merged_of[joined.column("__key").to_numpy()] = joined.column("__merged").to_numpy()
        return merged_of

    def _written(self, states: _KeyStates, *, drop_delete: bool) -> np.ndarray:
        """Per key: whether its merged row goes into the output files."""
        keep = states.merged_of >= 0
        if drop_delete and keep.any():
            kinds = states.merged.column(df.VALUE_KIND).to_numpy()
            keep[keep] = np.isin(kinds[states.merged_of[keep]], ADD_KINDS)
        if self._first_row and self._lookup:  # FirstRowMergeFunctionWrapper: found above, so not new
            keep &= states.high | ~states.above
        return keep

    def _write(self, partition, bucket, merged: pa.Table, level: int) -> list[DataFileMeta]:
        return self._writer.write_rewritten(
            partition, bucket, merged.select(self._value_names).combine_chunks(),
            merged.column(df.VALUE_KIND).to_numpy().astype(np.int8),
            merged.column(df.SEQUENCE_NUMBER).to_numpy(), level=level)

    # -- changelog ---------------------------------------------------------------------------

    def _changelog(self, partition, bucket, states: _KeyStates, *, full: bool) -> list[DataFileMeta]:
        rows, kinds, sequence = _key_changes(states, self._value_names, full=full,
                                            first_row=self._first_row and not full,
                                            deduplicate=self._options.changelog_row_deduplicate)
        if rows.num_rows == 0:
            return []
        return self._writer.write_changelog(partition, bucket, rows, kinds, sequence)

    def _merge(self, partition, bucket, total_buckets, files, *, drop: bool) -> pa.Table:
        split = Split(partition=partition, bucket=bucket, total_buckets=total_buckets,
                      files=tuple(sorted(files, key=lambda f: (f.min_sequence_number, f.file_name))))
        return self._reader.merge_files(split, drop_retractions=drop)


def _key_changes(states: _KeyStates, values: Sequence[str], *, full: bool, first_row: bool,
                deduplicate: bool) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The changelog of a compaction from its key states (see the module docstring for the
    rules): rows, kinds and sequence numbers, in key order, ``-U`` before ``+U`` of one key."""
    values = list(values)
    count = len(states.merged_of)
    has_after = states.merged_of >= 0
    after_kinds = states.merged.column(df.VALUE_KIND).to_numpy() if states.merged.num_rows else np.zeros(0, np.int8)
    after_add = np.zeros(count, dtype=bool)
    after_add[has_after] = np.isin(after_kinds[states.merged_of[has_after]], ADD_KINDS)
    if first_row:  # FirstRowMergeFunctionWrapper: a key found nowhere above is new, with its row as it is
        new = np.flatnonzero(has_after & ~states.high & ~states.above)
        table = states.merged.take(pa.array(states.merged_of[new], pa.int64()))
        return (table.select(values), after_kinds[states.merged_of[new]].astype(np.int8),
                table.column(df.SEQUENCE_NUMBER).to_numpy())
    has_before = states.before_of >= 0
    if full:  # FullChangelogMergeFunctionWrapper: the top-level row is the state before, whatever its kind
        relevant = ~(has_before & (states.records == 1))
        before_add = has_before
    else:  # LookupChangelogMergeFunctionWrapper: only keys with level-0 rows
        relevant = states.level0
        before_add = np.zeros(count, dtype=bool)
        before_kinds = states.rows.column(df.VALUE_KIND).to_numpy()
        before_add[has_before] = np.isin(before_kinds[states.before_of[has_before]], ADD_KINDS)
    insert = relevant & ~before_add & after_add
    delete = relevant & before_add & ~after_add
    update = relevant & before_add & after_add
    if deduplicate and update.any():
        both = np.flatnonzero(update)
        same = rows_equal(states.rows.select(values).take(pa.array(states.before_of[both])),
                           states.merged.select(values).take(pa.array(states.merged_of[both])))
        update[both[same]] = False
    old = np.flatnonzero(delete | update)
    new = np.flatnonzero(insert | update)
    parts = [states.rows.select([*values, df.SEQUENCE_NUMBER]).take(pa.array(states.before_of[old], pa.int64())),
             states.merged.select([*values, df.SEQUENCE_NUMBER]).take(pa.array(states.merged_of[new], pa.int64()))]
    table = pa.concat_tables(parts, promote_options="permissive")
    kinds = np.concatenate([
        np.where(delete[old], df.ROW_KIND_DELETE, df.ROW_KIND_UPDATE_BEFORE).astype(np.int8),
        np.where(insert[new], df.ROW_KIND_INSERT, df.ROW_KIND_UPDATE_AFTER).astype(np.int8),
    ])
    order = np.lexsort((np.concatenate([np.zeros(len(old), np.int8), np.ones(len(new), np.int8)]),
                        np.concatenate([old, new])))
    table = table.take(pa.array(order))
    return table.select(values), kinds[order], table.column(df.SEQUENCE_NUMBER).to_numpy()


def _may_hold_retractions(f: DataFileMeta) -> bool:
    return f.delete_row_count is None or f.delete_row_count > 0
