"""The sensors' decision, on the core's one watch rule (no Airflow or Dagster imports): have
snapshots of the wanted commit kinds arrived since the last observation, and which range is new;
a rollback past the observation or expiry of unseen snapshots is an error unless accepted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from paimonflow.core.meta.snapshots import CommitKind
from paimonflow.core.read.watch import Observation, watch

DATA_KINDS = ("APPEND", "OVERWRITE")


@dataclass(frozen=True, slots=True)
class Decision:
    """The one rule, as the sensor and the trigger use it."""

    fire: bool
    error: str | None
    payload: dict[str, Any]


def decide(table, last: dict | None, kinds: Sequence[str], *, on_rollback: str = "fail",
           on_expired: str = "fail") -> Decision:
    """Whether snapshots of ``kinds`` arrived since ``last`` (an observation dict or None)."""
    wanted = {CommitKind(k) for k in kinds}
    observed = Observation.from_dict(last) if last else None
    result = watch(table.snapshot_manager, observed)
    info = result.to_dict()
    if result.rolled_back and on_rollback == "fail":
        return Decision(False, f"table {table.identifier} was rolled back past the observed snapshot "
                               f"{observed.snapshot_id if observed else '?'} (the ids were reused); "
                               "rerun with on_rollback='restart' to start over from the earliest snapshot", info)
    if result.expired_past and on_expired == "fail":
        return Decision(False, f"snapshots after {observed.snapshot_id if observed else '?'} of table "
                               f"{table.identifier} expired before they were seen; protect the reader with a "
                               "consumer id or a longer snapshot.time-retained, or on_expired='continue'", info)
    if result.new_range is None:
        return Decision(False, None, info)
    if not (result.truncated or any(result.kind_counts.get(k, 0) for k in wanted)):
        # only other kinds (e.g. COMPACT): nothing to read, but move the cursor past them
        return Decision(False, None, {**info, "skip_to": info["next_observation"]})
    first, latest = result.new_range
    payload = {**info, "table": table.identifier, "start_snapshot": first - 1, "end_snapshot": latest,
               "cursor": info["next_observation"]}
    return Decision(True, None, payload)



__all__ = ["DATA_KINDS", "Decision", "decide"]
