"""Tags (Apache Paimon's ``TagManager``, ``TagDeletion``, ``TagTimeExpire``): create, replace,
rename, delete and expire.

A tag is ``tag/tag-<name>``: the snapshot's JSON, plus ``tagCreateTime`` (a Java
``LocalDateTime`` array) and ``tagTimeRetained`` (a ``Duration`` in decimal seconds) when it has a
time-to-live. Deleting a tag whose snapshot expired frees the files no neighbour (the previous
tag, and the next tag or earliest snapshot) still needs.

Creating, replacing and renaming a tag beside a running expiry is safe by a handshake with it
(the argument is in :mod:`paimonflow.core.maintenance.expire`): the tag file is written first, then
the expiry markers are read, then the snapshot's existence is checked. A tag that an expiry may
have planned around is removed again and :class:`~paimonflow.core.errors.TagTargetExpiringError`
is raised (retry on a newer snapshot); a tag never stays pointing at files an expiry deletes.
"""

from __future__ import annotations

import builtins  # Tags.list shadows the builtin inside the class
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from ..errors import (
    FileNotFoundStorageError,
    InvalidArgumentError,
    MaintenanceConflictError,
    SnapshotNotFoundError,
    StorageError,
    TagAlreadyExistsError,
    TagNotFoundError,
    TagTargetExpiringError,
)
from ..faults import crash_point
from ..meta.capabilities import Operation
from ..meta.changelogs import ChangelogManager
from ..meta.context import TableMeta
from ..meta.references import (
    changelog_files,
    entry_path_resolver,
    files_of_other_branches,
    metadata_files,
    tag_needs,
)
from ..meta.snapshots import Snapshot
from ..names import validate_name
from ..options.parse import parse_duration_millis


class _NeighbourVanished(Exception):
    """A neighbour of a tag being deleted was expired or deleted meanwhile: look again."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TagDeletion:
    name: str
    snapshot_id: int
    freed_files: tuple[str, ...] = ()
    dry_run: bool = False


def _java_local_datetime(dt: datetime) -> list[int]:
    """Jackson's LocalDateTime array: trailing zero second / nanosecond omitted."""
    out = [dt.year, dt.month, dt.day, dt.hour, dt.minute]
    nanos = dt.microsecond * 1000
    if dt.second or nanos:
        out.append(dt.second)
    if nanos:
        out.append(nanos)
    return out


def _from_java_local_datetime(value) -> datetime | None:
    if not isinstance(value, list) or len(value) < 3:
        return None
    parts = [int(v) for v in value] + [0] * (7 - len(value))
    return datetime(parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6] // 1000)


