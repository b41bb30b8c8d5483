"""Branches (Apache Paimon's ``FileSystemBranchManager``): ``<table>/branch/branch-<name>/`` holds
a branch's own ``schema/``, ``snapshot/``, ``tag/``, ``consumer/`` (and ``changelog/``); its data
files, manifests, index and statistics files live in the table's directories beside main's.

* **create** empty (the main branch's schemas, no snapshot) or from a tag (the tag's snapshot
  becomes the branch's first snapshot, the tag is copied into the branch, and the schemas up to
  the tag's schema). Files are written newest schema last-but-first so the branch appears with
  its latest schema; a creation interrupted by a crash is completed by running it again.
* **delete** removes the branch directory (schemas first, so the branch disappears at once).
  Data files only the branch wrote become orphans, which orphan removal collects.
* **fast-forward** makes main the branch: main's snapshots, tags and schemas from the branch's
  first snapshot on are replaced by the branch's. Main's removed snapshots' files become orphans.
* Every maintenance operation is aware of every branch: expiry, tag deletion and rollback of one
  branch never delete a file another branch still references (:func:`files_of_other_branches`),
  and orphan removal keeps what any branch references.

A branch exists when its schema directory holds a schema (Paimon: when its directory exists);
names follow :func:`~paimonflow.core.names.validate_name`, plus Paimon's rules (not ``main``,
not all digits).
"""

from __future__ import annotations

import builtins  # BranchManager.list shadows the builtin inside the class
import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..errors import (
    BranchAlreadyExistsError,
    BranchNotFoundError,
    FileNotFoundStorageError,
    InvalidArgumentError,
    InvalidNameError,
    MaintenanceConflictError,
    SnapshotNotFoundError,
)
from ..faults import crash_point
from ..fs import join
from ..meta.capabilities import Operation
from ..meta.context import TableMeta
from ..meta.layout import MAIN_BRANCH, branch_root
from ..meta.references import walk_files
from ..meta.schema_manager import SchemaManager, existing_branches
from ..meta.snapshots import Snapshot, SnapshotManager
from ..meta.tags import TagManager
from ..names import validate_name
from .tags import Tags


def validate_branch_name(name: object) -> str:
    """A name a new branch may take: a valid name that is not ``main`` and not all digits."""
    name = validate_name("branch", name)
    if name == MAIN_BRANCH:
        raise InvalidNameError("branch", name, "is the main branch and cannot be created, deleted or renamed")
    if name.isdigit():
        raise InvalidNameError("branch", name, "must not be all digits (it would read as a snapshot id)")
    return name


def open_branch(table: TableMeta, branch: str):
    """``table`` seen through ``branch``; raises BranchNotFoundError if the branch does not exist."""
    branch = validate_name("branch", branch)
    if branch == table.branch:
        return table
    schema = SchemaManager(table.file_io, table.path, branch).latest()
    if schema is None:
        raise BranchNotFoundError(f"branch {branch!r} of table {table.identifier!r} does not exist")
    base = table.identifier.split("$", 1)[0]
    identifier = base if branch == MAIN_BRANCH else f"{base}$branch_{branch}"
    # the same class as ``table`` (the public face, which this layer does not import)
    face: Any = type(table)
    return face(file_io=table.file_io, path=table.path, identifier=identifier, schema=schema, branch=branch)


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchInfo:
    name: str
    create_time_millis: int  # modification time of the branch's first schema file
    from_tag: str | None
    earliest_snapshot: int | None
    latest_snapshot: int | None

    def to_dict(self) -> dict[str, object]:
        return {"branch": self.name, "create_time": datetime.fromtimestamp(self.create_time_millis / 1000, UTC)
                .isoformat(timespec="seconds"), "from_tag": self.from_tag,
                "earliest_snapshot": self.earliest_snapshot, "latest_snapshot": self.latest_snapshot}


@dataclass(frozen=True, slots=True, kw_only=True)
class FastForward:
    branch: str
    from_snapshot: int  # main's snapshots from this id on were replaced
    removed_snapshots: tuple[int, ...]
    copied_snapshots: tuple[int, ...]
    removed_tags: tuple[str, ...]
    copied_tags: tuple[str, ...]


