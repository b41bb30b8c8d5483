"""The snapshot watch: one decision function behind the Airflow sensor and trigger and the Dagster sensor.

A watcher remembers an :class:`Observation` (the last snapshot it saw: its id and identity) and
asks :func:`watch` what changed since. The answer is computed from which snapshot files exist,
following Paimon's streaming readers (semantics §6): ``LATEST`` and ``EARLIEST`` are only hints,
and :meth:`SnapshotManager.latest` validates ``LATEST`` (``snapshot-N`` exists and
``snapshot-(N+1)`` does not) before falling back to listing ``snapshot/``.

    >>> result = watch(table.snapshot_manager, cursor)          # cursor: Observation | None
    >>> if result.has_data_changes: ...                          # fire
    >>> cursor = result.next_observation                         # persist (``to_cursor()``)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgumentError
from ..meta.snapshots import CommitKind, Snapshot, SnapshotManager

DEFAULT_MAX_READS = 1000
"""How many new snapshot files one :func:`watch` call reads at most."""

Identity = str | tuple[str, int, int]
"""A snapshot's ``uuid``, or ``(commit_user, commit_identifier, time_millis)`` when it has none."""

_DATA_KINDS = frozenset({CommitKind.APPEND, CommitKind.OVERWRITE})


def snapshot_identity(snapshot: Snapshot) -> Identity:
    """What tells a snapshot apart from another that later reused its id (after a rollback)."""
    if snapshot.uuid is not None:
        return snapshot.uuid
    return (snapshot.commit_user, snapshot.commit_identifier, snapshot.time_millis)


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """The last snapshot a watcher saw: its id and its identity (see :func:`snapshot_identity`)."""

    snapshot_id: int
    identity: Identity

    @classmethod
    def of(cls, snapshot: Snapshot) -> Observation:
        return cls(snapshot_id=snapshot.id, identity=snapshot_identity(snapshot))

    def matches(self, snapshot: Snapshot) -> bool:
        """True if ``snapshot`` is the very snapshot observed (same id, same identity)."""
        return snapshot.id == self.snapshot_id and snapshot_identity(snapshot) == self.identity

    def to_dict(self) -> dict[str, Any]:
        identity = self.identity if isinstance(self.identity, str) else list(self.identity)
        return {"snapshot_id": self.snapshot_id, "identity": identity}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Observation:
        """Inverse of :meth:`to_dict`; raises :class:`InvalidArgumentError` on anything else."""
        try:
            sid, identity = doc["snapshot_id"], doc["identity"]
        except (KeyError, TypeError):
            raise InvalidArgumentError(f"not an observation: {doc!r}") from None
        if not isinstance(sid, int) or isinstance(sid, bool) or sid < 1:
            raise InvalidArgumentError(f"observation snapshot_id must be a positive integer, found {sid!r}")
        if isinstance(identity, str):
            return cls(snapshot_id=sid, identity=identity)
        if (isinstance(identity, list | tuple) and len(identity) == 3 and isinstance(identity[0], str)
                and all(isinstance(v, int) and not isinstance(v, bool) for v in identity[1:])):
            return cls(snapshot_id=sid, identity=(identity[0], identity[1], identity[2]))
        raise InvalidArgumentError(f"observation identity must be a uuid or [user, identifier, millis], "
                                   f"found {identity!r}")

    def to_cursor(self) -> str:
        """A compact JSON string (a Dagster sensor cursor, an Airflow XCom/trigger value)."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_cursor(cls, cursor: str) -> Observation:
        try:
            doc = json.loads(cursor)
        except (TypeError, json.JSONDecodeError):
            raise InvalidArgumentError(f"not an observation cursor: {cursor!r}") from None
        return cls.from_dict(doc)


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchResult:
    """What changed since an observation. Build with :func:`watch`.

    ``first_new_id..latest_id`` (inclusive) are the snapshots new to the watcher; both are None
    when there are none. ``kind_counts`` counts commit kinds over the snapshots actually read:
    ``counted_from_id..latest_id``, which is the whole range unless ``truncated`` (then only the
    newest ``max_reads``). ``missing`` counts ids in that stretch whose file vanished while
    reading (expired concurrently). ``next_observation`` is what to remember for the next call
    (the latest snapshot; None while the table has no snapshots).
    """

    first_new_id: int | None
    latest_id: int | None
    counted_from_id: int | None
    kind_counts: Mapping[CommitKind, int]
    truncated: bool
    missing: int
    rolled_back: bool
    expired_past: bool
    next_observation: Observation | None

    @property
    def new_range(self) -> tuple[int, int] | None:
        """``(first_new_id, latest_id)``, inclusive; None when nothing is new."""
        if self.first_new_id is None or self.latest_id is None:
            return None
        return (self.first_new_id, self.latest_id)

    @property
    def new_snapshot_count(self) -> int:
        return 0 if self.new_range is None else self.new_range[1] - self.new_range[0] + 1

    @property
    def has_data_changes(self) -> bool:
        """Any APPEND or OVERWRITE among the new snapshots.

        Conservative: a truncated read (unread snapshots may change data) also counts as True.
        """
        if self.new_range is None:
            return False
        return self.truncated or any(self.kind_counts.get(kind, 0) for kind in _DATA_KINDS)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for trigger events and logs)."""
        return {
            "first_new_id": self.first_new_id,
            "latest_id": self.latest_id,
            "counted_from_id": self.counted_from_id,
            "kind_counts": {kind.value: n for kind, n in self.kind_counts.items()},
            "truncated": self.truncated,
            "missing": self.missing,
            "rolled_back": self.rolled_back,
            "expired_past": self.expired_past,
            "has_data_changes": self.has_data_changes,
            "next_observation": None if self.next_observation is None else self.next_observation.to_dict(),
        }


