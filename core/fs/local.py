"""Local-disk FileIO: atomic publish by ``os.link`` of a fsynced temp file.

Why ``link``: ``link(2)`` fails with ``EEXIST`` atomically when the target exists, on every POSIX
file system, across processes; ``rename(2)`` silently replaces the target, so exists-then-rename
loses commits between processes (measured, ``reference/reliability.md`` §1.4). Where hard links
are unsupported (some FUSE/SMB mounts) ``renameat2(RENAME_NOREPLACE)`` is used instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import stat
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

from ..errors import FileNotFoundStorageError, StorageError
from .base import FileStatus, join
from .dir_watch import hidden_names

if TYPE_CHECKING:
    import pyarrow.fs

_FILE_SCHEME = "file:"
_LINK_UNSUPPORTED = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS})
_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def local_path(path: str) -> str:
    """The operating-system path of ``path``: a plain path, or a ``file:`` URI.

    ``file:///a/b``, ``file:/a/b`` and ``file://localhost/a/b`` all mean ``/a/b``. No
    percent-decoding: Paimon file names may contain ``%`` literally. Other hosts are refused.
    """
    if not path.startswith(_FILE_SCHEME):
        return path
    rest = path[len(_FILE_SCHEME):]
    if rest.startswith("//"):
        host, slash, tail = rest[2:].partition("/")
        if host not in ("", "localhost"):
            raise StorageError(f"file URI with a remote host is not supported: {path}")
        return slash + tail
    return rest


def _fsync_dir(directory: str) -> None:
    """Make a directory entry change durable (best effort: some file systems refuse)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _load_renameat2() -> Callable[[bytes, bytes], int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int

    def call(src: bytes, dst: bytes) -> int:
        return int(fn(_AT_FDCWD, src, _AT_FDCWD, dst, _RENAME_NOREPLACE))

    return call


_renameat2 = _load_renameat2()


def rename_noreplace(src: str, dst: str) -> None:
    """``rename(src, dst)`` that fails with FileExistsError instead of replacing ``dst``.

    Raises OSError with ``ENOSYS`` if neither the C library nor the file system supports it.
    """
    if _renameat2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available", src)
    if _renameat2(os.fsencode(src), os.fsencode(dst)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), src, None, dst)


