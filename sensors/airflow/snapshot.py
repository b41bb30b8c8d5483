"""Airflow: a sensor and triggers on a table's snapshots, all on the core's one watch rule.

* :class:`PaimonSnapshotSensor` waits until snapshots of the chosen commit kinds (default APPEND
  and OVERWRITE: data changes) were committed after the last observation, then pushes the range
  ``{"start_snapshot": s, "end_snapshot": e, ...}`` for a downstream incremental read (changes
  after ``s`` up to ``e``) and the cursor to resume from. Modes ``poke`` and ``reschedule``, or
  ``deferrable=True`` (the wait runs in the triggerer, :class:`PaimonSnapshotTrigger`). The last
  observation is the cursor this task pushed in its previous run (or ``last_observation=``).
  A rollback past the observation, or expiry of snapshots it never saw, fails the task with a
  clear message (``on_rollback="restart"`` / ``on_expired="continue"`` accept them instead).
* :class:`PaimonCommitEventTrigger` is the event trigger of an ``AssetWatcher``: a DAG scheduled on
  the table's asset runs on every commit (Airflow 3 event-driven scheduling).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException
from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from paimonflow.core.meta.snapshots import CommitKind
from paimonflow.core.read.watch import Observation

from ..rule import DATA_KINDS, Decision, decide


def _open(conn_id: str | None, warehouse: str | None, table: str):
    from paimonflow.operators.airflow.hook import PaimonHook

    return PaimonHook(None if warehouse else conn_id, warehouse=warehouse).get_table(table)


class PaimonSnapshotSensor(BaseSensorOperator):
    template_fields: Sequence[str] = ("table", "warehouse", "last_observation")
    ui_color = "#d8f0e8"

    def __init__(self, *, table: str, paimon_conn_id: str = "paimon_default", warehouse: str | None = None,
                 commit_kinds: Sequence[str] = DATA_KINDS, last_observation: dict | str | None = None,
                 deferrable: bool = False, on_rollback: str = "fail", on_expired: str = "fail",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table, self.paimon_conn_id, self.warehouse = table, paimon_conn_id, warehouse
        self.commit_kinds, self.last_observation = tuple(commit_kinds), last_observation
        self.deferrable, self.on_rollback, self.on_expired = deferrable, on_rollback, on_expired
        for kind in self.commit_kinds:
            CommitKind(kind)  # a typo fails at parse time
        if on_rollback not in ("fail", "restart") or on_expired not in ("fail", "continue"):
            raise ValueError("on_rollback is 'fail' or 'restart'; on_expired is 'fail' or 'continue'")

    def _last(self, context) -> dict | None:
        import json

        given = self.last_observation
        if given in (None, "", "None"):
            previous = context["ti"].xcom_pull(task_ids=self.task_id, include_prior_dates=True)
            if isinstance(previous, dict) and previous.get("cursor"):
                return previous["cursor"]
            return None
        return json.loads(given) if isinstance(given, str) else dict(given)

    def _check(self, context) -> Decision:
        table = _open(self.paimon_conn_id, self.warehouse, self.table)
        decision = decide(table, self._last(context), self.commit_kinds, on_rollback=self.on_rollback,
                          on_expired=self.on_expired)
        if decision.error:
            raise AirflowFailException(decision.error)
        return decision

    def poke(self, context) -> PokeReturnValue:
        decision = self._check(context)
        if decision.fire:
            self.log.info("new snapshots %s..%s of %s", decision.payload["first_new_id"],
                          decision.payload["latest_id"], self.table)
        return PokeReturnValue(is_done=decision.fire, xcom_value=decision.payload if decision.fire else None)

    def execute(self, context):
        if not self.deferrable:
            return super().execute(context)
        decision = self._check(context)
        if decision.fire:
            return decision.payload
        self.defer(trigger=PaimonSnapshotTrigger(table=self.table, paimon_conn_id=self.paimon_conn_id,
                                                 warehouse=self.warehouse, last_observation=self._last(context),
                                                 commit_kinds=list(self.commit_kinds),
                                                 poll_interval=float(self.poke_interval),
                                                 on_rollback=self.on_rollback, on_expired=self.on_expired),
                   method_name="execute_complete", timeout=self.execution_timeout)

    def execute_complete(self, context, event: dict[str, Any]):
        if event.get("status") == "error":
            raise AirflowFailException(event["message"])
        return event["payload"]


class PaimonSnapshotTrigger(BaseTrigger):
    """Polls the table (in a thread, so the triggerer's event loop never blocks) until the rule fires."""

    def __init__(self, *, table: str, paimon_conn_id: str | None = "paimon_default", warehouse: str | None = None,
                 last_observation: dict | None = None, commit_kinds: Sequence[str] = DATA_KINDS,
                 poll_interval: float = 60.0, on_rollback: str = "fail", on_expired: str = "fail") -> None:
        super().__init__()
        self.table, self.paimon_conn_id, self.warehouse = table, paimon_conn_id, warehouse
        self.last_observation, self.commit_kinds = last_observation, list(commit_kinds)
        self.poll_interval, self.on_rollback, self.on_expired = poll_interval, on_rollback, on_expired

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"table": self.table, "paimon_conn_id": self.paimon_conn_id, "warehouse": self.warehouse,
                 "last_observation": self.last_observation, "commit_kinds": self.commit_kinds,
                 "poll_interval": self.poll_interval, "on_rollback": self.on_rollback,
                 "on_expired": self.on_expired})

    def _check(self) -> Decision:
        table = _open(self.paimon_conn_id, self.warehouse, self.table)
        return decide(table, self.last_observation, self.commit_kinds, on_rollback=self.on_rollback,
                      on_expired=self.on_expired)

    async def run(self):
        while True:
            try:
                decision = await asyncio.to_thread(self._check)
            except Exception as exc:  # reported to the task, which fails with it
                yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}"})
                return
            if decision.error:
                yield TriggerEvent({"status": "error", "message": decision.error})
                return
            if decision.fire:
                yield TriggerEvent({"status": "success", "payload": decision.payload})
                return
            await asyncio.sleep(self.poll_interval)


