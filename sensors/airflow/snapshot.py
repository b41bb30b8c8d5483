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
from datetime import timedelta
from typing import Any

from airflow.sdk import Asset, BaseSensorOperator, PokeReturnValue, conf
from airflow.sdk.exceptions import AirflowFailException
from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from paimonflow.core.meta.snapshots import CommitKind
from paimonflow.core.read.watch import Observation

from ..rule import DATA_KINDS, Decision, decide


def _open(conn_id: str | None, warehouse: str | None, table: str):
    from paimonflow.operators.airflow.hook import PaimonHook

    return PaimonHook(None if warehouse else conn_id, warehouse=warehouse).get_table(table)


RANGE_KEY = "paimonflow.range"  # task state store: the range this run claimed (retries and reruns reuse it)


def cursor_key(dag_id: str, task_id: str) -> str:
    """Asset state store key of a sensor task's cursor (one per DAG and task on the table's asset)."""
    return f"paimonflow.sensor-cursor/{dag_id}/{task_id}"


def sensor_asset(table: str, *, paimon_conn_id: str | None, warehouse: str | None) -> Asset:
    """The asset a sensor keeps its cursor on: the table's asset (:func:`table_asset`) when the
    warehouse is given, else one named after the connection (its warehouse is unknown at parse time)."""
    from paimonflow.operators.airflow import connection_table_asset, table_asset

    if warehouse:
        return table_asset(warehouse, table)
    return connection_table_asset(table, paimon_conn_id or "paimon_default")


def _templated(*values: object) -> bool:
    return any(isinstance(v, str) and "{{" in v for v in values)


