"""Storage backends behind one FileIO protocol."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import UnsupportedError
from .base import FileIO, FileStatus
from .local import LocalFileIO

__all__ = ["FileIO", "FileStatus", "LocalFileIO", "get_file_io", "join"]


def join(base: str, *parts: str) -> str:
    """Join path segments with ``/`` (works for local paths and ``s3://`` URIs alike)."""
    out = base.rstrip("/") if base not in ("/", "") else base
    for part in parts:
        part = part.strip("/")
        if part:
            out = f"{out}/{part}" if out not in ("", "/") else f"{out}{part}"
    return out


def get_file_io(uri: str, options: Mapping[str, str] | None = None) -> FileIO:
    """The FileIO for ``uri``: a local path or ``file://`` URI, or ``s3://`` / ``s3a://``."""
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    if scheme in ("", "file"):
        return LocalFileIO()
    if scheme in ("s3", "s3a"):
        from .s3 import S3FileIO

        return S3FileIO.from_options(dict(options or {}))
    raise UnsupportedError(f"no storage backend for scheme {scheme!r} (supported: local paths, file://, s3://)")
