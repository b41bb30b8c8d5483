"""Dedicated full compaction: rewrite each bucket into one sorted run, committed as a COMPACT
snapshot.

Primary-key buckets are merged (newest row per key wins) and written at the highest level
(``num-levels - 1``), where nothing older exists, so retractions are dropped. Append buckets with
more than one file are concatenated in sequence order and rewritten into target-sized files.
Buckets already in their final shape are left alone. The commit replaces exactly the files read
(``compactBefore``) with the files written (``compactAfter``); if another writer deleted any of
them meanwhile, the commit fails with :class:`CommitConflictError` and nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..data.partition import partition_predicate
from ..errors import CommitOutcomeUnknownError, SchemaError, note_files_removed
from ..fs import join
from ..maintenance.context import TableOps
from ..meta.snapshots import CommitKind
from ..read.scan import Split
from ..write.commit import BATCH_COMMIT_IDENTIFIER
from ..write.messages import CommitMessage
from ..write.progress import report_files
from ..write.signals import signals_deferred

if TYPE_CHECKING:
    from ..meta.index_files import IndexFileMeta
    from ..write.table_write import TableWrite


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionResult:
    """What a compaction did; ``snapshot_id`` is None when there was nothing to compact."""

    snapshot_id: int | None
    buckets: int = 0
    files_read: int = 0
    bytes_read: int = 0
    rows_read: int = 0
    files_written: int = 0
    bytes_written: int = 0
    rows_written: int = 0
    output_level: int | None = None
    already_committed: bool = False
    notes: tuple[str, ...] = ()  # e.g. maintenance after the commit failed (the compaction is committed)
    replaced_publishes: int = 0  # publishes another writer's rename replaced, each retried (CommitResult's)

    def to_dict(self) -> dict[str, object]:
        return {name: list(value) if isinstance(value := getattr(self, name), tuple) else value
                for name in self.__slots__}


def _start(table: TableOps, partitions, buckets, commit_user, commit_identifier):
    """Validate the request; returns ``(committer, identifier, splits, early result or None)``.

    The early result is the existing snapshot when this commit identity already committed
    (exactly once), or an empty result for a table without snapshots."""
    from ..meta.capabilities import Operation, require_file_metadata

    table.capabilities.require(Operation.COMPACT)
    unknown = sorted({k for spec in partitions or () for k in spec} - set(table.partition_keys))
    if unknown:
        raise SchemaError(f"partition specs name non-partition columns {unknown}")
    committer = table.new_commit(commit_user)
    identifier = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else int(commit_identifier)
    existing = committer.already_committed(identifier)
    if existing is not None:
        return committer, identifier, [], CompactionResult(snapshot_id=existing.id, already_committed=True)
    snapshot = table.snapshot_manager.latest()
    if snapshot is None:
        return committer, identifier, [], CompactionResult(snapshot_id=None)
    wanted = set(buckets) if buckets is not None else None
    where = partition_predicate(partitions, table.arrow_schema, default_name=table.options.partition_default_name)
    splits = [s for s in table.plan(filter=where, snapshot_id=snapshot.id, all_levels=True)
              if wanted is None or s.bucket in wanted]
    require_file_metadata(table.identifier, (f for s in splits for f in s.files), Operation.COMPACT)
    return committer, identifier, splits, None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionTask:
    """One unit of compaction work (picklable, so a Spark executor can run it): one bucket, or
    for unaware-bucket append tables one bin of small files of a partition."""

    split: Split
    full: bool
    files: tuple | None = None  # the bin to rewrite (unaware-bucket tables); None: the whole bucket
    snapshot_id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPlan:
    """What a compaction will do: its tasks, and the commit identity it will commit under.
    ``done`` is set instead when there is nothing to run (already committed, or no snapshot)."""

    commit_user: str
    commit_identifier: int
    tasks: tuple[CompactionTask, ...] = ()
    done: CompactionResult | None = None


def plan_compaction(table: TableOps, *, full: bool, partitions: Sequence[Mapping[str, object]] | None = None,
                    buckets: Iterable[int] | None = None, commit_user: str | None = None,
                    commit_identifier: int | None = None) -> CompactionPlan:
    """Plan a compaction of the chosen partitions and buckets (default: all) of the latest snapshot."""
    committer, identifier, splits, done = _start(table, partitions, buckets, commit_user, commit_identifier)
    if done is not None:
        return CompactionPlan(commit_user=committer.commit_user, commit_identifier=identifier, done=done)
    snapshot_id = table.snapshot_manager.latest_id()
    if table.primary_keys or table.options.bucket > 0:
        tasks = [CompactionTask(split=s, full=full, snapshot_id=snapshot_id) for s in splits]
    else:
        from . import plan_unaware
        from .append_rewrite import AppendCompactor

        settings = AppendCompactor(table).settings
        by_partition = {split.partition: split for split in splits}
        bins = plan_unaware({p: split.files for p, split in by_partition.items()},
                            target_file_size=settings.target_file_size,
                            compaction_file_size=settings.compaction_file_size,
                            open_file_cost=settings.open_file_cost,
                            # a full compaction also sweeps the leftover small files Paimon's batch
                            # coordinator leaves behind (apache/paimon#5130)
                            min_file_num=2 if full else settings.min_file_num)
        tasks = [CompactionTask(split=by_partition[t.partition], full=full, files=tuple(t.files),
                                snapshot_id=snapshot_id) for t in bins]
    return CompactionPlan(commit_user=committer.commit_user, commit_identifier=identifier, tasks=tuple(tasks))


def run_compaction_task(table: TableOps, task: CompactionTask, *, writer: TableWrite | None = None
                        ) -> CommitMessage | None:
    """Compact one task's files; returns its commit message (None: nothing to do). Commits nothing.
    ``writer`` (shared by the tasks of one process; default: a new one) writes and records the
    files, so that aborting it deletes them."""
    split = task.split
    if not table.primary_keys:
        from .append_rewrite import AppendCompactor

        compactor = AppendCompactor(table, writer=writer)
        if task.files is None:
            done = compactor.compact(split.partition, split.bucket, split.total_buckets, split.files, full=task.full)
        else:
            done = compactor.rewrite(split.partition, split.bucket, split.total_buckets, list(task.files))
        if done is None:
            return None
        return CommitMessage(partition=split.partition, bucket=split.bucket, total_buckets=split.total_buckets,
                             new_files=done.after, deleted_files=done.before)
    from .merge_tree import BucketCompactor

    done = BucketCompactor(table, writer=writer).compact(split.partition, split.bucket, split.total_buckets, split.files,
                                          full=task.full, vectors=split.deletion_vectors)
    if done is None:
        return None
    added: tuple[IndexFileMeta, ...] = ()
    deleted: tuple[IndexFileMeta, ...] = ()
    if done.vectors is not None:
        from ..meta.index_files import DELETION_VECTORS, write_dv_file

        live = {name: bitmap for name, bitmap in done.vectors.items() if bitmap}
        added = ((write_dv_file(table.file_io, table.index_dir, live, bitmap64=table.options.deletion_vectors_bitmap64),)
                 if live else ())
        if writer is not None:
            for index_file in added:
                writer.record(index_file.external_path or join(table.index_dir, index_file.file_name))
        snapshot = table.snapshot_manager.snapshot(task.snapshot_id) if task.snapshot_id else None
        vector_files = table.index_files_of(snapshot, DELETION_VECTORS)
        deleted = tuple(vector_files.get((tuple(split.partition), split.bucket), ()))
    return CommitMessage(partition=split.partition, bucket=split.bucket, total_buckets=split.total_buckets,
                         new_files=done.after, deleted_files=done.before, changelog_files=done.changelog,
                         new_index_files=added, deleted_index_files=deleted)


def commit_compaction(table: TableOps, plan: CompactionPlan, messages: Iterable[CommitMessage | None]) -> CompactionResult:
    """Commit the messages of a plan's tasks as one COMPACT snapshot (nothing when all are None)."""
    written = [m for m in messages if m is not None]
    if not written:
        return CompactionResult(snapshot_id=None)
    levels = {f.level for m in written for f in m.new_files}
    output_level = (max(levels) if levels else None) if table.primary_keys else 0
    return _commit_compaction(table, table.new_commit(plan.commit_user), written, plan.commit_identifier,
                              output_level)


