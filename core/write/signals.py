"""Commits that a signal cannot cut in half.

A commit publishes a snapshot and then does its bookkeeping; if SIGINT or SIGTERM raised in the
middle, the code cleaning up after the interrupt could not tell a commit that landed from one
that did not, and a clean-up that guesses wrong deletes files a published snapshot references.
:func:`signals_deferred` holds both signals back around a commit and delivers them once it has
ended. ``Table.write``, the compactions (``core/compact/``) and the Spark job driver
(``jobs/write.py``) commit inside it; the command lines' handlers are in
:mod:`paimonflow.core.cli.interrupts`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while the block runs (a commit: its publish, and what the
    committer does after it), then deliver them: a commit a signal lands in either completes or
    fails on its own, never half-way, so nothing is deleted under a snapshot that was published.

    In the main thread, the handlers in place (the command line's, Python's Ctrl-C handler, the
    default of SIGTERM) are swapped for one that only notes the signal. When the block ends
    normally, the first noted signal goes to the handler that was in place: it raises
    (:class:`~paimonflow.core.errors.Interrupted`, :class:`KeyboardInterrupt`) or, for the default of SIGTERM, ends the
    process, after the commit. When the block raises, its exception goes on and the noted signal
    is dropped: the error says what became of the commit (``CommitOutcomeUnknownError``: may have
    landed, keep every file), which an interrupt in its place would hide, and the work stops
    either way. Ignored signals stay ignored; nested blocks deliver to the outer one; off the
    main thread nothing changes (only the main thread receives Python's signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(signum: int, frame: object) -> None:
        noted.append(signum)

    previous: dict[int, Any] = {}
    try:  # a signal landing while the handlers are swapped finds every swapped one restored
        for signum in SIGNALS:
            handler = signal.getsignal(signum)
            if handler in (signal.SIG_IGN, None):  # ignored, or a handler Python did not install: left as is
                continue
            previous[signum] = handler
            signal.signal(signum, note)
        yield
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler)
    if noted:
        _deliver(noted[0], previous[noted[0]])


def _deliver(signum: int, handler: Any) -> None:
    """Hand a signal held back by :func:`signals_deferred` to ``handler`` (restored by then)."""
    if handler is signal.SIG_DFL:
        signal.raise_signal(signum)  # the default action: the process ends here, after the commit
        return
    if callable(handler):
        handler(signum, None)
