"""Row tracking at commit time: sequence numbers and first row ids of a commit's new files.

A row-tracking table (``row-tracking.enabled``) gives every row a stable id. Apache Paimon
assigns them when a snapshot is made, never when a file is written, so that concurrent writers
cannot hand out the same ids: :func:`assign_row_tracking` runs inside the commit's retry loop,
from the latest snapshot's ``nextRowId`` (0 for the first), and returns the entries to commit
with the new snapshot's ``nextRowId``. It follows Paimon's ``RowTrackingCommitUtils``:

* sequence numbers: a file whose ``min_sequence_number`` is 0 gets the new snapshot id as both
  bounds; one whose ``max_sequence_number`` alone is 0 gets it as the upper bound; others (a
  compaction's output) keep theirs;
* row ids: every added file that a writer produced (``file_source`` APPEND), that has no
  ``first_row_id`` yet and does not store ``_ROW_ID`` itself gets the next ids, files in commit
  order (grouped by partition, first-seen order, unless
  ``row-tracking.partition-group-on-commit`` is false); compacted files keep what they carry.

Deleted entries are left exactly as they were read (they name live files).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..meta.manifest import FileKind, ManifestEntry
from .messages import FILE_SOURCE_APPEND

ROW_ID = "_ROW_ID"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"


def _flag(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    return default if value is None else value.strip().lower() == "true"


@dataclass(frozen=True, slots=True, kw_only=True)
class RowTrackingSettings:
    """The row-tracking options of a table, parsed once."""

    enabled: bool
    partition_group_on_commit: bool = True

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> RowTrackingSettings:
        return cls(enabled=_flag(options, "row-tracking.enabled", False),
                   partition_group_on_commit=_flag(options, "row-tracking.partition-group-on-commit", True))


@dataclass(frozen=True, slots=True, kw_only=True)
class RowTrackingAssignment:
    """A commit's entries with row tracking applied, and the snapshot's ``nextRowId``."""

    entries: tuple[ManifestEntry, ...]
    next_row_id: int


def _with_snapshot_sequence(entry: ManifestEntry, snapshot_id: int) -> ManifestEntry:
    f = entry.file
    if f.min_sequence_number == 0:
        f = dataclasses.replace(f, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
    elif f.max_sequence_number == 0:
        f = dataclasses.replace(f, max_sequence_number=snapshot_id)
    else:
        return entry
    return dataclasses.replace(entry, file=f)


def _grouped_by_partition(entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
    groups: dict[bytes, list[ManifestEntry]] = {}
    for e in entries:
        groups.setdefault(e.partition, []).append(e)
    return [e for group in groups.values() for e in group]


def _needs_row_ids(entry: ManifestEntry) -> bool:
    f = entry.file
    return (entry.kind is FileKind.ADD and f.file_source == FILE_SOURCE_APPEND and f.first_row_id is None
            and (f.write_cols is None or ROW_ID not in f.write_cols))


def assign_row_tracking(entries: Sequence[ManifestEntry], *, snapshot_id: int, next_row_id: int,
                        settings: RowTrackingSettings) -> RowTrackingAssignment:
    """``entries`` (a commit's adds and deletes) as snapshot ``snapshot_id`` of a row-tracking
    table commits them, starting row ids at ``next_row_id`` (the latest snapshot's
    ``nextRowId``, 0 without one). Pure; call it again on every retry."""
    ordered = _grouped_by_partition(entries) if settings.partition_group_on_commit else list(entries)
    out: list[ManifestEntry] = []
    start = next_row_id
    for entry in ordered:
        if entry.kind is FileKind.ADD:
            entry = _with_snapshot_sequence(entry, snapshot_id)
        if _needs_row_ids(entry):
            entry = dataclasses.replace(entry, file=dataclasses.replace(entry.file, first_row_id=start))
            start += entry.file.row_count
        out.append(entry)
    return RowTrackingAssignment(entries=tuple(out), next_row_id=start)
