"""Automatic tags (Apache Paimon's ``TagAutoCreation``, ``TagPeriodHandler``,
``TagTimeExtractor`` and ``TagBatchCreation``).

``tag.automatic-creation`` chooses the mode:

* ``process-time``: each snapshot's commit time, seen in ``sink.process-time-zone`` (default:
  the local zone), or ``watermark``: its watermark in ``sink.watermark-time-zone`` (default
  UTC; snapshots without a watermark are skipped). Periods are ``tag.creation-period``
  (``daily``, ``hourly``, ``two-hours``) or ``tag.creation-period-duration``. The tag of a
  period is created on the **first snapshot whose time is at or after the period's end plus
  ``tag.creation-delay``**, and named after the period's start (``2026-11-21``,
  ``2026-11-21 08``, ``202611210830``... by ``tag.period-formatter``). The first snapshot ever
  seen tags the period before its own. Periods without commits get no tag, unless
  ``tag.automatic-completion`` is set: then each later snapshot fills the next missing
  period, one at a time. With ``tag.num-retained-max`` the oldest automatic tags (names that
  parse as periods; other tags are never counted or touched) are deleted, freeing the files of
  expired snapshots.
* ``batch``: after each batch write, ``batch-write-<yyyy-MM-dd>`` (or
  ``tag.batch.customized-name``) is (re)created on the latest snapshot; then the oldest tags
  beyond ``tag.num-retained-max`` go, counting **all** tags.

Nothing is kept in memory between runs: progress is restored from the newest automatic tag, so
only snapshots after it are read. Running again is harmless (existing tags are kept).
New tags get ``tag.default-time-retained`` as time-to-live.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..errors import TagNotFoundError
from ..meta.capabilities import Operation
from ..meta.context import TableMeta
from ..options.tagging import AutoTagSettings, TagPeriod

_log = logging.getLogger(__name__)
BATCH_TAG_PREFIX = "batch-write-"


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoTagResult:
    """What one run did: tags created (name, snapshot id) and tags deleted by
    ``tag.num-retained-max``, with the number of files their deletion freed."""

    created: tuple[tuple[str, int], ...] = ()
    deleted: tuple[tuple[str, int], ...] = ()
    freed_files: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"created": [{"tag": n, "snapshot_id": s} for n, s in self.created],
                "deleted": [{"tag": n, "snapshot_id": s} for n, s in self.deleted],
                "freed_files": self.freed_files}


def _tag_names(table: TableMeta) -> list[str]:
    """Tag names from a directory listing (no tag file is read)."""
    names = []
    for status in table.file_io.list_dir(table.tag_manager.directory):
        base = status.path.rstrip("/").rsplit("/", 1)[-1]
        if not status.is_dir and base.startswith("tag-") and len(base) > 4:
            names.append(base[4:])
    return names


def _auto_tags(table: TableMeta, period: TagPeriod) -> dict[str, datetime]:
    found = {}
    for name in _tag_names(table):
        start = period.start_of(name)
        if start is not None:
            found[name] = start
    return found


def create_auto_tags(table: TableMeta, *, clock: Callable[[], float] = time.time) -> AutoTagResult:
    """Run Paimon's automatic tag creation once (modes ``process-time`` and ``watermark``; other
    modes do nothing). Idempotent: a second run right after creates nothing."""
    from .tags import Tags

    settings = AutoTagSettings.from_options(table.schema.options)
    if settings.mode not in ("process-time", "watermark"):
        return AutoTagResult()
    period, manager = settings.period, table.snapshot_manager
    tags = Tags(table, clock=clock)
    auto = _auto_tags(table, period)
    next_tag: datetime | None = None
    next_snapshot = manager.earliest_id() or 1
    if auto:  # restore progress from the newest automatic tag (by its period)
        newest = max(auto, key=auto.__getitem__)
        next_snapshot = tags.get(newest).id + 1
        next_tag = period.next_start(auto[newest])
    delay = timedelta(milliseconds=settings.delay_millis)
    created: list[tuple[str, int]] = []
    deleted: list[tuple[str, int]] = []
    freed = 0
    while True:
        snapshot = manager.try_snapshot(next_snapshot)
        if snapshot is None:
            earliest = manager.earliest_id()
            if earliest is not None and earliest > next_snapshot:  # expired meanwhile: jump ahead
                next_snapshot = earliest
                continue
            break
        next_snapshot += 1
        when = settings.time_of(snapshot)
        if when is None:
            continue
        if next_tag is not None and when - delay < period.next_start(next_tag):
            continue
        this_tag = next_tag if settings.completion and next_tag is not None else period.previous_start(when)
        name = period.name(this_tag)
        if name not in auto:
            tags.create(name, snapshot_id=snapshot.id, ignore_if_exists=True)
            auto[name] = this_tag
            created.append((name, snapshot.id))
        next_tag = period.next_start(this_tag)
        if settings.num_retained_max is not None and len(auto) > settings.num_retained_max:
            gone, files = _trim(tags, list(auto), settings.num_retained_max)
            for tag_name, _ in gone:
                auto.pop(tag_name, None)
            deleted += gone
            freed += files
    return AutoTagResult(created=tuple(created), deleted=tuple(deleted), freed_files=freed)


def _trim(tags, names: list[str], keep: int) -> tuple[list[tuple[str, int]], int]:
    """Delete the tags of the oldest snapshots among ``names`` until ``keep`` snapshots remain
    tagged (Paimon counts tagged snapshots; automatic tags are one per snapshot)."""
    by_snapshot: dict[int, list[str]] = {}
    for name in names:
        try:
            by_snapshot.setdefault(tags.get(name).id, []).append(name)
        except TagNotFoundError:
            continue  # deleted meanwhile
    deleted, freed = [], 0
    for snapshot_id in sorted(by_snapshot)[:max(len(by_snapshot) - keep, 0)]:
        for name in sorted(by_snapshot[snapshot_id]):
            freed += len(tags.delete(name).freed_files)
            deleted.append((name, snapshot_id))
    return deleted, freed


def create_batch_tag(table: TableMeta, *, clock: Callable[[], float] = time.time) -> AutoTagResult:
    """Paimon's batch-mode tag: (re)create ``batch-write-<yyyy-MM-dd>`` of the latest snapshot's
    commit day in ``sink.process-time-zone`` (or ``tag.batch.customized-name``) on the latest
    snapshot, then delete the oldest tags beyond ``tag.num-retained-max``, counting every tag
    (tags of the oldest snapshots first). Does nothing on a table without snapshots."""
    from .tags import Tags

    settings = AutoTagSettings.from_options(table.schema.options)
    latest = table.snapshot_manager.latest()
    if latest is None:
        return AutoTagResult()
    tags = Tags(table, clock=clock)
    name = settings.batch_name or BATCH_TAG_PREFIX + settings.wall_clock(latest.time_millis).strftime("%Y-%m-%d")
    freed = 0
    if name in _tag_names(table):
        freed += len(tags.delete(name).freed_files)
    tags.create(name, snapshot_id=latest.id)
    deleted: list[tuple[str, int]] = []
    if settings.num_retained_max is not None:
        all_tags = {n: s.id for n, s in tags.list().items()}
        excess = len(all_tags) - settings.num_retained_max
        for tag_name in sorted(all_tags, key=lambda n: (all_tags[n], n))[:max(excess, 0)]:
            freed += len(tags.delete(tag_name).freed_files)
            deleted.append((tag_name, all_tags[tag_name]))
    return AutoTagResult(created=((name, latest.id),), deleted=tuple(deleted), freed_files=freed)


def run_auto_tag(table: TableMeta, *, clock: Callable[[], float] = time.time) -> AutoTagResult:
    """On demand (Paimon's ``trigger_tag_automatic_creation``): the table's mode decides;
    ``process-time``/``watermark`` create the tags due, ``batch`` (re)creates the batch tag,
    ``none`` does nothing. Creates no snapshot."""
    table.capabilities.require(Operation.HISTORY)
    mode = AutoTagSettings.from_options(table.schema.options).mode
    if mode == "batch":
        return create_batch_tag(table, clock=clock)
    return create_auto_tags(table, clock=clock)
