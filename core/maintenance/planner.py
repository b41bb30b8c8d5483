"""The warehouse planner: each table's health, and the maintenance its own Paimon options call for.

:func:`plan_warehouse` walks a catalog's tables (or those a glob names), measures each from its
metadata only (snapshot, manifest-list and manifest files, tag, consumer, changelog and schema
files: never a data file) and turns the measurements into explained actions, each due by one
Paimon option of the table (or a default of the warehouse's :class:`~.policy.MaintenancePolicy`):

==================== ===================================================================================
action               due when
==================== ===================================================================================
compact              a primary-key bucket has more sorted runs than ``num-sorted-run.compaction-trigger``
                     (Paimon's universal compaction then picks by run count: ``full`` false); an append
                     partition or bucket has at least ``compaction.min.file-num`` files smaller than
                     ``target-file-size`` x ``compaction.small-file-ratio`` (``full`` true: those files
                     are rewritten); a postpone-bucket table (``bucket = -2``) has files waiting in
                     ``bucket-postpone``; ``compaction.optimization-interval`` passed since the last
                     COMPACT snapshot while a bucket holds several sorted runs (``full`` true)
expire-partitions    partitions older than ``partition.expiration-time``
auto-tag             ``tag.automatic-creation`` (process-time, watermark) has a period's tag due, or more
                     automatic tags than ``tag.num-retained-max``
expire-tags          tags whose time-to-live (``tag.default-time-retained`` when made) ran out
reset-consumer       a consumer untouched for ``consumer.expiration-time`` (deleted)
expire-snapshots     snapshots beyond ``snapshot.num-retained.max``, or beyond ``snapshot.num-retained.min``
                     and older than ``snapshot.time-retained`` (consumers protect theirs)
expire-changelogs    long-lived changelogs beyond ``changelog.num-retained.*`` / ``changelog.time-retained``
==================== ===================================================================================

Each measurement is the one the operation itself makes (:func:`~.expire.expire_range`,
:func:`~.changelog_expire.expire_changelogs`, :func:`~.partition_expire.expire_partitions` and
:meth:`~.tags.Tags.expire` in dry-run, :meth:`ConsumerManager.expire
<paimonflow.core.meta.consumers.ConsumerManager.expire>` in dry-run), so what is planned is what
the verb does. Each action names its job (``paimonflow.jobs.registry.JOBS``) and carries that
job's arguments; its ``urgency`` is how far past its bound the table is (1.0: just due).

Planning is read-only and deterministic: the same metadata and ``now_millis`` give the same plan.
A table the capability gate refuses for compaction, expiry, history or writes is skipped with the
reason, never planned. :func:`recheck` plans one table again right before an action runs, so an
action someone else already did is dropped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from ..errors import PaimonflowError
from ..meta.capabilities import Operation
from ..meta.context import TableMeta
from ..meta.layout import POSTPONE_BUCKET
from ..meta.snapshots import CommitKind
from ..options.compaction import AppendCompactionOptions, CompactionOptions
from ..options.core import CoreOptions
from ..options.parse import parse_duration_millis
from ..options.registry import CONSUMER_EXPIRATION_TIME, option_value
from ..options.retention import retained_counts
from ..options.tagging import AutoTagSettings
from .policy import ACTIONS, MaintenancePolicy

if TYPE_CHECKING:
    from ..catalog import Catalog

#: the operations the planner's actions need; a table refused any of them is skipped
GATED = (Operation.COMPACT, Operation.EXPIRE, Operation.HISTORY, Operation.WRITE)
_EVERYTHING = 2**31 - 1  # "no cap" when counting what is due


@dataclass(frozen=True, slots=True, kw_only=True)
class BucketHealth:
    """The live files of one (partition, bucket) of the latest snapshot."""

    partition: str  # ``dt=2026-11-21,hh=10`` ('' for an unpartitioned table)
    bucket: int  # -2: the postpone bucket
    files: int
    bytes: int
    level0_files: int
    sorted_runs: int  # level-0 files plus non-empty higher levels (primary-key tables; else 0)
    small_files: int  # below target-file-size x compaction.small-file-ratio
    small_bytes: int

    def to_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True, kw_only=True)
class TableHealth:
    """One table's state, from its metadata (numbers the actions' reasons quote)."""

    table: str
    kind: str  # primary-key or append
    bucket: int  # the table's bucket option
    latest_snapshot: int | None
    earliest_snapshot: int | None
    snapshots: int  # retained
    snapshots_due: int  # beyond the snapshot.* retention
    changelogs: int  # long-lived changelog files
    changelogs_due: int
    data_files: int
    data_bytes: int
    small_files: int
    small_bytes: int
    level0_files: int
    max_sorted_runs: int
    postpone_files: int
    partitions: int
    partitions_expired: tuple[str, ...]
    tags: int
    tags_expired: tuple[str, ...]
    auto_tag_due: str | None  # why an automatic tag is due, if one is
    consumers: int
    consumers_expired: tuple[str, ...]
    last_compaction_millis: int | None  # of the newest retained COMPACT snapshot
    millis_since_compaction: int | None
    buckets: tuple[BucketHealth, ...] = ()

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            out[name] = [b.to_dict() for b in value] if name == "buckets" else (
                list(value) if isinstance(value, tuple) else value)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenanceAction:
    """One planned action: the job ``action`` on ``table`` with ``arguments`` (that job's keyword
    arguments, also the core verb's), due by ``option`` for the reason ``why``. ``urgency`` is how
    far past its bound the table is (1.0: just due); ``priority`` the policy's number for the table."""

    table: str
    action: str
    arguments: Mapping[str, object] = field(default_factory=dict)
    why: str
    option: str
    urgency: float
    priority: int = 0

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the action across plans: its table, its name, and the consumer it deletes."""
        return self.table, self.action, str(self.arguments.get("consumer_id", ""))

    def sort_key(self) -> tuple:
        return (-self.priority, -self.urgency, self.table, ACTIONS.index(self.action), self.key[2])

    def to_dict(self) -> dict[str, object]:
        return {"table": self.table, "action": self.action, "arguments": _plain(self.arguments), "why": self.why,
                "option": self.option, "urgency": self.urgency, "priority": self.priority}


@dataclass(frozen=True, slots=True, kw_only=True)
class SkippedTable:
    table: str
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"table": self.table, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class WarehousePlan:
    """Every planned table's health and the actions due, most urgent first (``priority``, then
    ``urgency``); compactions beyond the policy's ``max-compactions`` are ``deferred``."""

    now_millis: int
    tables: tuple[TableHealth, ...] = ()
    actions: tuple[MaintenanceAction, ...] = ()
    deferred: tuple[MaintenanceAction, ...] = ()
    skipped: tuple[SkippedTable, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"now_millis": self.now_millis, "actions": [a.to_dict() for a in self.actions],
                "deferred": [a.to_dict() for a in self.deferred], "skipped": [s.to_dict() for s in self.skipped],
                "tables": [t.to_dict() for t in self.tables]}


