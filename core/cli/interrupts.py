"""SIGINT and SIGTERM in paimonflow's command lines.

While a command runs, both signals raise :class:`~paimonflow.core.errors.Interrupted` in the main
thread (a :class:`KeyboardInterrupt`, so the write in progress aborts and deletes its files on the
way out: ``Table.write``). Only the first signal raises: later ones are ignored until the command
ends, so that the cleanup is not itself interrupted (SIGKILL still stops everything; its files
are then orphans for ``remove-orphan-files``). The command then prints one line and exits
128 + the signal's number: 130 for SIGINT, 143 for SIGTERM.

A commit is never interrupted half-way: ``Table.write``, the compactions and the Spark job
driver run their commit inside :func:`signals_deferred`, which holds both signals back until
the commit has ended (landed, or failed on its own) and delivers them then.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..errors import Interrupted
from ..write.signals import signals_deferred

if TYPE_CHECKING:
    from ..meta.snapshots import Snapshot

SIGNALS = (signal.SIGINT, signal.SIGTERM)

__all__ = ["commit_outcome", "describe", "signals_deferred", "signals_interrupt"]


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within the block, the first SIGINT or SIGTERM raises :class:`Interrupted` in the main
    thread and later ones are ignored; the previous handlers are back afterwards. Off the main
    thread (a test runner) nothing changes: only the main thread may handle signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = threading.Event()

    def interrupt(signum: int, frame: object) -> None:
        if not raised.is_set():
            raised.set()
            raise Interrupted(signum)

    previous = {signum: signal.signal(signum, interrupt) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def commit_outcome(committed: Callable[[], Snapshot | None]) -> Iterator[None]:
    """On an :class:`Interrupted` leaving the block, ask storage whether the command's commit
    landed (``committed``: its snapshot, or None) and note it on the interrupt, so the command
    never claims that nothing was committed when it was."""
    try:
        yield
    except Interrupted as stop:
        found = committed()
        stop.outcome_known, stop.committed_snapshot = True, (found.id if found is not None else None)
        raise


def describe(stop: Interrupted) -> str:
    """The one line of an interrupted command (after ``interrupted:``)."""
    if stop.committed_snapshot is not None:
        return f"{stop.signal_name} arrived after the commit: snapshot {stop.committed_snapshot} is committed"
    if stop.outcome_known:
        return f"{stop.signal_name}; nothing was committed ({stop.files_removed} files removed)"
    return f"{stop.signal_name}; the command stopped before it finished"