def _reported(table: TableOps, message: CommitMessage | None) -> CommitMessage | None:
    """Tell progress observers (core/write/progress.py) of the files a task rewrote (a file only
    moved to another level was not written again)."""
    if message is not None:
        moved = {f.file_name for f in message.deleted_files}
        report_files(table.path, [f for f in message.new_files if f.file_name not in moved])
    return message


def _compact(table: TableOps, *, full: bool, partitions, buckets, commit_user, commit_identifier) -> CompactionResult:
    plan = plan_compaction(table, full=full, partitions=partitions, buckets=buckets, commit_user=commit_user,
                           commit_identifier=commit_identifier)
    if plan.done is not None:
        return plan.done
    writer = table.new_write(compact=False)  # shared by the tasks: it records every file they write
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:  # an interrupt cancels the tasks (TableWrite.run_jobs)
            messages = writer.run_jobs(pool, lambda task: _reported(table, run_compaction_task(table, task,
                                                                                           writer=writer)),
                                       plan.tasks)
    except BaseException as exc:
        note_files_removed(exc, writer.abort())
        raise
    finally:
        writer.close()
    return commit_compaction(table, plan, messages)


def full_compaction(table: TableOps, *, partitions: Sequence[Mapping[str, object]] | None = None,
                    buckets: Iterable[int] | None = None, commit_user: str | None = None,
                    commit_identifier: int | None = None) -> CompactionResult:
    """Compact the chosen partitions and buckets (default: all) of the latest snapshot: each bucket
    becomes one sorted run at the top level (primary keys) or target-sized files (append)."""
    return _compact(table, full=True, partitions=partitions, buckets=buckets, commit_user=commit_user,
                    commit_identifier=commit_identifier)


