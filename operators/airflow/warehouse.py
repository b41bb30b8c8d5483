"""Airflow operators that keep a whole warehouse healthy: one plans, one runs a planned action.

:class:`PaimonPlanWarehouseOperator` plans every table's maintenance by its own Paimon options
(and a policy file) with :func:`paimonflow.core.maintenance.planner.plan_warehouse`, from
metadata only, logs the plan as a table, and returns the due actions to XCom as small JSON
documents, most urgent first: the list a mapped task expands over.

:class:`PaimonMaintenanceActionOperator` runs one of them, mapped with
``.expand(action=plan.output)``: it plans the action's table again right before running
(:func:`~paimonflow.core.maintenance.planner.recheck`) and is skipped (``AirflowSkipException``)
when the action is no longer due, for example because someone else did it meanwhile; else it
runs the action's job as :class:`~.operators.PaimonJobOperator` runs jobs (metadata-only actions
on ``core``, compaction on the connection's engine), committing under the task's commit identity
(``commit_user_for``: the DAG, task, map index and run), so a retry never commits twice.

Airflow fixes ``priority_weight`` per task, not per mapped instance: a plan's urgency orders its
list (mapped instances are queued in map-index order), and ``pool=`` on the mapped task bounds
how many compactions hold Spark capacity at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from paimonflow.core.errors import InvalidArgumentError

from .hook import PaimonHook
from .links import TableHealthLink
from .operators import RUN_IDENTIFIER, PaimonJobOperator, commit_user_for

if TYPE_CHECKING:
    from airflow.sdk import Context

    from paimonflow.core.maintenance.planner import MaintenanceAction, WarehousePlan
    from paimonflow.core.maintenance.policy import MaintenancePolicy

#: the planned actions whose job commits a snapshot (and so takes the task's commit identity)
COMMITTING_ACTIONS = frozenset({"compact", "expire-partitions"})
#: runs of one action while it stays due and each run changes it (an expiry capped per run by
#: ``snapshot.expire.limit`` or ``partition.expiration-max-num``); committing actions run once
MAX_ROUNDS = 20
#: the keys of an action's XCom document
ACTION_KEYS = ("table", "action", "arguments", "why", "option", "urgency", "priority")


def _absent(value: object) -> bool:
    """A templated field not given: ``None``, or what a template rendering nothing (or None) left."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "None"))


def action_document(action: MaintenanceAction) -> dict[str, Any]:
    """The JSON document of a planned action that the plan returns and a mapped task receives."""
    whole = action.to_dict()
    return {key: whole[key] for key in ACTION_KEYS}


def parse_action(value: object) -> MaintenanceAction:
    """The :class:`~paimonflow.core.maintenance.planner.MaintenanceAction` of an action document;
    :class:`InvalidArgumentError` naming what is wrong for anything else."""
    from paimonflow.core.maintenance.planner import MaintenanceAction
    from paimonflow.core.maintenance.policy import ACTIONS
    from paimonflow.core.names import parse_table_name

    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"action must be one document of the plan (a mapping), not {value!r}")
    missing = [key for key in ("table", "action") if not value.get(key)]
    if missing:
        raise InvalidArgumentError(f"action has no {missing[0]!r}: {dict(value)!r}")
    if value["action"] not in ACTIONS:
        raise InvalidArgumentError(f"action must be one of {', '.join(ACTIONS)}, not {value['action']!r}")
    arguments = value.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise InvalidArgumentError(f"action arguments must be a mapping, not {arguments!r}")
    table = str(value["table"])
    parse_table_name(table)
    try:
        urgency, priority = float(value.get("urgency") or 1.0), int(value.get("priority") or 0)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"action urgency and priority must be numbers: {dict(value)!r}") from None
    return MaintenanceAction(table=table, action=str(value["action"]), arguments=dict(arguments),
                             why=str(value.get("why") or ""), option=str(value.get("option") or ""),
                             urgency=urgency, priority=priority)


def _policy(path: object) -> MaintenancePolicy:
    from paimonflow.core.maintenance.policy import MaintenancePolicy, load_policy

    return MaintenancePolicy() if _absent(path) else load_policy(str(path).strip())


def plan_table_text(plan: WarehousePlan) -> str:
    """The plan as a text table (one line per action, then what was deferred or skipped)."""
    rows = [("table", "action", "urgency", "priority", "option", "why")]
    rows += [(a.table, a.action, f"{a.urgency:g}", str(a.priority), a.option, a.why) for a in plan.actions]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:5], widths, strict=True)) + "  " + row[5]
             for row in rows]
    lines += [f"deferred: {a.table} {a.action} (over the policy's budget max-compactions)" for a in plan.deferred]
    lines += [f"skipped table {s.table}: {s.reason}" for s in plan.skipped]
    return "\n".join(lines)