def _plain(value: object) -> object:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# -- the warehouse -------------------------------------------------------------------------------


def warehouse_tables(catalog: Catalog, tables_glob: str | None = None) -> list[str]:
    """``<database>.<table>`` of every table, or those matching ``tables_glob`` (``db.*``,
    ``*.orders``; a glob without a dot names databases), sorted. A database named without a
    wildcard must exist (:class:`~paimonflow.core.errors.DatabaseNotFoundError`)."""
    glob = tables_glob or "*.*"
    if "." not in glob:
        glob += ".*"
    database_glob = glob.split(".", 1)[0]
    if any(c in database_glob for c in "*?["):
        databases = [d for d in catalog.list_databases() if fnmatchcase(d, database_glob)]
    else:
        databases = [database_glob]
    found = [f"{d}.{t}" for d in databases for t in catalog.list_tables(d)]
    return sorted(name for name in found if fnmatchcase(name, glob))


def plan_warehouse(catalog: Catalog, tables_glob: str | None = None, policy: MaintenancePolicy | None = None,
                   now_millis: int | None = None) -> WarehousePlan:
    """Plan the maintenance of every table of ``catalog`` (or those ``tables_glob`` names) by its
    own options and ``policy`` (default: the options alone), as of ``now_millis`` (default: now).

    Reads metadata only and changes nothing (but a stale ``EARLIEST`` hint, which expiry's own
    planning repairs). Tables the policy excludes, that cannot be opened,
    that the capability gate refuses, or whose metadata cannot be read are in ``skipped`` with the
    reason. Deterministic: the same metadata and ``now_millis`` plan the same actions."""
    policy = policy or MaintenancePolicy()
    now = int(time.time() * 1000) if now_millis is None else int(now_millis)
    healths: list[TableHealth] = []
    actions: list[MaintenanceAction] = []
    skipped: list[SkippedTable] = []
    for identifier in warehouse_tables(catalog, tables_glob):
        glob = policy.excludes(identifier)
        if glob is not None:
            skipped.append(SkippedTable(table=identifier, reason=f"excluded by the policy ({glob})"))
            continue
        try:
            table = catalog.get_table(identifier)
            health, due = plan_table(table, policy=policy, now_millis=now)
        except PaimonflowError as exc:
            skipped.append(SkippedTable(table=identifier, reason=f"{type(exc).__name__}: {' '.join(str(exc).split())}"))
            continue
        healths.append(health)
        actions.extend(due)
    actions.sort(key=MaintenanceAction.sort_key)
    deferred: list[MaintenanceAction] = []
    if policy.max_compactions is not None:
        compactions = [a for a in actions if a.action == "compact"]
        deferred = compactions[policy.max_compactions:]
        actions = [a for a in actions if a not in deferred]
    return WarehousePlan(now_millis=now, tables=tuple(healths), actions=tuple(actions), deferred=tuple(deferred),
                         skipped=tuple(skipped))


