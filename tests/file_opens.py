"""Which files under a directory were opened, by any code of any process (pyarrow's C++ readers,
DuckDB's threads included): Linux ``inotify`` ``IN_OPEN`` events on every directory beneath it."""

from __future__ import annotations

import ctypes
import os
import struct
from collections import Counter

_IN_OPEN, _IN_NONBLOCK, _IN_CLOEXEC = 0x20, 0o4000, 0o2000000
_EVENT = struct.Struct("iIII")


class FileOpens:
    """``with FileOpens(root) as opens: ...``, then ``opens.files`` (relative paths to counts)."""

    def __init__(self, root: str, *, suffixes: tuple[str, ...] = (".parquet", ".orc", ".avro")) -> None:
        self._root, self._suffixes = str(root), suffixes
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._fd = -1
        self._dirs: dict[int, str] = {}
        self.files: Counter[str] = Counter()

    def __enter__(self) -> FileOpens:
        self._fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        for directory, _, _ in os.walk(self._root):
            wd = self._libc.inotify_add_watch(self._fd, directory.encode(), _IN_OPEN)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {directory}")
            self._dirs[wd] = os.path.relpath(directory, self._root)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._drain()
        finally:
            os.close(self._fd)

    @property
    def data_files(self) -> set[str]:
        return {name for name in self.files if name.endswith(self._suffixes)}

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            at = 0
            while at < len(chunk):
                wd, _mask, _cookie, length = _EVENT.unpack_from(chunk, at)
                name = chunk[at + _EVENT.size: at + _EVENT.size + length].rstrip(b"\0").decode()
                at += _EVENT.size + length
                if name:
                    self.files[os.path.normpath(os.path.join(self._dirs.get(wd, "?"), name))] += 1