class BranchManager:
    """The branches of one table (the object works from any branch of it)."""

    def __init__(self, table: TableMeta) -> None:
        self._table = table
        self._io = table.file_io
        self._path = table.path

    def _root(self, name: str) -> str:
        return branch_root(self._path, name)

    def _schemas(self, name: str) -> SchemaManager:
        return SchemaManager(self._io, self._path, name)

    # -- reading -------------------------------------------------------------------------------

    def list(self) -> list[str]:
        """Names of the existing branches (main not included), sorted."""
        return existing_branches(self._io, self._path)

    def exists(self, name: str) -> bool:
        name = validate_name("branch", name)
        return name == MAIN_BRANCH or bool(self._schemas(name).list_ids())

    def info(self, name: str) -> BranchInfo:
        name = validate_name("branch", name)
        ids = self._schemas(name).list_ids()
        if not ids:
            raise BranchNotFoundError(f"branch {name!r} does not exist")
        created = self._io.status(self._schemas(name).path(ids[0])).modification_time_millis
        snapshots = SnapshotManager(self._io, self._path, name)
        tags = TagManager(self._io, self._path, name).list_tags()
        earliest = snapshots.earliest_id()
        from_tag = next((n for n, t in sorted(tags.items()) if earliest is not None and t.id == earliest), None)
        return BranchInfo(name=name, create_time_millis=created, from_tag=from_tag,
                          earliest_snapshot=earliest, latest_snapshot=snapshots.latest_id())

    # -- create / delete -----------------------------------------------------------------------

    def create(self, name: str, *, tag: str | None = None, ignore_if_exists: bool = False):
        """Create branch ``name`` from ``tag`` (or empty, with main's latest schema) and return
        the table seen through it. Creating an existing branch again from the same source
        completes an interrupted creation and is otherwise a no-op; from a different source it
        raises BranchAlreadyExistsError (unless ``ignore_if_exists``)."""
        self._table.capabilities.require(Operation.HISTORY)
        name = validate_branch_name(name)
        source = open_branch(self._table, MAIN_BRANCH)
        tagged = Tags(source).get(tag) if tag is not None else None
        if self.exists(name) and not self._same_source(name, tagged):
            if ignore_if_exists:
                return open_branch(self._table, name)
            origin = f"tag {tag!r}" if tag is not None else "nothing (an empty branch)"
            raise BranchAlreadyExistsError(f"branch {name!r} already exists and was not created from {origin}")
        main_schemas = self._schemas(MAIN_BRANCH)
        if tag is not None and tagged is not None:  # (the one comes with the other)
            from ..meta.references import restored_from_tag

            snapshot = restored_from_tag(source, tagged)
            top_schema = snapshot.schema_id
            self._io.write_bytes(TagManager(self._io, self._path, name).tag_path(tag), tagged.to_json())
            branch_snapshots = SnapshotManager(self._io, self._path, name)
            if not branch_snapshots.exists(snapshot.id):
                self._io.create_if_absent(branch_snapshots.path(snapshot.id), snapshot.to_json())
            branch_snapshots._write_hint("LATEST", snapshot.id)
            branch_snapshots.write_earliest_hint(snapshot.id)
            crash_point("create-branch:before-schemas")
        else:
            latest = main_schemas.latest()
            top_schema = latest.id if latest is not None else 0
        target = self._schemas(name)
        # newest first: the branch appears with its latest schema; older ones follow at once
        for schema_id in sorted((i for i in main_schemas.list_ids() if i <= top_schema), reverse=True):
            if not self._io.exists(target.path(schema_id)):
                self._io.create_if_absent(target.path(schema_id), self._io.read_bytes(main_schemas.path(schema_id)))
        if tag is not None and tagged is not None:
            self._verify_source(name, source, tag, tagged)
        return open_branch(self._table, name)

    def _verify_source(self, name: str, source, tag: str, tagged: Snapshot) -> None:
        """After the branch is visible: its tag must still be there, and no rollback of main may be
        removing it. A tag deletion or rollback that listed the branches before it appeared may
        free the tag's files; either it sees the branch, or this check sees the tag gone or the
        rollback's marker (each writes before it reads), and the branch is deleted again."""
        try:
            now = source.tag_manager.get(tag)
        except SnapshotNotFoundError:
            now = None
        rolling = source.snapshot_manager.rolling_back_to()
        if now is not None and now.id == tagged.id and (rolling is None or tagged.id <= rolling):
            return
        with contextlib.suppress(FileNotFoundStorageError, BranchNotFoundError):
            self.delete(name)
        raise MaintenanceConflictError(
            f"branch {name!r} was not created: tag {tag!r} was deleted, changed or rolled back meanwhile")

    def _same_source(self, name: str, tagged: Snapshot | None) -> bool:
        """Whether existing branch ``name`` looks like (a possibly interrupted) creation from ``tagged``."""
        snapshots = SnapshotManager(self._io, self._path, name).list_ids()
        if tagged is None:
            return not snapshots
        return snapshots == [tagged.id]

    def delete(self, name: str) -> None:
        """Delete branch ``name`` (idempotent: leftovers of an interrupted deletion go too)."""
        self._table.capabilities.require(Operation.HISTORY)
        name = validate_branch_name(name)
        root = self._root(name)
        if not self._io.exists(root):
            raise BranchNotFoundError(f"branch {name!r} does not exist")
        self._io.delete(join(root, "schema"), recursive=True)  # the branch is gone from here on
        crash_point("delete-branch:after-schemas")
        self._io.delete(root, recursive=True)

    def rename(self, old: str, new: str) -> None:
        """Rename a branch: copy its metadata under the new name, then delete the old one."""
        self._table.capabilities.require(Operation.HISTORY)
        old, new = validate_branch_name(old), validate_branch_name(new)
        if not self.exists(old):
            raise BranchNotFoundError(f"branch {old!r} does not exist")
        if self.exists(new):
            raise BranchAlreadyExistsError(f"branch {new!r} already exists")
        source, target = self._root(old), self._root(new)
        files = list(walk_files(self._io, source))
        schema_dir = join(source, "schema")
        # everything but the schemas first, the schemas last: the new branch appears complete
        for path in sorted(files, key=lambda p: p.startswith(schema_dir + "/")):
            self._io.write_bytes(target + path[len(source):], self._io.read_bytes(path))
        self.delete(old)

    # -- fast-forward --------------------------------------------------------------------------

    def fast_forward(self, name: str) -> FastForward:
        """Make the main branch equal to branch ``name`` (Paimon's ``fast_forward``).

        Main's snapshots, tags and schemas from the branch's earliest snapshot (and its schema)
        on are removed, newest first, then the branch's are copied in, oldest first; a crash
        leaves main rolled back to before that point and a rerun finishes.
        """
        self._table.capabilities.require(Operation.HISTORY)
        name = validate_branch_name(name)
        if self._table.branch == name:
            raise InvalidArgumentError(f"cannot fast-forward from branch {name!r} itself; open the main branch")
        if not self.exists(name):
            raise BranchNotFoundError(f"branch {name!r} does not exist")
        earliest = SnapshotManager(self._io, self._path, name).earliest()
        if earliest is None:
            raise SnapshotNotFoundError(f"cannot fast-forward to branch {name!r}: it has no snapshot")
        main_snapshots = SnapshotManager(self._io, self._path, MAIN_BRANCH)
        main_tags = TagManager(self._io, self._path, MAIN_BRANCH)
        main_schemas = self._schemas(MAIN_BRANCH)
        # main is rolled back to before the branch: the rollback handshake (core/maintenance/tags.py) keeps
        # expiry, tag and branch creation off what goes. The branch is read whole before anything
        # of main changes, so a deletion of the branch meanwhile fails this run with main intact.
        target = earliest.id - 1
        main_snapshots.claim_rollback(target, f"fast-forward of main to branch {name!r} refused")
        try:
            branch = self._read_for_fast_forward(name, earliest)
            main_ids = main_snapshots.list_ids()
            if main_ids and main_ids[-1] < target:
                raise InvalidArgumentError(
                    f"cannot fast-forward to branch {name!r}: it starts at snapshot {earliest.id}, but main ends "
                    f"at snapshot {main_ids[-1]} (the branch's older snapshots expired, or main was rolled back "
                    "below the branch's start); main's snapshot ids would have a gap")
        except BaseException:
            main_snapshots.end_rollback(target)
            raise
        done = self._replace_main(name, earliest, branch, main_ids, main_snapshots, main_tags, main_schemas)
        main_snapshots.end_rollback(target)
        return done

    def _read_for_fast_forward(self, name: str,
                               earliest: Snapshot) -> tuple[dict, dict, builtins.list[int], dict]:
        """The branch's snapshot files, tags, schema ids and the schema files from its first schema
        on, all read before main changes (BranchNotFoundError if the branch goes meanwhile)."""
        snapshots, schemas = SnapshotManager(self._io, self._path, name), self._schemas(name)
        try:
            snapshot_bytes = {sid: self._io.read_bytes(snapshots.path(sid)) for sid in snapshots.list_ids()}
            tags = TagManager(self._io, self._path, name).list_tags()
            schema_ids = schemas.list_ids()
            schema_bytes = {i: self._io.read_bytes(schemas.path(i)) for i in schema_ids if i >= earliest.schema_id}
        except (FileNotFoundStorageError, SnapshotNotFoundError):
            snapshot_bytes, schema_ids = {}, []
        # a deletion removes the schemas first: a branch without them is going
        if min(snapshot_bytes, default=None) != earliest.id or earliest.schema_id not in schema_ids:
            raise BranchNotFoundError(f"branch {name!r} was deleted or changed during the fast-forward; main is "
                                      "unchanged")
        return snapshot_bytes, tags, schema_ids, schema_bytes

    def _replace_main(self, name: str, earliest: Snapshot, branch, main_ids: builtins.list[int], main_snapshots,
                      main_tags, main_schemas) -> FastForward:
        snapshot_bytes, branch_tags, branch_schema_ids, schema_bytes = branch
        removed = [sid for sid in main_ids if sid >= earliest.id]
        removed_tags = sorted(n for n, t in main_tags.list_tags().items() if t.id >= earliest.id)
        with contextlib.suppress(FileNotFoundStorageError):
            self._io.delete(join(main_snapshots.directory, "LATEST"))
        for sid in sorted(removed, reverse=True):
            with contextlib.suppress(FileNotFoundStorageError):
                self._io.delete(main_snapshots.path(sid))
            crash_point("fast-forward:removing-snapshots")
        for tag in removed_tags:
            with contextlib.suppress(FileNotFoundStorageError):
                self._io.delete(main_tags.tag_path(tag))
        for schema_id, data in sorted(schema_bytes.items()):
            self._io.write_bytes(main_schemas.path(schema_id), data)
        for schema_id in main_schemas.list_ids():
            if schema_id > earliest.schema_id and schema_id not in branch_schema_ids:
                self._io.delete(main_schemas.path(schema_id))
        copied = []
        for sid, data in sorted(snapshot_bytes.items()):
            self._io.write_bytes(main_snapshots.path(sid), data)
            copied.append(sid)
            crash_point("fast-forward:copying-snapshots")
        for tag, snapshot in sorted(branch_tags.items()):
            self._io.write_bytes(main_tags.tag_path(tag), snapshot.to_json())
        if copied:
            main_snapshots._write_hint("LATEST", copied[-1])
            main_snapshots.write_earliest_hint(main_snapshots.list_ids()[0])
        return FastForward(branch=name, from_snapshot=earliest.id, removed_snapshots=tuple(removed),
                           copied_snapshots=tuple(copied), removed_tags=tuple(removed_tags),
                           copied_tags=tuple(sorted(branch_tags)))