def recheck(table: TableMeta, action: MaintenanceAction, *, policy: MaintenancePolicy | None = None,
            now_millis: int | None = None) -> MaintenanceAction | None:
    """``action`` as planned again now on ``table`` (fresh arguments and numbers), or None when it
    is no longer due (done by someone else meanwhile)."""
    now = int(time.time() * 1000) if now_millis is None else int(now_millis)
    _, fresh = plan_table(table, policy=policy or MaintenancePolicy(), now_millis=now)
    return next((a for a in fresh if a.key == action.key), None)


# -- one table -----------------------------------------------------------------------------------


def plan_table(table: TableMeta, *, policy: MaintenancePolicy, now_millis: int
               ) -> tuple[TableHealth, list[MaintenanceAction]]:
    """One table's health and the actions due (in :data:`~.policy.ACTIONS` order). Raises
    :class:`~paimonflow.core.errors.UnsupportedFeatureError` for a table the capability gate
    refuses, and any error its metadata gives; reads no data file."""
    for operation in GATED:
        table.capabilities.require(operation)
    raw = policy.options_for(table.schema.options)
    options = CoreOptions.from_map(raw) if policy.defaults else table.options
    primary_key = bool(table.primary_keys)
    manager = table.snapshot_manager
    latest = manager.latest()
    earliest_id = manager.earliest_id()
    buckets = _buckets(table, latest, raw, primary_key=primary_key)
    planner = _Planner(table=table.identifier, priority=policy.priority_of(table.identifier))

    # compaction
    postpone = sum(b.files for b in buckets if b.bucket == POSTPONE_BUCKET)
    last_compaction = _last_compaction_millis(table, latest, earliest_id)
    since = None if last_compaction is None else now_millis - last_compaction
    if options.bucket == POSTPONE_BUCKET:
        if postpone:
            trigger = options.num_sorted_run_compaction_trigger
            planner.add("compact", {}, option="bucket",
                        why=f"{postpone} file(s) wait in bucket-postpone (bucket = -2): batch reads see their rows "
                            "only after a compaction assigns them buckets",
                        urgency=1 + postpone / trigger)
    elif primary_key:
        _plan_merge_tree(planner, buckets, raw, options, since, partition_keys=table.partition_keys)
    else:
        _plan_append(planner, buckets, raw, since, partition_keys=table.partition_keys)

    # partitions
    expired_partitions: tuple[str, ...] = ()
    expiration = raw.get("partition.expiration-time")
    if expiration is not None and table.partition_keys and latest is not None:
        from .partition_expire import expire_partitions

        millis = parse_duration_millis(expiration)
        found = expire_partitions(table, expiration_millis=millis, dry_run=True,  # type: ignore[arg-type]
                                  clock=lambda: now_millis / 1000)
        expired_partitions = tuple(",".join(f"{k}={v}" for k, v in p.items()) for p in found.expired)
        if expired_partitions:
            live = len({b.partition for b in buckets})
            shown = ", ".join(expired_partitions[:3]) + (" …" if len(expired_partitions) > 3 else "")
            planner.add("expire-partitions", {"expiration_millis": millis}, option="partition.expiration-time",
                        why=f"{len(expired_partitions)} of {live} partition(s) older than partition.expiration-time "
                            f"({expiration}): {shown}",
                        urgency=1 + len(expired_partitions) / max(live, 1))

    # tags
    auto_due = _auto_tag_due(table, latest)
    if auto_due is not None:
        planner.add("auto-tag", {}, option=auto_due[0], why=auto_due[1], urgency=1.0)
    from .tags import Tags

    tag_names = table.tag_manager.retention()
    expired_tags = tuple(Tags(table, clock=lambda: now_millis / 1000).expire(dry_run=True)) if tag_names else ()
    if expired_tags:
        shown = ", ".join(expired_tags[:3]) + (" …" if len(expired_tags) > 3 else "")
        planner.add("expire-tags", {}, option="tag.default-time-retained",
                    why=f"{len(expired_tags)} of {len(tag_names)} tag(s) past their time-to-live "
                        f"(tag.default-time-retained when made): {shown}",
                    urgency=1 + len(expired_tags) / len(tag_names))

    # consumers
    consumer_ids = table.consumer_manager.ids()
    expired_consumers: tuple[str, ...] = ()
    ttl = option_value(CONSUMER_EXPIRATION_TIME, raw)
    if ttl is not None and consumer_ids:
        expired_consumers = tuple(table.consumer_manager.expire(ttl, now_millis, dry_run=True))
        for consumer in expired_consumers:
            planner.add("reset-consumer", {"consumer_id": consumer}, option="consumer.expiration-time",
                        why=f"consumer {consumer!r} not updated for consumer.expiration-time "
                            f"({raw['consumer.expiration-time']}): it protects snapshots no reader needs",
                        urgency=1.0)

    # snapshots
    snapshots = 0 if latest is None or earliest_id is None else latest.id - earliest_id + 1
    snapshots_due = 0
    if snapshots:
        snapshots_due = _plan_snapshot_expiry(planner, table, options, snapshots, now_millis)

    # changelogs
    changelogs, changelogs_due = _plan_changelog_expiry(planner, table, options, now_millis)

    small = [b for b in buckets if b.small_files]
    health = TableHealth(
        table=table.identifier, kind="primary-key" if primary_key else "append", bucket=options.bucket,
        latest_snapshot=latest.id if latest else None, earliest_snapshot=earliest_id if latest else None,
        snapshots=snapshots, snapshots_due=snapshots_due, changelogs=changelogs, changelogs_due=changelogs_due,
        data_files=sum(b.files for b in buckets), data_bytes=sum(b.bytes for b in buckets),
        small_files=sum(b.small_files for b in small), small_bytes=sum(b.small_bytes for b in small),
        level0_files=sum(b.level0_files for b in buckets),
        max_sorted_runs=max((b.sorted_runs for b in buckets), default=0), postpone_files=postpone,
        partitions=len({b.partition for b in buckets}) if table.partition_keys else 0,
        partitions_expired=expired_partitions, tags=len(tag_names), tags_expired=expired_tags,
        auto_tag_due=auto_due[1] if auto_due else None, consumers=len(consumer_ids),
        consumers_expired=expired_consumers, last_compaction_millis=last_compaction, millis_since_compaction=since,
        buckets=buckets)
    wanted = [a for a in planner.actions if a.action in policy.actions]
    return health, sorted(wanted, key=lambda a: (ACTIONS.index(a.action), a.key[2]))