class LocalFileIO:
    """FileIO over the local file system (or any POSIX mount with atomic ``link`` or ``renameat2``).

    Paths are absolute OS paths or ``file:`` URIs (see :func:`local_path`). Statuses are spelled
    like the path the caller gave. Temp files are named ``.<name>.<uuid>.tmp`` next to their target
    and removed on success and failure; a crash may leave one behind (orphan cleaning removes it).
    """

    def __repr__(self) -> str:
        return "LocalFileIO()"

    # -- reading -------------------------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        with self.open_input(path) as stream:
            try:
                return stream.read()
            except OSError as exc:
                raise StorageError(f"cannot read {path}: {_reason(exc)}") from exc

    def open_input(self, path: str) -> BinaryIO:
        target = local_path(path)
        try:
            return open(target, "rb")  # the caller closes it
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"no such file: {path}") from exc
        except OSError as exc:
            raise StorageError(f"cannot open {path}: {_reason(exc)}") from exc

    def exists(self, path: str) -> bool:
        return os.path.exists(local_path(path))

    def status(self, path: str) -> FileStatus:
        target = local_path(path)
        try:
            st = os.stat(target)
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"no such file or directory: {path}") from exc
        except OSError as exc:
            raise StorageError(f"cannot stat {path}: {_reason(exc)}") from exc
        return _status(path, st)

    def list_dir(self, path: str) -> list[FileStatus]:
        return sorted((_status(join(path, name), st) for name, st in _children(path)), key=lambda s: s.path)

    def list_files(self, path: str, prefix: str) -> list[FileStatus]:
        return sorted((_status(join(path, name), st) for name, st in _children(path, prefix)
                       if not stat.S_ISDIR(st.st_mode)), key=lambda s: s.path)

    def list_hidden(self, path: str, prefix: str) -> list[FileStatus]:
        names = hidden_names(local_path(path)) if prefix.startswith(".") else None
        if names is None:
            return self.list_files(path, prefix)
        target, out = local_path(path), []
        for name in names:
            if name.startswith(prefix):
                try:
                    st = os.stat(os.path.join(target, name))
                except FileNotFoundError:
                    continue  # removed since its event was read
                if not stat.S_ISDIR(st.st_mode):
                    out.append(_status(join(path, name), st))
        return sorted(out, key=lambda s: s.path)

    # -- writing -------------------------------------------------------------------------------

    def write_bytes(self, path: str, data: bytes) -> None:
        target = local_path(path)
        try:
            tmp = _write_temp(target, data)
            try:
                os.replace(tmp, target)
            except BaseException:
                _remove_quietly(tmp)
                raise
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {_reason(exc)}") from exc
        _fsync_dir(os.path.dirname(target))

    def create_if_absent(self, path: str, data: bytes) -> bool:
        target = local_path(path)
        if os.path.lexists(target):
            return False  # fast path only; the link below is the real check
        try:
            tmp = _write_temp(target, data)
        except OSError as exc:
            raise StorageError(f"cannot write a temp file for {path}: {_reason(exc)}") from exc
        try:
            _publish(tmp, target)
        except FileExistsError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot publish {path}: {_reason(exc)}") from exc
        finally:
            _remove_quietly(tmp)
        _fsync_dir(os.path.dirname(target))
        return True

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        target = local_path(path)
        try:
            if os.path.isdir(target) and not os.path.islink(target):
                if recursive:
                    shutil.rmtree(target)
                else:
                    os.rmdir(target)
            else:
                os.unlink(target)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot delete {path}: {_reason(exc)}") from exc
        return True

    def rename(self, src: str, dst: str) -> None:
        source, target = local_path(src), local_path(dst)
        try:
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            try:
                rename_noreplace(source, target)
            except OSError as exc:
                if exc.errno not in (errno.ENOSYS, errno.EINVAL):
                    raise
                os.link(source, target)  # no renameat2 here: link + unlink never replaces dst
                os.unlink(source)
        except FileExistsError as exc:
            raise StorageError(f"cannot rename {src} to {dst}: the target exists") from exc
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"cannot rename {src}: no such file") from exc
        except OSError as exc:
            raise StorageError(f"cannot rename {src} to {dst}: {_reason(exc)}") from exc
        _fsync_dir(os.path.dirname(target))

    def mkdirs(self, path: str) -> None:
        target = local_path(path)
        try:
            os.makedirs(target, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create directory {path}: {_reason(exc)}") from exc

    def arrow_filesystem(self) -> tuple[pyarrow.fs.FileSystem, Callable[[str], str]]:
        import pyarrow.fs

        return pyarrow.fs.LocalFileSystem(), local_path

    def sync(self, path: str) -> None:
        target = local_path(path)
        try:
            fd = os.open(target, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"{path}: {exc}") from None
        except OSError as exc:
            raise StorageError(f"sync {path}: {exc}") from exc
        _fsync_dir(os.path.dirname(target))


def _children(path: str, prefix: str = "") -> list[tuple[str, os.stat_result]]:
    """``(name, stat)`` of the children of ``path`` named ``prefix...`` (one listing of names, then
    a stat for each match); none if the directory does not exist."""
    target = local_path(path)
    try:
        names = os.listdir(target)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise StorageError(f"cannot list {path}: {_reason(exc)}") from exc
    out = []
    for name in names:
        if not name.startswith(prefix):
            continue
        try:
            out.append((name, os.stat(os.path.join(target, name))))
        except FileNotFoundError:
            continue  # deleted while listing
    return out


def _status(path: str, st: os.stat_result) -> FileStatus:
    is_dir = stat.S_ISDIR(st.st_mode)
    return FileStatus(path=path, size=0 if is_dir else st.st_size, is_dir=is_dir,
                      modification_time_millis=st.st_mtime_ns // 1_000_000)


def _write_temp(target: str, data: bytes) -> str:
    """Write ``data`` to a fresh, fsynced temp file next to ``target`` and return its path."""
    directory, name = os.path.split(target)
    os.makedirs(directory or ".", exist_ok=True)
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
    except BaseException:
        _remove_quietly(tmp)
        raise
    return tmp


def _publish(tmp: str, target: str) -> None:
    """Give the complete temp file the name ``target``; FileExistsError if that name is taken."""
    try:
        os.link(tmp, target)
    except OSError as exc:
        if exc.errno not in _LINK_UNSUPPORTED:
            raise
        rename_noreplace(tmp, target)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
