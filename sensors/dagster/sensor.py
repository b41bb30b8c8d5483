"""A Dagster sensor on a table's snapshots, on the core's one watch rule.

The cursor holds the last observed snapshot (its identity, not only its id). Each evaluation
that finds new snapshots of the wanted commit kinds requests exactly one run for the new range,
with ``run_key`` = table, range and the latest snapshot's identity, tags ``paimon/start_snapshot``
and ``paimon/end_snapshot``, and run config from ``run_config(start, end)`` (by default the
``start_snapshot``/``end_snapshot`` config of the job's read-changes op, when named). A rollback
past the cursor or expiry of unseen snapshots is reported (a ``paimon/rolled_back`` or
``paimon/expired_past`` tag on the run and a warning in the tick log), not silently skipped.
"""

# No ``from __future__ import annotations``: Dagster reads these annotations at runtime.

import json
from collections.abc import Callable, Sequence

import dagster as dg

from paimonflow.operators.dagster.resources import PaimonResource

from ..rule import DATA_KINDS, decide


def paimon_snapshot_sensor(table: str, job, *, name: str | None = None, commit_kinds: Sequence[str] = DATA_KINDS,
                           read_op: str | None = None, run_config: Callable[[int, int], dict] | None = None,
                           minimum_interval_seconds: int = 30) -> dg.SensorDefinition:
    sensor_name = name or "paimon_snapshots_" + table.replace(".", "_").replace("$", "_")

    def config_for(start: int, end: int) -> dict:
        if run_config is not None:
            return run_config(start, end)
        if read_op is not None:
            return {"ops": {read_op: {"config": {"start_snapshot": start, "end_snapshot": end}}}}
        return {}

    @dg.sensor(name=sensor_name, job=job, minimum_interval_seconds=minimum_interval_seconds)
    def _sensor(context: dg.SensorEvaluationContext, paimon: PaimonResource):
        last = json.loads(context.cursor) if context.cursor else None
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


__all__ = ["paimon_snapshot_sensor"]
