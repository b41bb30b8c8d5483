"""The storage contract every backend implements.

Paths are absolute strings in the backend's own scheme (``/data/wh/...`` or ``file:///data/wh/...``
for local disk, ``s3://bucket/key`` for S3). Directories are implicit on object stores: ``list_dir``
of a prefix returns its direct children, ``mkdirs`` may be a no-op, and an "empty directory" does
not exist there.

Errors: every failure is a :class:`~paimonflow.core.errors.StorageError`; a missing file is the
subclass :class:`~paimonflow.core.errors.FileNotFoundStorageError`. A write whose outcome cannot be
known (the request may or may not have been applied) raises :class:`StorageOutcomeUnknownError`.
Error messages and ``repr`` never contain credentials.

The one test suite every backend passes is ``tests/core/fs/test_fileio_contract.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pyarrow.fs


def join(base: str, *parts: str) -> str:
    """Join path segments with ``/``; works for OS paths and URIs (``s3://b``, ``file:///``) alike.

    Slashes around each part are dropped, so ``join("s3://b/wh/", "/db", "t/")`` is
    ``"s3://b/wh/db/t"``; a root (``/``, ``file:///``, ``s3://b/``) keeps its own slashes; empty
    parts are skipped. No normalisation of ``.`` or ``..`` (names are validated before they get here).
    """
    head = base.rstrip("/")
    if not head or head.endswith(":"):
        head = base
    for part in parts:
        part = part.strip("/")
        if part:
            head = f"{head}{part}" if not head or head.endswith("/") else f"{head}/{part}"
    return head


@dataclass(frozen=True, slots=True, kw_only=True)
class FileStatus:
    """One file or directory.

    ``path`` is spelled like the path the caller asked about (``list_dir`` joins the directory
    path given with ``/`` and the child's name). Directories have ``size`` 0; on object stores
    their ``modification_time_millis`` is 0 (prefixes have no time).
    """

    path: str
    size: int
    is_dir: bool
    modification_time_millis: int


@runtime_checkable
class FileIO(Protocol):
    """A small storage interface with honest atomicity.

    ``create_if_absent`` is the only primitive commits rely on: it is atomic across processes and
    machines (at most one caller ever gets ``True`` for one path) and publishes the whole content
    or nothing. Every other write is a plain overwrite with no atomicity promise beyond "a reader
    sees the old or the new bytes, or the file is missing" (local disk: temp + rename; S3: one PUT).
    """

    def read_bytes(self, path: str) -> bytes:
        """The whole file. Raises FileNotFoundStorageError if missing, StorageError otherwise."""

    def open_input(self, path: str) -> BinaryIO:
        """A seekable binary stream (for Parquet/ORC/Avro readers); the caller closes it.

        Raises FileNotFoundStorageError if missing.
        """

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace ``path`` with ``data`` (parents created as needed).

        Readers see the old bytes, the new bytes or (if there was no file) nothing; never a prefix.
        """

    def create_if_absent(self, path: str, data: bytes) -> bool:
        """Atomically publish ``data`` at ``path`` if nothing is there; False if something is.

        At most one caller ever gets True for one path, across threads, processes and machines,
        and a reader sees either nothing or all of ``data``. Parents are created as needed.
        Raises StorageOutcomeUnknownError when the write may have landed but this cannot be
        decided, StorageError on any other failure (then nothing was published by this call).
        """

    def exists(self, path: str) -> bool:
        """True if ``path`` is a file or a (non-empty, on object stores) directory."""

    def status(self, path: str) -> FileStatus:
        """Size, kind and modification time. Raises FileNotFoundStorageError if missing."""

    def list_dir(self, path: str) -> list[FileStatus]:
        """Direct children (files and directories) sorted by path; empty if it does not exist."""

    def list_files(self, path: str, prefix: str) -> list[FileStatus]:
        """The files directly in ``path`` whose names start with ``prefix``, sorted by path;
        empty if there are none. Costs what the names cost, not a status per child (local disk:
        one ``listdir``; object stores: a prefix listing)."""

    def list_hidden(self, path: str, prefix: str) -> list[FileStatus]:
        """:meth:`list_files` for a ``prefix`` starting with ``.`` (temp files). Its cost does not
        grow with the other names where the store allows it (object stores: a prefix listing; a
        local disk followed by ``inotify``: ``dir_watch.py``); otherwise it is :meth:`list_files`."""

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        """Delete a file (or a directory tree with ``recursive``). False if nothing was there.

        Idempotent. Deleting a non-empty directory without ``recursive`` raises StorageError and
        deletes nothing.
        """

    def rename(self, src: str, dst: str) -> None:
        """Move the file ``src`` to ``dst`` (parents created as needed).

        Raises StorageError if ``dst`` exists (it is never replaced), FileNotFoundStorageError if
        ``src`` is missing. Atomic on local disk; copy + delete on object stores.
        """

    def mkdirs(self, path: str) -> None:
        """Make sure a directory exists (idempotent; a no-op on object stores)."""

    def arrow_filesystem(self) -> tuple[pyarrow.fs.FileSystem, Callable[[str], str]]:
        """A ``pyarrow.fs.FileSystem`` and a function mapping our paths to its paths."""

    def sync(self, path: str) -> None:
        """Make a file written and closed through :meth:`arrow_filesystem` durable (local disk:
        fsync of the file and its directory; object stores: nothing, a closed upload is)."""
