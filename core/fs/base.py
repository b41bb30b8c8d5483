"""The storage contract every backend implements.

Paths are absolute strings in the backend's own scheme (``/data/wh/...`` for local disk,
``s3://bucket/key`` for S3). Directories are implicit on object stores: ``list_dir`` of a prefix
returns its direct children, ``mkdirs`` may be a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True, kw_only=True)
class FileStatus:
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
    sees the old or the new bytes, or the file is missing" (local disk: temp + rename).
    """

    def read_bytes(self, path: str) -> bytes:
        """Whole file; raises FileNotFoundStorageError if missing."""

    def open_input(self, path: str) -> BinaryIO:
        """A seekable binary stream (for Parquet/ORC readers)."""

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace ``path`` with ``data`` (parents created as needed)."""

    def create_if_absent(self, path: str, data: bytes) -> bool:
        """Atomically publish ``data`` at ``path`` if nothing is there. False if it already exists."""

    def exists(self, path: str) -> bool: ...

    def status(self, path: str) -> FileStatus:
        """Raises FileNotFoundStorageError if missing."""

    def list_dir(self, path: str) -> list[FileStatus]:
        """Direct children of a directory; empty list if it does not exist."""

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        """Delete a file (or a directory tree with ``recursive``). False if nothing was there."""

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst``; fails if ``dst`` exists. Not atomic on object stores."""

    def mkdirs(self, path: str) -> None: ...

    def arrow_filesystem(self):  # -> tuple[pyarrow.fs.FileSystem, str-path-mapper]
        """A ``pyarrow.fs.FileSystem`` and a function mapping our paths to its paths."""
