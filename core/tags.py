"""Tags and rollback (Apache Paimon's ``TagManager``, ``TagDeletion``, ``TagTimeExpire``,
``RollbackHelper``).

A tag is ``tag/tag-<name>``: the snapshot's JSON, plus ``tagCreateTime`` (a Java
``LocalDateTime`` array) and ``tagTimeRetained`` (a ``Duration`` in decimal seconds) when it has a
time-to-live. Deleting a tag whose snapshot expired frees the files no neighbour (the previous
tag, and the next tag or earliest snapshot) still needs. Rollback drops every snapshot and tag
after the target; snapshot ids are then reused by the next commits.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from .branch import files_of_other_branches
from .errors import (
    FileNotFoundStorageError,
    InvalidArgumentError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from .expire import _metadata_files
from .faults import crash_point
from .fs import join
from .manifest import FileKind
from .names import validate_name
from .options import parse_duration_millis
from .snapshot import Snapshot


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

    def __init__(self, table, clock: Callable[[], float] = time.time) -> None:
        self._table, self._clock = table, clock
        self._manager = table.tag_manager

    def list(self) -> dict[str, Snapshot]:
        return self._manager.list_tags()

    def get(self, name: str) -> Snapshot:
        try:
            return self._manager.get(name)
        except SnapshotNotFoundError:
            raise TagNotFoundError(f"table {self._table.identifier} has no tag {name!r}") from None

    def _target(self, snapshot_id: int | None, timestamp_millis: int | None) -> Snapshot:
        manager = self._table.snapshot_manager
        if snapshot_id is not None and timestamp_millis is not None:
            raise InvalidArgumentError("give a snapshot id or a timestamp, not both")
        if timestamp_millis is not None:  # the first snapshot (or tag) committed at or after the time
            candidates = [s for s in manager.snapshots() if s.time_millis >= timestamp_millis]
            candidates += [t for t in self.list().values() if t.time_millis >= timestamp_millis]
            if not candidates:
                raise SnapshotNotFoundError(f"no snapshot committed at or after {timestamp_millis}")
            return min(candidates, key=lambda s: s.time_millis)
        if snapshot_id is None:
            latest = manager.latest()
            if latest is None:
                raise SnapshotNotFoundError(f"table {self._table.identifier} has no snapshot to tag")
            return latest
        found = manager.try_snapshot(int(snapshot_id))
        if found is None:  # an expired snapshot another tag still holds
            found = next((t for t in self.list().values() if t.id == int(snapshot_id)), None)
        if found is None:
            raise SnapshotNotFoundError(f"table {self._table.identifier} has no snapshot {snapshot_id}")
        return found

    def _tagged(self, snapshot: Snapshot, time_retained: str | None) -> Snapshot:
        plain = replace(snapshot, tag_create_time=None, tag_time_retained=None)
        retained = time_retained if time_retained is not None else self._table.schema.options.get(
            "tag.default-time-retained")
        if retained is None:
            return plain
        millis = parse_duration_millis(retained)
        now = datetime.fromtimestamp(self._clock())
        return replace(plain, tag_create_time=_java_local_datetime(now), tag_time_retained=millis / 1000)

    def create(self, name: str, *, snapshot_id: int | None = None, timestamp_millis: int | None = None,
               time_retained: str | None = None, ignore_if_exists: bool = False) -> Snapshot:
        """Tag a snapshot (default: the latest; or the first committed at or after a time)."""
        validate_name("tag", name)
        tagged = self._tagged(self._target(snapshot_id, timestamp_millis), time_retained)
        if not self._table.file_io.create_if_absent(self._manager.tag_path(name), tagged.to_json()):
            if ignore_if_exists:
                return self.get(name)
            raise TagAlreadyExistsError(f"tag {name!r} already exists")
        return tagged

    def replace(self, name: str, *, snapshot_id: int | None = None, time_retained: str | None = None) -> Snapshot:
        """Point an existing tag at another snapshot."""
        self.get(name)
        tagged = self._tagged(self._target(snapshot_id, None), time_retained)
        self._table.file_io.write_bytes(self._manager.tag_path(name), tagged.to_json())
        return tagged

    def rename(self, old: str, new: str) -> None:
        tag = self.get(old)
        validate_name("tag", new)
        if not self._table.file_io.create_if_absent(self._manager.tag_path(new), tag.to_json()):
            raise TagAlreadyExistsError(f"tag {new!r} already exists")
        self._table.file_io.delete(self._manager.tag_path(old))

    def delete(self, name: str, *, dry_run: bool = False) -> TagDeletion:
        """Delete a tag; if its snapshot expired, also the files no neighbour needs."""
        tag = self.get(name)
        freed = self._unneeded_files(name, tag)
        if not dry_run:
            # the tag file first: a crash then leaves only orphans, never a tag with missing files
            self._table.file_io.delete(self._manager.tag_path(name))
            crash_point("delete-tag:after-tag-file")
            for i, path in enumerate(freed):
                with contextlib.suppress(FileNotFoundStorageError):
                    self._table.file_io.delete(path)
                if i == len(freed) // 2:
                    crash_point("delete-tag:files")
        return TagDeletion(name=name, snapshot_id=tag.id, freed_files=tuple(freed), dry_run=dry_run)

    def _unneeded_files(self, name: str, tag: Snapshot) -> list[str]:
        table = self._table
        manager = table.snapshot_manager
        others = {n: t for n, t in self.list().items() if n != name}
        if manager.exists(tag.id) or any(t.id == tag.id for t in others.values()):
            return []
        before = max((t for t in others.values() if t.id < tag.id), key=lambda t: t.id, default=None)
        after_tag = min((t for t in others.values() if t.id > tag.id), key=lambda t: t.id, default=None)
        earliest = manager.earliest()
        after = earliest if earliest is not None and (after_tag is None or earliest.id < after_tag.id) else after_tag
        neighbours = [s for s in (before, after) if s is not None]
        others = files_of_other_branches(table)  # other branches may share these files
        keep_data, keep_meta = set(others.data), set(others.metadata)
        for s in neighbours:
            keep_data |= {(e.partition, e.bucket, e.file.file_name) for e in table.manifest_io.live_entries(s)}
            keep_meta |= set(_metadata_files(table, s))
        out = []
        partition_types = [table.arrow_schema.field(k).type for k in table.partition_keys]
        from .binary_row import deserialize_row
        from .write import bucket_directory

        for e in table.manifest_io.live_entries(tag):
            if (e.partition, e.bucket, e.file.file_name) not in keep_data:
                values = tuple(deserialize_row(e.partition, partition_types))
                out.append(e.file.external_path or join(
                    bucket_directory(table.path, table.schema, table.options, values, e.bucket), e.file.file_name))
        out += [p for p in _metadata_files(table, tag) if p not in keep_meta]
        return out

    def expire(self, *, older_than_millis: int | None = None, dry_run: bool = False) -> list[str]:
        """Delete tags whose time-to-live ran out; with ``older_than_millis`` also tags without a
        TTL whose file is older than that (Paimon's ``expire_tags``). Returns the names."""
        now = datetime.fromtimestamp(self._clock())
        expired = []
        for name, tag in sorted(self.list().items()):
            created = _from_java_local_datetime(tag.tag_create_time)
            if created is not None and tag.tag_time_retained is not None:
                if now > created + timedelta(seconds=float(tag.tag_time_retained)):
                    expired.append(name)
            elif older_than_millis is not None:
                status = self._table.file_io.status(self._manager.tag_path(name))
                if status.modification_time_millis < self._clock() * 1000 - older_than_millis:
                    expired.append(name)
        if not dry_run:
            for name in expired:
                self.delete(name)
        return expired


@dataclass(frozen=True, slots=True, kw_only=True)
class Rollback:
    target: int
    removed_snapshots: tuple[int, ...]
    removed_tags: tuple[str, ...]
    deleted_files: int


def rollback(table, *, snapshot_id: int | None = None, tag: str | None = None,
             timestamp_millis: int | None = None) -> Rollback:
    """Roll the table back to a snapshot, a tag or the last snapshot at or before a time.

    Snapshots and tags after the target go (newest first, the snapshot files before their data
    so a reader never meets a snapshot with missing files); the target becomes the latest, and
    the next commit reuses the following id. Rolling back to a tag whose snapshot expired brings
    that snapshot back from the tag.
    """
    manager = table.snapshot_manager
    given = sum(x is not None for x in (snapshot_id, tag, timestamp_millis))
    if given != 1:
        raise InvalidArgumentError("give exactly one of snapshot_id, tag and timestamp_millis")
    if tag is not None:
        target = Tags(table).get(tag)
        if not manager.exists(target.id):
            plain = replace(target, tag_create_time=None, tag_time_retained=None)
            table.file_io.write_bytes(manager.path(target.id), plain.to_json())
    elif timestamp_millis is not None:
        target = manager.snapshot_at_or_before_time(int(timestamp_millis))
        if target is None:
            raise SnapshotNotFoundError(f"no snapshot at or before {timestamp_millis}")
    else:
        target = manager.snapshot(int(snapshot_id))
    later = [sid for sid in manager.list_ids() if sid > target.id]
    tags = Tags(table)
    later_tags = sorted(n for n, t in tags.list().items() if t.id > target.id)
    # what the removed snapshots added that the target does not hold
    keep_data = {(e.partition, e.bucket, e.file.file_name) for e in table.manifest_io.live_entries(target)}
    keep_meta = set(_metadata_files(table, target))
    others = files_of_other_branches(table)  # other branches may share these files
    keep_data |= others.data
    keep_meta |= others.metadata
    for t in tags.list().values():
        if t.id <= target.id:
            keep_meta |= set(_metadata_files(table, t))
            keep_data |= {(e.partition, e.bucket, e.file.file_name) for e in table.manifest_io.live_entries(t)}
    doomed: list[str] = []
    partition_types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    from .binary_row import deserialize_row
    from .write import bucket_directory

    def path_of(e) -> str:
        values = tuple(deserialize_row(e.partition, partition_types))
        return e.file.external_path or join(bucket_directory(table.path, table.schema, table.options, values,
                                                             e.bucket), e.file.file_name)

    first_removed = next((s for s in map(manager.try_snapshot, later) if s is not None), None)
    if first_removed is not None:  # files added between the target and it (their snapshots expired)
        with contextlib.suppress(FileNotFoundStorageError):
            doomed += [path_of(e) for e in table.manifest_io.live_entries(first_removed)
                       if (e.partition, e.bucket, e.file.file_name) not in keep_data]
    for sid in later:
        snap = manager.try_snapshot(sid)
        if snap is None:
            continue
        mio = table.manifest_io
        with contextlib.suppress(FileNotFoundStorageError):
            for m in mio._lists.read(snap.delta_manifest_list):
                for e in mio._files.read(m.file_name):
                    if e.kind is FileKind.ADD and (e.partition, e.bucket, e.file.file_name) not in keep_data:
                        doomed.append(path_of(e))
        with contextlib.suppress(FileNotFoundStorageError):
            doomed += [path_of(e) for e in mio.changelog_entries(snap)]
        doomed += [p for p in _metadata_files(table, snap) if p not in keep_meta]
    for name in later_tags:
        table.file_io.delete(table.tag_manager.tag_path(name))
    for sid in sorted(later, reverse=True):
        with contextlib.suppress(FileNotFoundStorageError):
            table.file_io.delete(manager.path(sid))
    manager._write_hint("LATEST", target.id)
    if (manager.earliest_id() or target.id) > target.id:
        manager.write_earliest_hint(target.id)
    unique = list(dict.fromkeys(doomed))
    for path in unique:
        with contextlib.suppress(FileNotFoundStorageError):
            table.file_io.delete(path)
    return Rollback(target=target.id, removed_snapshots=tuple(later), removed_tags=tuple(later_tags),
                    deleted_files=len(unique))
