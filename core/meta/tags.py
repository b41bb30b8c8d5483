"""The ``tag/tag-<name>`` files of one branch (Apache Paimon's ``TagManager`` storage side): a
snapshot's JSON plus ``tagCreateTime`` / ``tagTimeRetained``. The verbs on tags (create with the
expiry handshake, delete freeing files, expire) are in :mod:`paimonflow.core.maintenance.tags`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from ..errors import (
    FileNotFoundStorageError,
    SnapshotNotFoundError,
)
from ..fs import join
from ..names import validate_name
from .layout import branch_root
from .snapshots import Snapshot

#: ``{tag file path: ((modification millis, size), (tagCreateTime, tagTimeRetained))}`` of the tag
#: files this process has read for their time-to-live (:meth:`TagManager.retention`)
_retention_cache: dict[str, tuple[tuple[int, int], tuple[list[int] | None, str | None]]] = {}
#: ``{tag directory: (its modification millis, the retention map listed then)}``: a local disk
#: moves a directory's time on every entry created, replaced or removed
_directory_cache: dict[str, tuple[int, dict[str, tuple[list[int] | None, str | None]]]] = {}
_retention_lock = threading.Lock()
_RETENTION_CACHE_MAX = 100_000
#: a directory time this close to the listing's start may still be shared by a later change in
#: the same clock tick (file systems keep coarse times): such a listing is not reused
_RACY_MILLIS = 2_000


class TagManager:
    """Tags (``tag/tag-<name>``): a snapshot JSON plus optional ``tagCreateTime``/``tagTimeRetained``."""

    def __init__(self, file_io, table_path: str, branch: str = "main") -> None:
        self.file_io = file_io
        self.branch = branch
        self.directory = join(branch_root(table_path, branch), "tag")

    def tag_path(self, name: str) -> str:
        return join(self.directory, f"tag-{validate_name('tag', name)}")

    def get(self, name: str) -> Snapshot:
        path = self.tag_path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundStorageError:
            raise SnapshotNotFoundError(f"tag {name!r} does not exist") from None
        return Snapshot.from_json(data, path)

    def list_tags(self) -> dict[str, Snapshot]:
        """Every tag. A tag deleted between listing and reading is gone (it protects nothing);
        the directory is then listed again, so a tag renamed meanwhile is found by its new name."""
        for _ in range(5):
            tags, vanished = {}, False
            for status in self.file_io.list_dir(self.directory):
                name = status.path.rstrip("/").rsplit("/", 1)[-1]
                if name.startswith("tag-") and not name.startswith("."):
                    try:
                        tags[name[4:]] = Snapshot.from_json(self.file_io.read_bytes(status.path), status.path)
                    except FileNotFoundStorageError:
                        vanished = True
            if not vanished:
                break
        return tags

    def retention(self) -> dict[str, tuple[list[int] | None, str | None]]:
        """``{name: (tagCreateTime, tagTimeRetained)}`` of every tag, for the time-to-live expiry
        each commit runs: a tag file is read only when this process has not read it at its
        current time and size, so a commit beside a thousand unchanged tags costs one listing.
        A caller about to act on a value reads the tag again (:meth:`get`): the listing's time
        and size tell a replaced file apart only when either changed. Where the directory has a
        time (local disks), an unchanged directory is not even listed again."""
        started = time.time() * 1000
        try:
            directory = self.file_io.status(self.directory)
        except FileNotFoundStorageError:
            return {}
        stamp_dir = directory.modification_time_millis if directory.is_dir else 0
        with _retention_lock:
            known = _directory_cache.get(self.directory)
        if stamp_dir and known is not None and known[0] == stamp_dir:
            return dict(known[1])
        out: dict[str, tuple[list[int] | None, str | None]] = {}
        for status in self.file_io.list_dir(self.directory):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            if not name.startswith("tag-") or status.is_dir:
                continue
            stamp = (status.modification_time_millis, status.size)
            with _retention_lock:
                cached = _retention_cache.get(status.path)
            if cached is not None and cached[0] == stamp:
                out[name[4:]] = cached[1]
                continue
            try:
                tag = Snapshot.from_json(self.file_io.read_bytes(status.path), status.path)
            except FileNotFoundStorageError:
                continue  # deleted meanwhile: nothing to expire
            value = (tag.tag_create_time, tag.tag_time_retained)
            with _retention_lock:
                if len(_retention_cache) >= _RETENTION_CACHE_MAX:
                    _retention_cache.clear()
                _retention_cache[status.path] = (stamp, value)
            out[name[4:]] = value
        if stamp_dir and stamp_dir < started - _RACY_MILLIS:
            with _retention_lock:
                if len(_directory_cache) >= _RETENTION_CACHE_MAX:
                    _directory_cache.clear()
                _directory_cache[self.directory] = (stamp_dir, dict(out))
        return out

    def create(self, name: str, snapshot: Snapshot, *, create_time: list[int] | None = None,
               time_retained: str | None = None) -> bool:
        tagged = replace(snapshot, tag_create_time=create_time, tag_time_retained=time_retained)
        return self.file_io.create_if_absent(self.tag_path(name), tagged.to_json())
