"""Snapshot expiry (Apache Paimon 2.x ``ExpireSnapshotsImpl``): choose the range, delete exactly
the files nothing retained needs, then the snapshot files, then move ``EARLIEST``.

The range ``[earliest, end)``: at least ``snapshot.num-retained.min`` snapshots stay; beyond
``snapshot.num-retained.max`` snapshots go whatever their age; in between a snapshot goes only
when its *successor* is older than ``snapshot.time-retained`` (the 2.x rule); consumers cap the
range at their next snapshot (not with ``consumer.changelog-only``); at most
``snapshot.expire.limit`` snapshots go per run.

What goes, in this order (a crash anywhere leaves a readable table and a rerun finishes):

1. data files deleted by the delta of each snapshot in ``(earliest, end]`` (a file is added once
   and deleted once, so these were live only in expired snapshots), except files the nearest
   older tag still holds and files the same delta re-adds (level upgrades);
2. changelog files of expired snapshots;
3. manifest lists, manifests, index manifests and index files of expired snapshots that neither
   snapshot ``end`` nor any tag references;
4. the ``snapshot-N`` files, oldest first, and ``EARLIEST = end``.

**Expiry beside tag operations** (a handshake, no lock that a crash could leave held):

* Before it lists the tags it protects, a run publishes ``snapshot/EXPIRING-<end>-<run id>``
  ("the files of snapshots ``< end`` may be deleted"); it removes the marker when its snapshot
  files are gone. A run interrupted after publishing its marker may have deleted files of any
  snapshot below its end, so the next run extends its own range to that end whatever its options
  (the interrupted run had planned the range under its own), and the marker goes once no snapshot
  is below it.
* Tag creation (``Tags.create``, ``replace``, ``rename``) writes the tag file, *then* reads the
  markers, *then* checks that the snapshot exists; if the snapshot is below a marker or gone (and
  no tag that existed before held it), it deletes its tag file and raises
  :class:`~paimonflow.core.errors.TagTargetExpiringError`.

Why every interleaving is safe (storage with read-after-write and list-after-write consistency:
local disks and S3): take a run E with end ``e`` and a tag T on snapshot ``s < e``. If E lists the
tags after T's file was written, E protects T's files like any tag's. Otherwise E listed first, so
E's marker was written before T's file, and T's check (after its write) reads the markers after
it: it finds E's marker (``s < e``: T fails), or the marker is already gone, which E does only
after deleting ``snapshot-s``, and T's existence check, made after reading the markers, finds
``s`` gone (T fails). Concurrent runs each have their own marker, so none hides another's. A tag
on ``s >= e`` is safe regardless: E deletes only files that no snapshot ``>= e`` needs.

A tag deleted (or renamed) while a run plans is no failure: the listing is read again when a tag
file vanished between listing and reading, and when a listed tag's manifests vanish (the tag was
deleted, with its files), the plan is made again from a fresh listing. A tag that is gone
protects nothing; a tag that is still there with missing files is an error (I4 is already broken).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import (
    FileNotFoundStorageError,
    MaintenanceConflictError,
    StorageError,
)
from ..faults import crash_point
from ..fs import join
from ..meta.context import TableMeta
from ..meta.manifest import FileKind
from ..meta.references import (
    Needed,
    entry_path_resolver,
    file_key,
    files_of_other_branches,
    manifest_files,
    metadata_files,
    tag_needs,
)
from ..meta.snapshots import Snapshot
from ..options.retention import retained_counts


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpirePlan:
    """What an expiry deletes (paths relative to nothing: absolute table paths)."""

    earliest: int | None
    end: int | None  # exclusive: the new earliest snapshot
    snapshot_ids: tuple[int, ...] = ()
    data_files: tuple[str, ...] = ()
    changelog_files: tuple[str, ...] = ()
    metadata_files: tuple[str, ...] = ()
    #: decoupled changelog lifecycle: these snapshots become changelog/changelog-<id>
    to_changelog: tuple[int, ...] = ()

    @property
    def file_count(self) -> int:
        return len(self.data_files) + len(self.changelog_files) + len(self.metadata_files) + len(self.snapshot_ids)

    def to_dict(self) -> dict[str, object]:
        return {"earliest": self.earliest, "end": self.end, "snapshot_ids": list(self.snapshot_ids),
                "data_files": len(self.data_files), "changelog_files": len(self.changelog_files),
                "metadata_files": len(self.metadata_files), "to_changelog": list(self.to_changelog)}


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpireResult:
    plan: ExpirePlan
    dry_run: bool
    deleted_files: int = 0
    expired_changelogs: int = 0
    #: snapshots the options would also expire, beyond this run's cap (``max_deletes``,
    #: ``snapshot.expire.limit``): at most this many (the next one is due by time; the count is
    #: by the retention counts and consumers), 0 when the cap was not reached
    more_due: int = 0

    @property
    def expired_snapshots(self) -> int:
        return len(self.plan.snapshot_ids)

    def to_dict(self) -> dict[str, object]:
        return {**self.plan.to_dict(), "dry_run": self.dry_run, "expired_snapshots": self.expired_snapshots,
                "deleted_files": self.deleted_files, "expired_changelogs": self.expired_changelogs,
                "more_due": self.more_due}


def expire_range(table: TableMeta, *, retain_min: int, retain_max: int, time_retained_millis: int, max_deletes: int,
                 now_millis: int, after_commit: bool = False) -> tuple[int | None, int | None]:
    """``(earliest, end)``: snapshots ``earliest <= id < end`` expire (``end`` None: nothing).

    ``after_commit`` (the expiry every commit runs): when the options leave nothing to expire,
    the answer comes from the hints and at most a snapshot file or two, without listing
    ``snapshot/`` for the markers of interrupted runs: the next run with something to expire
    (or any manual run) finishes those, so a commit's cost does not grow with the history."""
    manager = table.snapshot_manager
    latest, earliest = manager.latest_id(), manager.earliest_id(repair_hint=True)
    if latest is None or earliest is None:
        return earliest, None
    lowest = max(latest - retain_max + 1, earliest)
    end = latest - retain_min + 1
    # consumers protect what they have not read, unless they only protect changelogs
    consumers = table.consumer_manager
    consumer_min = None if table.options.consumer_changelog_only else consumers.min_next_snapshot()
    if consumer_min is not None:
        end = min(end, consumer_min)
    end = min(end, earliest + max_deletes)
    older_than = now_millis - time_retained_millis
    for sid in range(lowest, end):
        successor = manager.try_snapshot(sid + 1)
        if successor is not None and successor.time_millis >= older_than:
            end = sid
            break
    if after_commit and end <= earliest:
        return earliest, None
    # a run interrupted after publishing its marker may have deleted files of any snapshot below its
    # end: those snapshots are condemned whatever this run's options, so it finishes their removal
    # (until then tags and rollbacks below that end stay refused)
    interrupted = manager.markers().expiring_below
    if interrupted is not None and earliest < interrupted <= latest:
        end = max(end, interrupted)
    return earliest, (end if end > earliest else None)