@dataclass
class _Planner:
    table: str
    priority: int
    actions: list[MaintenanceAction] = field(default_factory=list)

    def add(self, action: str, arguments: Mapping[str, object], *, option: str, why: str, urgency: float) -> None:
        self.actions.append(MaintenanceAction(table=self.table, action=action, arguments=dict(arguments), why=why,
                                              option=option, urgency=round(urgency, 2), priority=self.priority))


def _buckets(table: TableMeta, latest, raw: Mapping[str, str], *, primary_key: bool) -> tuple[BucketHealth, ...]:
    """Per (partition, bucket) of the latest snapshot's live files (its manifests only)."""
    if latest is None:
        return ()
    if primary_key:
        small_below = CompactionOptions.from_options(raw, primary_key=True).compaction_file_size
    else:
        small_below = AppendCompactionOptions.from_options(raw).compaction_file_size
    grouped: dict[tuple[bytes, int], list] = {}
    for entry in table.manifest_io.live_entries(latest):
        grouped.setdefault((entry.partition, entry.bucket), []).append(entry.file)
    names = _partition_names(table, {partition for partition, _ in grouped})
    out = []
    for (partition, bucket), files in grouped.items():
        level0 = sum(1 for f in files if f.level == 0)
        levels = {f.level for f in files if f.level > 0}
        small = [f for f in files if f.file_size < small_below]
        out.append(BucketHealth(partition=names[partition], bucket=bucket, files=len(files),
                                bytes=sum(f.file_size for f in files), level0_files=level0,
                                sorted_runs=level0 + len(levels) if primary_key else 0,
                                small_files=len(small), small_bytes=sum(f.file_size for f in small)))
    return tuple(sorted(out, key=lambda b: (b.partition, b.bucket)))


