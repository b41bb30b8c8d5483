"""The hidden names (``.name``: temp files) of local directories, kept current by ``inotify``.

A commit confirms its snapshot by looking for another writer's pending rename onto it (Apache
Paimon's Java ``LocalFileIO`` writes ``.snapshot-<id>.<uuid>.tmp`` first: ``meta/snapshots.py``).
On a local disk a prefix listing reads every name of ``snapshot/``, which grows with the retained
snapshots (~3 ms at 10,000). Here a process lists a directory once, then follows its changes:
each look-up stats the directory and reads the queued events, whatever the directory holds.

Only where every change reaches ``inotify``: Linux, on file systems of this machine's own disks
and memory (ext2/3/4, XFS, Btrfs, F2FS, ZFS, tmpfs). Network and FUSE file systems (NFS, SMB,
s3fs ...) do not report other machines' changes, and overlay file systems not changes made
beneath them: :func:`hidden_names` answers None there and the caller lists.

The events are applied after the directory's first listing (made after its watch was added): a
name's last event decides whether it is present, and a name without events is as listed. A full
event queue, a directory moved, deleted or replaced at its path, and a fork (the child must not
read its parent's events) all start the directories over from a listing.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
from dataclasses import dataclass

_IN_CREATE, _IN_DELETE, _IN_MOVED_FROM, _IN_MOVED_TO = 0x100, 0x200, 0x40, 0x80
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_Q_OVERFLOW, _IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
_IN_ONLYDIR, _IN_NONBLOCK, _IN_CLOEXEC = 0x01000000, 0o4000, 0o2000000
_WATCHED = _IN_CREATE | _IN_DELETE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_DELETE_SELF | _IN_MOVE_SELF
_GONE = _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_IGNORED
_APPEAR, _VANISH = _IN_CREATE | _IN_MOVED_TO, _IN_DELETE | _IN_MOVED_FROM
_EVENT = struct.Struct("iIII")
# statfs f_type of file systems whose every change this machine's inotify sees
_LOCAL_FILE_SYSTEMS = frozenset({0xEF53, 0x58465342, 0x9123683E, 0xF2F52010, 0x2FC12FC1, 0x01021994, 0x858458F6})
_MAX_WATCHED = 256  # directories followed per process (a long-lived writer commits to a few tables)


@dataclass(slots=True)
class _Directory:
    """A followed directory: its ``(st_dev, st_ino)`` and its hidden names now."""

    identity: tuple[int, int]
    hidden: set[str]


class _Watcher:
    """One inotify instance of this process and the directories it follows."""

    def __init__(self, libc: ctypes.CDLL) -> None:
        self._libc = libc
        self._lock = threading.Lock()
        self._fd = -1
        self._unavailable = False  # no instance could be made (the user's limit): list instead
        self._by_wd: dict[int, _Directory] = {}
        self._wd_of: dict[str, int] = {}

    def hidden_names(self, path: str) -> set[str] | None:
        with self._lock:
            try:
                return self._hidden_names(path)
            except OSError:
                self._restart()
                return None

    def _hidden_names(self, path: str) -> set[str] | None:
        if self._unavailable:
            return None
        identity = _identity(path)
        if identity is None:
            return None
        self._drain()
        wd = self._wd_of.get(path, -1)
        directory = self._by_wd.get(wd)
        if directory is not None and directory.identity != identity:
            self._forget(wd)  # another directory now has this path (the table dropped and made again)
            directory = None
        if directory is None:
            directory = self._follow(path, identity)
            if directory is None:
                return None
        return set(directory.hidden)

    def _follow(self, path: str, identity: tuple[int, int]) -> _Directory | None:
        if not _local_file_system(self._libc, path):
            return None
        if self._fd < 0:
            self._fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
            if self._fd < 0:
                self._unavailable = True
                return None
        if len(self._wd_of) >= _MAX_WATCHED:
            self._restart()
            return self._follow(path, identity)
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), _WATCHED | _IN_ONLYDIR)
        if wd < 0:
            return None  # (the user's limit of watches, or the directory went away)
        names = {name for name in os.listdir(path) if name.startswith(".")}
        if _identity(path) != identity:
            self._libc.inotify_rm_watch(self._fd, wd)
            return None  # replaced while it was listed: the next look-up starts again
        directory = self._by_wd.get(wd)
        if directory is None:  # (an inode already followed under another path keeps its state)
            directory = self._by_wd[wd] = _Directory(identity, names)
        self._wd_of[path] = wd
        self._drain()
        return directory

    def _drain(self) -> None:
        """Apply every queued event."""
        if self._fd < 0:
            return
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size: offset + _EVENT.size + length].rstrip(b"\0")
                offset += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:
                    self._restart()  # events were lost: every directory is listed again
                    return
                if mask & _GONE:
                    self._forget(wd)
                    continue
                directory = self._by_wd.get(wd)
                if directory is None or not name.startswith(b"."):
                    continue
                text = os.fsdecode(name)
                if mask & _APPEAR:
                    directory.hidden.add(text)
                elif mask & _VANISH:
                    directory.hidden.discard(text)

    def _forget(self, wd: int) -> None:
        directory = self._by_wd.pop(wd, None)
        for path in [p for p, w in self._wd_of.items() if w == wd]:
            del self._wd_of[path]
        if directory is not None and self._fd >= 0:
            self._libc.inotify_rm_watch(self._fd, wd)  # (fails harmlessly for a watch already gone)

    def _restart(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        self._by_wd.clear()
        self._wd_of.clear()

    def after_fork_in_child(self) -> None:
        """The child must not read the parent's queue: it starts with no instance of its own."""
        self._lock = threading.Lock()
        self._restart()
        self._unavailable = False


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _local_file_system(libc: ctypes.CDLL, path: str) -> bool:
    buffer = ctypes.create_string_buffer(256)  # struct statfs (120 bytes on 64-bit Linux)
    if libc.statfs(os.fsencode(path), buffer) != 0:
        return False
    f_type = ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF
    return f_type in _LOCAL_FILE_SYSTEMS


def _make_watcher() -> _Watcher | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        for name in ("inotify_init1", "inotify_add_watch", "inotify_rm_watch", "statfs"):
            getattr(libc, name)
    except (OSError, AttributeError):
        return None
    return _Watcher(libc)


_watcher = _make_watcher()
if _watcher is not None:
    os.register_at_fork(after_in_child=_watcher.after_fork_in_child)


def hidden_names(path: str) -> set[str] | None:
    """The names starting with ``.`` in the local directory ``path`` now, or None where this
    process cannot follow the directory (see the module's notes): then list it."""
    return _watcher.hidden_names(path) if _watcher is not None else None
