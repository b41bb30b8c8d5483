"""Orphan file removal (Apache Paimon's ``OrphanFilesClean``): delete files under the table that no
snapshot, tag or consumer-protected state references and that are older than a cutoff.

Everything referenced is collected first from every snapshot and every tag (manifest lists,
manifests, index manifests, index files, data files, changelog files, statistics); if any of them
cannot be read the run stops without deleting anything ("never delete on uncertainty"). Only
files older than ``older_than`` (default 1 day: a writer's uncommitted files are younger) are
candidates; a cutoff later than now is refused.

Only places whose layout is positively known are candidates (:func:`scan_roots`): ``manifest/``,
``index/`` and ``statistics/``, and the bucket directories ``bucket-<n>`` / ``bucket-postpone``
under the partition directories of the table's partition keys, below ``data-file.path-directory``
when set. Files anywhere else are reported as unknown and never deleted. Schema, snapshot, tag,
consumer and hint files are never candidates; the temp files (``.<name>.<id>.tmp``) a crash left
behind are, in the known places, once older than the cutoff. External data paths are outside the
table and never scanned.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Set
from dataclasses import dataclass, field
from enum import StrEnum
from urllib.parse import unquote

from ..errors import FileNotFoundStorageError, InvalidArgumentError, OrphanCleanAbortedError, PaimonflowError
from ..faults import crash_point
from ..fs import join
from ..meta.capabilities import Operation
from ..meta.context import TableMeta
from ..meta.references import files_needed_by

_PROTECTED_DIRS = ("snapshot", "schema", "tag", "consumer", "changelog", "branch")
_FILE_DIRS = ("manifest", "index", "statistics")
_BUCKET_DIR = re.compile(r"^bucket-(\d+|postpone)$")
# ``.<name>.<unique id>.tmp``: a file being written (LocalFileIO, and Paimon's own atomic writes)
_TEMP_FILE = re.compile(r"^\..+\.tmp$")
DEFAULT_OLDER_THAN_MILLIS = 24 * 3600 * 1000
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class OrphanPlan:
    orphans: tuple[str, ...]
    orphan_bytes: int
    scanned_files: int
    dry_run: bool
    unknown_files: tuple[str, ...] = ()  # found where the layout puts no file: left alone

    def to_dict(self) -> dict[str, object]:
        return {"orphans": len(self.orphans), "orphan_bytes": self.orphan_bytes,
                "scanned_files": self.scanned_files, "unknown_files": len(self.unknown_files),
                "dry_run": self.dry_run}


def referenced_files(table: TableMeta) -> set[str]:
    """Absolute paths of every file a snapshot or tag of any branch of ``table`` references."""
    from .branches import BranchManager, open_branch

    table.capabilities.require(Operation.ORPHANS)
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


class RootKind(StrEnum):
    """What a scanned directory holds, by the table's layout."""

    METADATA = "metadata"  # snapshots, schemas, tags...: only leftover temp files are candidates
    FILES = "files"        # manifests, index and statistics files: every unreferenced file is a candidate
    DATA = "data"          # partition directories (``keys`` still to come) down to bucket directories
    UNKNOWN = "unknown"    # not a place of the layout: reported, never deleted from


@dataclass(frozen=True, slots=True)
class ScanRoot:
    path: str
    kind: RootKind
    keys: tuple[str, ...] = ()  # DATA: the partition keys whose directories come below ``path``
    in_bucket: bool = False     # DATA: ``path`` is a bucket directory (its files are candidates)
    is_file: bool = False       # an UNKNOWN file at the table's top level


@dataclass(slots=True)
class ScanResult:
    scanned: int = 0
    orphans: list[tuple[str, int]] = field(default_factory=list)  # (path, size), older than the cutoff
    unknown: list[str] = field(default_factory=list)  # files in places the layout does not know


def scan_roots(table: TableMeta) -> list[ScanRoot]:
    """The directories of ``table`` to scan, each with what its layout says it holds. Data lives
    in ``[<data-file.path-directory>/]<k=v/...>/bucket-<n|postpone>``; anything the layout does
    not name is an UNKNOWN root (listed and reported, never deleted from)."""
    from ..meta.layout import data_root

    keys = tuple(table.partition_keys)
    data = data_root(table.path, table.options).rstrip("/")
    root = table.path.rstrip("/")
    out = [] if data == root else [ScanRoot(data, RootKind.DATA, keys)]
    for entry in table.file_io.list_dir(table.path):
        path = entry.path.rstrip("/")
        name = path.rsplit("/", 1)[-1]
        if not entry.is_dir:
            out.append(ScanRoot(path, RootKind.UNKNOWN, is_file=True))
        elif name in _PROTECTED_DIRS:
            out.append(ScanRoot(path, RootKind.METADATA))
        elif name in _FILE_DIRS:
            out.append(ScanRoot(path, RootKind.FILES))
        elif data != root and (data == path or data.startswith(path + "/")):
            continue  # the path directory (or a folder above it): scanned from ``data``
        elif data == root and _is_data_dir(name, keys):
            out.append(ScanRoot(path, RootKind.DATA, keys[1:], in_bucket=not keys))
        else:
            out.append(ScanRoot(path, RootKind.UNKNOWN))
    return out