def _partition_names(table: TableMeta, partitions: Iterable[bytes]) -> dict[bytes, str]:
    """``k=v,k2=v2`` of each serialized partition, the values as Paimon writes them in paths."""
    from ..data.binary_row import deserialize_row
    from ..data.partition import partition_spec

    keys = list(table.partition_keys)
    if not keys:
        return dict.fromkeys(partitions, "")
    types = [table.arrow_schema.field(k).type for k in keys]
    out = {}
    for raw in partitions:
        spec = partition_spec(keys, deserialize_row(raw, types), types, table.options.partition_default_name,
                              legacy=table.options.partition_legacy_name)
        out[raw] = ",".join(f"{k}={v}" for k, v in spec.items())
    return out


def _partition_arguments(due: Sequence[BucketHealth], every: Sequence[BucketHealth],
                         partition_keys: Sequence[str]) -> dict[str, object]:
    """``{"partitions": [...]}`` naming the partitions due, when not all of them are."""
    if not partition_keys:
        return {}
    wanted = sorted({b.partition for b in due})
    return {"partitions": wanted} if len(wanted) < len({b.partition for b in every}) else {}


def _where(bucket: BucketHealth) -> str:
    return f"bucket {bucket.bucket}" + (f" of {bucket.partition}" if bucket.partition else "")


def _plan_merge_tree(planner: _Planner, buckets: Sequence[BucketHealth], raw: Mapping[str, str],
                     options: CoreOptions, since: int | None, *, partition_keys: Sequence[str]) -> None:
    trigger = options.num_sorted_run_compaction_trigger
    due = [b for b in buckets if b.sorted_runs > trigger]
    if due:
        worst = max(due, key=lambda b: (b.sorted_runs, b.level0_files))
        stop = options.num_sorted_run_stop_trigger
        stalled = f"; at num-sorted-run.stop-trigger ({stop}) writers stop" if worst.sorted_runs >= stop else ""
        planner.add("compact", {"full": False, **_partition_arguments(due, buckets, partition_keys)},
                    option="num-sorted-run.compaction-trigger",
                    why=f"{len(due)} of {len(buckets)} bucket(s) above num-sorted-run.compaction-trigger ({trigger}) "
                        f"sorted runs; the most: {worst.sorted_runs} runs ({worst.level0_files} level-0 files) in "
                        f"{_where(worst)}{stalled}",
                    urgency=worst.sorted_runs / trigger)
        return
    _plan_optimization_interval(planner, buckets, raw, since, several=[b for b in buckets if b.sorted_runs > 1])


