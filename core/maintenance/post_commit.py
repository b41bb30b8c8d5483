"""Maintenance after commits (Apache Paimon's ``TableCommitImpl.maintain``).

After a commit that created a snapshot, a writer that is not ``write-only`` runs, in Paimon's
order:

1. automatic tag creation (``tag.automatic-creation`` ``process-time`` / ``watermark``,
   :mod:`paimonflow.core.maintenance.auto_tag`);
2. tag expiry by time-to-live (``tag.time-expire-enabled``, default true);
3. partition expiry, if ``partition.expiration-time`` is set, once per
   ``partition.expiration-check-interval`` (default 1 h) per table and process, counted from
   the process's first commit to the table (as in Paimon, a short batch job never checks;
   ``0 s`` checks after every commit);
4. consumer expiry by ``consumer.expiration-time`` (before snapshot expiry, so stale
   consumers stop protecting snapshots);
5. snapshot expiry by the table's ``snapshot.*`` options (Paimon's defaults: keep at least 10,
   and at most 2^31 - 1, snapshots; expire those older than 1 h, 50 per run).

``Table.write``, ``Table.compact`` and commits of ``Table.new_commit(...)`` run it (a dedicated
``Table.compact`` also when ``write-only`` is set, as Paimon's compaction jobs do). A failure
here never fails the commit: the committer logs it and adds a line to ``CommitResult.notes``.
Commits made by maintenance itself (partition expiry) do not run it again.

Batch-mode tags (``tag.automatic-creation=batch``) are not maintenance: ``Table.write``
creates them after its commit (:func:`after_batch_write`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from ..options.registry import (
    CONSUMER_EXPIRATION_TIME,
    PARTITION_EXPIRATION_CHECK_INTERVAL,
    TAG_AUTOMATIC_CREATION,
    TAG_TIME_EXPIRE_ENABLED,
    option_value,
)
from .context import TableOps

_log = logging.getLogger(__name__)

_running: ContextVar[bool] = ContextVar("paimonflow_maintenance_running", default=False)
_forced: ContextVar[bool] = ContextVar("paimonflow_maintenance_forced", default=False)

# (table path, branch) -> wall-clock seconds of the last partition expiry check in this process
_partition_checks: dict[tuple[str, str], float] = {}
_partition_checks_lock = threading.Lock()


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenanceReport:
    """What one maintenance run did."""

    tags_created: tuple[str, ...] = ()
    tags_deleted: tuple[str, ...] = ()  # by tag.num-retained-max
    tags_expired: tuple[str, ...] = ()  # by time-to-live
    partitions_expired: tuple[dict, ...] = ()
    partition_check_skipped: bool = False  # checked less than the check interval ago
    consumers_expired: tuple[str, ...] = ()
    snapshots_expired: int = 0

    def to_dict(self) -> dict[str, object]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {k: [dict(v) if isinstance(v, dict) else v for v in value] if isinstance(value, tuple) else value
                for k, value in out.items()}


def maintain(table: TableOps, *, clock: Callable[[], float] = time.time) -> MaintenanceReport:
    """Run the maintenance Paimon runs after a commit, once, on ``table`` (whatever
    ``write-only`` says; the commit hook checks that). ``clock`` gives the current time in
    seconds. Each step is idempotent; errors propagate (the commit hook catches them)."""
    from .auto_tag import create_auto_tags
    from .expire import expire_snapshots
    from .partition_expire import expire_partitions

    options = table.schema.options
    token = _running.set(True)
    try:
        auto = create_auto_tags(table, clock=clock)
        expired_tags: list[str] = []
        if option_value(TAG_TIME_EXPIRE_ENABLED, options):
            from .tags import Tags

            expired_tags = Tags(table, clock=clock).expire()
        partitions: tuple[dict, ...] = ()
        skipped = False
        if "partition.expiration-time" in options and table.partition_keys:
            if _partition_check_due(table, option_value(PARTITION_EXPIRATION_CHECK_INTERVAL, options), clock()):
                partitions = expire_partitions(table, clock=clock).expired
            else:
                skipped = True
        consumers: list[str] = []
        consumer_ttl = option_value(CONSUMER_EXPIRATION_TIME, options)
        if consumer_ttl is not None:
            consumers = table.consumer_manager.expire(consumer_ttl, int(clock() * 1000))
        snapshots = expire_snapshots(table, clock=clock, after_commit=True).expired_snapshots
    finally:
        _running.reset(token)
    return MaintenanceReport(tags_created=tuple(n for n, _ in auto.created),
                             tags_deleted=tuple(n for n, _ in auto.deleted), tags_expired=tuple(expired_tags),
                             partitions_expired=tuple(partitions), partition_check_skipped=skipped,
                             consumers_expired=tuple(consumers), snapshots_expired=snapshots)


def _partition_check_due(table: TableOps, interval_millis: int, now: float) -> bool:
    """Paimon's partition expiry checks once per interval of a writer's life, never at its
    start: a process's first commit to a table starts the interval (Java starts it a random part
    of an interval in the past, so one-shot batch writes never check either)."""
    if interval_millis <= 0:
        return True
    key = (table.path, table.branch)
    with _partition_checks_lock:
        last = _partition_checks.setdefault(key, now)
        if (now - last) * 1000 < interval_millis:
            return False
        _partition_checks[key] = now
        return True


def maintain_after_commit(table: TableOps, *, clock: Callable[[], float] = time.time) -> MaintenanceReport | None:
    """The commit hook: :func:`maintain` unless the table is ``write-only`` (and no dedicated
    compaction forces it) or maintenance is already running (its own commits). None if skipped."""
    if _running.get() or (table.options.write_only and not _forced.get()):
        return None
    report = maintain(table, clock=clock)
    _log.debug("maintenance after commit on %s: %s", table.identifier, report)
    return report


@contextlib.contextmanager
def forced_maintenance() -> Iterator[None]:
    """Within this block commits run maintenance even on ``write-only`` tables (Paimon's
    dedicated compaction jobs switch ``write-only`` off for their own commit)."""
    token = _forced.set(True)
    try:
        yield
    finally:
        _forced.reset(token)


def after_batch_write(table: TableOps, result, *, clock: Callable[[], float] = time.time):
    """After ``Table.write`` committed a snapshot: with ``tag.automatic-creation=batch`` create
    the batch tag (:func:`~paimonflow.core.maintenance.auto_tag.create_batch_tag`). Returns ``result``, with
    a note added if that failed (the write itself is committed either way)."""
    if result.snapshot_id is None or result.already_committed \
            or option_value(TAG_AUTOMATIC_CREATION, table.schema.options) != "batch":
        return result
    from .auto_tag import create_batch_tag

    try:
        create_batch_tag(table, clock=clock)
    except Exception as exc:
        _log.warning("snapshot %s committed, but creating its batch tag failed: %s", result.snapshot_id, exc,
                     exc_info=True)
        return dataclasses.replace(result, notes=(*result.notes, f"batch tag failed: {type(exc).__name__}: {exc}"))
    return result
