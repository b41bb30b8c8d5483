"""Commits made anywhere as Dagster asset events: a sensor on a table's snapshots that records each
new range as one ``AssetMaterialization`` of the table's asset, or of each partition it touched.

Flink, Spark, another scheduler or a paimonflow job outside Dagster commit to a table; Dagster
learns of it only through this sensor, and then declarative automation (``AutomationCondition``)
and freshness policies downstream react as to a materialization made in Dagster. Each tick with
new APPEND/OVERWRITE snapshots reports exactly one event for the range: data version = the
latest snapshot id, metadata = the range, its commit kinds and users, its net change in records
(the snapshots' ``deltaRecordCount``: no manifest is read) and Dagster's standard table metadata. A rollback past the cursor, or snapshots that expired before
they were seen, is reported as an event too (``paimon/rolled_back`` / ``paimon/expired_past``),
never skipped. Commits made by paimonflow's own Dagster ops and IO manager (commit users
``dagster.*``) already materialized the asset in their run: a range holding only those is not
reported again.

A partitioned asset (``partitions_def`` and ``partition_column``, the table's partition column
whose values are its keys: :mod:`.partitions`) gets one materialization per partition key the
range's commits touched, found from the commits' delta manifests (the partitions of the files
they added and deleted: metadata only, no data file is read), each with the latest snapshot that
touched it as data version and that partition's net change in records; a partition touched only
by Dagster's own commits is not reported again. Touched values that are no key of the
definition are logged and left out. A partitioned asset without a defined mapping is refused
when the definitions load. After a rollback or unseen expiry the partitions the vanished
snapshots changed are unknown: the partitions of the snapshots still there are reported, with
``paimon/rolled_back`` / ``paimon/expired_past`` and a warning.
"""

# No ``from __future__ import annotations``: Dagster reads these annotations at runtime.

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from paimonflow.core.data.binary_row import deserialize_row
from paimonflow.core.errors import (
    FileNotFoundStorageError,
    InvalidArgumentError,
    SnapshotNotFoundError,
    TableNotFoundError,
)
from paimonflow.core.meta.manifest import FileKind
from paimonflow.core.read.watch import Observation
from paimonflow.operators.dagster.metadata import table_metadata
from paimonflow.operators.dagster.resources import PaimonResource

from ..rule import DATA_KINDS, decide
from .partitions import PartitionMapping, partition_mapping

#: commit users of paimonflow's Dagster ops, assets and IO manager (operators/dagster)
DAGSTER_COMMIT_PREFIX = "dagster."
#: snapshots read per tick to attribute a range (the newest ones of a longer range; for a partitioned
#: asset the oldest ones, the rest in the next ticks)
MAX_ATTRIBUTED = 200


def paimon_commit_observer(table: str, asset_key, *, partitions_def: dg.PartitionsDefinition | None = None,
                           partition_column: str | None = None, name: str | None = None,
                           commit_kinds: Sequence[str] = DATA_KINDS, minimum_interval_seconds: int = 30,
                           default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
                           ) -> dg.SensorDefinition:
    """A sensor reporting commits to ``table`` as materializations of ``asset_key``: one per new
    range, or, for an asset partitioned by ``partitions_def``, one per partition key the range
    touched, read from ``partition_column`` (see the module docstring). Raises
    :class:`~paimonflow.core.errors.InvalidArgumentError` for a partitioned asset without a
    defined mapping to its keys."""
    key = dg.AssetKey.from_coercible(asset_key)
    sensor_name = name or "paimon_commits_" + table.replace(".", "_").replace("$", "_")
    mapping = partition_mapping(partitions_def, partition_column,
                                what=f"the commit observer of {table} ({key.to_user_string()})")

    @dg.sensor(name=sensor_name, minimum_interval_seconds=minimum_interval_seconds, default_status=default_status,
               description=f"Commits to {table} made anywhere, as materializations of {key.to_user_string()}")
    def _observer(context: dg.SensorEvaluationContext, paimon: PaimonResource):
        try:
            opened = paimon.table(table)
        except TableNotFoundError:
            return dg.SensorResult(skip_reason=f"{table} does not exist yet", cursor=context.cursor)
        last = json.loads(context.cursor) if context.cursor else None
        decision = decide(opened, last, commit_kinds, on_rollback="restart", on_expired="continue")
        info = decision.payload
        reportable = decision.fire or info.get("rolled_back") or info.get("expired_past")
        cursor = info.get("cursor") or info.get("skip_to") or info.get("next_observation")
        if not reportable:
            return dg.SensorResult(skip_reason=f"no new commits to {table}", cursor=_dump(cursor, context.cursor))
        first, latest = info.get("first_new_id"), info["latest_id"]
        if mapping is not None:
            return _partition_events(context, opened, key, mapping, info, commit_kinds,
                                     cursor=_dump(cursor, context.cursor))
        users, kinds, records = _attribute(opened, first, latest)
        if users and all(u.startswith(DAGSTER_COMMIT_PREFIX) for u in users) and not (
                info.get("rolled_back") or info.get("expired_past")):
            return dg.SensorResult(skip_reason=f"snapshots {first}..{latest} of {table} were committed by Dagster "
                                               f"runs, which materialized the asset themselves",
                                   cursor=_dump(cursor, context.cursor))
        metadata = {**table_metadata(opened, snapshot_id=latest, committed=False, row_count=False),
                    "paimon/start_snapshot": (first or latest) - 1, "paimon/end_snapshot": latest,
                    "paimon/commit_kinds": dg.MetadataValue.json(kinds),
                    "paimon/commit_users": dg.MetadataValue.json(sorted(users))}
        if records is not None:
            metadata["paimon/delta_records"] = records
        if info.get("rolled_back"):
            metadata["paimon/rolled_back"] = True
            context.log.warning(f"{table} was rolled back past the cursor; reporting from snapshot {first}")
        if info.get("expired_past"):
            metadata["paimon/expired_past"] = True
            context.log.warning(f"snapshots of {table} after the cursor expired unseen; reporting from {first}")
        event = dg.AssetMaterialization(asset_key=key, description=f"commits to {table} up to snapshot {latest}",
                                        metadata=metadata, tags={"dagster/data_version": str(latest)})
        return dg.SensorResult(asset_events=[event], cursor=_dump(cursor, context.cursor))

    return _observer