def watch(snapshot_manager: SnapshotManager, last: Observation | None, *,
          max_reads: int = DEFAULT_MAX_READS) -> WatchResult:
    """Report the snapshots committed since ``last`` (None: nothing observed yet). Reads only.

    Rules, with ``L`` the latest snapshot (found by :meth:`SnapshotManager.latest`, which never
    trusts the ``LATEST`` hint blindly) and ``E`` the earliest retained one:

    * ``rolled_back``: ``L.id < last.snapshot_id``, or ``snapshot-<last.snapshot_id>`` exists
      with another identity (rolled back, then the id reused), or the table has no snapshots
      any more. A watcher that was rolled back cannot tell which ids are new, so the range
      restarts at ``E``, as for a watcher that observed nothing.
    * new range: ``last.snapshot_id + 1 .. L.id`` (``E .. L.id`` when ``last`` is None or rolled
      back; empty when ``L.id == last.snapshot_id``).
    * ``expired_past``: expiry removed snapshots the watcher never saw: ``E > last.snapshot_id + 1``
      and ``snapshot-<last.snapshot_id + 1>`` is indeed gone, and no long-lived
      ``changelog-<last.snapshot_id + 1>`` (decoupled changelog) covers it either; snapshots that
      live on as changelogs are read from there and are not ``missing``. The range still starts
      right after ``last`` (its first ids no longer exist and count as ``missing`` if read).
    * kind counts read each new snapshot file, newest first, at most ``max_reads`` of them
      (``truncated`` if the range is longer).

    If ``last``'s own snapshot has expired, its identity cannot be checked and it is trusted.
    Raises :class:`CorruptMetadataError` for an unreadable snapshot file, :class:`StorageError`
    for storage failures, :class:`InvalidArgumentError` for ``max_reads < 1``.
    """
    if max_reads < 1:
        raise InvalidArgumentError(f"max_reads must be at least 1, found {max_reads}")
    latest = snapshot_manager.latest()
    if latest is None:
        return _result(first=None, latest=None, counted_from=None, counts=_zero_counts(), truncated=False,
                       missing=0, rolled_back=last is not None, expired_past=False)

    rolled_back = last is not None and _rolled_back(snapshot_manager, last, latest)
    if last is None or rolled_back:
        earliest = snapshot_manager.earliest_id()
        first = latest.id if earliest is None else min(earliest, latest.id)
        expired_past = False
    else:
        first = last.snapshot_id + 1
        expired_past = first <= latest.id and _missed_by_expiry(snapshot_manager, first)
    if first > latest.id:
        return _result(first=None, latest=latest, counted_from=None, counts=_zero_counts(), truncated=False,
                       missing=0, rolled_back=False, expired_past=False)

    counted_from = max(first, latest.id - max_reads + 1)
    counts = _zero_counts()
    counts[latest.commit_kind] += 1
    missing = 0
    for sid in range(latest.id - 1, counted_from - 1, -1):
        snapshot = snapshot_manager.try_snapshot(sid) or _long_lived_changelog(snapshot_manager, sid)
        if snapshot is None:
            missing += 1  # expired while we read (or before, when expired_past)
            continue
        counts[snapshot.commit_kind] += 1
    if missing and last is not None and not rolled_back and not expired_past:
        expired_past = _missed_by_expiry(snapshot_manager, first)
    return _result(first=first, latest=latest, counted_from=counted_from, counts=counts,
                   truncated=counted_from > first, missing=missing, rolled_back=rolled_back,
                   expired_past=expired_past)


def _rolled_back(snapshot_manager: SnapshotManager, last: Observation, latest: Snapshot) -> bool:
    if latest.id < last.snapshot_id:
        return True
    observed = latest if latest.id == last.snapshot_id else snapshot_manager.try_snapshot(last.snapshot_id)
    if observed is None:
        return False  # expired: its identity can no longer be checked
    return not last.matches(observed)


def _missed_by_expiry(snapshot_manager: SnapshotManager, first_new: int) -> bool:
    # Expiry deletes from the oldest id up, so if the first new id survives, nothing was missed.
    if snapshot_manager.exists(first_new):
        return False
    if _long_lived_changelog(snapshot_manager, first_new) is not None:
        return False  # a decoupled changelog still covers it: readers follow changelog-<id>
    earliest = snapshot_manager.earliest_id()
    return earliest is not None and earliest > first_new


def _long_lived_changelog(snapshot_manager: SnapshotManager, snapshot_id: int) -> Snapshot | None:
    """``changelog/changelog-<id>``, which an expired snapshot leaves when the changelog is decoupled."""
    from ..meta.changelogs import ChangelogManager

    manager = snapshot_manager
    return ChangelogManager(manager.file_io, manager.table_path, manager.branch).try_changelog(snapshot_id)


def _zero_counts() -> dict[CommitKind, int]:
    return dict.fromkeys(CommitKind, 0)


def _result(*, first: int | None, latest: Snapshot | None, counted_from: int | None,
            counts: dict[CommitKind, int], truncated: bool, missing: int, rolled_back: bool,
            expired_past: bool) -> WatchResult:
    return WatchResult(
        first_new_id=first,
        latest_id=None if first is None or latest is None else latest.id,
        counted_from_id=counted_from,
        kind_counts=counts,
        truncated=truncated,
        missing=missing,
        rolled_back=rolled_back,
        expired_past=expired_past,
        next_observation=None if latest is None else Observation.of(latest),
    )
