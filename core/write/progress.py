"""Observers of the data files a write or a compaction stores, by table (a terminal's progress display).

``Table.write`` and ``Table.compact`` take no callback of their own: a caller that wants to follow
them registers one for the table's path around the call (:func:`observe_files`), and the writer
reports each batch of files it finishes (:func:`report_files`). Reports come from the writer's
threads; observers must be thread-safe and cheap. Nothing is read back: the counts are those of
the :class:`DataFileMeta` the writer made.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence

from ..meta.manifest import DataFileMeta

FilesObserver = Callable[[Sequence[DataFileMeta]], None]

_lock = threading.Lock()
_observers: dict[str, list[FilesObserver]] = {}


@contextlib.contextmanager
def observe_files(table_path: str, observer: FilesObserver) -> Iterator[None]:
    """Call ``observer(files)`` for every batch of data files written for ``table_path`` (by any
    writer of this process) until the block ends."""
    with _lock:
        _observers.setdefault(table_path, []).append(observer)
    try:
        yield
    finally:
        with _lock:
            remaining = [o for o in _observers.get(table_path, []) if o is not observer]
            if remaining:
                _observers[table_path] = remaining
            else:
                _observers.pop(table_path, None)


def report_files(table_path: str, files: Sequence[DataFileMeta]) -> None:
    """Tell the observers of ``table_path`` (if any) that ``files`` were written."""
    if not files or not _observers:
        return
    with _lock:
        observers = list(_observers.get(table_path, ()))
    for observer in observers:
        observer(files)
