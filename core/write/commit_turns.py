"""Turns at committing for the writers of one table on one machine.

Commits are optimistic, as in Apache Paimon: an attempt reads ``LATEST``, writes its manifest
list and creates ``snapshot-<latest+1>``; a writer that finds the id taken retries after a
backoff. With several writers on a busy machine that is a lottery: an attempt's window stretches
to tens of milliseconds, most attempts lose, and a writer with bad luck runs out of
``commit.max-retries`` while the others succeed.

On a local disk the writers of one machine therefore take turns: each attempt (read ``LATEST``
to the confirmed publish) runs under an advisory lock (``flock``) on a file outside the table, in
the system's temporary directory, named after the table's real path and branch. Nothing in the
table changes, and the lock decides nothing about correctness: the publish is still an atomic
create that a writer elsewhere (another machine, a Java writer) can win, and a writer that cannot
get its turn within ``commit.max-retry-wait`` goes ahead without it. Object stores have no shared
lock; their writers rely on the backoff alone.

The lock file is removed by the writer that holds it when it releases it (so none accumulate);
a writer that locked a file already removed tries again on the new one. ``PAIMONFLOW_COMMIT_TURNS=off``
in a writer's environment makes its attempts purely optimistic (the race tests use it to make
writers race).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator

from ..fs import LocalFileIO
from ..fs.local import local_path

TURNS_ENV = "PAIMONFLOW_COMMIT_TURNS"
_POLL_SECONDS = 0.002
_thread_turns = threading.local()  # the turn files each thread holds


def turns_directory() -> str:
    return os.path.join(tempfile.gettempdir(), "paimonflow-commit-turns")


def turn_file(table_path: str, branch: str) -> str:
    """The lock file of the turns at committing to a local table's branch (present only while a
    writer holds or waits for the turn)."""
    real = os.path.realpath(local_path(table_path))
    return os.path.join(turns_directory(), hashlib.sha256(f"{real}\0{branch}".encode()).hexdigest()[:40] + ".lock")


@contextlib.contextmanager
def commit_turn(file_io, table_path: str, branch: str, *, wait_seconds: float) -> Iterator[bool]:
    """Hold this machine's turn at committing to ``table_path``'s ``branch`` for the block;
    yields whether the turn was taken (False: another store, no usable lock file, or no turn
    within ``wait_seconds``: the block runs optimistically)."""
    if not isinstance(file_io, LocalFileIO) or os.environ.get(TURNS_ENV, "").strip().lower() in ("off", "0", "false"):
        yield False
        return
    path = turn_file(table_path, branch)
    held = _held_here()
    if path in held:  # a commit inside this thread's own turn (a hook's): it cannot wait for itself
        yield False
        return
    fd = _acquire(path, time.monotonic() + wait_seconds)
    if fd is None:
        yield False
        return
    held.add(path)
    try:
        yield True
    finally:
        held.discard(path)
        with contextlib.suppress(OSError):
            os.unlink(path)  # while held: a waiter that locked this file sees it gone and retries
        os.close(fd)  # (closing releases the lock)


def _held_here() -> set[str]:
    held = getattr(_thread_turns, "held", None)
    if held is None:
        held = _thread_turns.held = set()
    return held


def _make_turns_directory(directory: str) -> None:
    """The shared directory of turn files, made like ``/tmp``: every user may add files, only a
    file's owner may remove it (a holder that cannot remove its file leaves it for the next)."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        return
    os.chmod(directory, 0o1777)  # (not through mkdir's mode, which the umask narrows)


def _acquire(path: str, deadline: float) -> int | None:
    """An open descriptor of ``path`` holding its exclusive lock, or None."""
    while True:
        try:
            _make_turns_directory(os.path.dirname(path))
            # read-only is enough for flock, and lets one user lock a file another user made;
            # never through a symlink someone put in the shared directory
            fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError:
            return None
        locked = current = None
        try:
            while locked is None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    locked = os.fstat(fd)
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(_POLL_SECONDS)
            if locked is not None:
                with contextlib.suppress(FileNotFoundError):
                    current = os.stat(path)
        except OSError:
            locked = None
        if locked is not None and current is not None and \
                (current.st_ino, current.st_dev) == (locked.st_ino, locked.st_dev):
            return fd
        os.close(fd)
        if locked is None:
            return None  # no turn in time, or no usable lock
        # its holder removed the file as we waited: the turn is on a new file