@dataclass
class _Touched:
    """What a range's commits did to one partition."""

    snapshot_id: int = 0  # the latest snapshot that touched it
    users: set[str] = field(default_factory=set)
    kinds: dict[str, int] = field(default_factory=dict)
    records: int = 0  # rows added minus rows deleted (the files' row counts)


def _partition_events(context: dg.SensorEvaluationContext, table, key: dg.AssetKey, mapping: PartitionMapping,
                      info: dict[str, Any], commit_kinds: Sequence[str], *, cursor: str | None) -> dg.SensorResult:
    """One materialization per partition key the new range's data commits touched; a range longer
    than ``MAX_ATTRIBUTED`` snapshots is reported in parts, its oldest first, one part a tick
    (the cursor then stops at the part's last snapshot)."""
    first, latest = info.get("first_new_id"), info["latest_id"]
    if first is not None and latest - first + 1 > MAX_ATTRIBUTED:
        try:
            stop = table.snapshot_manager.snapshot(first + MAX_ATTRIBUTED - 1)
        except SnapshotNotFoundError:  # expired meanwhile: the whole range at once
            pass
        else:
            context.log.info(f"snapshots {first}..{latest} of {table.identifier}: reporting {first}..{stop.id} now, "
                             f"the rest from the next tick on")
            latest, cursor = stop.id, json.dumps(Observation.of(stop).to_dict())
    touched = _touched_partitions(table, mapping.column, first, latest, commit_kinds)
    vanished = bool(info.get("rolled_back") or info.get("expired_past"))
    by_key: dict[str, _Touched] = {}
    unknown: list[str] = []
    for value, change in touched.items():
        if not vanished and change.users and all(u.startswith(DAGSTER_COMMIT_PREFIX) for u in change.users):
            continue  # materialized by the Dagster run that committed it
        partition = mapping.key(value, _instance(context))
        if partition is None:
            unknown.append(repr(value))
            continue
        merged = by_key.setdefault(partition, _Touched())
        merged.snapshot_id = max(merged.snapshot_id, change.snapshot_id)
        merged.users |= change.users
        for kind, count in change.kinds.items():
            merged.kinds[kind] = merged.kinds.get(kind, 0) + count
        merged.records += change.records
    table_name = table.identifier
    if unknown:
        context.log.warning(f"commits to {table_name} touched {mapping.column} values that are no partition keys of "
                            f"{key.to_user_string()}, not reported: {', '.join(sorted(unknown)[:20])}")
    if info.get("rolled_back"):
        context.log.warning(f"{table_name} was rolled back past the cursor: reporting the partitions of snapshots "
                            f"{first}..{latest}; the rollback itself may have changed others")
    if info.get("expired_past"):
        context.log.warning(f"snapshots of {table_name} after the cursor expired unseen: reporting the partitions of "
                            f"snapshots {first}..{latest}; the expired ones may have changed others")
    if not by_key:
        return dg.SensorResult(skip_reason=f"no partition of {key.to_user_string()} to report for snapshots "
                                           f"{first}..{latest} of {table_name}", cursor=cursor)
    standard = table_metadata(table, snapshot_id=latest, committed=False, row_count=False)
    events = []
    for partition in sorted(by_key):
        change = by_key[partition]
        metadata = {**standard, "paimon/start_snapshot": (first or latest) - 1, "paimon/end_snapshot": latest,
                    "paimon/partition_snapshot": change.snapshot_id,
                    "paimon/commit_kinds": dg.MetadataValue.json(change.kinds),
                    "paimon/commit_users": dg.MetadataValue.json(sorted(change.users)),
                    "paimon/delta_records": change.records}
        if info.get("rolled_back"):
            metadata["paimon/rolled_back"] = True
        if info.get("expired_past"):
            metadata["paimon/expired_past"] = True
        events.append(dg.AssetMaterialization(
            asset_key=key, partition=partition, metadata=metadata,
            description=f"commits to {table_name} up to snapshot {change.snapshot_id} in partition {partition}",
            tags={"dagster/data_version": str(change.snapshot_id)}))
    return dg.SensorResult(asset_events=events, cursor=cursor)


