"""Orphan file removal (Apache Paimon's ``OrphanFilesClean``): delete files under the table that no
snapshot, tag or consumer-protected state references and that are older than a cutoff.

Everything referenced is collected first from every snapshot and every tag (manifest lists,
manifests, index manifests, index files, data files, changelog files, statistics); if any of them
cannot be read the run stops without deleting anything ("never delete on uncertainty"). Only
files older than ``older_than`` (default 1 day: a writer's uncommitted files are younger) are
candidates; a cutoff later than now is refused. Schema, snapshot, tag, consumer and hint files
are never candidates; the temp files (``.<name>.<id>.tmp``) a crash left behind are, in any
directory, once older than the cutoff.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Set
from dataclasses import dataclass

from ..errors import FileNotFoundStorageError, InvalidArgumentError, OrphanCleanAbortedError, PaimonflowError
from ..faults import crash_point
from ..fs import join
from ..meta.context import TableMeta
from ..meta.references import files_needed_by

_PROTECTED_DIRS = ("snapshot", "schema", "tag", "consumer", "changelog", "branch")
# ``.<name>.<unique id>.tmp``: a file being written (LocalFileIO, and Paimon's own atomic writes)
_TEMP_FILE = re.compile(r"^\..+\.tmp$")
DEFAULT_OLDER_THAN_MILLIS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class OrphanPlan:
    orphans: tuple[str, ...]
    orphan_bytes: int
    scanned_files: int
    dry_run: bool

    def to_dict(self) -> dict[str, object]:
        return {"orphans": len(self.orphans), "orphan_bytes": self.orphan_bytes,
                "scanned_files": self.scanned_files, "dry_run": self.dry_run}


def referenced_files(table: TableMeta) -> set[str]:
    """Absolute paths of every file a snapshot or tag of any branch of ``table`` references."""
    from .branches import BranchManager, open_branch

    _check_branch_directories(table)
    out: set[str] = set()
    for branch in ["main", *BranchManager(table).list()]:
        try:
            out |= files_needed_by(open_branch(table, branch), strict=True)
        except PaimonflowError as exc:
            raise OrphanCleanAbortedError(f"{exc}; no file was deleted") from exc
    return out


def _check_branch_directories(table: TableMeta) -> None:
    """A branch directory with snapshots or tags but no schema cannot be read: abort (Paimon does too)."""
    from ..meta.layout import BRANCH_DIR, BRANCH_PREFIX

    for status in table.file_io.list_dir(join(table.path, BRANCH_DIR)):
        name = status.path.rstrip("/").rsplit("/", 1)[-1]
        if not status.is_dir or not name.startswith(BRANCH_PREFIX):
            continue
        has_schema = bool(table.file_io.list_dir(join(status.path, "schema")))
        has_state = any(table.file_io.list_dir(join(status.path, d)) for d in ("snapshot", "tag", "changelog"))
        if has_state and not has_schema:
            raise OrphanCleanAbortedError(f"branch directory {status.path} has snapshots or tags but no schema; "
                                          "check it by hand (no file was deleted)")


def _walk(file_io, directory: str):
    try:
        listing = file_io.list_dir(directory)
    except FileNotFoundStorageError:
        return
    for status in listing:
        if status.is_dir:
            yield from _walk(file_io, status.path)
        else:
            yield status


def check_window(older_than_millis: int, min_older_than_millis: int = 0) -> None:
    """Refuse a window that could delete files a running writer has not committed yet."""
    if older_than_millis < 0:
        raise InvalidArgumentError("older_than_millis must not be negative: a cutoff later than now would "
                                   "delete files a running writer has not committed yet")
    if min_older_than_millis < 0:
        raise InvalidArgumentError("min_older_than_millis must not be negative")
    if older_than_millis < min_older_than_millis:
        raise InvalidArgumentError(f"older_than_millis ({older_than_millis}) is below the safety floor "
                                   f"({min_older_than_millis} ms): files a running writer has not committed "
                                   "yet could be deleted")


def scan_roots(table: TableMeta) -> list[tuple[str, bool]]:
    """The table's top-level directories to scan, each with whether it holds metadata (snapshots,
    schemas, tags...: there only leftover temp files are candidates)."""
    out = []
    for entry in table.file_io.list_dir(table.path):
        if entry.is_dir:
            out.append((entry.path, entry.path.rstrip("/").rsplit("/", 1)[-1] in _PROTECTED_DIRS))
    return out


def find_orphans(file_io, directory: str, *, metadata_dir: bool, keep: Set[str], cutoff_millis: float
                 ) -> tuple[int, list[tuple[str, int]]]:
    """Scan ``directory``: (files scanned, [(path, size)] of the orphans older than the cutoff).

    Metadata files are never candidates, nor are hidden files other than temp files; the temp files
    of an interrupted write are, anywhere, once older than the cutoff (a write in progress is younger).
    """
    scanned, found = 0, []
    for status in _walk(file_io, directory):
        scanned += 1
        file_name = status.path.rstrip("/").rsplit("/", 1)[-1]
        temp = _TEMP_FILE.match(file_name) is not None
        if (metadata_dir or file_name.startswith(".")) and not temp:
            continue
        if status.path.rstrip("/") in keep or status.modification_time_millis >= cutoff_millis:
            continue
        found.append((status.path, status.size))
    return scanned, found


def remove_orphan_files(table: TableMeta, *, older_than_millis: int = DEFAULT_OLDER_THAN_MILLIS, dry_run: bool = False,
                        clock: Callable[[], float] = time.time, min_older_than_millis: int = 0) -> OrphanPlan:
    """Delete (or with ``dry_run`` only list) unreferenced files older than ``older_than_millis``.

    ``min_older_than_millis`` is a safety floor: a window shorter than it is refused (set it above
    the longest time a writer keeps files uncommitted plus the clock skew between hosts)."""
    check_window(older_than_millis, min_older_than_millis)
    cutoff = clock() * 1000 - older_than_millis
    keep = {p.rstrip("/") for p in referenced_files(table)}
    found: list[tuple[str, int]] = []
    scanned = 0
    for directory, metadata_dir in scan_roots(table):
        n, orphans_here = find_orphans(table.file_io, directory, metadata_dir=metadata_dir, keep=keep,
                                       cutoff_millis=cutoff)
        scanned += n
        found += orphans_here
    orphans = [path for path, _ in found]
    size = sum(n for _, n in found)
    if not dry_run:
        for i, path in enumerate(orphans):
            with contextlib.suppress(FileNotFoundStorageError):
                table.file_io.delete(path)
            if i == len(orphans) // 2:
                crash_point("orphans:files")
    return OrphanPlan(orphans=tuple(orphans), orphan_bytes=size, scanned_files=scanned, dry_run=dry_run)
