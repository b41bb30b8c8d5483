"""Local-disk FileIO: atomic publish by ``os.link`` of a fsynced temp file."""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from typing import BinaryIO

from ..errors import FileNotFoundStorageError, StorageError
from .base import FileStatus


def _strip(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


class LocalFileIO:
    """FileIO over the local file system (or any POSIX mount with atomic ``link``)."""

    def __repr__(self) -> str:
        return "LocalFileIO()"

    def _tmp(self, path: str) -> str:
        head, tail = os.path.split(path)
        return os.path.join(head, f".{tail}.{uuid.uuid4()}.tmp")

    def _write_tmp(self, path: str, data: bytes) -> str:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        tmp = self._tmp(path)
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return tmp

    @staticmethod
    def _fsync_dir(directory: str) -> None:
        with contextlib.suppress(OSError):
            fd = os.open(directory or ".", os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def read_bytes(self, path: str) -> bytes:
        try:
            with open(_strip(path), "rb") as f:
                return f.read()
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"no such file: {path}") from exc
        except IsADirectoryError as exc:
            raise StorageError(f"is a directory: {path}") from exc
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc}") from exc

    def open_input(self, path: str) -> BinaryIO:
        try:
            return open(_strip(path), "rb")
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"no such file: {path}") from exc

    def write_bytes(self, path: str, data: bytes) -> None:
        path = _strip(path)
        try:
            tmp = self._write_tmp(path, data)
            os.replace(tmp, path)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc}") from exc

    def create_if_absent(self, path: str, data: bytes) -> bool:
        path = _strip(path)
        if os.path.exists(path):
            return False
        try:
            tmp = self._write_tmp(path, data)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc}") from exc
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot publish {path}: {exc}") from exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._fsync_dir(os.path.dirname(path))
        return True

    def exists(self, path: str) -> bool:
        return os.path.exists(_strip(path))

    def status(self, path: str) -> FileStatus:
        try:
            st = os.stat(_strip(path))
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"no such file: {path}") from exc
        import stat

        return FileStatus(path=path, size=st.st_size, is_dir=stat.S_ISDIR(st.st_mode),
                          modification_time_millis=int(st.st_mtime * 1000))

    def list_dir(self, path: str) -> list[FileStatus]:
        base = _strip(path)
        try:
            entries = list(os.scandir(base))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for e in entries:
            try:
                st = e.stat()
            except FileNotFoundError:
                continue  # deleted while listing
            out.append(FileStatus(path=os.path.join(path, e.name), size=st.st_size, is_dir=e.is_dir(),
                                  modification_time_millis=int(st.st_mtime * 1000)))
        return sorted(out, key=lambda s: s.path)

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        path = _strip(path)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                if recursive:
                    shutil.rmtree(path)
                else:
                    os.rmdir(path)
            else:
                os.unlink(path)
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot delete {path}: {exc}") from exc

    def rename(self, src: str, dst: str) -> None:
        src, dst = _strip(src), _strip(dst)
        os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
        try:
            os.link(src, dst)
        except FileExistsError as exc:
            raise StorageError(f"cannot rename {src} to {dst}: target exists") from exc
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"no such file: {src}") from exc
        except OSError:
            if os.path.exists(dst):
                raise StorageError(f"cannot rename {src} to {dst}: target exists") from None
            os.rename(src, dst)
            return
        os.unlink(src)

    def mkdirs(self, path: str) -> None:
        os.makedirs(_strip(path), exist_ok=True)

    def arrow_filesystem(self):
        import pyarrow.fs as pafs

        return pafs.LocalFileSystem(), _strip
