"""Rollback to a snapshot or a tag (Apache Paimon's ``RollbackHelper``): every snapshot, tag and
long-lived changelog after the target is dropped, with the files only they needed; snapshot ids are
then reused by the next commits. The ``ROLLBACK`` marker handshake keeps it apart from expiry,
tag creation and other rollbacks (:mod:`paimonflow.core.meta.snapshots`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from ..errors import (
    FileNotFoundStorageError,
    InvalidArgumentError,
    MaintenanceConflictError,
    SnapshotNotFoundError,
)
from ..meta.capabilities import Operation
from ..meta.changelogs import ChangelogManager
from ..meta.context import TableMeta
from ..meta.manifest import FileKind
from ..meta.references import (
    Needed,
    entry_path_resolver,
    files_of_other_branches,
    manifest_files,
    metadata_files,
    needed_by,
    restored_from_tag,
)
from ..meta.snapshots import Snapshot
from .tags import Tags


@dataclass(frozen=True, slots=True, kw_only=True)
class Rollback:
    target: int
    removed_snapshots: tuple[int, ...]
    removed_tags: tuple[str, ...]
    deleted_files: int


def rollback(table: TableMeta, *, snapshot_id: int | None = None, tag: str | None = None,
             timestamp_millis: int | None = None) -> Rollback:
    """Roll the table back to a snapshot, a tag or the last snapshot at or before a time.

    Snapshots and tags after the target go (newest first, the snapshot files before their data
    so a reader never meets a snapshot with missing files); the target becomes the latest, and
    the next commit reuses the following id. Rolling back to a tag whose snapshot expired brings
    that snapshot back from the tag.
    """
    table.capabilities.require(Operation.HISTORY)
    manager = table.snapshot_manager
    given = sum(x is not None for x in (snapshot_id, tag, timestamp_millis))
    if given != 1:
        raise InvalidArgumentError("give exactly one of snapshot_id, tag and timestamp_millis")
    target: Snapshot | None
    if tag is not None:
        target = Tags(table).get(tag)
    elif timestamp_millis is not None:
        target = manager.snapshot_at_or_before_time(int(timestamp_millis))
        if target is None:
            raise SnapshotNotFoundError(f"no snapshot at or before {timestamp_millis}")
    else:
        assert snapshot_id is not None  # exactly one was given
        target = manager.snapshot(int(snapshot_id))
    # the handshake with expiry, tag creation and branch creation: the marker first, then the
    # checks, then the target once more (an expiry that finished before the marker took it)
    what = f"table {table.identifier}: rollback to snapshot {target.id} refused"
    manager.claim_rollback(target.id, what)
    try:  # nothing is deleted yet: any failure here releases the marker
        if tag is not None:
            if Tags(table).get(tag).id != target.id:
                raise MaintenanceConflictError(f"{what}: tag {tag!r} was changed meanwhile; retry")
            if not manager.exists(target.id):
                plain = restored_from_tag(table, target)
                table.file_io.write_bytes(manager.path(target.id), plain.to_json())
        else:
            manager.snapshot(target.id)  # an expiry that finished before the marker took it
    except BaseException:
        manager.end_rollback(target.id)
        raise
    done = _rollback_to(table, target)  # a failure from here on keeps the marker: rerun to finish
    manager.end_rollback(target.id)
    return done


def _rollback_to(table: TableMeta, target: Snapshot) -> Rollback:
    manager = table.snapshot_manager
    later = [sid for sid in manager.list_ids() if sid > target.id]
    listed = Tags(table).list()
    later_tags = sorted(n for n, t in listed.items() if t.id > target.id)
    # what the removed snapshots and changelogs need that what stays does not (other branches share files)
    keep = Needed.union([files_of_other_branches(table), needed_by(table, target, changelog=True),
                         *(needed_by(table, t) for t in listed.values() if t.id <= target.id)])
    path_of = entry_path_resolver(table)
    mio = table.manifest_io
    doomed: list[str] = []
    first_removed = next((s for s in map(manager.try_snapshot, later) if s is not None), None)
    if first_removed is not None:  # files added between the target and it (their snapshots expired)
        with contextlib.suppress(FileNotFoundStorageError):
            doomed += [path_of(e) for e in mio.live_entries(first_removed) if e not in keep]
    for sid in later:
        snap = manager.try_snapshot(sid)
        if snap is None:
            continue
        with contextlib.suppress(FileNotFoundStorageError):
            doomed += [path_of(e) for e in mio.delta_entries(snap) if e.kind is FileKind.ADD and e not in keep]
        with contextlib.suppress(FileNotFoundStorageError):  # a branch made from it may share them
            doomed += [path_of(e) for e in mio.changelog_entries(snap) if e not in keep]
        doomed += [p for p in metadata_files(table, snap) if p not in keep.metadata]
    # long-lived changelogs after the target go too (Paimon's RollbackHelper): their ids are reused
    changelogs = ChangelogManager(table.file_io, table.path, table.branch)
    later_changelogs = [cid for cid in changelogs.list_ids() if cid > target.id]
    for cid in later_changelogs:
        changelog = changelogs.try_changelog(cid)
        if changelog is None or not changelog.changelog_manifest_list:
            continue  # producer none: its delta files become orphans if nothing else needs them
        with contextlib.suppress(FileNotFoundStorageError):
            doomed += [path_of(e) for e in mio.changelog_entries(changelog) if e not in keep]
        doomed += [p for p in manifest_files(table, [changelog.changelog_manifest_list]) if p not in keep.metadata]
    for name in later_tags:
        table.file_io.delete(table.tag_manager.tag_path(name))
    for sid in sorted(later, reverse=True):
        with contextlib.suppress(FileNotFoundStorageError):
            table.file_io.delete(manager.path(sid))
    for cid in sorted(later_changelogs, reverse=True):
        with contextlib.suppress(FileNotFoundStorageError):
            table.file_io.delete(changelogs.path(cid))
    if later_changelogs and changelogs.list_ids():
        changelogs.write_hint("LATEST", changelogs.list_ids()[-1])
    manager._write_hint("LATEST", target.id)
    remaining = manager.list_ids()  # the target may be below EARLIEST (brought back from a tag)
    manager.write_earliest_hint(remaining[0] if remaining else target.id)
    unique = list(dict.fromkeys(doomed))
    for path in unique:
        with contextlib.suppress(FileNotFoundStorageError):
            table.file_io.delete(path)
    return Rollback(target=target.id, removed_snapshots=tuple(later), removed_tags=tuple(later_tags),
                    deleted_files=len(unique))