def _commit_compaction(table: TableOps, committer, messages: list[CommitMessage], identifier: int,
                       output_level: int | None) -> CompactionResult:
    before = table.snapshot_manager.latest_id() or 0
    try:
        with signals_deferred():  # an interrupt waits until the commit has landed or failed
            result = committer.commit(messages, commit_identifier=identifier, kind=CommitKind.COMPACT)
    except CommitOutcomeUnknownError:
        raise  # the snapshot may reference the new files: never delete them
    except BaseException as exc:  # an interrupt included: it may have come after the snapshot landed
        if table.snapshot_manager.known_not_committed(committer.commit_user, identifier, (CommitKind.COMPACT,),
                                                      after=before):
            # not committed; upgraded files are the old files themselves and must stay
            rewritten = [replace_files(m, {f.file_name for f in m.deleted_files}) for m in messages]
            table.manifest_io.delete_data_files(rewritten)
            note_files_removed(exc, sum(len(m.all_written_files()) for m in rewritten))
        raise
    read = [f for m in messages for f in m.deleted_files]
    written = [f for m in messages for f in m.new_files if f.file_name not in {x.file_name for x in m.deleted_files}]
    return CompactionResult(
        snapshot_id=result.snapshot_id, buckets=len(messages),
        files_read=len(read), bytes_read=sum(f.file_size for f in read), rows_read=sum(f.row_count for f in read),
        files_written=len(written), bytes_written=sum(f.file_size for f in written),
        rows_written=sum(f.row_count for f in written), output_level=output_level, notes=result.notes,
        replaced_publishes=result.replaced_publishes,
    )


def replace_files(message: CommitMessage, keep: set[str]) -> CommitMessage:
    """``message`` without new files named in ``keep`` (files that existed before the compaction)."""
    from dataclasses import replace

    return replace(message, new_files=tuple(f for f in message.new_files if f.file_name not in keep))


def minor_compaction(table: TableOps, *, partitions: Sequence[Mapping[str, object]] | None = None,
                     buckets: Iterable[int] | None = None, commit_user: str | None = None,
                     commit_identifier: int | None = None) -> CompactionResult:
    """Paimon's universal compaction, once, for every chosen bucket of a primary-key table.

    Each bucket's sorted runs are picked by size amplification, size ratio and run count
    (``core/compact/universal.py``; level 0 is always pushed up for lookup tables); the picked
    files are split into sections: large files that overlap nothing are upgraded to the output
    level without rewriting (metadata only), the rest are merged and rewritten there.
    Retractions are dropped only when nothing older can exist below the output level. Buckets
    that need nothing are left alone.
    """
    return _compact(table, full=False, partitions=partitions, buckets=buckets, commit_user=commit_user,
                    commit_identifier=commit_identifier)