class Tags:
    """Tag operations on one table (``table.tags``)."""

    def __init__(self, table: TableMeta, clock: Callable[[], float] = time.time) -> None:
        self._table, self._clock = table, clock
        self._manager = table.tag_manager

    def list(self) -> dict[str, Snapshot]:
        return self._manager.list_tags()

    def get(self, name: str) -> Snapshot:
        try:
            return self._manager.get(name)
        except SnapshotNotFoundError:
            raise TagNotFoundError(f"table {self._table.identifier} has no tag {name!r}") from None

    def _target(self, snapshot_id: int | None, timestamp_millis: int | None) -> tuple[Snapshot, str | None]:
        """The snapshot to tag, and the name of the tag it was found in when it expired already
        (that tag protects its files while it exists)."""
        manager = self._table.snapshot_manager
        if snapshot_id is not None and timestamp_millis is not None:
            raise InvalidArgumentError("give a snapshot id or a timestamp, not both")
        if timestamp_millis is not None:  # the first snapshot (or tag) committed at or after the time
            candidates: list[tuple[Snapshot, str | None]] = [
                (s, None) for s in manager.snapshots() if s.time_millis >= timestamp_millis]
            candidates += [(t, n) for n, t in sorted(self.list().items()) if t.time_millis >= timestamp_millis]
            if not candidates:
                raise SnapshotNotFoundError(f"no snapshot committed at or after {timestamp_millis}")
            return min(candidates, key=lambda c: c[0].time_millis)
        if snapshot_id is None:
            latest = manager.latest()
            if latest is None:
                raise SnapshotNotFoundError(f"table {self._table.identifier} has no snapshot to tag")
            return latest, None
        found = manager.try_snapshot(int(snapshot_id))
        if found is not None:
            return found, None
        # an expired snapshot another tag still holds
        held = next(((t, n) for n, t in sorted(self.list().items()) if t.id == int(snapshot_id)), None)
        if held is None:
            raise SnapshotNotFoundError(f"table {self._table.identifier} has no snapshot {snapshot_id}")
        return held

    def _tagged(self, snapshot: Snapshot, time_retained: str | None) -> Snapshot:
        plain = replace(snapshot, tag_create_time=None, tag_time_retained=None)
        retained = time_retained if time_retained is not None else self._table.schema.options.get(
            "tag.default-time-retained")
        if retained is None:
            return plain
        millis = parse_duration_millis(retained)
        now = datetime.fromtimestamp(self._clock())
        return replace(plain, tag_create_time=_java_local_datetime(now), tag_time_retained=millis / 1000)

    # -- the handshake with expiry (core/maintenance/expire.py) ----------------------------------------------

    def _protected(self, tag: Snapshot, holder: str | None) -> bool:
        """Called after the tag file is written: no expiry can delete ``tag``'s files.

        False when a rollback to a snapshot below the tag's is running (it may have listed the tags
        before ours was written). Otherwise true when ``holder`` (a tag that existed before ours
        was written) still holds the same snapshot, or when no expiry marker is above the snapshot
        *and then* the snapshot still exists (in this order: a run removes its marker only after
        deleting its snapshots)."""
        markers = self._table.snapshot_manager.markers()
        rolling = markers.rolling_back_to
        if rolling is not None and tag.id > rolling:  # a rollback may remove it: first, holder or not
            return False
        if holder is not None:
            try:
                held = self._manager.get(holder)
            except SnapshotNotFoundError:
                held = None
            if held is not None and (held.id, held.base_manifest_list) == (tag.id, tag.base_manifest_list):
                return True
        below = markers.expiring_below
        if below is not None and tag.id < below:
            return False
        return self._table.snapshot_manager.exists(tag.id)

    def _refuse(self, name: str, tag: Snapshot, verb: str = "created") -> TagTargetExpiringError:
        return TagTargetExpiringError(
            f"table {self._table.identifier}: tag {name!r} was not {verb}: snapshot {tag.id} is being expired "
            "or rolled back, or is gone; retry on a newer snapshot")

    def _precheck(self, name: str, tag: Snapshot, holder: str | None, verb: str = "created") -> None:
        """Fail early, before writing anything, when an expiry is already past the snapshot (an
        optimisation: the check after writing is what makes it safe)."""
        below = self._table.snapshot_manager.expiring_below()
        if holder is None and below is not None and tag.id < below:
            raise self._refuse(name, tag, verb)

    def _verify_or_remove(self, name: str, path: str, tag: Snapshot, holder: str | None) -> None:
        """After writing ``path``: keep it if it is protected, else delete it and raise. If the
        check itself fails, the unverified tag is deleted too (best effort) and the error raised."""
        try:
            ok = self._protected(tag, holder)
        except BaseException:
            with contextlib.suppress(StorageError):
                self._table.file_io.delete(path)
            raise
        if not ok:
            with contextlib.suppress(FileNotFoundStorageError):
                self._table.file_io.delete(path)
            raise self._refuse(name, tag)

    def _files_exist(self, tag: Snapshot) -> bool:
        """Every file ``tag`` references exists (its manifests, then its data files)."""
        table, io = self._table, self._table.file_io
        try:
            entries = table.manifest_io.live_entries(tag)
        except (SnapshotNotFoundError, FileNotFoundStorageError):
            return False
        path_of = entry_path_resolver(table)
        return all(io.exists(p) for p in metadata_files(table, tag)) and all(io.exists(path_of(e)) for e in entries)

    # -- the verbs ---------------------------------------------------------------------------------

    def create(self, name: str, *, snapshot_id: int | None = None, timestamp_millis: int | None = None,
               time_retained: str | None = None, ignore_if_exists: bool = False) -> Snapshot:
        """Tag a snapshot (default: the latest; or the first committed at or after a time).

        Raises :class:`TagTargetExpiringError` (nothing created) when an expiry running at the same
        time is deleting the snapshot; tagging the latest snapshot again then succeeds."""
        self._table.capabilities.require(Operation.HISTORY)
        validate_name("tag", name)
        target, holder = self._target(snapshot_id, timestamp_millis)
        tagged = self._tagged(target, time_retained)
        self._precheck(name, tagged, holder)
        path = self._manager.tag_path(name)
        if not self._table.file_io.create_if_absent(path, tagged.to_json()):
            if ignore_if_exists:
                return self.get(name)
            raise TagAlreadyExistsError(f"tag {name!r} already exists")
        crash_point("create-tag:after-tag-file")
        self._verify_or_remove(name, path, tagged, holder)
        return tagged

    def replace(self, name: str, *, snapshot_id: int | None = None, time_retained: str | None = None) -> Snapshot:
        """Point an existing tag at another snapshot.

        If an expiry is deleting the new snapshot, the tag goes back to its old snapshot and
        :class:`TagTargetExpiringError` is raised; if the old snapshot's files cannot be proven
        whole either (an expiry may have planned while the tag pointed elsewhere), the tag is
        deleted rather than left pointing at missing files, and the error says so."""
        self._table.capabilities.require(Operation.HISTORY)
        self.get(name)
        path = self._manager.tag_path(name)
        try:
            old_bytes = self._table.file_io.read_bytes(path)
        except FileNotFoundStorageError:
            raise TagNotFoundError(f"table {self._table.identifier} has no tag {name!r}") from None
        old = Snapshot.from_json(old_bytes, path)
        target, holder = self._target(snapshot_id, None)
        tagged = self._tagged(target, time_retained)
        self._precheck(name, tagged, holder, "replaced (it still holds its old snapshot)")
        self._table.file_io.write_bytes(path, tagged.to_json())
        try:
            ok = self._protected(tagged, holder)
        except StorageError:
            ok = False
        if ok:
            return tagged
        self._table.file_io.write_bytes(path, old_bytes)  # back to the old snapshot, then prove it whole
        if self._protected(old, None) or (self._table.snapshot_manager.expiring_below() is None
                                          and self._files_exist(old)):
            raise self._refuse(name, tagged, "replaced (it still holds its old snapshot)")
        with contextlib.suppress(FileNotFoundStorageError):
            self._table.file_io.delete(path)
        raise TagTargetExpiringError(
            f"table {self._table.identifier}: tag {name!r} was not replaced and was removed: snapshot "
            f"{tagged.id} is being expired, and the files of its old snapshot {old.id} may be too")

    def rename(self, old: str, new: str) -> None:
        """Rename a tag: the new tag file first, then the old one goes (every expiry sees one of
        them; the old tag protects the new one while it exists)."""
        self._table.capabilities.require(Operation.HISTORY)
        tag = self.get(old)
        validate_name("tag", new)
        path = self._manager.tag_path(new)
        if not self._table.file_io.create_if_absent(path, tag.to_json()):
            raise TagAlreadyExistsError(f"tag {new!r} already exists")
        self._verify_or_remove(new, path, tag, old)
        self._table.file_io.delete(self._manager.tag_path(old))

    def delete(self, name: str, *, dry_run: bool = False) -> TagDeletion:
        """Delete a tag; if its snapshot expired, also the files no neighbour needs."""
        self._table.capabilities.require(Operation.HISTORY)
        tag = self.get(name)
        freed = self._unneeded_files(name, tag)
        if not dry_run:
            # the tag file first: a crash then leaves only orphans, never a tag with missing files
            self._table.file_io.delete(self._manager.tag_path(name))
            crash_point("delete-tag:after-tag-file")
            if freed:  # then look again: a tag created meanwhile from this one keeps what it needs
                # (its creator checks that this tag still exists after writing its own: one of
                # the two sees the other)
                try:
                    again: set[str] = set(self._unneeded_files(name, tag))
                except (SnapshotNotFoundError, FileNotFoundStorageError):
                    again = set()  # another deletion of this tag took its files: nothing is left to free
                freed = [p for p in freed if p in again]
            for i, path in enumerate(freed):
                with contextlib.suppress(FileNotFoundStorageError):
                    self._table.file_io.delete(path)
                if i == len(freed) // 2:
                    crash_point("delete-tag:files")
        return TagDeletion(name=name, snapshot_id=tag.id, freed_files=tuple(freed), dry_run=dry_run)

    def _unneeded_files(self, name: str, tag: Snapshot) -> builtins.list[str]:
        """The files of ``tag`` no neighbour needs. A neighbour that an expiry or a tag deletion
        removes meanwhile (with its files) is looked up again (at most 10 times, backing off, then
        :class:`MaintenanceConflictError`); a neighbour still there with missing files raises."""
        for attempt in range(10):
            try:
                return self._unneeded_files_once(name, tag)
            except _NeighbourVanished:
                time.sleep(0.02 * attempt)  # let the expiry that takes the neighbour finish
        raise MaintenanceConflictError(f"table {self._table.identifier}: the neighbours of tag {name!r} kept "
                                       "disappearing; nothing was deleted, retry")

    def _unneeded_files_once(self, name: str, tag: Snapshot) -> builtins.list[str]:
        table = self._table
        manager = table.snapshot_manager
        listed = {n: t for n, t in self.list().items() if n != name}
        if manager.exists(tag.id) or any(t.id == tag.id for t in listed.values()):
            return []
        before = max(((n, t) for n, t in listed.items() if t.id < tag.id), key=lambda c: c[1].id, default=None)
        after_tag = min(((n, t) for n, t in listed.items() if t.id > tag.id), key=lambda c: c[1].id, default=None)
        earliest = manager.earliest()
        after = ((None, earliest) if earliest is not None and (after_tag is None or earliest.id < after_tag[1].id)
                 else after_tag)
        neighbours = [c for c in (before, after) if c is not None]
        keep = files_of_other_branches(table)  # other branches may share these files
        for neighbour_name, s in neighbours:
            needs = tag_needs(table, neighbour_name, s)
            if needs is None:
                raise _NeighbourVanished()
            keep |= needs
        path_of = entry_path_resolver(table)
        out = [path_of(e) for e in table.manifest_io.live_entries(tag) if e not in keep]
        out += [p for p in metadata_files(table, tag) if p not in keep.metadata]
        if out:  # long-lived changelogs (changelog/changelog-N) keep what they reference
            changelogs = ChangelogManager(table.file_io, table.path, table.branch)
            kept: set[str] = set()
            for cid in changelogs.list_ids():
                changelog = changelogs.try_changelog(cid)
                if changelog is not None:
                    kept |= changelog_files(table, changelog)
            out = [p for p in out if p not in kept]
        return out

    def expire(self, *, older_than_millis: int | None = None, dry_run: bool = False) -> builtins.list[str]:
        """Delete tags whose time-to-live ran out; with ``older_than_millis`` also tags without a
        TTL whose file is older than that (Paimon's ``expire_tags``). Returns the names."""
        self._table.capabilities.require(Operation.HISTORY)
        now = datetime.fromtimestamp(self._clock())

        def due(create_time: list[int] | None, retained: str | None, name: str) -> bool:
            created = _from_java_local_datetime(create_time)
            if created is not None and retained is not None:
                return now > created + timedelta(seconds=float(retained))
            if older_than_millis is None:
                return False
            status = self._table.file_io.status(self._manager.tag_path(name))
            return status.modification_time_millis < self._clock() * 1000 - older_than_millis

        expired = []
        # the listing's cached times-to-live choose the candidates; each is read again to decide
        for name, (create_time, retained) in sorted(self._manager.retention().items()):
            if not due(create_time, retained, name):
                continue
            try:
                tag = self._manager.get(name)
            except SnapshotNotFoundError:
                continue  # deleted meanwhile
            if due(tag.tag_create_time, tag.tag_time_retained, name):
                expired.append(name)
        if not dry_run:
            for name in expired:
                self.delete(name)
        return expired