def _more_due(table: TableMeta, end: int, *, retain_min: int, older_than: int) -> int:
    """After a run capped at ``end``: how many more snapshots may be due (0 if snapshot ``end``
    itself must stay by time; else those the retention count and consumers allow). One read."""
    manager = table.snapshot_manager
    latest = manager.latest_id()
    if latest is None:
        return 0
    upper = latest - retain_min + 1
    consumer_min = None if table.options.consumer_changelog_only else table.consumer_manager.min_next_snapshot()
    if consumer_min is not None:
        upper = min(upper, consumer_min)
    successor = manager.try_snapshot(end + 1)
    if upper <= end or successor is None or successor.time_millis >= older_than:
        return 0
    return upper - end


class _TagVanished(Exception):
    """A listed tag was deleted (with its files) while the plan read them: plan again."""


_PLAN_ATTEMPTS = 10


def plan_expiry(table: TableMeta, earliest: int, end: int, *, decoupled: bool = False) -> ExpirePlan:
    """The files an expiry of ``[earliest, end)`` deletes. ``decoupled``: the changelog outlives
    the snapshots, so what the changes need stays (changelog files and changelog manifests with a
    changelog producer; APPEND data files and data manifests without one).

    Planned again from a fresh tag listing when a listed tag is deleted meanwhile (up to
    ``_PLAN_ATTEMPTS`` times, then :class:`MaintenanceConflictError`: nothing was deleted)."""
    for _ in range(_PLAN_ATTEMPTS):
        try:
            return _plan_expiry_once(table, earliest, end, decoupled=decoupled)
        except _TagVanished:
            continue
    raise MaintenanceConflictError(f"table {table.identifier}: tags kept disappearing while expiry planned "
                                   f"{_PLAN_ATTEMPTS} times; nothing was deleted, retry")