class PaimonSnapshotSensor(BaseSensorOperator):
    """Waits for new snapshots of ``commit_kinds`` after this task's cursor and returns the range.

    The cursor is durable and independent of logical dates: the asset state store of the table's
    asset (``cursor_asset``, added to the task's inlets) holds the last observation of each
    (DAG, task); the task state store holds the range a run claimed, so a retry, or a run that is
    cleared and run again, returns that same range, and the next run starts where it ended.
    Serialize the sensor's runs (``max_active_runs=1``): two runs at once would claim the same range.
    ``last_observation=`` overrides the cursor (an observation dict or its JSON)."""

    template_fields: Sequence[str] = ("table", "paimon_conn_id", "warehouse", "last_observation", "commit_kinds",
                                      "on_rollback", "on_expired")
    ui_color = "#d8f0e8"

    def __init__(self, *, table: str, paimon_conn_id: str = "paimon_default", warehouse: str | None = None,
                 commit_kinds: Sequence[str] = DATA_KINDS, last_observation: dict | str | None = None,
                 deferrable: bool | None = None, on_rollback: str = "fail", on_expired: str = "fail",
                 cursor_asset: Asset | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table, self.paimon_conn_id, self.warehouse = table, paimon_conn_id, warehouse
        self.commit_kinds, self.last_observation = commit_kinds, last_observation
        if deferrable is None:
            deferrable = conf.getboolean("operators", "default_deferrable", fallback=False)
        self.deferrable, self.on_rollback, self.on_expired = deferrable, on_rollback, on_expired
        kinds = [commit_kinds] if isinstance(commit_kinds, str) else list(commit_kinds)
        if not _templated(on_rollback, on_expired, *kinds):
            self._validated()  # a typo fails at parse time; templated values when rendered
        if cursor_asset is None and not _templated(table, paimon_conn_id, warehouse):
            cursor_asset = sensor_asset(table, paimon_conn_id=paimon_conn_id, warehouse=warehouse)
        self.cursor_asset = cursor_asset
        if cursor_asset is not None:
            self.inlets = [*self.inlets, cursor_asset]

    def _validated(self) -> tuple[str, ...]:
        """The commit kinds; raises ``ValueError`` naming a bad kind or choice."""
        kinds = (self.commit_kinds,) if isinstance(self.commit_kinds, str) else tuple(self.commit_kinds)
        for kind in kinds:
            try:
                CommitKind(kind)
            except ValueError:
                raise ValueError(f"unknown commit kind {kind!r}; one of "
                                 f"{[k.value for k in CommitKind]}") from None
        if self.on_rollback not in ("fail", "restart") or self.on_expired not in ("fail", "continue"):
            raise ValueError("on_rollback is 'fail' or 'restart'; on_expired is 'fail' or 'continue'")
        return kinds

    def _cursor_store(self, context):
        if self.cursor_asset is None:
            raise AirflowFailException(f"sensor {self.task_id}: a templated table or connection needs "
                                       "cursor_asset= (the asset whose state store keeps the cursor)")
        return context["asset_state_store"][self.cursor_asset]

    def _last(self, context) -> dict | None:
        import json

        given = self.last_observation
        if given not in (None, "", "None"):
            return json.loads(given) if isinstance(given, str) else dict(given)
        stored = self._cursor_store(context).get(cursor_key(self.dag_id, self.task_id))
        return stored if isinstance(stored, dict) else None

    def _claimed(self, context) -> dict | None:
        """The range this run already claimed (an earlier try, or before the run was cleared)."""
        claimed = context["task_state_store"].get(RANGE_KEY)
        if isinstance(claimed, dict):
            self.log.info("this run already claimed snapshots %s..%s of %s", claimed.get("start_snapshot"),
                          claimed.get("end_snapshot"), self.table)
            return claimed
        return None

    def _claim(self, context, payload: dict) -> dict:
        """Record the range for this run, then move the durable cursor past it."""
        context["task_state_store"].set(RANGE_KEY, payload)
        self._cursor_store(context).set(cursor_key(self.dag_id, self.task_id), payload["cursor"])
        self.log.info("new snapshots %s..%s of %s", payload["first_new_id"], payload["latest_id"], self.table)
        return payload

    def _check(self, context) -> tuple[Decision, dict | None]:
        """The rule on the table from the cursor; the decision and the observation to wait from."""
        try:
            kinds = self._validated()
        except ValueError as exc:
            raise AirflowFailException(str(exc)) from None
        table = _open(self.paimon_conn_id, self.warehouse, self.table)
        last = self._last(context)
        decision = decide(table, last, kinds, on_rollback=self.on_rollback, on_expired=self.on_expired)
        if decision.error:
            raise AirflowFailException(decision.error)
        if decision.payload.get("skip_to"):  # only other kinds (compactions): never look at them again
            last = decision.payload["skip_to"]
            self._cursor_store(context).set(cursor_key(self.dag_id, self.task_id), last)
        return decision, last

    def poke(self, context) -> PokeReturnValue:
        claimed = self._claimed(context)
        if claimed is not None:
            return PokeReturnValue(is_done=True, xcom_value=claimed)
        decision, _ = self._check(context)
        if decision.fire:
            return PokeReturnValue(is_done=True, xcom_value=self._claim(context, decision.payload))
        return PokeReturnValue(is_done=False)

    def execute(self, context):
        if not self.deferrable:
            return super().execute(context)
        claimed = self._claimed(context)
        if claimed is not None:
            return claimed
        decision, last = self._check(context)
        if decision.fire:
            return self._claim(context, decision.payload)
        self.defer(trigger=PaimonSnapshotTrigger(table=self.table, paimon_conn_id=self.paimon_conn_id,
                                                 warehouse=self.warehouse, last_observation=last,
                                                 commit_kinds=list(self._validated()),
                                                 poll_interval=float(self.poke_interval),
                                                 on_rollback=self.on_rollback, on_expired=self.on_expired),
                   method_name="execute_complete", timeout=timedelta(seconds=self.timeout))

    def execute_complete(self, context, event: dict[str, Any]):
        if event.get("status") == "error":
            raise AirflowFailException(event["message"])
        return self._claim(context, event["payload"])


async def _retrying(trigger, work, *args, retry: tuple[type[BaseException], ...]):
    """``work(*args)`` in a thread (the triggerer's event loop never blocks); an error of ``retry``
    is logged and retried after the trigger's poll interval (an object store has bad minutes)."""
    while True:
        try:
            return await asyncio.to_thread(work, *args)
        except retry as exc:
            trigger.log.warning("watching %s: %s: %s; retrying in %ss", trigger.table, type(exc).__name__, exc,
                                trigger.poll_interval)
        await asyncio.sleep(trigger.poll_interval)


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
        from paimonflow.core.errors import StorageError

        while True:
            try:
                decision = await _retrying(self, self._check, retry=(StorageError,))
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


COMMIT_CURSOR_KEY = "paimonflow.commit-cursor"  # asset state store of the watched asset


def table_commits_asset(table: str, *, paimon_conn_id: str = "paimon_default", warehouse: str | None = None,
                        poll_interval: float = 30.0, commit_kinds: Sequence[str] = DATA_KINDS,
                        watcher_name: str | None = None) -> Asset:
    """The asset of a table's commits, watched by :class:`PaimonCommitEventTrigger`: schedule a DAG
    on it to run once per batch of new snapshots. It is not the table's own asset
    (:func:`~paimonflow.operators.airflow.table_asset`), which tasks name in their ``outlets``: a
    watcher belongs to one asset definition, and task outlet events (a compaction that committed
    nothing, say) are not commits."""
    from airflow.sdk import AssetWatcher

    base = sensor_asset(table, paimon_conn_id=paimon_conn_id, warehouse=warehouse)
    trigger = PaimonCommitEventTrigger(table=table, paimon_conn_id=None if warehouse else paimon_conn_id,
                                       warehouse=warehouse, poll_interval=poll_interval, commit_kinds=commit_kinds)
    name = watcher_name or "paimon_commits_" + "".join(c if c.isalnum() else "_" for c in table)
    return Asset(name=f"{base.name}/commits", uri=f"{base.uri}?paimonflow=commits",
                 watchers=[AssetWatcher(name=name, trigger=trigger)])


class PaimonCommitEventTrigger(BaseEventTrigger):
    """For ``AssetWatcher`` (see :func:`table_commits_asset`): one event per batch of new snapshots
    of ``commit_kinds``. The cursor lives in the watched asset's state store, so a restarted
    triggerer, or a watcher recreated after the DAG file is parsed again, resumes where the last
    event ended: no commit lost, none reported twice (the cursor is stored right after each event
    is handed to the triggerer; only a triggerer killed in between reports that batch again).
    With no stored cursor it starts at the table's latest snapshot; a table that does not exist
    yet is waited for (its first commits are reported), and storage errors are logged and retried."""

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

    async def _stored(self) -> dict | None:
        if self.asset_state_store is None:  # run outside a triggerer (no watched asset)
            return None
        value = await self.asset_state_store.aget(COMMIT_CURSOR_KEY)
        return value if isinstance(value, dict) else None

    async def _store(self, cursor: dict) -> None:
        if self.asset_state_store is not None:
            await self.asset_state_store.aset(COMMIT_CURSOR_KEY, cursor)

    def _baseline(self) -> dict | None:
        """The latest snapshot's observation; ``None`` if the table has none (or does not exist):
        then its first commits are reported."""
        from paimonflow.core.errors import TableNotFoundError

        try:
            latest = _open(self.paimon_conn_id, self.warehouse, self.table).snapshot_manager.latest()
        except TableNotFoundError:
            return None
        return Observation.of(latest).to_dict() if latest is not None else None

    def _decide(self, last: dict | None) -> Decision | None:
        """The rule on the table, or ``None`` while the table does not exist."""
        from paimonflow.core.errors import TableNotFoundError

        try:
            table = _open(self.paimon_conn_id, self.warehouse, self.table)
        except TableNotFoundError:
            return None
        return decide(table, last, self.commit_kinds, on_rollback="restart", on_expired="continue")

    async def run(self):
        from paimonflow.core.errors import PaimonflowError

        last = await self._stored() or self.last_observation
        if last is None:
            last = await _retrying(self, self._baseline, retry=(PaimonflowError, OSError))
            if last is not None:
                await self._store(last)
        waiting = False
        while True:
            decision = await _retrying(self, self._decide, last, retry=(PaimonflowError, OSError))
            if decision is None:
                if not waiting:
                    self.log.info("table %s does not exist yet; waiting for it", self.table)
                waiting = True
            elif decision.fire:
                last = decision.payload["cursor"]
                yield TriggerEvent(decision.payload)
                await self._store(last)
            elif decision.payload.get("skip_to"):
                last = decision.payload["skip_to"]
                await self._store(last)
            await asyncio.sleep(self.poll_interval)


__all__ = ["PaimonCommitEventTrigger", "PaimonSnapshotSensor", "PaimonSnapshotTrigger", "decide", "sensor_asset",
           "table_commits_asset"]