class PaimonPlanWarehouseOperator(BaseOperator):
    """Plan the maintenance of a warehouse's tables and return the due actions.

    Reads metadata only and changes nothing. Returns to XCom the list of due actions, most urgent
    first (the policy's priority, then urgency), each a document with ``table``, ``action`` (a job
    of ``paimonflow.jobs.registry.JOBS``), ``arguments`` (that job's keyword arguments), ``why``,
    ``option``, ``urgency`` and ``priority``: what ``PaimonMaintenanceActionOperator.partial(...)
    .expand(action=plan.output)`` maps over. An empty list when nothing is due. The plan is logged
    as a table, with the compactions deferred by the policy's budget and the tables skipped.

    :param paimon_conn_id: the ``paimon`` connection naming the warehouse (default ``paimon_default``)
    :param warehouse: a warehouse URI instead of the connection (templated)
    :param aws_conn_id: an Amazon connection giving the S3 credentials (templated)
    :param tables: a glob over ``<database>.<table>`` (``shop.*``, ``*.orders``; without a dot it
        names databases), default every table (templated)
    :param policy: a policy file (``.json``, ``.toml``, ``.yaml``) on the worker: defaults for
        tables without options, exclusions, priorities, actions, budget (templated)
    """

    # as every paimonflow operator; with no single table it shows no link (has_health_page)
    operator_extra_links = (TableHealthLink(),)
    template_fields: Sequence[str] = ("paimon_conn_id", "warehouse", "aws_conn_id", "tables", "policy")
    ui_color = "#e8f4fa"

    def __init__(self, *, paimon_conn_id: str = PaimonHook.default_conn_name, warehouse: str | None = None,
                 aws_conn_id: str | None = None, tables: str | None = None, policy: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.paimon_conn_id, self.warehouse, self.aws_conn_id = paimon_conn_id, warehouse, aws_conn_id
        self.tables, self.policy = tables, policy

    @cached_property
    def hook(self) -> PaimonHook:
        return PaimonHook(None if not _absent(self.warehouse) else self.paimon_conn_id,
                          warehouse=None if _absent(self.warehouse) else str(self.warehouse),
                          aws_conn_id=None if _absent(self.aws_conn_id) else str(self.aws_conn_id))

    def execute(self, context: Context) -> list[dict[str, Any]]:
        import time

        from paimonflow.core.maintenance.planner import plan_warehouse

        tables = None if _absent(self.tables) else str(self.tables).strip()
        policy = _policy(self.policy)
        started = time.monotonic()
        plan = plan_warehouse(self.hook.get_conn(), tables, policy)
        self.log.info("planned %d action(s) over %d table(s) in %.2f s:\n%s", len(plan.actions), len(plan.tables),
                      time.monotonic() - started, plan_table_text(plan))
        return [action_document(a) for a in plan.actions]


class PaimonMaintenanceActionOperator(PaimonJobOperator):
    """Run one planned maintenance action (a document of :class:`PaimonPlanWarehouseOperator`'s list).

    Right before running, the action's table is planned again: an action no longer due (done by
    someone else, or by an earlier try of this task whose commit landed under another identity)
    skips the task (``AirflowSkipException``). Otherwise the action's job runs with the fresh
    arguments on the engine :class:`~.operators.PaimonJobOperator` chooses (``engine=``, else
    ``core`` for metadata-only actions, else the connection's engine), as long as it stays due and
    each run changes it (an expiry capped per run by ``snapshot.expire.limit``), at most
    :data:`MAX_ROUNDS` times; a committing action (compaction, partition expiry) runs once, under the
    task's commit identity, and a retry whose commit already landed returns it without running.

    Returns ``{"table", "action", "arguments", "status": "done", "why", "rounds", "result",
    "still_due"}`` (``arguments`` as planned):
    ``result`` the last run's job result, ``still_due`` the reason if the table is still past its
    bound afterwards (else None).

    :param action: one action document (from ``.expand(action=plan.output)``)
    :param policy: the policy file the plan used, so the re-check plans the same way (templated)
    :param paimon_conn_id, warehouse, aws_conn_id, engine, master, spark_conf, spark_conn_id,
        commit_user, deferrable, poll_interval: as :class:`~.operators.PaimonJobOperator`
    """

    template_fields = (*PaimonJobOperator.template_fields, "policy")

    def __init__(self, *, action: Mapping[str, Any], policy: str | None = None, **kwargs: Any) -> None:
        table = str(action.get("table") or "") if isinstance(action, Mapping) else ""
        super().__init__(table=table, **kwargs)
        self.action, self.policy = action, policy
        self._planned: MaintenanceAction | None = None
        self._fresh: MaintenanceAction | None = None

    # the job and whether it commits come from the action, per task instance
    def _bind(self, action: MaintenanceAction) -> None:
        self._planned = action
        self.table = action.table
        # this operator's job is per instance (the action's), where other operators' is per class
        self.job = action.action  # type: ignore[misc]
        self.commits = action.action in COMMITTING_ACTIONS  # type: ignore[misc]
        if not self.commits:
            self.commit_user = None  # a commit user given to the mapped task applies to its committing actions

    def arguments(self, context: Context) -> dict[str, Any]:
        assert self._fresh is not None
        return dict(self._fresh.arguments)

    def run_core(self, hook: PaimonHook, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.job == "compact":  # the registry's compaction job needs Spark; the core compacts itself
            from paimonflow.jobs.write import partition_specs

            result = hook.get_table(self.table).compact(
                full=bool(arguments.get("full", True)), partitions=partition_specs(arguments.get("partitions")),
                commit_user=arguments["commit_user"], commit_identifier=arguments["commit_identifier"])
            return {"job": "compact", "table": self.table, **result.to_dict()}
        if self.job == "expire-partitions":
            arguments.pop("commit_identifier", None)  # its job takes the commit user only
        return super().run_core(hook, arguments)

    def run_spark(self, spark, hook: PaimonHook, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.job == "expire-partitions":
            arguments.pop("commit_identifier", None)
        return super().run_spark(spark, hook, arguments)

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowSkipException

        from paimonflow.core.maintenance.planner import recheck

        planned = parse_action(self.action)
        self._bind(planned)
        hook, policy = self._hook(), _policy(self.policy)
        if self.commits:
            given = None if _absent(self.commit_user) else str(self.commit_user).strip()
            done = self._already_committed(hook, {"commit_user": given or commit_user_for(context),
                                                  "commit_identifier": RUN_IDENTIFIER})
            if done is not None:
                self.log.info("%s on %s already committed by this task (snapshot %s): not run again",
                              planned.action, planned.table, done["snapshot_id"])
                return self._outcome(planned, rounds=0, result=done, still_due=None)
        fresh = recheck(hook.get_table(planned.table), planned, policy=policy)
        if fresh is None:
            raise AirflowSkipException(f"{planned.action} on {planned.table} is no longer due (done meanwhile)")
        self.log.info("%s on %s is due: %s", fresh.action, fresh.table, fresh.why)
        rounds, result = 0, None
        while fresh is not None and rounds < (1 if self.commits else MAX_ROUNDS):
            self._fresh = fresh
            result = super().execute(context)
            rounds += 1
            again = recheck(hook.get_table(planned.table), planned, policy=policy)
            if again is None or again.to_dict() == fresh.to_dict():
                fresh = again
                break
            fresh = again
        return self._outcome(planned, rounds=rounds, result=result, still_due=None if fresh is None else fresh.why)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """After a deferred spark-submit compaction: the job's result as this operator's outcome."""
        planned = parse_action(self.action)
        self._bind(planned)
        result = super().execute_complete(context, event)
        return self._outcome(planned, rounds=1, result=result, still_due=None)

    def _outcome(self, planned: MaintenanceAction, *, rounds: int, result: Mapping[str, Any] | None,
                 still_due: str | None) -> dict[str, Any]:
        if still_due is not None:
            self.log.warning("%s on %s is still due after %d run(s): %s", planned.action, planned.table, rounds,
                             still_due)
        return {"table": planned.table, "action": planned.action, "arguments": dict(planned.arguments),
                "status": "done", "why": planned.why, "rounds": rounds, "result": dict(result or {}), "still_due": still_due}


def summarize(actions: Sequence[Mapping[str, Any]], results: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """What a maintenance run did: ``done`` (the outcomes returned) and ``skipped`` (the planned
    actions whose mapped task returned nothing: no longer due when re-checked). ``results`` holds
    the mapped tasks' return values in map-index order, ``None`` for a skipped one."""
    def key(document: Mapping[str, Any]) -> tuple[str, str, str]:
        return (document["table"], document["action"],
                str((document.get("arguments") or {}).get("consumer_id", "")))

    done = [dict(r) for r in results if r]
    finished = {key(r) for r in done}
    skipped = [{"table": a["table"], "action": a["action"], "why": a.get("why")} for a in actions
               if key(a) not in finished]
    return {"planned": len(actions), "done": done, "skipped": skipped}


__all__ = ["COMMITTING_ACTIONS", "PaimonMaintenanceActionOperator", "PaimonPlanWarehouseOperator", "action_document",
           "parse_action", "summarize"]
