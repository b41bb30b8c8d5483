"""The committer: commit messages in, one snapshot out, safely across processes and machines.

The protocol (Paimon's, with an atomic publish): read the latest snapshot, detect conflicts
against it, write the new manifests and manifest lists, then publish ``snapshot-<latest+1>``
with the storage's atomic create-if-absent. Losing the race means nothing of ours is visible:
our new metadata files are deleted and the attempt is replanned. A publish that fails in an
unknown way is never cleaned up; the next attempt first looks for our own snapshot by
``(commit user, commit identifier, kind)``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from ..data.binary_row import deserialize_row, serialize_row
from ..data.conversion import bind_predicate, field_types
from ..errors import (
    BranchNotFoundError,
    CommitConflictError,
    CommitOutcomeUnknownError,
    CommitRetriesExhaustedError,
    InvalidArgumentError,
    PaimonflowError,
    SchemaError,
    UnsupportedError,
    UnsupportedFeatureError,
)
from ..meta.index_files import KNOWN_INDEX_TYPES, IndexManifest, IndexManifestEntry, apply_index_changes
from ..meta.manifest import FileKind, ManifestEntry, merge_entries
from ..meta.manifest_io import ManifestIO
from ..meta.schema import TableSchema
from ..meta.snapshots import CommitKind, Published, Snapshot, SnapshotManager
from ..options.core import CoreOptions
from ..predicate import Predicate
from .commit_turns import commit_turn
from .messages import CommitMessage
from .row_ids import RowTrackingSettings, assign_row_tracking

_log = logging.getLogger(__name__)

BATCH_COMMIT_IDENTIFIER = 2**63 - 1  # Paimon's batch commits use Long.MAX_VALUE


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitResult:
    """What a commit did. ``snapshot_id`` is None for an empty commit that was skipped."""

    snapshot_id: int | None
    commit_kind: CommitKind | None
    commit_user: str
    commit_identifier: int
    added_files: int = 0
    deleted_files: int = 0
    added_rows: int = 0
    deleted_rows: int = 0
    attempts: int = 0
    already_committed: bool = False
    notes: tuple[str, ...] = ()
    #: publishes of this commit that another writer's rename replaced (each retried as a lost race)
    replaced_publishes: int = 0
    #: seconds this commit slept between attempts (backing off after lost races)
    retry_wait_seconds: float = 0.0
    #: seconds this commit waited for its turn behind the other writers of this machine
    #: (:mod:`~paimonflow.core.write.commit_turns`)
    turn_wait_seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "snapshot_id": self.snapshot_id,
            "commit_kind": self.commit_kind.value if self.commit_kind else None,
            "commit_user": self.commit_user,
            "commit_identifier": self.commit_identifier,
            "added_files": self.added_files,
            "deleted_files": self.deleted_files,
            "added_rows": self.added_rows,
            "deleted_rows": self.deleted_rows,
            "attempts": self.attempts,
            "already_committed": self.already_committed,
            "notes": list(self.notes),
            "replaced_publishes": self.replaced_publishes,
            "retry_wait_seconds": round(self.retry_wait_seconds, 3),
            "turn_wait_seconds": round(self.turn_wait_seconds, 3),
        }


@dataclass(frozen=True, slots=True)
class OverwriteSpec:
    """Which partitions an OVERWRITE replaces: a static spec (prefix of the partition keys), every
    partition present in the new files (``dynamic``), every partition whose values satisfy
    ``where`` (a predicate on partition columns; the new files must satisfy it too), or the whole
    table (empty static spec)."""

    static: Mapping[str, object] = field(default_factory=dict)
    dynamic: bool = False
    where: Predicate | None = None
    #: drop these partitions (specs as ``static``) in one snapshot, adding nothing (Paimon's
    #: ``dropPartitions``); takes precedence over ``static`` and ``dynamic``
    drop: tuple[Mapping[str, object], ...] = ()


class TableCommit:
    """Commits messages into one table (one branch) as one committer identity."""

    def __init__(self, *, file_io, table_path: str, schema: TableSchema, options: CoreOptions,
                 snapshot_manager: SnapshotManager, manifest_io: ManifestIO, commit_user: str,
                 clock: Callable[[], float] = time.time,
                 after_commit: Callable[[CommitResult], object] | None = None) -> None:
        self._file_io, self._path, self._schema, self._options = file_io, table_path, schema, options
        self._snapshots, self._manifests = snapshot_manager, manifest_io
        self._index = IndexManifest(file_io, manifest_io.manifest_dir, compression=options.manifest_compression)
        self.commit_user = commit_user
        self._clock = clock
        self._retry_wait = 0.0  # seconds slept between the attempts of the commit in progress
        self._turn_wait = 0.0  # seconds it waited for its turns
        self._after_commit = after_commit
        arrow_schema = schema.arrow_schema()
        self._partition_types = [arrow_schema.field(k).type for k in schema.partition_keys]
        self._key_types = [arrow_schema.field(k).type for k in schema.trimmed_primary_keys]
        self._row_tracking = RowTrackingSettings.from_options(schema.options)

    # -- public ------------------------------------------------------------------------------

    def already_committed(self, commit_identifier: int) -> Snapshot | None:
        """The snapshot of this user with an identifier >= ``commit_identifier``, if one exists.

        As in Paimon, identifiers of one user grow: the user's latest snapshot having an identifier
        at least ``commit_identifier`` means this one was committed (possibly in that snapshot or an
        earlier one; the latest is reported). The look-up walks back from the latest snapshot to
        the user's last one (:meth:`~paimonflow.core.meta.snapshots.SnapshotManager.latest_of_user`).
        Batch commits (``BATCH_COMMIT_IDENTIFIER``) are never deduplicated, as in Paimon.
        """
        if commit_identifier == BATCH_COMMIT_IDENTIFIER:
            return None
        found = self._snapshots.latest_of_user(self.commit_user)
        if found is not None and found.commit_identifier >= commit_identifier:
            return found
        return None

    def commit(self, messages: Sequence[CommitMessage], *, commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
               overwrite: OverwriteSpec | None = None, properties: Mapping[str, str] | None = None,
               kind: CommitKind | None = None, _follow_up: bool = False) -> CommitResult:
        """Commit ``messages`` as one snapshot (APPEND, or OVERWRITE with ``overwrite``).

        Exactly once: if this commit user already committed ``commit_identifier`` (or a later
        one), nothing is written and the existing snapshot is reported. Raises
        CommitConflictError (nothing committed; replan), CommitRetriesExhaustedError, or
        CommitOutcomeUnknownError (may have landed; retry with the same identity, never clean up).

        A commit that created a snapshot then runs the ``after_commit`` callback given to the
        committer (the table's maintenance, :mod:`paimonflow.core.maintenance.post_commit`). The snapshot is
        published by then, so a failing callback never fails the commit: it is logged as a
        warning and reported in ``CommitResult.notes``.
        """
        result = self._commit(messages, commit_identifier=commit_identifier, overwrite=overwrite,
                              properties=properties, kind=kind, _follow_up=_follow_up)
        if self._after_commit is None or _follow_up or result.snapshot_id is None or result.already_committed:
            return result
        try:
            self._after_commit(result)
        except Exception as exc:
            _log.warning("commit %s: snapshot %s committed, but the maintenance after it failed: %s",
                         commit_identifier, result.snapshot_id, exc, exc_info=True)
            note = f"maintenance after commit failed: {type(exc).__name__}: {exc}"
            return dataclasses.replace(result, notes=(*result.notes, note))
        return result

    def _commit(self, messages: Sequence[CommitMessage], *, commit_identifier: int, overwrite: OverwriteSpec | None,
                properties: Mapping[str, str] | None, kind: CommitKind | None, _follow_up: bool) -> CommitResult:
        existing = None if _follow_up else self.already_committed(commit_identifier)
        if existing is not None:
            return CommitResult(snapshot_id=existing.id, commit_kind=existing.commit_kind,
                                commit_user=self.commit_user, commit_identifier=commit_identifier,
                                already_committed=True)
        if kind is None and overwrite is None and any(m.has_compaction for m in messages):
            return self._commit_append_then_compact(messages, commit_identifier, properties)
        for m in messages:
            for f in (*m.new_files, *m.compact_after):
                if f.schema_id > self._schema.id:
                    raise SchemaError(f"file {f.file_name} was written with schema {f.schema_id}, newer than {self._schema.id}")
        adds = [self._entry(FileKind.ADD, m, f) for m in messages for f in m.new_files]
        deletes = [self._entry(FileKind.DELETE, m, f) for m in messages for f in m.deleted_files]
        # Paimon never commits changelog with an overwrite.
        changelog = [] if overwrite is not None else [
            self._entry(FileKind.ADD, m, f) for m in messages for f in m.changelog_files]
        if kind is None:
            kind = CommitKind.OVERWRITE if (overwrite is not None or deletes) else CommitKind.APPEND
        index_adds = [self._index_entry(FileKind.ADD, m, f) for m in messages for f in m.new_index_files]
        index_deletes = [self._index_entry(FileKind.DELETE, m, f) for m in messages for f in m.deleted_index_files]
        if overwrite is None and not adds and not deletes and not changelog and not index_adds and not index_deletes \
                and self._options.ignore_empty_commit:
            return CommitResult(snapshot_id=None, commit_kind=None, commit_user=self.commit_user,
                                commit_identifier=commit_identifier)
        return self._try_commit(adds, deletes, changelog, overwrite, kind, commit_identifier, dict(properties or {}),
                                (index_adds, index_deletes))

    def commit_statistics(self, statistics_file: str) -> CommitResult:
        """An ANALYZE snapshot: the latest snapshot's files, now carrying ``statistics_file``."""
        return self._metadata_only_commit(CommitKind.ANALYZE, statistics=statistics_file, full_merge=False)

    def compact_manifest(self) -> CommitResult:
        """Rewrite all data manifests of the latest snapshot as one fully merged base (ADD/DELETE
        pairs cancelled, no DELETE left) in a new COMPACT snapshot that changes no data (Paimon's
        ``compact_manifest``). Nothing to do (no DELETE entries, at most one manifest) commits
        nothing. Retries on losing the race, like any commit."""
        return self._metadata_only_commit(CommitKind.COMPACT, full_merge=True)

    def _metadata_only_commit(self, kind: CommitKind, *, full_merge: bool, statistics: str | None = None
                              ) -> CommitResult:
        self._retry_wait = self._turn_wait = 0.0
        with contextlib.ExitStack() as turn:
            return self._metadata_only_attempts(kind, full_merge, statistics, turn)

    def _metadata_only_attempts(self, kind: CommitKind, full_merge: bool, statistics: str | None,
                                turn: contextlib.ExitStack) -> CommitResult:
        attempt = replaced = 0
        while True:
            attempt += 1
            turn.close()
            turn.enter_context(self._turn())
            latest = self._snapshots.latest()
            nothing = CommitResult(snapshot_id=None, commit_kind=None, commit_user=self.commit_user,
                                   commit_identifier=BATCH_COMMIT_IDENTIFIER)
            if latest is None:
                return nothing
            metas = self._manifests.data_manifests(latest)
            if full_merge and len(metas) <= 1 and not any(m.num_deleted_files for m in metas):
                return nothing
            written: list[str] = []
            try:
                if full_merge:
                    base = self._manifests.write_manifests(self._manifests.live_entries(latest), self._schema.id,
                                                           written)
                else:
                    base = metas
                base_list, base_size = self._manifests.write_list(base, written)
                delta_list, delta_size = self._manifests.write_list([], written)
                snapshot = dataclasses.replace(
                    latest, id=latest.id + 1, base_manifest_list=base_list, base_manifest_list_size=base_size,
                    delta_manifest_list=delta_list, delta_manifest_list_size=delta_size,
                    changelog_manifest_list=None, changelog_manifest_list_size=None, changelog_record_count=None,
                    commit_user=self.commit_user, commit_identifier=BATCH_COMMIT_IDENTIFIER,
                    commit_kind=kind, time_millis=int(self._clock() * 1000), delta_record_count=0,
                    statistics=statistics if statistics is not None else latest.statistics,
                    properties=None, uuid=str(uuid.uuid4()))
            except BaseException:
                self._manifests.delete_files(written)
                raise
            try:
                published = self._snapshots.publish(snapshot)
            except UnsupportedError:
                raise  # the store cannot take commits safely: refused before anything was sent
            except PaimonflowError as exc:  # may have landed: keep every file
                raise CommitOutcomeUnknownError(f"publishing snapshot {snapshot.id} failed in an unknown way: {exc}") \
                    from exc
            if published is Published.LANDED:
                return CommitResult(snapshot_id=snapshot.id, commit_kind=kind, commit_user=self.commit_user,
                                    commit_identifier=BATCH_COMMIT_IDENTIFIER, attempts=attempt,
                                    replaced_publishes=replaced, retry_wait_seconds=self._retry_wait,
                                    turn_wait_seconds=self._turn_wait)
            if published is Published.REPLACED:
                replaced += 1  # visible for a moment: its files stay for orphan removal to judge
                _log.warning("snapshot %s of commit user %s was replaced by another writer's rename; retrying",
                             snapshot.id, self.commit_user)
            else:
                self._manifests.delete_files(written)
            if attempt > self._options.commit_max_retries:
                raise CommitRetriesExhaustedError(f"{kind.value} commit lost the race {attempt} times")
            turn.close()
            self._sleep(attempt)

    def _commit_append_then_compact(self, messages: Sequence[CommitMessage], identifier: int,
                                    properties: Mapping[str, str] | None) -> CommitResult:
        """Paimon's order for writers that compact: the new files as an APPEND snapshot, then
        what their compaction changed as a COMPACT snapshot (same identifier). A conflict on the
        second leaves the first committed and deletes only the compaction's own new files."""
        from dataclasses import replace

        appends = [replace(m, compact_before=(), compact_after=(), compact_changelog=(), compact_index_added=(),
                           compact_index_deleted=()) for m in messages]
        compacts = [CommitMessage(partition=m.partition, bucket=m.bucket, total_buckets=m.total_buckets,
                                  new_files=m.compact_after, deleted_files=m.compact_before,
                                  changelog_files=m.compact_changelog, new_index_files=m.compact_index_added,
                                  deleted_index_files=m.compact_index_deleted)
                    for m in messages if m.has_compaction]
        first = self._commit(appends, commit_identifier=identifier, overwrite=None, properties=properties,
                             kind=None, _follow_up=False)
        if first.already_committed:
            return first
        try:
            second = self._commit(compacts, commit_identifier=identifier, overwrite=None, properties=properties,
                                  kind=CommitKind.COMPACT, _follow_up=True)
        except CommitOutcomeUnknownError:
            raise  # the COMPACT snapshot may have landed: keep every file
        except PaimonflowError as exc:  # conflict, retries exhausted, storage failure: it did not land
            self._manifests.delete_data_files(compacts)  # unreferenced: the compaction did not land
            if first.snapshot_id is None:
                raise  # nothing but a compaction was asked for: report its failure
            # The new rows are committed; only the writer's optional compaction is lost (another
            # compaction of the bucket got there first, or storage failed before its publish). A
            # retry of this commit finds it committed; the next compaction picks the files up.
            _log.warning("commit %s: new files committed as snapshot %s; the writer's compaction was "
                         "dropped: %s", identifier, first.snapshot_id, exc)
            return dataclasses.replace(first, notes=(f"compaction dropped: {exc}",))
        except BaseException:  # an interrupt: the COMPACT snapshot may have landed just before it
            after = first.snapshot_id if first.snapshot_id is not None else 0
            if self._snapshots.known_not_committed(self.commit_user, identifier, (CommitKind.COMPACT,), after=after):
                with contextlib.suppress(Exception):
                    self._manifests.delete_data_files(compacts)  # certainly not committed
            raise
        if second.snapshot_id is None:
            return first
        return dataclasses.replace(second, added_files=first.added_files + second.added_files,
                                   deleted_files=first.deleted_files + second.deleted_files,
                                   added_rows=first.added_rows + second.added_rows,
                                   deleted_rows=first.deleted_rows + second.deleted_rows)

    # -- the loop ----------------------------------------------------------------------------

    def _try_commit(self, adds, deletes, changelog, overwrite, kind, identifier, properties,
                    index_changes=((), ())) -> CommitResult:
        options = self._options
        started = self._clock()
        attempt = replaced = 0
        self._retry_wait = self._turn_wait = 0.0
        ambiguous_since: int | None = None  # latest id seen before an attempt whose outcome is unknown
        # The delta's manifests and manifest list do not depend on the snapshot an attempt builds
        # on (unless row tracking numbers the rows from it): written once, they serve every retry,
        # so a retry's window between reading LATEST and publishing holds one write, the base list.
        delta_files: _DeltaFiles | None = None
        keep_delta = False  # landed, shown by a replaced publish, or maybe landed: never deleted here
        turn = contextlib.ExitStack()  # this machine's turn at committing, held for one attempt
        try:
            if overwrite is None and not self._row_tracking.enabled:  # the delta is known: written before any turn
                delta_files = self._write_delta([*adds, *deletes], list(changelog))
            while True:
                attempt += 1
                turn.close()
                turn.enter_context(self._turn())
                latest = self._snapshots.latest()
                if ambiguous_since is not None:
                    mine = self._snapshots.find_by_commit(self.commit_user, identifier, kind, ambiguous_since + 1)
                    if mine is not None:
                        return self._result(mine, adds, deletes, attempt)
                # Plain appends (new level-0 files, nothing deleted) cannot conflict except by a bucket
                # count change, which needs a schema change: without one, skip reading every live file.
                plain_append = (overwrite is None and not deletes and all(e.file.level == 0 for e in adds)
                                and (latest is None or latest.schema_id == self._schema.id)
                                and all(e.total_buckets == (self._options.bucket if self._options.bucket > 0 else -1)
                                        for e in adds))
                base = None if plain_append else latest  # what conflicts are checked against (None: nothing)
                # Every conflict check is within a partition: without an overwrite, only the files
                # of the partitions this commit changes are read.
                touched = None if overwrite is not None else {e.partition for e in (*adds, *deletes)}
                base_entries = self._manifests.live_entries(base, partitions=touched) if base is not None else []
                delta = list(adds) + list(deletes)
                if overwrite is not None:
                    delta = list(adds) + self._overwrite_deletes(base_entries, adds, overwrite)
                if base is not None:
                    self._check_conflicts(base_entries, delta, kind)
                index_manifest = self._next_index_manifest(latest, delta, overwrite, *index_changes)
                new_id = 1 if latest is None else latest.id + 1
                next_row_id = None
                if self._row_tracking.enabled:  # from the snapshot this attempt builds on, on every retry
                    assigned = assign_row_tracking(
                        delta, snapshot_id=new_id, settings=self._row_tracking,
                        next_row_id=(latest.next_row_id or 0) if latest is not None else 0)
                    delta, next_row_id = list(assigned.entries), assigned.next_row_id
                written: list[str] = []
                try:
                    if index_manifest is not None and index_manifest[0]:
                        index_manifest = (self._index.write(index_manifest[1]), None)
                        written.append(index_manifest[0])
                    if delta_files is None or delta_files.delta != delta or delta_files.changelog != changelog:
                        if delta_files is not None and not keep_delta:
                            self._manifests.delete_files(delta_files.files)
                        delta_files = None
                        delta_files = self._write_delta(delta, changelog)
                    snapshot = self._prepare_snapshot(latest, new_id, delta_files, kind, identifier, properties,
                                                      written)
                    if index_manifest is not None:
                        snapshot = dataclasses.replace(snapshot, index_manifest=index_manifest[0])
                    if next_row_id is not None:
                        snapshot = dataclasses.replace(snapshot, next_row_id=next_row_id)
                except BaseException:
                    self._manifests.delete_files(written)
                    raise
                kept_before, keep_delta = keep_delta, True  # from here a snapshot may hold them (an interrupt too)
                try:
                    published = self._snapshots.publish(snapshot)
                except UnsupportedError:
                    keep_delta = kept_before
                    raise  # the store cannot take commits safely: refused before anything was sent
                except BranchNotFoundError:  # the branch went while we published; ours was taken back
                    keep_delta = kept_before
                    self._manifests.delete_files(written)
                    raise
                except PaimonflowError as exc:  # the snapshot may have landed with them: kept
                    if attempt > options.commit_max_retries:
                        raise CommitOutcomeUnknownError(
                            f"publishing snapshot {new_id} failed in an unknown way and retries are exhausted; "
                            f"retry with commit user {self.commit_user!r} and identifier {identifier}: {exc}"
                        ) from exc
                    ambiguous_since = latest.id if latest is not None else 0
                    turn.close()
                    self._sleep(attempt)
                    continue
                if published is Published.LANDED:
                    if identifier != BATCH_COMMIT_IDENTIFIER:  # exactly-once look-ups start here
                        self._snapshots.write_user_hint(snapshot)
                    return dataclasses.replace(
                        self._result(snapshot, [e for e in delta if e.kind is FileKind.ADD],
                                     [e for e in delta if e.kind is FileKind.DELETE], attempt),
                        replaced_publishes=replaced)
                if published is Published.REPLACED:
                    # Ours was visible for a moment and another writer's rename replaced it: it is
                    # not in the history. Replan; its metadata stays for orphan removal to judge
                    # (a reader may have seen it), as a lost race it is never reported.
                    replaced += 1
                    _log.warning("snapshot %s of commit user %s was replaced by another writer's rename; "
                                 "retrying", new_id, self.commit_user)
                else:  # lost the race: nothing we wrote is referenced by any snapshot
                    keep_delta = kept_before
                    self._manifests.delete_files(written)
                timeout = options.commit_timeout_millis
                if attempt > options.commit_max_retries or (
                    timeout is not None and (self._clock() - started) * 1000 > timeout
                ):
                    raise CommitRetriesExhaustedError(
                        f"commit lost the race for a new snapshot {attempt} times "
                        f"(commit.max-retries={options.commit_max_retries}); nothing was committed"
                    )
                turn.close()
                self._sleep(attempt)
        except CommitOutcomeUnknownError:
            raise
        except PaimonflowError as exc:
            if ambiguous_since is None:
                raise  # no publish of ours can have landed
            # An earlier publish may have landed and this failure kept us from finding out: the
            # outcome is unknown, and nothing may be cleaned up.
            raise CommitOutcomeUnknownError(
                f"a publish of this commit failed in an unknown way and checking it failed too; retry with "
                f"commit user {self.commit_user!r} and identifier {identifier}: {exc}") from exc
        finally:
            turn.close()
            if delta_files is not None and not keep_delta:  # certainly not committed: nothing refers to them
                self._manifests.delete_files(delta_files.files)

    @contextlib.contextmanager
    def _turn(self) -> Iterator[bool]:
        """This machine's turn at committing to the table (:mod:`.commit_turns`), waited for up
        to ``commit.max-retry-wait``."""
        started = time.monotonic()
        with commit_turn(self._file_io, self._path, self._snapshots.branch,
                         wait_seconds=self._options.commit_max_retry_wait_millis / 1000.0) as taken:
            self._turn_wait += time.monotonic() - started
            yield taken

    def _write_delta(self, delta: list[ManifestEntry], changelog: list[ManifestEntry]) -> _DeltaFiles:
        """The manifests and manifest lists of a commit's own changes (and changelog)."""
        written: list[str] = []
        try:
            delta_metas = self._manifests.write_manifests(delta, self._schema.id, written)
            delta_list, delta_size = self._manifests.write_list(delta_metas, written)
            changelog_list = changelog_size = changelog_rows = None
            if changelog:
                changelog_metas = self._manifests.write_manifests(changelog, self._schema.id, written)
                changelog_list, changelog_size = self._manifests.write_list(changelog_metas, written)
                changelog_rows = sum(e.file.row_count for e in changelog)
        except BaseException:
            self._manifests.delete_files(written)
            raise
        return _DeltaFiles(delta=list(delta), changelog=list(changelog), delta_list=delta_list, delta_size=delta_size,
                           changelog_list=changelog_list, changelog_size=changelog_size,
                           changelog_rows=changelog_rows, files=tuple(written))

    def _sleep(self, attempt: int) -> None:
        """Back off after a lost race: a random wait between ``commit.min-retry-wait`` and a cap
        that doubles with each attempt up to ``commit.max-retry-wait`` ("full jitter"): writers
        that lost the same race draw different waits, so they do not meet again at the next one
        (Paimon adds a jitter of a fifth only). The time waited is in the commit's result."""
        low, high = self._options.commit_min_retry_wait_millis, self._options.commit_max_retry_wait_millis
        cap = min(low * (2 ** min(attempt - 1, 30)), high)
        wait = random.uniform(low, max(low, cap)) / 1000.0
        self._retry_wait += wait
        time.sleep(wait)

    def _result(self, snapshot: Snapshot, adds, deletes, attempts: int) -> CommitResult:
        return CommitResult(
            snapshot_id=snapshot.id, commit_kind=snapshot.commit_kind, commit_user=self.commit_user,
            commit_identifier=snapshot.commit_identifier, added_files=len(adds), deleted_files=len(deletes),
            added_rows=sum(e.file.row_count for e in adds), deleted_rows=sum(e.file.row_count for e in deletes),
            attempts=attempts, retry_wait_seconds=self._retry_wait, turn_wait_seconds=self._turn_wait,
        )

    # -- pieces ------------------------------------------------------------------------------

    def _index_entry(self, kind: FileKind, message: CommitMessage, file) -> IndexManifestEntry:
        return IndexManifestEntry(kind=kind, partition=serialize_row(list(message.partition), self._partition_types),
                                  bucket=message.bucket, file=file)

    def _next_index_manifest(self, latest, delta, overwrite, adds, deletes):
        """None when the index files do not change; else ``(True, live entries)`` to write a new
        index manifest, or ``(None, None)`` for a table left without index files. An overwrite
        drops the index files of the buckets whose files it deletes (the new files bring theirs)."""
        if overwrite is not None:  # the overwritten buckets' old index files go with their data
            emptied = {(e.partition, e.bucket) for e in delta if e.kind is FileKind.DELETE}
        else:
            emptied = set()
        if not adds and not deletes and not emptied:
            return None
        live = self._index.read(latest.index_manifest) if latest is not None else []
        unknown = sorted({e.file.index_type for e in live} - KNOWN_INDEX_TYPES)
        if unknown:  # a global index (btree, bitmap...) would go stale: refuse before publishing
            raise UnsupportedFeatureError(table=self._path, feature=f"index files of type {', '.join(unknown)}",
                                          operation="write")
        extra = [e for e in live if (e.partition, e.bucket) in emptied]
        entries, missing = apply_index_changes(live, adds, [*deletes, *extra])
        if missing:
            names = ", ".join(sorted(e.file.file_name for e in missing)[:5])
            raise CommitConflictError(f"index file conflict: {names} were already replaced by another commit")
        return (True, entries) if entries else (None, None)

    def _entry(self, kind: FileKind, message: CommitMessage, file) -> ManifestEntry:
        return ManifestEntry(kind=kind, partition=serialize_row(list(message.partition), self._partition_types),
                             bucket=message.bucket, total_buckets=message.total_buckets, file=file)

    def _overwrite_deletes(self, base: list[ManifestEntry], adds: list[ManifestEntry],
                           spec: OverwriteSpec) -> list[ManifestEntry]:
        keys = list(self._schema.partition_keys)
        if spec.drop:
            if adds:
                raise InvalidArgumentError("dropping partitions adds no files")
            dropped = self._partition_matcher(spec.drop)
            chosen = [e for e in base if dropped(e.partition)]
        elif spec.dynamic and keys:
            targets = {e.partition for e in adds}
            chosen = [e for e in base if e.partition in targets]
        elif spec.where is not None:
            matching = self._partitions_where(spec.where, {e.partition for e in base} | {e.partition for e in adds})
            chosen = [e for e in base if e.partition in matching]
            for e in adds:
                if e.partition not in matching:
                    values = deserialize_row(e.partition, self._partition_types)
                    raise SchemaError(f"overwrite where {spec.where.to_arrow()} got rows of partition "
                                      f"{dict(zip(keys, values, strict=True))}")
        elif spec.static:
            replaced = self._partition_matcher([spec.static])
            chosen = [e for e in base if replaced(e.partition)]
            for e in adds:
                if not replaced(e.partition):
                    values = deserialize_row(e.partition, self._partition_types)
                    raise SchemaError(f"overwrite of {dict(spec.static)} got rows of partition {values}")
        else:
            chosen = list(base)
        return [ManifestEntry(kind=FileKind.DELETE, partition=e.partition, bucket=e.bucket,
                              total_buckets=e.total_buckets, file=e.file) for e in chosen]

    def _partitions_where(self, predicate: Predicate, partitions: set[bytes]) -> set[bytes]:
        """The serialized partitions whose values satisfy ``predicate``: each distinct partition
        decoded once, the predicate evaluated on them as one Arrow table. Exact, unlike the scan
        planner's pruning (``Predicate.might_match`` on statistics, a safe superset for a read):
        an overwrite must delete precisely the partitions selected."""
        ordered = list(partitions)
        if not ordered:
            return set()
        keys = list(self._schema.partition_keys)
        rows = [deserialize_row(p, self._partition_types) for p in ordered]
        values = pa.table({k: pa.array([r[i] for r in rows], t)
                           for i, (k, t) in enumerate(zip(keys, self._partition_types, strict=True))})
        bound = bind_predicate(predicate, values.schema, field_types(self._schema.fields))
        kept = values.append_column("__index", pa.array(range(len(ordered)), pa.int64())).filter(bound.to_arrow())
        return {ordered[i] for i in kept.column("__index").to_pylist()}

    def _partition_matcher(self, specs: Sequence[Mapping[str, object]]) -> Callable[[bytes], bool]:
        """``serialized partition -> bool``: whether it matches any of ``specs`` (each naming some
        partition keys, as a static overwrite does). Specs are checked once; each distinct
        partition is decoded once."""
        keys = list(self._schema.partition_keys)
        wanted = []
        for spec in specs:
            unknown = [k for k in spec if k not in keys]
            if unknown:
                raise SchemaError(f"partition spec names non-partition columns {unknown}; "
                                  f"partition keys are {keys}")
            wanted.append([(keys.index(k), v) for k, v in spec.items()])
        seen: dict[bytes, bool] = {}

        def matches(partition: bytes) -> bool:
            found = seen.get(partition)
            if found is None:
                values = deserialize_row(partition, self._partition_types)
                found = seen[partition] = any(all(_same_partition_value(values[i], v) for i, v in positions)
                                              for positions in wanted)
            return found

        return matches

    def _check_conflicts(self, base: list[ManifestEntry], delta: list[ManifestEntry], kind: CommitKind) -> None:
        # 1. a partition keeps its bucket count unless it is overwritten (counts <= 0, dynamic and
        # postpone buckets, are no count: Paimon's ConflictDetection skips them)
        if kind is not CommitKind.OVERWRITE:
            counts: dict[bytes, int] = {}
            for e in base:
                if e.total_buckets > 0:
                    counts.setdefault(e.partition, e.total_buckets)
            for e in delta:
                if e.kind is FileKind.ADD and e.total_buckets > 0 \
                        and counts.get(e.partition, e.total_buckets) != e.total_buckets:
                    raise CommitConflictError(
                        f"total buckets of partition changed from {counts[e.partition]} to {e.total_buckets} "
                        "without overwrite; rescale the table with an overwrite"
                    )
        # 2. every file we delete must still be live
        merged, leftover_deletes = merge_entries([*base, *delta])
        if leftover_deletes:
            names = ", ".join(sorted(e.file.file_name for e in leftover_deletes)[:5])
            raise CommitConflictError(f"file deletion conflicts: {names} were already deleted by another commit")
        # 3. at levels >= 1 the key ranges of a bucket's files must not overlap
        if not self._key_types:
            return
        touched = {(e.partition, e.bucket) for e in delta if e.kind is FileKind.ADD and e.file.level > 0}
        if not touched:
            return
        by_level: dict[tuple[bytes, int, int], list] = {}
        for e in merged:
            if (e.partition, e.bucket) in touched and e.file.level > 0:
                by_level.setdefault((e.partition, e.bucket, e.file.level), []).append(
                    (deserialize_row(e.file.min_key, self._key_types), deserialize_row(e.file.max_key, self._key_types),
                     e.file.file_name))
        for (_, bucket, level), files in by_level.items():
            files.sort(key=lambda t: t[0])
            for (_, prev_max, prev_name), (next_min, _, next_name) in itertools.pairwise(files):
                if not prev_max < next_min:
                    raise CommitConflictError(
                        f"LSM conflict in bucket {bucket} level {level}: key ranges of {prev_name} and {next_name} overlap"
                    )

    def _prepare_snapshot(self, latest: Snapshot | None, new_id: int, own: _DeltaFiles, kind: CommitKind,
                          identifier: int, properties: dict, written: list[str]) -> Snapshot:
        """The snapshot of ``own`` changes on top of ``latest``; writes the base manifest list
        (and what the manifest merge rewrites) into ``written``."""
        previous = self._manifests.data_manifests(latest) if latest is not None else []
        base_metas = self._manifests.merge(previous, written)
        base_list, base_size = self._manifests.write_list(base_metas, written)
        delta_list, delta_size = own.delta_list, own.delta_size
        changelog_list, changelog_size, changelog_rows = own.changelog_list, own.changelog_size, own.changelog_rows
        added = sum(e.file.row_count for e in own.delta if e.kind is FileKind.ADD)
        removed = sum(e.file.row_count for e in own.delta if e.kind is FileKind.DELETE)
        return Snapshot(
            version=3,
            id=new_id,
            schema_id=self._schema.id,
            base_manifest_list=base_list,
            base_manifest_list_size=base_size,
            delta_manifest_list=delta_list,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list=changelog_list,
            changelog_manifest_list_size=changelog_size,
            index_manifest=latest.index_manifest if latest is not None else None,
            commit_user=self.commit_user,
            commit_identifier=identifier,
            commit_kind=kind,
            time_millis=int(self._clock() * 1000),
            total_record_count=(latest.total_record_count or 0 if latest is not None else 0) + added - removed,
            delta_record_count=added - removed,
            changelog_record_count=changelog_rows,
            watermark=latest.watermark if latest is not None else None,
            statistics=latest.statistics if latest is not None and latest.schema_id == self._schema.id else None,
            properties=properties or None,
            uuid=str(uuid.uuid4()),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class _DeltaFiles:
    """What one commit's own changes were written as (reused by its retries)."""

    delta: list[ManifestEntry]
    changelog: list[ManifestEntry]
    delta_list: str
    delta_size: int
    changelog_list: str | None
    changelog_size: int | None
    changelog_rows: int | None
    files: tuple[str, ...]


def _same_partition_value(actual: object, wanted: object) -> bool:
    if actual == wanted:
        return True
    return str(actual) == str(wanted)


def new_commit_user(prefix: str | None = None) -> str:
    """Paimon's default: a UUID, or ``<prefix>_<uuid>``."""
    return f"{prefix}_{uuid.uuid4()}" if prefix else str(uuid.uuid4())
