"""A progress line on the terminal for long verbs (``write``, ``read --output``, ``compact``).

It shows rows, bytes and files done so far and the time elapsed, on stderr, and only when stderr
is a terminal and ``--json`` is off: on a pipe or a file nothing is printed (scripts and tests parse
the output). The counts come from the work itself, through callbacks (:meth:`Progress.add`, or
:meth:`Progress.files_written` fed by :func:`paimonflow.core.write.progress.observe_files`), never
by reading data again. The last line stays on the terminal with the final counts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

    from ..meta.manifest import DataFileMeta


def human_bytes(count: int) -> str:
    """``1536`` -> ``1.5 KiB``."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class Progress:
    """Rows, bytes, files and elapsed time of one verb, shown while it runs (a context manager).

    ``enabled=False`` (a pipe, ``--json``) keeps the counts and shows nothing. Thread-safe:
    writers report from their threads."""

    def __init__(self, label: str, *, enabled: bool, console: Console | None = None) -> None:
        self.label = label
        self.rows = self.bytes = self.files = 0
        self._lock = threading.Lock()
        self._console = console
        self.enabled = enabled
        self._live: Live | None = None
        self._start = time.monotonic()

    @classmethod
    def for_terminal(cls, label: str, *, json_output: bool) -> Progress:
        """Shown when stderr is a terminal and ``--json`` is off."""
        from rich.console import Console

        console = Console(stderr=True)
        return cls(label, enabled=console.is_terminal and not json_output, console=console)

    def add(self, *, rows: int = 0, bytes: int = 0, files: int = 0) -> None:
        with self._lock:
            self.rows += rows
            self.bytes += bytes
            self.files += files

    def files_written(self, files: Sequence[DataFileMeta]) -> None:
        """Count data files a writer stored (an observer for ``observe_files``)."""
        self.add(rows=sum(f.row_count for f in files), bytes=sum(f.file_size for f in files), files=len(files))

    def line(self) -> str:
        elapsed = time.monotonic() - self._start
        with self._lock:
            rows, size, files = self.rows, self.bytes, self.files
        return (f"{self.label}: {rows:,} rows, {human_bytes(size)}, {files:,} file{'s' if files != 1 else ''}, "
                f"{elapsed:.1f} s")

    def __rich__(self) -> str:
        return self.line()

    def __enter__(self) -> Progress:
        self._start = time.monotonic()
        if self.enabled:
            from rich.live import Live

            live = Live(self, console=self._console, refresh_per_second=4, transient=False,
                        redirect_stdout=False, redirect_stderr=False)
            live.start()
            self._live = live
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.update(self, refresh=True)  # the final counts stay on the screen
            self._live.stop()
            self._live = None