class PaimonCommitEventTrigger(BaseEventTrigger):
    """For ``AssetWatcher``: one event per batch of new snapshots (of ``commit_kinds``). It starts
    at the table's latest snapshot; commits made while no triggerer runs it are reported as one
    event once it starts again only if ``last_observation`` is given."""

    def __init__(self, *, table: str, paimon_conn_id: str | None = "paimon_default", warehouse: str | None = None,
                 commit_kinds: Sequence[str] = DATA_KINDS, poll_interval: float = 30.0,
                 last_observation: dict | None = None) -> None:
        super().__init__()
        self.table, self.paimon_conn_id, self.warehouse = table, paimon_conn_id, warehouse
        self.commit_kinds, self.poll_interval, self.last_observation = list(commit_kinds), poll_interval, last_observation

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"table": self.table, "paimon_conn_id": self.paimon_conn_id, "warehouse": self.warehouse,
                 "commit_kinds": self.commit_kinds, "poll_interval": self.poll_interval,
                 "last_observation": self.last_observation})

    async def run(self):
        last = self.last_observation
        if last is None:
            latest = await asyncio.to_thread(lambda: _open(self.paimon_conn_id, self.warehouse, self.table)
                                             .snapshot_manager.latest())
            last = Observation.of(latest).to_dict() if latest is not None else None
        while True:
            table = await asyncio.to_thread(_open, self.paimon_conn_id, self.warehouse, self.table)
            decision = await asyncio.to_thread(decide, table, last, self.commit_kinds, on_rollback="restart",
                                               on_expired="continue")
            if decision.fire:
                last = decision.payload["cursor"]
                yield TriggerEvent(decision.payload)
            elif decision.payload.get("skip_to"):
                last = decision.payload["skip_to"]
            await asyncio.sleep(self.poll_interval)


__all__ = ["PaimonCommitEventTrigger", "PaimonSnapshotSensor", "PaimonSnapshotTrigger", "decide"]