def _plan_append(planner: _Planner, buckets: Sequence[BucketHealth], raw: Mapping[str, str], since: int | None,
                 *, partition_keys: Sequence[str]) -> None:
    settings = AppendCompactionOptions.from_options(raw)
    due = [b for b in buckets if b.small_files >= settings.min_file_num]
    if not due:
        return
    worst = max(due, key=lambda b: (b.small_files, b.small_bytes))
    planner.add("compact", {"full": True, **_partition_arguments(due, buckets, partition_keys)},
                option="compaction.min.file-num",
                why=f"{len(due)} of {len(buckets)} bucket(s) hold at least compaction.min.file-num "
                    f"({settings.min_file_num}) files below target-file-size x compaction.small-file-ratio "
                    f"({settings.compaction_file_size} bytes); the most: {worst.small_files} small files "
                    f"({worst.small_bytes} bytes) in {_where(worst)}",
                urgency=worst.small_files / settings.min_file_num)


def _plan_optimization_interval(planner: _Planner, buckets: Sequence[BucketHealth], raw: Mapping[str, str],
                                since: int | None, *, several: Sequence[BucketHealth]) -> None:
    """Paimon's ``compaction.optimization-interval``: a full compaction once that long has passed
    since the last one (here: the newest retained COMPACT snapshot)."""
    text = raw.get("compaction.optimization-interval")
    if text is None or not several:
        return
    interval = parse_duration_millis(text)
    if since is not None and since <= interval:
        return
    when = ("no COMPACT snapshot is retained" if since is None else
            f"the last COMPACT snapshot is {_duration(since, exact=False)} old")
    planner.add("compact", {"full": True}, option="compaction.optimization-interval",
                why=f"{when}, past compaction.optimization-interval ({text}), and {len(several)} of {len(buckets)} "
                    "bucket(s) hold several sorted runs",
                urgency=1.0 if since is None else since / max(interval, 1))


