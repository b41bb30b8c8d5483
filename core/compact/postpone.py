"""Postpone compaction: the rows waiting in the postpone bucket (-2) of each partition are given
real buckets, as Paimon's postpone compaction (Flink ``CompactAction`` for ``bucket = -2``) does.

For each partition holding postpone files or real-bucket level-0 files, of the latest snapshot:

* the bucket count is the partition's existing one (the ``totalBuckets`` of its real-bucket
  files), else ``postpone.default-bucket-num``, else an estimate from the postpone files:
  ``ceil(rows / postpone.target-row-num-per-bucket)`` when that is set, else
  ``ceil(bytes / postpone.target-size-per-bucket)`` (1 GiB by default), at least 1
  (Paimon's ``PostponeUtils.createPostponeBucketNumResolver``);
* the postpone files are replayed file by file in creation order (a writer's rows in the order it
  wrote them) into a writer of that many fixed buckets: each row is hashed on the bucket key, takes
  the bucket's next sequence number, and is merged by the merge engine as any write; then each
  bucket written, or holding level-0 files, is compacted once (Paimon's universal compaction);
* one COMPACT snapshot deletes the postpone files and adds the bucket files, each entry carrying the
  partition's bucket count in ``totalBuckets`` (where Paimon records it).

Paimon refuses partition and predicate selections for this compaction, and so does paimonflow.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..data import data_file as df
from ..data.binary_row import deserialize_row
from ..errors import (
    CommitOutcomeUnknownError,
    CorruptMetadataError,
    InvalidArgumentError,
    InvalidOptionError,
    note_files_removed,
)
from ..fs import join
from ..meta.layout import POSTPONE_BUCKET, bucket_directory
from ..meta.snapshots import CommitKind
from ..read.scan import Split
from ..write.commit import BATCH_COMMIT_IDENTIFIER
from ..write.messages import CommitMessage
from ..write.signals import signals_deferred
from .dedicated import CompactionResult, replace_files

if TYPE_CHECKING:
    from ..maintenance.context import TableOps
    from ..meta.manifest import DataFileMeta, ManifestEntry

_GIB = 1 << 30
_INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class PostponeBucketCount:
    """How postpone rows of a partition without real buckets get a bucket count (Paimon's options)."""

    default_bucket_num: int | None
    target_rows_per_bucket: int | None
    target_bytes_per_bucket: int

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> PostponeBucketCount:
        from ..options.parse import parse_memory_size

        def positive(key: str, value: str | None) -> int | None:
            if value is None:
                return None
            try:
                number = int(value.strip())
            except ValueError:
                raise InvalidOptionError(key, value, "expected a positive integer") from None
            if number < 1:
                raise InvalidOptionError(key, value, "must be greater than 0")
            return number

        size = options.get("postpone.target-size-per-bucket")
        target_bytes = _GIB if size is None else parse_memory_size(size)
        if target_bytes < 1:
            raise InvalidOptionError("postpone.target-size-per-bucket", str(size), "must be greater than 0")
        default = positive("postpone.default-bucket-num", options.get("postpone.default-bucket-num"))
        if default is not None and default > _INT_MAX:
            raise InvalidOptionError("postpone.default-bucket-num", str(default), "must fit a 32-bit integer")
        return cls(default_bucket_num=default,
                   target_rows_per_bucket=positive("postpone.target-row-num-per-bucket",
                                                   options.get("postpone.target-row-num-per-bucket")),
                   target_bytes_per_bucket=target_bytes)

    def estimate(self, files: Sequence[DataFileMeta]) -> int:
        """The bucket count of a partition with no real buckets whose postpone files are ``files``."""
        if self.default_bucket_num is not None:
            return self.default_bucket_num
        if self.target_rows_per_bucket is not None:
            value, target = sum(f.row_count for f in files), self.target_rows_per_bucket
        else:
            value, target = sum(f.file_size for f in files), self.target_bytes_per_bucket
        count = 1 if value <= 0 else (value - 1) // target + 1
        if count > _INT_MAX:
            raise InvalidOptionError("postpone.target-size-per-bucket", str(target),
                                     f"gives {count} buckets, more than a 32-bit integer holds")
        return count


@dataclass(frozen=True, slots=True, kw_only=True)
class PostponePartitionTask:
    """One partition's postpone compaction (picklable: a Spark executor runs it)."""

    partition: tuple[object, ...]
    total_buckets: int
    postpone_files: tuple[DataFileMeta, ...]  # in replay order: creation time, then name
    level0_buckets: tuple[int, ...]  # real buckets holding level-0 files, compacted too


@dataclass(frozen=True, slots=True, kw_only=True)
class PostponeCompactionPlan:
    """What a postpone compaction will do, under which commit identity (``done``: nothing to run)."""

    commit_user: str
    commit_identifier: int
    snapshot_id: int | None = None
    tasks: tuple[PostponePartitionTask, ...] = ()
    done: CompactionResult | None = None


def known_bucket_counts(entries: Iterable[ManifestEntry], *, where: str) -> dict[bytes, int]:
    """``{serialized partition: bucket count}`` from the real-bucket files' ``totalBuckets``;
    raises CorruptMetadataError (naming ``where`` the entries come from) when one partition's
    files disagree."""
    known: dict[bytes, int] = {}
    for e in entries:
        if e.bucket < 0 or e.total_buckets <= 0:
            continue
        seen = known.setdefault(e.partition, e.total_buckets)
        if seen != e.total_buckets:
            raise CorruptMetadataError(where, reason=f"one partition has files of {seen} and of "
                                                          f"{e.total_buckets} buckets")
    return known


def plan_postpone_compaction(table: TableOps, *, partitions: Sequence[Mapping[str, object]] | None = None,
                             buckets: Iterable[int] | None = None, commit_user: str | None = None,
                             commit_identifier: int | None = None) -> PostponeCompactionPlan:
    """Plan the postpone compaction of the latest snapshot (pure metadata: reads manifests only).

    Raises InvalidArgumentError for a partition or bucket selection (Paimon refuses them too)."""
    from ..meta.capabilities import Operation, require_file_metadata

    table.capabilities.require(Operation.COMPACT)
    if partitions or buckets is not None:
        raise InvalidArgumentError("a postpone-bucket table is compacted whole: Paimon's postpone compaction "
                                   "takes no partition or bucket selection")
    committer = table.new_commit(commit_user)
    identifier = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else int(commit_identifier)
    existing = committer.already_committed(identifier)
    if existing is not None:
        return PostponeCompactionPlan(commit_user=committer.commit_user, commit_identifier=identifier,
                                      done=CompactionResult(snapshot_id=existing.id, already_committed=True))
    snapshot = table.snapshot_manager.latest()
    if snapshot is None:
        return PostponeCompactionPlan(commit_user=committer.commit_user, commit_identifier=identifier,
                                      done=CompactionResult(snapshot_id=None))
    entries = table.manifest_io.live_entries(snapshot)
    require_file_metadata(table.identifier, (e.file for e in entries), Operation.COMPACT)
    postponed: dict[bytes, list[DataFileMeta]] = {}
    level0: dict[bytes, set[int]] = {}
    for e in entries:
        if e.bucket == POSTPONE_BUCKET:
            postponed.setdefault(e.partition, []).append(e.file)
        elif e.bucket >= 0 and e.total_buckets > 0 and e.file.level == 0:
            level0.setdefault(e.partition, set()).add(e.bucket)
    known = known_bucket_counts(entries, where=f"manifests of snapshot {snapshot.id}")
    counts = PostponeBucketCount.from_options(table.options.raw)
    types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    tasks = []
    for partition in sorted(postponed.keys() | level0.keys()):
        files = sorted(postponed.get(partition, ()), key=lambda f: (f.creation_time_millis, f.file_name))
        total = known[partition] if partition in known else counts.estimate(files)
        tasks.append(PostponePartitionTask(partition=tuple(deserialize_row(partition, types)), total_buckets=total,
                                           postpone_files=tuple(files),
                                           level0_buckets=tuple(sorted(level0.get(partition, ())))))
    return PostponeCompactionPlan(commit_user=committer.commit_user, commit_identifier=identifier,
                                  snapshot_id=snapshot.id, tasks=tuple(tasks))


def run_postpone_task(table: TableOps, task: PostponePartitionTask, *,
                      spill_dir: str | None = None) -> list[CommitMessage]:
    """Replay one partition's postpone files into its real buckets and compact them; returns the
    messages of one COMPACT commit (files written, none committed). On failure the files written
    are deleted."""
    reader = table.split_reader()
    columns = list(table.arrow_schema.names)
    kinds_from_column = table.options.rowkind_field is not None
    split = Split(partition=task.partition, bucket=POSTPONE_BUCKET, total_buckets=POSTPONE_BUCKET, files=())
    writer = table.new_write(postpone_buckets=task.total_buckets, spill_dir=spill_dir)
    try:
        for f in task.postpone_files:  # one file at a time: memory is bounded by the write buffer
            rows = reader.read_file(split, f, columns, system=[df.VALUE_KIND])
            if rows.num_rows == 0:
                continue
            kinds = rows.column(df.VALUE_KIND).combine_chunks()
            writer.write(rows.drop_columns([df.VALUE_KIND]), row_kinds=None if kinds_from_column else kinds)
        writer.flush()
        for bucket in task.level0_buckets:
            writer.compact(task.partition, bucket, full=False)
        written = writer.prepare_commit()
    except BaseException as exc:  # an interrupt included: stop the writer, delete every file it wrote
        note_files_removed(exc, writer.abort(include_prepared=True))
        raise
    finally:
        writer.close()
    messages = [_as_compaction(table, m) for m in written]
    if task.postpone_files:
        messages.append(CommitMessage(partition=task.partition, bucket=POSTPONE_BUCKET, total_buckets=POSTPONE_BUCKET,
                                      new_files=(), deleted_files=task.postpone_files))
    return messages


def _as_compaction(table: TableOps, message: CommitMessage) -> CommitMessage:
    """A writer's message (new level-0 files, then its compaction of them and of older files) as
    one compaction: the older files it replaced are deleted, what remains of its files is added
    (Paimon's ``BucketFiles``). New files a compaction rewrote are removed from storage now."""
    fresh = {f.file_name: f for f in message.new_files}
    deleted = tuple(f for f in message.compact_before if f.file_name not in fresh)
    replaced = [fresh.pop(f.file_name) for f in message.compact_before if f.file_name in fresh]
    added = (*fresh.values(), *message.compact_after)
    kept = {f.file_name for f in added}
    directory = bucket_directory(table.path, table.schema, table.options, message.partition, message.bucket)
    for f in replaced:
        if f.file_name not in kept:
            with contextlib.suppress(Exception):
                table.file_io.delete(f.external_path or join(directory, f.file_name))
    return CommitMessage(partition=message.partition, bucket=message.bucket, total_buckets=message.total_buckets,
                         new_files=added, deleted_files=deleted,
                         changelog_files=(*message.changelog_files, *message.compact_changelog),
                         new_index_files=(*message.new_index_files, *message.compact_index_added),
                         deleted_index_files=(*message.deleted_index_files, *message.compact_index_deleted))


def commit_postpone_compaction(table: TableOps, plan: PostponeCompactionPlan,
                               messages: Iterable[CommitMessage]) -> CompactionResult:
    """Commit the messages of a plan's tasks as one COMPACT snapshot (nothing when there are none).
    Files of a commit known to have failed are deleted; an unknown outcome deletes nothing."""
    batch = [m for m in messages if not m.is_empty()]
    if not batch:
        return CompactionResult(snapshot_id=None)
    before = table.snapshot_manager.latest_id() or 0
    committer = table.new_commit(plan.commit_user)
    try:
        with signals_deferred():  # an interrupt waits until the commit has landed or failed
            result = committer.commit(batch, commit_identifier=plan.commit_identifier, kind=CommitKind.COMPACT)
    except CommitOutcomeUnknownError:
        raise
    except BaseException as exc:  # an interrupt included: delete only what storage shows did not land
        if table.snapshot_manager.known_not_committed(committer.commit_user, plan.commit_identifier,
                                                      (CommitKind.COMPACT,), after=before):
            rewritten = [replace_files(m, {f.file_name for f in m.deleted_files}) for m in batch]
            table.manifest_io.delete_data_files(rewritten)
            note_files_removed(exc, sum(len(m.all_written_files()) for m in rewritten))
        raise
    read = [f for m in batch for f in m.deleted_files]
    written = [f for m in batch for f in m.new_files if f.file_name not in {x.file_name for x in m.deleted_files}]
    levels = {f.level for f in written}
    return CompactionResult(snapshot_id=result.snapshot_id, buckets=sum(m.bucket >= 0 for m in batch),
                            files_read=len(read), bytes_read=sum(f.file_size for f in read),
                            rows_read=sum(f.row_count for f in read), files_written=len(written),
                            bytes_written=sum(f.file_size for f in written),
                            rows_written=sum(f.row_count for f in written),
                            output_level=max(levels) if levels else None, notes=result.notes,
                            replaced_publishes=result.replaced_publishes)


def postpone_compaction(table: TableOps, *, partitions: Sequence[Mapping[str, object]] | None = None,
                        buckets: Iterable[int] | None = None, commit_user: str | None = None,
                        commit_identifier: int | None = None) -> CompactionResult:
    """Give the rows of every partition's postpone bucket real buckets, in one COMPACT snapshot
    (see the module's description). Exactly-once with a commit identity; a table with nothing in
    its postpone bucket and no level-0 file commits nothing (``snapshot_id`` None)."""
    plan = plan_postpone_compaction(table, partitions=partitions, buckets=buckets, commit_user=commit_user,
                                    commit_identifier=commit_identifier)
    if plan.done is not None:
        return plan.done
    messages: list[CommitMessage] = []
    try:
        for task in plan.tasks:
            messages += run_postpone_task(table, task)
    except BaseException:
        table.manifest_io.delete_data_files([m for m in messages if m.bucket != POSTPONE_BUCKET])
        raise
    return commit_postpone_compaction(table, plan, messages)