def _plan_expiry_once(table: TableMeta, earliest: int, end: int, *, decoupled: bool) -> ExpirePlan:
    manager, mio = table.snapshot_manager, table.manifest_io
    listed = table.tag_manager.list_tags()
    names = {id(t): n for n, t in listed.items()}
    tags = sorted(listed.values(), key=lambda s: s.id)
    path_of = entry_path_resolver(table)

    tag_needs_memo: dict[int, Needed] = {}

    def kept_by(tag: Snapshot) -> Needed:
        if tag.id not in tag_needs_memo:
            needs = tag_needs(table, names[id(tag)], tag)
            if needs is None:
                raise _TagVanished(names[id(tag)])
            tag_needs_memo[tag.id] = needs
        return tag_needs_memo[tag.id]

    others = files_of_other_branches(table)  # files other branches share are never deleted here
    producer = str(table.options.changelog_producer)
    keep_appends = decoupled and producer == "none"
    data: list[str] = []
    for sid in range(earliest + 1, end + 1):
        snapshot = manager.try_snapshot(sid)
        if snapshot is None:
            continue
        try:
            entries = mio.delta_entries(snapshot)
        except FileNotFoundStorageError:
            continue  # an earlier, interrupted run already removed this snapshot's manifests
        added = {file_key(e) for e in entries if e.kind is FileKind.ADD}
        previous_tag = next((t for t in reversed(tags) if t.id < sid), None)
        keep = kept_by(previous_tag) if previous_tag is not None else Needed()
        for e in entries:
            if keep_appends and e.file.file_source in (None, 0):
                continue  # the changelog (= delta) still needs the rows this file added
            if e.kind is FileKind.DELETE and file_key(e) not in added and e not in keep and e not in others:
                data.append(path_of(e))
                data.extend(join(path_of(e).rsplit("/", 1)[0], x) for x in e.file.extra_files)

    changelog: list[str] = []
    metadata: list[str] = []
    protected = set(others.metadata)
    end_snapshot = manager.try_snapshot(end)
    for keeper in [end_snapshot, *tags]:
        if keeper is not None:
            protected |= set(metadata_files(table, keeper))
    for sid in range(earliest, end):
        snapshot = manager.try_snapshot(sid)
        if snapshot is None:
            continue
        if not decoupled:
            with contextlib.suppress(FileNotFoundStorageError):
                for e in mio.changelog_entries(snapshot):
                    if e not in others:
                        changelog.append(path_of(e))
        kept = set()
        if decoupled:  # the long-lived changelog keeps its manifests
            kept = set(manifest_files(table, [snapshot.changelog_manifest_list] if producer != "none" else
                                   [snapshot.base_manifest_list, snapshot.delta_manifest_list]))
        metadata.extend(f for f in metadata_files(table, snapshot) if f not in protected and f not in kept)
    snapshot_ids = tuple(sid for sid in range(earliest, end) if manager.exists(sid))
    return ExpirePlan(earliest=earliest, end=end, snapshot_ids=snapshot_ids, data_files=tuple(dict.fromkeys(data)),
                      changelog_files=tuple(dict.fromkeys(changelog)), metadata_files=tuple(dict.fromkeys(metadata)),
                      to_changelog=snapshot_ids if decoupled else ())


