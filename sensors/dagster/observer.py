"""Commits made anywhere as Dagster asset events: a sensor on a table's snapshots that records each
new range as one ``AssetMaterialization`` of the table's asset.

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
"""

# No ``from __future__ import annotations``: Dagster reads these annotations at runtime.

import json
from collections.abc import Sequence

import dagster as dg

from paimonflow.core.errors import SnapshotNotFoundError, TableNotFoundError
from paimonflow.operators.dagster.metadata import table_metadata
from paimonflow.operators.dagster.resources import PaimonResource

from ..rule import DATA_KINDS, decide

#: commit users of paimonflow's Dagster ops, assets and IO manager (operators/dagster)
DAGSTER_COMMIT_PREFIX = "dagster."
#: snapshots read per tick to attribute a range (the newest ones of a longer range)
MAX_ATTRIBUTED = 200


def paimon_commit_observer(table: str, asset_key, *, name: str | None = None,
                           commit_kinds: Sequence[str] = DATA_KINDS, minimum_interval_seconds: int = 30,
                           default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
                           ) -> dg.SensorDefinition:
    """A sensor reporting commits to ``table`` as materializations of ``asset_key``."""
    key = dg.AssetKey.from_coercible(asset_key)
    sensor_name = name or "paimon_commits_" + table.replace(".", "_").replace("$", "_")

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