def _is_data_dir(name: str, keys: tuple[str, ...]) -> bool:
    """``name`` is the next directory of the data layout: ``<keys[0]>=...``, or with no key
    left a bucket directory."""
    if keys:
        return "=" in name and unquote(name.split("=", 1)[0]) == keys[0]
    return _BUCKET_DIR.match(name) is not None


def find_orphans(file_io, root: ScanRoot, *, keep: Set[str], cutoff_millis: float) -> ScanResult:
    """Scan ``root``: the unreferenced candidates older than the cutoff, and the files found where
    the layout puts none. Metadata files are never candidates, nor are hidden files other than
    temp files; the temp files of an interrupted write are, in every known place, once older than
    the cutoff (a write in progress is younger)."""
    result = ScanResult()
    if root.is_file:
        result.scanned, result.unknown = 1, [root.path]
        return result
    _scan(file_io, root.path, root.kind, root.keys, keep, cutoff_millis, result, in_bucket=root.in_bucket)
    return result


def _scan(file_io, path: str, kind: RootKind, keys: tuple[str, ...], keep: Set[str], cutoff: float,
          result: ScanResult, *, in_bucket: bool = False) -> None:
    try:
        listing = file_io.list_dir(path)
    except FileNotFoundStorageError:
        return
    for status in listing:
        child = status.path.rstrip("/")
        name = child.rsplit("/", 1)[-1]
        if status.is_dir:
            if kind is RootKind.DATA and not in_bucket and _is_data_dir(name, keys):
                _scan(file_io, child, kind, keys[1:], keep, cutoff, result, in_bucket=not keys)
            elif kind in (RootKind.METADATA, RootKind.FILES):
                _scan(file_io, child, kind, keys, keep, cutoff, result)
            else:  # below a bucket directory, or a folder the layout does not name
                _scan(file_io, child, RootKind.UNKNOWN, (), keep, cutoff, result)
            continue
        result.scanned += 1
        if kind is RootKind.UNKNOWN or (kind is RootKind.DATA and not in_bucket):
            result.unknown.append(child)
            continue
        temp = _TEMP_FILE.match(name) is not None
        if (kind is RootKind.METADATA or name.startswith(".")) and not temp:
            continue
        if child in keep or status.modification_time_millis >= cutoff:
            continue
        result.orphans.append((child, status.size))


def remove_orphan_files(table: TableMeta, *, older_than_millis: int = DEFAULT_OLDER_THAN_MILLIS, dry_run: bool = False,
                        clock: Callable[[], float] = time.time, min_older_than_millis: int = 0) -> OrphanPlan:
    """Delete (or with ``dry_run`` only list) unreferenced files older than ``older_than_millis``.

    ``min_older_than_millis`` is a safety floor: a window shorter than it is refused (set it above
    the longest time a writer keeps files uncommitted plus the clock skew between hosts)."""
    check_window(older_than_millis, min_older_than_millis)
    cutoff = clock() * 1000 - older_than_millis
    keep = {p.rstrip("/") for p in referenced_files(table)}
    found: list[tuple[str, int]] = []
    unknown: list[str] = []
    scanned = 0
    for root in scan_roots(table):
        result = find_orphans(table.file_io, root, keep=keep, cutoff_millis=cutoff)
        scanned += result.scanned
        found += result.orphans
        unknown += result.unknown
    if unknown:
        _log.warning("table %s: %d file(s) outside the known layout were left alone, e.g. %s",
                     table.identifier, len(unknown), unknown[0])
    orphans = [path for path, _ in found]
    size = sum(n for _, n in found)
    if not dry_run:
        for i, path in enumerate(orphans):
            with contextlib.suppress(FileNotFoundStorageError):
                table.file_io.delete(path)
            if i == len(orphans) // 2:
                crash_point("orphans:files")
    return OrphanPlan(orphans=tuple(orphans), orphan_bytes=size, scanned_files=scanned, dry_run=dry_run,
                      unknown_files=tuple(unknown))