def expire_snapshots(table: TableMeta, *, retain_min: int | None = None, retain_max: int | None = None,
                     older_than_millis: int | None = None, max_deletes: int | None = None,
                     dry_run: bool = False, clock: Callable[[], float] = time.time,
                     progress: Callable[[int, int], None] | None = None, after_commit: bool = False) -> ExpireResult:
    """Expire snapshots by the table's options (each overridable); ``dry_run`` only plans.

    ``retain_min``/``retain_max`` default to ``snapshot.num-retained.*``, but a bound left out
    gives way to one given (:func:`~paimonflow.core.options.retention.retained_counts`):
    ``retain_max=1`` alone keeps one snapshot. Raises :class:`InvalidArgumentError` for a given
    bound below 1 or ``retain_max`` below ``retain_min``.

    ``older_than_millis`` overrides ``snapshot.time-retained`` (a duration); ``clock`` returns
    seconds since the epoch (inject one in tests). ``progress(done, total)`` is called as files go.
    ``after_commit``: the run every commit makes (:func:`expire_range`); with nothing to expire it
    neither lists nor writes.
    """
    from ..meta.capabilities import Operation
    from ..meta.changelogs import ChangelogManager
    from .changelog_expire import expire_changelogs

    table.capabilities.require(Operation.EXPIRE)
    decoupled = table.options.changelog_decoupled
    o = table.options
    retain_min, retain_max = retained_counts(retain_min, retain_max, option_min=o.snapshot_num_retained_min,
                                             option_max=o.snapshot_num_retained_max)
    time_retained = o.snapshot_time_retained_millis if older_than_millis is None else older_than_millis
    limit = o.snapshot_expire_limit if max_deletes is None else max_deletes
    earliest, end = expire_range(table, retain_min=retain_min, retain_max=retain_max,
                                 time_retained_millis=time_retained, max_deletes=limit,
                                 now_millis=int(clock() * 1000), after_commit=after_commit)
    if earliest is None or end is None:  # (no earliest: an empty table, and no end either)
        if not dry_run and not after_commit:  # a crashed run that had deleted its snapshots left its marker
            table.snapshot_manager.end_expiry(None)
        return ExpireResult(plan=ExpirePlan(earliest=earliest, end=None), dry_run=dry_run)
    more = _more_due(table, end, retain_min=retain_min, older_than=int(clock() * 1000) - time_retained) \
        if not after_commit and end - earliest >= limit else 0
    if dry_run:
        return ExpireResult(plan=plan_expiry(table, earliest, end, decoupled=decoupled), dry_run=True, more_due=more)
    # the handshake with tag creation (module docstring): the marker before the tag listing
    basis = table.snapshot_manager.try_snapshot(end)  # the snapshot this run keeps, as planned
    marker = table.snapshot_manager.begin_expiry(end, keeps=basis)
    try:
        plan = plan_expiry(table, earliest, end, decoupled=decoupled)
        rolling = table.snapshot_manager.rolling_back_to()  # after the marker and the plan: maintenance/rollback.py
        refused = f"table {table.identifier}: expiry of the snapshots below {end} refused"
        if rolling is not None and rolling < end:
            raise MaintenanceConflictError(f"{refused}: a rollback to snapshot {rolling} is running (or was "
                                           "interrupted: run it again); retry when it is done")
        # a rollback below ``end`` that claimed before this marker and finished before the check
        # above removed snapshot ``end`` (or a new commit reused its id): the plan is stale
        again = table.snapshot_manager.try_snapshot(end)
        if basis is None or again is None or again.base_manifest_list != basis.base_manifest_list:
            raise MaintenanceConflictError(f"{refused}: the table was rolled back while it planned; retry")
    except BaseException:
        with contextlib.suppress(StorageError):  # nothing deleted yet; a marker left is harmless
            table.file_io.delete(marker)
        raise
    total, done = plan.file_count, 0
    for group, name in ((plan.data_files, "data"), (plan.changelog_files, "changelog"),
                        (plan.metadata_files, "metadata")):
        for i, path in enumerate(group):
            with contextlib.suppress(FileNotFoundStorageError):
                table.file_io.delete(path)
            done += 1
            if i == len(group) // 2:
                crash_point(f"expire:{name}-files")
            if progress is not None and done % 256 == 0:
                progress(done, total)
    changelogs = ChangelogManager(table.file_io, table.path, table.branch)
    for i, sid in enumerate(plan.snapshot_ids):
        if sid in plan.to_changelog:  # first the long-lived changelog, then the snapshot goes
            snapshot = table.snapshot_manager.try_snapshot(sid)
            if snapshot is not None:
                changelogs.publish(snapshot)
            if i == len(plan.snapshot_ids) // 2:
                crash_point("expire:changelog-files")
        with contextlib.suppress(FileNotFoundStorageError):
            table.file_io.delete(table.snapshot_manager.path(sid))
        done += 1
        if i == len(plan.snapshot_ids) // 2:
            crash_point("expire:snapshot-files")
    table.snapshot_manager.write_earliest_hint(end)
    table.snapshot_manager.end_expiry(marker)  # after the snapshot files: see the module docstring
    if plan.to_changelog and (earliest_changelog := changelogs.earliest_id()) is not None:
        changelogs.write_hint("EARLIEST", earliest_changelog)
    if progress is not None:
        progress(total, total)
    expired_changelogs = 0
    if decoupled:  # our manual expiry honours the changelog options too (Paimon's Spark procedure does not)
        expired_changelogs = len(expire_changelogs(table, clock=clock).changelog_ids)
    return ExpireResult(plan=plan, dry_run=False, deleted_files=total, expired_changelogs=expired_changelogs,
                        more_due=more)
