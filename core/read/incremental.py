"""Incremental reads: the changes between two snapshots as rows with their kind (``rowkind``:
``+I``, ``-U``, ``+U``, ``-D``), Paimon's ``incremental-between`` with its scan modes.

* ``changelog``: the changelog files the snapshots in ``(start, end]`` committed (tables with a
  changelog producer);
* ``delta``: the rows of the data files APPEND and OVERWRITE snapshots in ``(start, end]`` added, as
  written (compactions add no change);
* ``diff`` (primary-key tables): the difference between the merged states at ``start`` and
  ``end``: a new key ``+I``, a changed one ``-U``/``+U``, a removed one ``-D``;
* ``auto`` (default): ``changelog`` with a changelog producer, else ``diff`` for primary-key
  tables and ``delta`` for append tables.

:func:`net_splits` and :func:`read_net` are Paimon's batch ``incremental-between`` read (what its
engines return for a batch query without row kinds): the files of the range (``delta``: APPEND
snapshots only; ``changelog``: every snapshot but OVERWRITE ones) grouped by bucket and merged per
key by sequence number with the table's merge engine; retractions (-U, -D) are dropped. A key
changed twice in the range gives one row, its last value; a key deleted in the range gives none.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..data import data_file as df
from ..data.binary_row import deserialize_row
from ..errors import InvalidArgumentError
from ..meta.layout import POSTPONE_BUCKET
from ..meta.manifest import FileKind
from ..meta.snapshots import CommitKind
from ..options.registry import ChangelogProducer
from .scan import Split

ROWKIND = "rowkind"
_KIND_NAMES = pa.array(df.ROW_KIND_NAMES)


def with_kinds(table: pa.Table, kinds: np.ndarray) -> pa.Table:
    return table.add_column(0, ROWKIND, _KIND_NAMES.take(pa.array(kinds.astype(np.int64))))


def changes_mode(table, mode: str) -> str:
    """The scan mode :func:`read_changes` reads for ``mode``: ``auto`` is ``changelog`` with a
    changelog producer, else ``diff`` for primary-key tables and ``delta`` for append tables.
    Raises :class:`InvalidArgumentError` for an unknown mode."""
    if mode == "auto":
        if table.options.changelog_producer is not ChangelogProducer.NONE:
            return "changelog"
        return "diff" if table.primary_keys else "delta"
    if mode not in ("changelog", "delta", "diff"):
        raise InvalidArgumentError(f"unknown incremental scan mode {mode!r}: auto, changelog, delta or diff")
    return mode


def read_changes(table, start: int, end: int, *, mode: str = "auto",
                 columns: Sequence[str] | None = None, postponed: bool = False) -> pa.Table:
    """Rows changed after snapshot ``start`` up to and including ``end``, with ``rowkind`` first
    (``start`` 0: from the empty table, before the first snapshot). Files of the postpone bucket
    are read only with ``postponed`` (Paimon's streaming ``delta`` read; batch reads skip them)."""
    manager = table.snapshot_manager
    if start >= end or start < 0:
        raise InvalidArgumentError(f"incremental read needs 0 <= start < end, got {start} and {end}")
    mode = changes_mode(table, mode)
    wanted = list(columns) if columns is not None else list(table.arrow_schema.names)
    reader = table.split_reader()
    reader.output_schema(wanted)
    if mode == "diff":
        if not table.primary_keys:
            raise InvalidArgumentError("diff mode needs a primary-key table")
        return _diff(table, reader, manager.snapshot(start) if start else None, manager.snapshot(end), wanted)
    parts = []
    for split in _changed_files(table, start, end, mode, overwrites=True, postponed=postponed):
        (data_file,) = split.files
        if table.primary_keys:
            rows = reader._read_file(split, data_file, wanted, system=[df.VALUE_KIND])
            kinds = rows.column(df.VALUE_KIND).to_numpy()
            rows = rows.drop_columns([df.VALUE_KIND])
        else:
            rows = reader._read_file(split, data_file, wanted)
            kinds = np.zeros(rows.num_rows, dtype=np.int8)
        parts.append(with_kinds(rows.select(wanted), kinds))
    if not parts:
        return with_kinds(reader.output_schema(wanted).empty_table(), np.zeros(0, np.int8))
    return pa.concat_tables(parts)


def _changed_files(table, start: int, end: int, mode: str, *, overwrites: bool,
                   postponed: bool = False) -> list[Split]:
    """One single-file split per file the snapshots in ``(start, end]`` added, in commit order:
    their changelog files (``changelog``) or the data files APPEND snapshots added (``delta``;
    OVERWRITE snapshots too when ``overwrites``; compactions add no change). OVERWRITE snapshots
    carry no changelog when ``overwrites`` is off, as in Paimon's batch read."""
    from ..meta.changelogs import ChangelogManager

    manager, mio = table.snapshot_manager, table.manifest_io
    partition_types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    changelogs = ChangelogManager(table.file_io, table.path, table.branch)
    delta_kinds = (CommitKind.APPEND, CommitKind.OVERWRITE) if overwrites else (CommitKind.APPEND,)
    out = []
    for sid in range(start + 1, end + 1):
        # below the earliest snapshot, a decoupled table keeps changelog/changelog-<id>
        snapshot = manager.try_snapshot(sid) or changelogs.try_changelog(sid) or manager.snapshot(sid)
        if mode == "changelog":
            if not overwrites and snapshot.commit_kind is CommitKind.OVERWRITE:
                continue
            entries = mio.changelog_entries(snapshot)
        elif snapshot.commit_kind in delta_kinds:
            entries = [e for m in mio.manifest_list(snapshot.delta_manifest_list) for e in mio.manifest_entries(m.file_name)
                       if e.kind is FileKind.ADD]
        else:
            continue
        out += [Split(partition=tuple(deserialize_row(e.partition, partition_types)), bucket=e.bucket,
                      total_buckets=e.total_buckets, files=(e.file,)) for e in entries
                if postponed or e.bucket != POSTPONE_BUCKET]
    return out


def batch_mode(table, mode: str) -> str:
    """Paimon's ``incremental-between-scan-mode`` for a batch read: ``auto`` is ``changelog`` with
    a changelog producer, else ``delta``."""
    if mode == "auto":
        return "changelog" if table.options.changelog_producer is not ChangelogProducer.NONE else "delta"
    if mode not in ("changelog", "delta", "diff"):
        raise InvalidArgumentError(f"unknown incremental-between-scan-mode {mode!r}: auto, changelog, delta or diff")
    return mode


def net_splits(table, start: int, end: int, mode: str = "auto") -> list[Split]:
    """The splits of Paimon's batch ``incremental-between`` read of ``(start, end]`` in ``mode``
    (``changelog`` or ``delta``, or ``auto``): per (partition, bucket), the files of the range;
    read each with :func:`read_net`."""
    if start >= end or start < 0:
        raise InvalidArgumentError(f"incremental-between needs 0 <= start < end, got {start},{end}")
    mode = batch_mode(table, mode)
    if mode == "diff":
        raise InvalidArgumentError("the diff scan mode compares two snapshots; it has no files to merge")
    grouped: dict[tuple, list[Split]] = {}
    for split in _changed_files(table, start, end, mode, overwrites=False):
        grouped.setdefault((split.partition, split.bucket), []).append(split)
    return [Split(partition=partition, bucket=bucket, total_buckets=splits[0].total_buckets,
                  files=tuple(sorted((s.files[0] for s in splits),
                                     key=lambda f: (f.min_sequence_number, f.max_sequence_number))))
            for (partition, bucket), splits in grouped.items()]


def read_net(table, split: Split, columns: Sequence[str] | None = None) -> pa.Table:
    """One split of :func:`net_splits`: a primary-key table's rows merged per key (the newest by
    sequence number, through the merge engine), retractions dropped; an append table's rows."""
    reader = table.split_reader()
    wanted = list(columns) if columns is not None else list(table.arrow_schema.names)
    expected = reader.output_schema(wanted)
    if not table.primary_keys:
        return reader.read_split(split, columns=wanted, merge=False)
    rows = reader.merge_files(split, wanted, drop_retractions=True).select(wanted)
    return rows if rows.schema == expected else rows.cast(expected)


def _diff(table, reader, before, after, wanted: list[str]) -> pa.Table:
    from ..merge.changes import changelog_between

    keys = list(table.schema.trimmed_primary_keys)
    values = list(table.arrow_schema.names)
    old_splits = {} if before is None else {  # before None: from the empty table (start 0)
        (s.partition, s.bucket): s for s in table.plan(snapshot_id=before.id, all_levels=True)}
    new_splits = {(s.partition, s.bucket): s for s in table.plan(snapshot_id=after.id, all_levels=True)}
    parts = []
    for key in sorted(set(old_splits) | set(new_splits), key=repr):
        old, new = old_splits.get(key), new_splits.get(key)
        if old is not None and new is not None and {f.file_name for f in old.files} == {f.file_name for f in new.files}:
            continue  # the bucket did not change
        old_rows = reader.merge_files(old, drop_retractions=True) if old is not None else None
        if new is not None:
            new_rows = reader.merge_files(new, drop_retractions=True)
        else:  # the bucket is gone, so the older plan had it
            assert old_rows is not None
            new_rows = old_rows.slice(0, 0)
        if old_rows is not None and old_rows.num_rows == 0:
            old_rows = None
        rows, kinds, _ = changelog_between(old_rows, new_rows, keys, values, deduplicate=True)
        if rows.num_rows:
            parts.append(with_kinds(rows.select(wanted), kinds))
    if not parts:
        return with_kinds(reader.output_schema(wanted).empty_table(), np.zeros(0, np.int8))
    return pa.concat_tables(parts)
