"""A streaming scan that follows a table snapshot by snapshot (Paimon's continuous read), with
Paimon's start modes and progress kept under a consumer id.

Start modes (``scan.mode``):

* ``latest-full`` (default): the whole latest snapshot as ``+I`` rows, then every later change;
* ``latest``: only changes committed after the latest snapshot;
* ``from-snapshot`` / ``from-snapshot-full``: changes from snapshot N on (``-full``: the state at N
  first, then changes after it);
* ``from-timestamp``: changes from the first snapshot committed at or after a time;
* ``compacted-full``: the state at the latest COMPACT snapshot, then changes after it.

Changes of one snapshot are its changelog files when the table has a changelog producer, else the
rows its new files hold (Paimon's delta); COMPACT snapshots carry none. With ``consumer_id`` the
scan starts where that consumer stopped (whatever the mode) and :meth:`StreamingScan.checkpoint`
records the next snapshot, which also protects it from expiry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError, SnapshotNotFoundError
from ..meta.layout import POSTPONE_BUCKET
from ..meta.snapshots import CommitKind
from ..options.registry import ChangelogProducer
from .incremental import read_changes, with_kinds
from .postponed import postponed_rows

START_MODES = ("latest-full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp", "compacted-full")


@dataclass(frozen=True, slots=True)
class StreamBatch:
    """Rows (``rowkind`` first) of snapshots ``first_snapshot..last_snapshot``."""

    rows: pa.Table
    first_snapshot: int
    last_snapshot: int


class StreamingScan:
    def __init__(self, table, *, mode: str = "latest-full", snapshot_id: int | None = None,
                 timestamp_millis: int | None = None, consumer_id: str | None = None,
                 columns: list[str] | None = None) -> None:
        if mode not in START_MODES:
            raise InvalidArgumentError(f"unknown scan mode {mode!r}; expected one of {', '.join(START_MODES)}")
        if mode.startswith("from-snapshot") and snapshot_id is None:
            raise InvalidArgumentError(f"scan mode {mode} needs snapshot_id")
        if mode == "from-timestamp" and timestamp_millis is None:
            raise InvalidArgumentError("scan mode from-timestamp needs timestamp_millis")
        self._table, self._columns, self._consumer = table, columns, consumer_id
        self._full_at: int | None = None  # a snapshot whose whole state is emitted first
        self._next: int  # the next snapshot whose changes are emitted
        manager = table.snapshot_manager
        resumed = table.consumer_manager.get(consumer_id) if consumer_id is not None else None
        if resumed is not None:
            self._next = resumed.next_snapshot
        elif mode == "latest-full" or mode == "latest":
            latest = manager.latest_id()
            if latest is not None:
                self._full_at = latest if mode == "latest-full" else None
                self._next = latest + 1
            else:
                self._next = 1
        elif mode == "from-snapshot":
            assert snapshot_id is not None  # refused above
            self._next = int(snapshot_id)
        elif mode == "from-snapshot-full":
            assert snapshot_id is not None  # refused above
            self._full_at, self._next = int(snapshot_id), int(snapshot_id) + 1
        elif mode == "from-timestamp":
            later = [s for s in manager.snapshots() if s.time_millis >= timestamp_millis]
            self._next = later[0].id if later else (manager.latest_id() or 0) + 1
        else:  # compacted-full
            compacted = [s for s in manager.snapshots() if s.commit_kind is CommitKind.COMPACT]
            if compacted:
                self._full_at, self._next = compacted[-1].id, compacted[-1].id + 1
            else:
                self._next = manager.earliest_id() or 1

    @property
    def next_snapshot(self) -> int | None:
        return self._next

    @property
    def full_snapshot(self) -> int | None:
        """The snapshot whose whole state is emitted before any change (None: none, or done)."""
        return self._full_at

    def poll(self, max_snapshots: int = 100) -> StreamBatch | None:
        """The changes of the next available snapshots (at most ``max_snapshots``), or None when
        nothing new has been committed."""
        table, manager = self._table, self._table.snapshot_manager
        wanted = self._columns or list(table.arrow_schema.names)
        if self._full_at is not None:
            at = self._full_at
            # the stream's columns are the table's, as for its changes: no time travel to at's schema
            rows = table.split_reader().read(table.plan(snapshot_id=at), columns=wanted)
            kinds = np.zeros(rows.num_rows, np.int8)
            if table.options.bucket == POSTPONE_BUCKET and table.options.changelog_producer is ChangelogProducer.NONE:
                # Paimon's full phase reads the postpone bucket too, unmerged (read/postponed.py)
                waiting, waiting_kinds = postponed_rows(table, at, wanted)
                rows = pa.concat_tables([rows, waiting.cast(rows.schema)])
                kinds = np.concatenate([kinds, waiting_kinds])
            self._full_at = None
            return StreamBatch(with_kinds(rows, kinds), at, at)
        latest = manager.latest_id()
        if latest is None or self._next > latest:
            return None
        earliest = manager.earliest_id()
        if earliest is not None and self._next < earliest:
            from ..meta.changelogs import ChangelogManager

            earliest = min(earliest, ChangelogManager(table.file_io, table.path, table.branch).earliest_id() or earliest)
        if earliest is not None and self._next < earliest:
            raise SnapshotNotFoundError(
                f"snapshot {self._next} expired before this scan read it (earliest is {earliest}); "
                "protect streaming readers with a consumer id")
        first, last = self._next, min(latest, self._next + max_snapshots - 1)
        mode = "changelog" if table.options.changelog_producer is not ChangelogProducer.NONE else "delta"
        # Paimon's streaming scan reads the postpone bucket's delta too, unless a changelog
        # producer makes the compaction's changelog the stream (DataTableStreamScan)
        rows = read_changes(table, first - 1, last, mode=mode, columns=wanted, postponed=mode == "delta")
        self._next = last + 1
        return StreamBatch(rows, first, last)

    def checkpoint(self) -> None:
        """Record the progress under the consumer id (the next snapshot to read)."""
        if self._consumer is None:
            raise InvalidArgumentError("checkpoint needs a consumer_id")
        self._table.consumer_manager.record(self._consumer, self._next)
