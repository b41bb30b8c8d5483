"""Snapshots (``snapshot/snapshot-N`` JSON, version 3), the LATEST/EARLIEST hints, and the markers
of running maintenance (expiry and rollback handshakes).

Hints are only hints: correctness comes from which snapshot files exist. ``try_publish`` is the
one place a snapshot becomes visible, through the storage's atomic create-if-absent.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..errors import (
    BranchNotFoundError,
    CorruptMetadataError,
    FileNotFoundStorageError,
    MaintenanceConflictError,
    SnapshotNotFoundError,
    StorageError,
)
from ..fs import LocalFileIO, join
from .layout import MAIN_BRANCH, branch_root
from .metafile import load_object, read_hint, write_hint

SNAPSHOT_PREFIX = "snapshot-"
#: How long a publish waits for another writer's pending rename onto its snapshot to finish, and
#: the age beyond which such a temp file is a crash's leftover, not a rename in flight.
RENAME_WAIT_SECONDS, STALE_TEMP_MILLIS = 5.0, 10_000
LATEST, EARLIEST = "LATEST", "EARLIEST"
#: ``snapshot/EXPIRING-<end>-<run id>``: an expiry run may be deleting the files of snapshots
#: ``< end`` (paimonflow's own marker; Paimon's readers list only ``snapshot-*`` and the hints).
EXPIRING_PREFIX = "EXPIRING-"
#: ``snapshot/ROLLBACK-<target>-<run id>``: a rollback (or a fast-forward) to ``target`` may be
#: deleting the snapshots, tags and files after it; it holds its marker at most for the lease.
ROLLBACK_PREFIX = "ROLLBACK-"
# ``COMMIT-USER-<user>``: the id of the newest snapshot a commit user committed, written after
# each identified commit. Only a hint (verified before use; Paimon's readers ignore it).
COMMIT_USER_PREFIX = "COMMIT-USER-"
_REMOTE_READ_WINDOW = 16  # snapshots read at once by a long walk on an object store
ROLLBACK_LEASE_MILLIS = 3_600_000


class Published(StrEnum):
    """What became of a publish (:meth:`SnapshotManager.publish`)."""

    LANDED = "landed"      # ours, and still ours once no other rename can be pending
    TAKEN = "taken"        # the id was taken before ours: a lost race
    REPLACED = "replaced"  # ours landed and another writer's rename replaced it: a lost race too


class CommitKind(StrEnum):
    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


# (python name, JSON name, required) in Java's field order.
_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("version", "version", False),
    ("uuid", "uuid", False),
    ("id", "id", True),
    ("schema_id", "schemaId", True),
    ("base_manifest_list", "baseManifestList", True),
    ("base_manifest_list_size", "baseManifestListSize", False),
    ("delta_manifest_list", "deltaManifestList", True),
    ("delta_manifest_list_size", "deltaManifestListSize", False),
    ("changelog_manifest_list", "changelogManifestList", False),
    ("changelog_manifest_list_size", "changelogManifestListSize", False),
    ("index_manifest", "indexManifest", False),
    ("commit_user", "commitUser", True),
    ("writer_version", "writerVersion", False),
    ("commit_identifier", "commitIdentifier", True),
    ("commit_kind", "commitKind", True),
    ("time_millis", "timeMillis", True),
    ("total_record_count", "totalRecordCount", False),
    ("delta_record_count", "deltaRecordCount", False),
    ("changelog_record_count", "changelogRecordCount", False),
    ("watermark", "watermark", False),
    ("statistics", "statistics", False),
    ("properties", "properties", False),
    ("next_row_id", "nextRowId", False),
    ("operation", "operation", False),
)
_ALWAYS_WRITTEN = {"version", "id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser",
                   "commitIdentifier", "commitKind", "timeMillis", "totalRecordCount", "deltaRecordCount"}
_INT_FIELDS = {"version", "id", "schemaId", "baseManifestListSize", "deltaManifestListSize",
               "changelogManifestListSize", "commitIdentifier", "timeMillis", "totalRecordCount",
               "deltaRecordCount", "changelogRecordCount", "watermark", "nextRowId"}
_STR_FIELDS = {"uuid", "baseManifestList", "deltaManifestList", "changelogManifestList", "indexManifest",
               "commitUser", "writerVersion", "statistics", "operation"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    version: int = 3
    uuid: str | None = None
    id: int
    schema_id: int
    base_manifest_list: str
    base_manifest_list_size: int | None = None
    delta_manifest_list: str
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    commit_user: str
    writer_version: str | None = None
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int | None = None
    delta_record_count: int | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: Mapping[str, str] | None = None
    next_row_id: int | None = None
    operation: str | None = None
    # Tag files are snapshots plus these two (Paimon's Tag class); None in snapshot files.
    tag_create_time: Any = None
    tag_time_retained: Any = None

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for attr, key, _ in _FIELDS:
            value = getattr(self, attr)
            if value is None and key not in _ALWAYS_WRITTEN:
                continue
            doc[key] = value.value if isinstance(value, CommitKind) else (dict(value) if isinstance(value, Mapping) else value)
        if self.tag_create_time is not None:
            doc["tagCreateTime"] = self.tag_create_time
        if self.tag_time_retained is not None:
            doc["tagTimeRetained"] = self.tag_time_retained
        return doc

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False).encode("utf-8")

    def same_commit(self, other: Snapshot) -> bool:
        return (self.commit_user, self.commit_identifier, self.commit_kind) == (
            other.commit_user, other.commit_identifier, other.commit_kind)

    @classmethod
    def from_json(cls, data: bytes, path: str = "<snapshot>") -> Snapshot:
        doc = load_object(data, path)
        values: dict[str, Any] = {}
        for attr, key, required in _FIELDS:
            if key not in doc or doc[key] is None:
                if required:
                    raise CorruptMetadataError(path, f"required field {key!r} is missing")
                continue
            value = doc[key]
            if key in _INT_FIELDS and (not isinstance(value, int) or isinstance(value, bool)):
                raise CorruptMetadataError(path, f"field {key!r} must be an integer, found {value!r}")
            if key in _STR_FIELDS and not isinstance(value, str):
                raise CorruptMetadataError(path, f"field {key!r} must be a string, found {value!r}")
            if key in _FILE_NAME_FIELDS and not _is_file_name(value):
                # A reference must stay inside manifest/ (or statistics/): never a path (I7).
                raise CorruptMetadataError(path, f"field {key!r} is not a plain file name: {value!r}")
            if key == "commitKind":
                try:
                    value = CommitKind(value)
                except ValueError:
                    raise CorruptMetadataError(path, f"unknown commitKind {value!r}") from None
            if key == "properties" and not isinstance(value, dict):
                raise CorruptMetadataError(path, "field 'properties' must be an object")
            values[attr] = value
        values["tag_create_time"] = doc.get("tagCreateTime")
        values["tag_time_retained"] = doc.get("tagTimeRetained")
        return cls(**values)


_FILE_NAME_FIELDS = {"baseManifestList", "deltaManifestList", "changelogManifestList", "indexManifest", "statistics"}


def _is_file_name(value: str) -> bool:
    return bool(value) and not value.startswith(".") and not any(c in value for c in "/\\\x00")


def _parse_id(name: str, prefix: str) -> int | None:
    if not name.startswith(prefix):
        return None
    rest = name[len(prefix):]
    return int(rest) if rest.isdigit() else None


class SnapshotManager:
    """The snapshots of one branch of a table."""

    def __init__(self, file_io, table_path: str, branch: str = "main") -> None:
        self.file_io = file_io
        self.table_path = table_path
        self.branch = branch
        self.directory = join(branch_root(table_path, branch), "snapshot")

    def path(self, snapshot_id: int) -> str:
        return join(self.directory, f"{SNAPSHOT_PREFIX}{snapshot_id}")

    # -- reading -----------------------------------------------------------------------------

    def try_snapshot(self, snapshot_id: int) -> Snapshot | None:
        path = self.path(snapshot_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundStorageError:
            return None
        snapshot = Snapshot.from_json(data, path)
        if snapshot.id != snapshot_id:
            raise CorruptMetadataError(path, f"holds snapshot id {snapshot.id}")
        return snapshot

    def snapshot(self, snapshot_id: int) -> Snapshot:
        found = self.try_snapshot(snapshot_id)
        if found is None:
            earliest = self.earliest_id()
            latest = self.latest_id()
            raise SnapshotNotFoundError(
                f"snapshot {snapshot_id} does not exist (the table has snapshots "
                f"{earliest}..{latest})" if latest else f"snapshot {snapshot_id} does not exist (the table has none)"
            )
        return found

    def exists(self, snapshot_id: int) -> bool:
        return self.file_io.exists(self.path(snapshot_id))

    def list_ids(self) -> list[int]:
        ids = []
        for status in self.file_io.list_dir(self.directory):
            sid = _parse_id(status.path.rstrip("/").rsplit("/", 1)[-1], SNAPSHOT_PREFIX)
            if sid is not None:
                ids.append(sid)
        return sorted(ids)

    def _read_hint(self, name: str) -> int | None:
        return read_hint(self.file_io, join(self.directory, name))

    def latest_id(self) -> int | None:
        hint = self._read_hint(LATEST)
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self.list_ids()
        return ids[-1] if ids else None

    def earliest_id(self, *, repair_hint: bool = False) -> int | None:
        """The oldest snapshot's id: the ``EARLIEST`` hint when it holds, else by listing; with
        ``repair_hint`` (writers only) a listing writes the hint, so the next call does not list."""
        hint = self._read_hint(EARLIEST)
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self.list_ids()
        if ids and repair_hint and ids[0] != hint:
            self._write_hint(EARLIEST, ids[0])
        return ids[0] if ids else None

    def latest(self) -> Snapshot | None:
        for _ in range(3):
            sid = self.latest_id()
            if sid is None:
                return None
            found = self.try_snapshot(sid)
            if found is not None:
                return found  # else expired between listing and reading: look again
        return None

    def earliest(self) -> Snapshot | None:
        sid = self.earliest_id()
        return None if sid is None else self.try_snapshot(sid)

    def snapshots(self) -> Iterator[Snapshot]:
        for sid in self.list_ids():
            found = self.try_snapshot(sid)
            if found is not None:
                yield found

    def snapshot_at_or_before_time(self, millis: int) -> Snapshot | None:
        """The newest snapshot committed at or before ``millis`` (binary search over ids)."""
        ids = self.list_ids()
        lo, hi, best = 0, len(ids) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            snap = self.try_snapshot(ids[mid])
            if snap is None:
                ids.pop(mid)
                hi -= 1
                continue
            if snap.time_millis <= millis:
                best, lo = snap, mid + 1
            else:
                hi = mid - 1
        return best

    def known_not_committed(self, commit_user: str, commit_identifier: int, kinds: tuple[CommitKind, ...],
                            *, after: int) -> bool:
        """True only when storage shows no snapshot of ``kinds`` by this commit identity after
        snapshot ``after`` (a failed look-up is not knowing: False). Only then may a writer whose
        commit failed or was interrupted delete the files it wrote for it."""
        try:
            latest = self.latest_id() or 0
            for sid in range(after + 1, latest + 1):
                snap = self.try_snapshot(sid)
                if snap is not None and snap.commit_user == commit_user \
                        and snap.commit_identifier == commit_identifier and snap.commit_kind in kinds:
                    return False
            return True
        except Exception:
            return False

    def find_by_commit(self, commit_user: str, commit_identifier: int, kind: CommitKind, from_id: int) -> Snapshot | None:
        latest = self.latest_id()
        if latest is None:
            return None
        for sid in range(max(from_id, 1), latest + 1):
            snap = self.try_snapshot(sid)
            if snap is not None and snap.commit_user == commit_user and snap.commit_identifier == commit_identifier \
                    and snap.commit_kind == kind:
                return snap
        return None

    def latest_of_user(self, commit_user: str) -> Snapshot | None:
        """The newest snapshot committed by ``commit_user``, walking back from the latest one.

        The user's hint (``COMMIT-USER-<user>``, written after its identified commits) names a
        snapshot of that user: once read and checked (it exists and is that user's), the walk
        stops above it. So the look-up reads the snapshots committed since the user's last
        commit, plus that one: one snapshot when the user committed last (a retry), and every
        retained snapshot for a user without a hint (its first commit, or a hint lost), as
        Paimon's own look-up always does. The walk stops at the first missing (expired) id."""
        latest = self.latest_id()
        if latest is None:
            return None
        floor, found = 0, None
        hinted = self._read_hint(self.user_hint_name(commit_user))
        if hinted is not None and hinted <= latest:
            snap = self.try_snapshot(hinted)
            if snap is not None and snap.commit_user == commit_user:
                floor, found = hinted, snap  # only snapshots above it can be newer ones of the user
        for snap in self._walk_back(latest, floor):
            if snap is None:
                return found  # expired below this point
            if snap.commit_user == commit_user:
                return snap
        return found

    def _walk_back(self, start: int, stop: int) -> Iterator[Snapshot | None]:
        """Snapshots ``start``, ``start - 1``, ... down to ``stop + 1`` (None for a missing one).
        On a local disk one read at a time; on an object store in windows of parallel reads
        (a GET costs milliseconds there), so a long walk costs a fraction of its round trips."""
        window = 1 if isinstance(self.file_io, LocalFileIO) else _REMOTE_READ_WINDOW
        ids = range(start, stop, -1)
        if window == 1:
            yield from (self.try_snapshot(sid) for sid in ids)
            return
        with ThreadPoolExecutor(max_workers=window) as pool:
            for first in range(0, len(ids), window):
                yield from pool.map(self.try_snapshot, ids[first:first + window])

    @staticmethod
    def user_hint_name(commit_user: str) -> str:
        return f"{COMMIT_USER_PREFIX}{commit_user}"

    def write_user_hint(self, snapshot: Snapshot) -> None:
        """Record ``snapshot`` as its commit user's newest (best effort: a hint)."""
        self._write_hint(self.user_hint_name(snapshot.commit_user), snapshot.id)

    # -- writing -----------------------------------------------------------------------------

    def try_publish(self, snapshot: Snapshot) -> bool:
        """Atomically create ``snapshot-<id>``. True if ours landed and is still ours; False if
        the id was taken (or another writer's rename replaced ours: :meth:`publish` tells which)."""
        return self.publish(snapshot) is Published.LANDED

    def publish(self, snapshot: Snapshot) -> Published:
        """Atomically create ``snapshot-<id>`` and confirm it is still ours.

        A storage error whose outcome is unclear is resolved by reading the file back: if it
        holds our commit, it landed. Otherwise the error propagates (outcome unknown).

        Apache Paimon's Java ``LocalFileIO`` publishes by writing ``.snapshot-<id>.<uuid>.tmp``,
        checking that ``snapshot-<id>`` is absent and renaming over it: a file another process
        creates between its check and its rename is replaced. Such a rename has its temp file in
        place before our create, so once no such temp file is left the file is final: read back,
        it is ours (LANDED) or was REPLACED (nothing of ours is in the history; the commit is
        retried like a lost race).
        """
        path = self.path(snapshot.id)
        try:
            created = self.file_io.create_if_absent(path, snapshot.to_json())
        except StorageError:
            existing = self.try_snapshot(snapshot.id)
            if existing is not None and existing.uuid == snapshot.uuid and existing.same_commit(snapshot):
                created = True
            else:
                raise
        if not created:
            return Published.TAKEN
        if not self._still_ours(snapshot):
            return Published.REPLACED
        if self.branch != MAIN_BRANCH:
            self._check_branch_alive(snapshot, path)
        self._write_hint(LATEST, snapshot.id)
        return Published.LANDED

    def _still_ours(self, snapshot: Snapshot) -> bool:
        """Wait until no other writer's rename onto ``snapshot-<id>`` can be pending (no fresh
        ``.snapshot-<id>.*.tmp``; bounded by :data:`RENAME_WAIT_SECONDS`), then read it back."""
        prefix, deadline = f".{SNAPSHOT_PREFIX}{snapshot.id}.", time.monotonic() + RENAME_WAIT_SECONDS
        while time.monotonic() < deadline:
            now = time.time() * 1000
            pending = [s for s in self.file_io.list_hidden(self.directory, prefix)
                       if s.path.endswith(".tmp") and now - s.modification_time_millis < STALE_TEMP_MILLIS]
            if not pending:
                break
            time.sleep(0.001)
        existing = self.try_snapshot(snapshot.id)
        return existing is not None and existing.uuid == snapshot.uuid and existing.same_commit(snapshot)

    def _check_branch_alive(self, snapshot: Snapshot, path: str) -> None:
        """After publishing to a branch: the branch must still exist. Its deletion removes the
        schemas first, then the directory; so either this check sees the schema gone (the
        snapshot is taken back, nothing is committed) or the deletion's removal of the directory
        comes after the publish and takes the snapshot with it."""
        schema = join(branch_root(self.table_path, self.branch), "schema", f"schema-{snapshot.schema_id}")
        if self.file_io.exists(schema):
            return
        with contextlib.suppress(FileNotFoundStorageError):
            self.file_io.delete(path)
        raise BranchNotFoundError(f"branch {self.branch!r} was deleted while this commit was published; "
                                  "nothing was committed")

    def _write_hint(self, name: str, value: int) -> None:
        write_hint(self.file_io, join(self.directory, name), value)

    def write_earliest_hint(self, snapshot_id: int) -> None:
        self._write_hint(EARLIEST, snapshot_id)

    # -- maintenance markers: the handshakes of expiry and rollback (``core/maintenance/expire.py``,
    # ``core/maintenance/tags.py``). One listing of ``snapshot/`` answers both kinds.

    def markers(self) -> Markers:
        """The expiry and rollback markers present now (one directory listing).

        Stale markers are set aside (and removed by the next expiry or rollback): a rollback's
        past its lease, and an expiry's whose kept snapshot ``end`` is gone or was replaced. That
        expiry was overtaken by a rollback below ``end`` before it deleted anything (the
        handshake in ``maintenance/expire.py``), so its marker condemns nothing."""
        now = time.time() * 1000
        expiring: dict[str, int] = {}
        rollbacks: dict[str, int] = {}
        stale: list[str] = []
        # two prefix listings: what they cost does not grow with the snapshots kept (object
        # stores list only the markers; a local disk stats only them)
        found_markers = [*self.file_io.list_files(self.directory, EXPIRING_PREFIX),
                         *self.file_io.list_files(self.directory, ROLLBACK_PREFIX)]
        for status in found_markers:
            path = status.path.rstrip("/")
            name = path.rsplit("/", 1)[-1]
            for prefix, found in ((EXPIRING_PREFIX, expiring), (ROLLBACK_PREFIX, rollbacks)):
                number = name[len(prefix):].split("-", 1)[0] if name.startswith(prefix) else ""
                if not number.isdigit():
                    continue
                if prefix == ROLLBACK_PREFIX and now - status.modification_time_millis > ROLLBACK_LEASE_MILLIS:
                    stale.append(path)  # its run crashed long ago: ignored, removed by the next rollback
                elif prefix == EXPIRING_PREFIX and self._overtaken(path, int(number)):
                    stale.append(path)
                else:
                    found[path] = int(number)
        return Markers(expiring=expiring, rollbacks=rollbacks, stale=tuple(stale))

    def _overtaken(self, marker: str, end: int) -> bool:
        """Whether an expiry marker's kept snapshot ``end`` is gone or replaced (see :meth:`markers`).
        A marker without the kept snapshot's identity (an older writer) is never stale."""
        try:
            lines = self.file_io.read_bytes(marker).decode("ascii", "replace").splitlines()
        except FileNotFoundStorageError:
            return True  # removed meanwhile: its run finished
        if len(lines) < 2:
            return False
        kept = self.try_snapshot(end)
        return kept is None or kept.base_manifest_list != lines[1]

    def begin_expiry(self, end: int, keeps: Snapshot | None = None) -> str:
        """Publish that this run may delete the files of snapshots ``< end``, keeping snapshot
        ``keeps`` (``end``: its identity lets a rollback's overtaking be told); returns the
        marker's path. Written before expiry lists the tags it protects, so a tag created later
        sees it."""
        return self._write_marker(EXPIRING_PREFIX, end, keeps.base_manifest_list if keeps is not None else None)

    def expiring_markers(self) -> Mapping[str, int]:
        """``{marker path: end}`` of every expiry run that has not finished (or crashed)."""
        return self.markers().expiring

    def expiring_below(self) -> int | None:
        """The highest ``end`` any unfinished expiry run published: snapshots below it may be
        losing their files (None: no expiry is running)."""
        return self.markers().expiring_below

    def end_expiry(self, marker: str | None) -> None:
        """Remove this run's marker, and those of crashed runs that no existing snapshot is below
        any more (then "the snapshot no longer exists" stops a tag on their snapshots instead)."""
        now = self.markers()
        if marker is None and not now.expiring and not now.stale:
            return  # nothing to remove: no listing of the snapshots (each commit's expiry ends here)
        ids = self.list_ids()
        lowest = ids[0] if ids else None
        for path, end in now.expiring.items():
            if path == marker or (lowest is not None and end <= lowest):
                self._delete_marker(path)
        for path in now.stale:
            if path.rsplit("/", 1)[-1].startswith(EXPIRING_PREFIX) or path == marker:
                self._delete_marker(path)
        if marker is not None:
            self._delete_marker(marker)

    def begin_rollback(self, target: int) -> str:
        """Publish that this run may delete what comes after snapshot ``target``; returns the
        marker's path. Its storage time starts its lease."""
        return self._write_marker(ROLLBACK_PREFIX, target)

    def rollback_markers(self) -> Mapping[str, int]:
        """``{marker path: target}`` of every rollback that has not finished within its lease."""
        return self.markers().rollbacks

    def rolling_back_to(self) -> int | None:
        """The lowest target of a running rollback: snapshots above it may be losing their files
        (None: no rollback is running)."""
        return self.markers().rolling_back_to

    def claim_rollback(self, target: int, what: str) -> str:
        """The rollback side of the handshake: publish the marker, *then* refuse (removing it) if
        an expiry may be deleting snapshots at or below ``target``, or a rollback to another
        target is running. Returns the marker's path (release it with :meth:`end_rollback`)."""
        marker = self.begin_rollback(target)
        now = self.markers()
        others = sorted(t for path, t in now.rollbacks.items() if path != marker and t != target)
        refusal = None
        if now.expiring_below is not None and now.expiring_below > target:
            refusal = (f"{what}: an expiry of the snapshots below {now.expiring_below} is running (or was "
                       "interrupted: run expire_snapshots again); retry when it is done")
        elif others:
            refusal = (f"{what}: a rollback to snapshot {others[0]} is running (or was interrupted less than "
                       f"{ROLLBACK_LEASE_MILLIS // 60_000} minutes ago: run it again); retry when it is done")
        if refusal is not None:
            self._delete_marker(marker)
            raise MaintenanceConflictError(refusal)
        return marker

    def end_rollback(self, target: int) -> None:
        """Remove the markers of rollbacks to ``target`` (this run's, and that of a crashed run
        this one has just completed), and those past their lease."""
        now = self.markers()
        for path in [*(p for p, t in now.rollbacks.items() if t == target), *now.stale]:
            self._delete_marker(path)

    def _write_marker(self, prefix: str, number: int, detail: str | None = None) -> str:
        path = join(self.directory, f"{prefix}{int(number)}-{uuid.uuid4().hex}")
        text = str(int(number)) if detail is None else f"{int(number)}\n{detail}"
        self.file_io.write_bytes(path, text.encode("ascii"))
        return path

    def _delete_marker(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundStorageError):
            self.file_io.delete(path)


@dataclass(frozen=True, slots=True)
class Markers:
    """What one listing of ``snapshot/`` shows of running maintenance: ``{path: end}`` of expiry
    runs, ``{path: target}`` of rollbacks within their lease, and stale markers (rollbacks past
    their lease, expiries a rollback overtook)."""

    expiring: Mapping[str, int]
    rollbacks: Mapping[str, int]
    stale: tuple[str, ...] = ()

    @property
    def expiring_below(self) -> int | None:
        return max(self.expiring.values(), default=None)

    @property
    def rolling_back_to(self) -> int | None:
        return min(self.rollbacks.values(), default=None)