def _duration(millis: int, *, exact: bool = True) -> str:
    """``3600000`` -> ``1 h``: the largest unit that holds it exactly (or, not ``exact``, once)."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if millis >= size and (not exact or millis % size == 0):
            return f"{millis // size} {unit}"
    return f"{millis} ms"


def _last_compaction_millis(table: TableMeta, latest, earliest_id: int | None) -> int | None:
    """Commit time of the newest retained COMPACT snapshot (snapshot files, newest first)."""
    if latest is None or earliest_id is None:
        return None
    manager = table.snapshot_manager
    for sid in range(latest.id, earliest_id - 1, -1):
        snapshot = latest if sid == latest.id else manager.try_snapshot(sid)
        if snapshot is not None and snapshot.commit_kind is CommitKind.COMPACT:
            return snapshot.time_millis
    return None


def _plan_snapshot_expiry(planner: _Planner, table: TableMeta, options: CoreOptions, retained: int,
                          now_millis: int) -> int:
    from .expire import expire_range

    low, high = retained_counts(None, None, option_min=options.snapshot_num_retained_min,
                                option_max=options.snapshot_num_retained_max)  # max below min: an error
    time_retained, limit = options.snapshot_time_retained_millis, options.snapshot_expire_limit
    earliest, end = expire_range(table, retain_min=low, retain_max=high, time_retained_millis=time_retained,
                                 max_deletes=_EVERYTHING, now_millis=now_millis)
    if earliest is None or end is None:
        return 0
    due = end - earliest
    beyond_max = max(retained - high, 0)
    if beyond_max:
        rule, option = f"beyond snapshot.num-retained.max ({high})", "snapshot.num-retained.max"
    else:
        rule = (f"beyond snapshot.num-retained.min ({low}) and older than snapshot.time-retained "
                f"({_duration(time_retained)})")
        option = "snapshot.time-retained"
    runs = math.ceil(due / limit)
    planner.add("expire-snapshots", {"retain_min": low, "retain_max": high, "older_than_millis": time_retained,
                                     "max_deletes": limit}, option=option,
                why=f"{due} of {retained} retained snapshot(s) {rule}: snapshots {earliest} to {end - 1}"
                    + (f", in {runs} runs of at most snapshot.expire.limit ({limit})" if runs > 1 else ""),
                urgency=retained / max(retained - due, 1))
    return due


def _plan_changelog_expiry(planner: _Planner, table: TableMeta, options: CoreOptions,
                           now_millis: int) -> tuple[int, int]:
    from ..meta.changelogs import ChangelogManager

    manager = ChangelogManager(table.file_io, table.path, table.branch)
    earliest, latest = manager.earliest_id(), manager.latest_id()
    if earliest is None or latest is None:
        return 0, 0
    from .changelog_expire import expire_changelogs

    low, high = options.changelog_num_retained_min, options.changelog_num_retained_max
    time_retained = options.changelog_time_retained_millis
    found = expire_changelogs(table, retain_min=low, retain_max=max(high, low), older_than_millis=time_retained,
                              max_deletes=_EVERYTHING, dry_run=True, clock=lambda: now_millis / 1000)
    count, due = latest - earliest + 1, len(found.changelog_ids)
    if due:
        planner.add("expire-changelogs", {"retain_min": low, "retain_max": max(high, low),
                                          "older_than_millis": time_retained,
                                          "max_deletes": options.snapshot_expire_limit},
                    option="changelog.num-retained.max" if count > high else "changelog.time-retained",
                    why=f"{due} of {count} long-lived changelog(s) beyond changelog.num-retained.min ({low}) / "
                        f"max ({high}) and changelog.time-retained ({_duration(time_retained)}): changelogs "
                        f"{found.changelog_ids[0]} to {found.changelog_ids[-1]}",
                    urgency=count / max(count - due, 1))
    return count, due


def _auto_tag_due(table: TableMeta, latest) -> tuple[str, str] | None:
    """(option, why) when ``tag.automatic-creation`` (process-time or watermark) has a tag due:
    a period ended since the newest automatic tag (Paimon's ``TagAutoCreation`` rule, as
    :mod:`.auto_tag` runs it), or more automatic tags than ``tag.num-retained-max``."""
    settings = AutoTagSettings.from_options(table.schema.options)
    if settings.mode not in ("process-time", "watermark") or latest is None:
        return None
    period = settings.period
    starts = {}
    for status in table.file_io.list_dir(table.tag_manager.directory):
        name = status.path.rstrip("/").rsplit("/", 1)[-1]
        if not status.is_dir and name.startswith("tag-"):
            start = period.start_of(name[4:])
            if start is not None:
                starts[name[4:]] = start
    if settings.num_retained_max is not None and len(starts) > settings.num_retained_max:
        return "tag.num-retained-max", (f"{len(starts)} automatic tags, more than tag.num-retained-max "
                                        f"({settings.num_retained_max})")
    when = settings.time_of(latest)
    if when is None:
        return None
    from datetime import timedelta

    delay = timedelta(milliseconds=settings.delay_millis)
    if not starts:
        return "tag.automatic-creation", (f"tag.automatic-creation={settings.mode} and no automatic tag yet: "
                                          f"snapshot {latest.id} tags its period's predecessor")
    newest = max(starts, key=starts.__getitem__)
    next_tag = period.next_start(starts[newest])
    if when - delay >= period.next_start(next_tag):
        return "tag.automatic-creation", (f"tag.automatic-creation={settings.mode}: the period after tag {newest!r} "
                                          f"ended before snapshot {latest.id}'s time")
    return None


__all__ = ["BucketHealth", "MaintenanceAction", "SkippedTable", "TableHealth", "WarehousePlan", "plan_table",
           "plan_warehouse", "recheck", "warehouse_tables"]