def _instance(context: dg.SensorEvaluationContext):
    """The sensor's Dagster instance (dynamic partitions live there), or None in a bare test context."""
    try:
        return context.instance
    except dg.DagsterInvariantViolationError:
        return None


def _touched_partitions(table, column: str, first: int | None, latest: int,
                        commit_kinds: Sequence[str]) -> dict[Any, _Touched]:
    """``column``'s values of the partitions the data commits of snapshots ``first..latest``
    added or deleted files in, from their delta manifests (metadata only); snapshots expired
    meanwhile are left out."""
    if column not in table.partition_keys:
        raise InvalidArgumentError(f"{table.identifier} is not partitioned by {column!r} (its partition keys are "
                                   f"{list(table.partition_keys)}): its partitions map to no partition key")
    types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    position = list(table.partition_keys).index(column)
    decoded: dict[bytes, Any] = {}
    wanted = {k for k in commit_kinds if k in DATA_KINDS}
    touched: dict[Any, _Touched] = {}
    for snapshot_id in range(first or latest, latest + 1):
        try:
            snapshot = table.snapshot_manager.snapshot(snapshot_id)
            entries = table.manifest_io.delta_entries(snapshot) if snapshot.commit_kind.value in wanted else []
        except (SnapshotNotFoundError, FileNotFoundStorageError):  # expired meanwhile
            continue
        seen: set[Any] = set()
        for entry in entries:
            if entry.partition not in decoded:
                decoded[entry.partition] = deserialize_row(entry.partition, types)[position]
            value = decoded[entry.partition]
            change = touched.setdefault(value, _Touched())
            rows = entry.file.row_count
            change.records += rows if entry.kind is FileKind.ADD else -rows
            if value not in seen:
                seen.add(value)
                change.snapshot_id = snapshot_id
                change.users.add(snapshot.commit_user)
                kind = snapshot.commit_kind.value
                change.kinds[kind] = change.kinds.get(kind, 0) + 1
    return touched


def _dump(cursor, previous: str | None) -> str | None:
    return json.dumps(cursor) if cursor else previous


def _attribute(table, first: int | None, latest: int) -> tuple[set[str], dict[str, int], int | None]:
    """Commit users, kind counts and the net change in records (Paimon's ``deltaRecordCount``,
    None if a committer did not record it) of the (newest ``MAX_ATTRIBUTED``) snapshots of the
    range, read from the snapshot files alone; snapshots expired meanwhile are left out."""
    users: set[str] = set()
    kinds: dict[str, int] = {}
    records: int | None = 0
    start = max(first or latest, latest - MAX_ATTRIBUTED + 1)
    for snapshot_id in range(start, latest + 1):
        try:
            snapshot = table.snapshot_manager.snapshot(snapshot_id)
        except SnapshotNotFoundError:
            continue
        kind = snapshot.commit_kind.value
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind in DATA_KINDS:
            users.add(snapshot.commit_user)
            delta = snapshot.delta_record_count
            records = None if records is None or delta is None else records + delta
    return users, kinds, records


__all__ = ["DAGSTER_COMMIT_PREFIX", "paimon_commit_observer"]
