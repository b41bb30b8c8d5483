"""Commit messages: what a writer hands to the committer for one (partition, bucket): new, deleted
and compacted files, changelog files and index changes. Nothing is visible until committed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..meta.index_files import IndexFileMeta
from ..meta.manifest import DataFileMeta

FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitMessage:
    """New files of one (partition, bucket), produced by a writer, committed by one committer."""

    partition: tuple[object, ...]
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...]
    deleted_files: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    # what the writer's own compaction did; committed as a separate COMPACT snapshot
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    compact_changelog: tuple[DataFileMeta, ...] = ()
    # index files (deletion vectors, hash index) added and removed, with the new files / with the compaction
    new_index_files: tuple[IndexFileMeta, ...] = ()
    deleted_index_files: tuple[IndexFileMeta, ...] = ()
    compact_index_added: tuple[IndexFileMeta, ...] = ()
    compact_index_deleted: tuple[IndexFileMeta, ...] = ()

    def is_empty(self) -> bool:
        return not (self.new_files or self.deleted_files or self.changelog_files or self.has_compaction
                    or self.new_index_files or self.deleted_index_files)

    @property
    def has_compaction(self) -> bool:
        return bool(self.compact_before or self.compact_after or self.compact_changelog
                    or self.compact_index_added or self.compact_index_deleted)

    def all_written_files(self) -> tuple[DataFileMeta, ...]:
        """Files this message's writer created (for clean-up of a commit known to have failed)."""
        before = {f.file_name for f in self.compact_before} | {f.file_name for f in self.deleted_files}
        fresh = tuple(f for f in (*self.new_files, *self.compact_after) if f.file_name not in before)
        return (*fresh, *self.changelog_files, *self.compact_changelog)
