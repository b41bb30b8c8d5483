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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..data import data_file as df
from ..data.binary_row import deserialize_row
from ..errors import InvalidArgumentError
from ..meta.manifest import FileKind
from ..meta.snapshots import CommitKind
from ..options.registry import ChangelogProducer
from .scan import Split

ROWKIND = "rowkind"
_KIND_NAMES = pa.array(df.ROW_KIND_NAMES)


def with_kinds(table: pa.Table, kinds: np.ndarray) -> pa.Table:
    return table.add_column(0, ROWKIND, _KIND_NAMES.take(pa.array(kinds.astype(np.int64))))


def read_changes(table, start: int, end: int, *, mode: str = "auto",
                 columns: Sequence[str] | None = None) -> pa.Table:
    """Rows changed after snapshot ``start`` up to and including ``end``, with ``rowkind`` first
    (``start`` 0: from the empty table, before the first snapshot)."""
    manager = table.snapshot_manager
    if start >= end or start < 0:
        raise InvalidArgumentError(f"incremental read needs 0 <= start < end, got {start} and {end}")
    if mode == "auto":
        if table.options.changelog_producer is not ChangelogProducer.NONE:
            mode = "changelog"
        else:
            mode = "diff" if table.primary_keys else "delta"
    if mode not in ("changelog", "delta", "diff"):
        raise InvalidArgumentError(f"unknown incremental scan mode {mode!r}: auto, changelog, delta or diff")
    wanted = list(columns) if columns is not None else list(table.arrow_schema.names)
    reader = table.split_reader()
    reader.output_schema(wanted)
    if mode == "diff":
        if not table.primary_keys:
            raise InvalidArgumentError("diff mode needs a primary-key table")
        return _diff(table, reader, manager.snapshot(start) if start else None, manager.snapshot(end), wanted)
    partition_types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    parts = []
    from ..meta.changelogs import ChangelogManager

    changelogs = ChangelogManager(table.file_io, table.path, table.branch)
    for sid in range(start + 1, end + 1):
        # below the earliest snapshot, a decoupled table keeps changelog/changelog-<id>
        snapshot = manager.try_snapshot(sid) or changelogs.try_changelog(sid) or manager.snapshot(sid)
        if mode == "changelog":
            entries = table.manifest_io.changelog_entries(snapshot)
        elif snapshot.commit_kind in (CommitKind.APPEND, CommitKind.OVERWRITE):
            mio = table.manifest_io
            entries = [e for m in mio.manifest_list(snapshot.delta_manifest_list) for e in mio.manifest_entries(m.file_name)
                       if e.kind is FileKind.ADD]
        else:
            continue
        for e in entries:
            split = Split(partition=tuple(deserialize_row(e.partition, partition_types)), bucket=e.bucket,
                          total_buckets=e.total_buckets, files=(e.file,))
            if table.primary_keys:
                rows = reader._read_file(split, e.file, wanted, system=[df.VALUE_KIND])
                kinds = rows.column(df.VALUE_KIND).to_numpy()
                rows = rows.drop_columns([df.VALUE_KIND])
            else:
                rows = reader._read_file(split, e.file, wanted)
                kinds = np.zeros(rows.num_rows, dtype=np.int8)
            parts.append(with_kinds(rows.select(wanted), kinds))
    if not parts:
        return with_kinds(reader.output_schema(wanted).empty_table(), np.zeros(0, np.int8))
    return pa.concat_tables(parts)


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
