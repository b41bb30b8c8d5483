"""A Dagster sensor on a table's snapshots, on the core's one watch rule.

The cursor holds the last observed snapshot (its identity, not only its id). Each evaluation
that finds new snapshots of the wanted commit kinds requests exactly one run for the new range,
with ``run_key`` = table, range and the latest snapshot's identity, tags ``paimon/start_snapshot``
and ``paimon/end_snapshot``, and run config from ``run_config(start, end)`` (by default the
``start_snapshot``/``end_snapshot`` config of the job's read-changes op, when named). A rollback
past the cursor or expiry of unseen snapshots is reported (a ``paimon/rolled_back`` or
``paimon/expired_past`` tag on the run and a warning in the tick log), not silently skipped.

``start_from="earliest"`` (the default) makes the first tick request the table's whole history;
``"latest"`` makes it note the latest snapshot and request nothing, so only later commits are read
(a sensor added beside a table with a long history). ``default_status`` as for any Dagster sensor
(stopped until started in the UI, unless ``RUNNING``).
"""

# No ``from __future__ import annotations``: Dagster reads these annotations at runtime.

import json
from collections.abc import Callable, Sequence

import dagster as dg

from paimonflow.core.errors import InvalidArgumentError
from paimonflow.core.read.watch import watch
from paimonflow.operators.dagster.resources import PaimonResource

from ..rule import DATA_KINDS, decide


def paimon_snapshot_sensor(table: str, job, *, name: str | None = None, commit_kinds: Sequence[str] = DATA_KINDS,
                           read_op: str | None = None, run_config: Callable[[int, int], dict] | None = None,
                           minimum_interval_seconds: int = 30, start_from: str = "earliest",
                           default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED
                           ) -> dg.SensorDefinition:
    if start_from not in ("earliest", "latest"):
        raise InvalidArgumentError(f"start_from must be 'earliest' or 'latest', not {start_from!r}")
    sensor_name = name or "paimon_snapshots_" + table.replace(".", "_").replace("$", "_")

    def config_for(start: int, end: int) -> dict:
        if run_config is not None:
            return run_config(start, end)
        if read_op is not None:
            return {"ops": {read_op: {"config": {"start_snapshot": start, "end_snapshot": end}}}}
        return {}

    @dg.sensor(name=sensor_name, job=job, minimum_interval_seconds=minimum_interval_seconds,
               default_status=default_status)
    def _sensor(context: dg.SensorEvaluationContext, paimon: PaimonResource):
        if not context.cursor and start_from == "latest":  # the first tick: note where the table is
            latest = watch(paimon.table(table).snapshot_manager, None).next_observation
            context.update_cursor(json.dumps(latest.to_dict() if latest is not None else _BEFORE_ANY))
            where = f"snapshot {latest.snapshot_id}" if latest is not None else "its first snapshot"
            return dg.SkipReason(f"starting from the latest snapshot of {table}: reading commits after {where}")
        last = json.loads(context.cursor) if context.cursor else None
        last = None if last == _BEFORE_ANY else last
        decision = decide(paimon.table(table), last, commit_kinds, on_rollback="restart", on_expired="continue")
        info = decision.payload
        if not decision.fire:
            if info.get("skip_to"):
                context.update_cursor(json.dumps(info["skip_to"]))
            return dg.SkipReason(f"no new {'/'.join(commit_kinds)} snapshots of {table}")
        tags = {"paimon/table": table, "paimon/start_snapshot": str(info["start_snapshot"]),
                "paimon/end_snapshot": str(info["end_snapshot"])}
        if info.get("rolled_back"):
            tags["paimon/rolled_back"] = "true"
            context.log.warning(f"{table} was rolled back past the cursor; reading again from snapshot "
                                f"{info['first_new_id']}")
        if info.get("expired_past"):
            tags["paimon/expired_past"] = "true"
            context.log.warning(f"snapshots of {table} after the cursor expired unseen; the range starts at "
                                f"{info['first_new_id']}")
        cursor = info["cursor"]
        context.update_cursor(json.dumps(cursor))
        identity = cursor["identity"] if isinstance(cursor["identity"], str) else "-".join(map(str, cursor["identity"]))
        run_key = f"{table}:{info['start_snapshot']}-{info['end_snapshot']}:{identity}"
        return dg.RunRequest(run_key=run_key, run_config=config_for(info["start_snapshot"], info["end_snapshot"]),
                             tags=tags)

    return _sensor


_BEFORE_ANY = {"before_any_snapshot": True}  # a "latest" start on a table with no snapshot yet


__all__ = ["paimon_snapshot_sensor"]
