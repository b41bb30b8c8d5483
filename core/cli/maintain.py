"""``paimonflow maintain``: plan a warehouse's maintenance from each table's health and its own
Paimon options (:mod:`paimonflow.core.maintenance.planner`), show the plan (``--dry-run``), or run it
on the core engine, table by table, each action planned again right before it runs.

Registered on the one app of ``verbs.py`` (imported by the package), with its error contract.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import PaimonflowError
from ..maintenance.planner import MaintenanceAction, WarehousePlan, plan_warehouse, recheck
from ..maintenance.policy import ACTIONS, MaintenancePolicy, load_policy
from .contract import emit_error, pairs
from .verbs import DryRun, Warehouse, catalog_of, command, out

if TYPE_CHECKING:
    from ..catalog import Catalog
    from ..table import Table

#: times one action runs while it stays due and each run changes it (expiry capped per run by
#: snapshot.expire.limit or partition.expiration-max-num runs again until the table is in bounds)
MAX_ROUNDS = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionOutcome:
    """What became of one planned action: ``done`` (``rounds`` runs, their results), ``skipped``
    (no longer due when re-checked: done by someone else meanwhile) or ``failed`` (``detail``
    says why; the other actions still ran)."""

    table: str
    action: str
    status: str
    detail: str
    rounds: tuple[Mapping[str, Any], ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {"table": self.table, "action": self.action, "status": self.status, "detail": self.detail,
                "results": [dict(r) for r in self.rounds]}


def _compact_partitions(arguments: Mapping[str, object]) -> list[dict[str, str]] | None:
    texts = arguments.get("partitions")
    if not texts:
        return None
    return [pairs(str(text).split(","), "partition") for text in texts]  # type: ignore[attr-defined]


def _number(arguments: Mapping[str, object], key: str) -> int | None:
    value = arguments.get(key)
    return None if value is None else int(value)  # type: ignore[call-overload]


def run_once(table: Table, action: MaintenanceAction) -> dict[str, Any]:
    """Run ``action`` once on ``table`` with the core engine (the verbs its job runs); returns
    the verb's result as a document."""
    a = action.arguments
    if action.action == "compact":
        return table.compact(full=bool(a.get("full", True)), partitions=_compact_partitions(a)).to_dict()
    if action.action in ("expire-snapshots", "expire-changelogs"):
        verb = table.expire_snapshots if action.action == "expire-snapshots" else table.expire_changelogs
        return verb(retain_min=_number(a, "retain_min"), retain_max=_number(a, "retain_max"),
                    older_than_millis=_number(a, "older_than_millis"),
                    max_deletes=_number(a, "max_deletes")).to_dict()
    if action.action == "expire-partitions":
        return table.expire_partitions(expiration_millis=_number(a, "expiration_millis")).to_dict()
    if action.action == "expire-tags":
        return {"expired": table.tags.expire(older_than_millis=_number(a, "older_than_millis"))}
    if action.action == "auto-tag":
        return table.run_auto_tag().to_dict()
    if action.action == "reset-consumer":
        consumer = str(a["consumer_id"])
        table.consumer_manager.reset(consumer, None)
        return {"consumer": consumer, "deleted": True}
    raise AssertionError(f"unplanned action {action.action!r}")


def _summary(action: str, rounds: Sequence[Mapping[str, Any]]) -> str:
    def total(key: str) -> int:
        return sum(len(v) if isinstance(v := r.get(key), list | tuple) else int(v or 0) for r in rounds)

    runs = f" in {len(rounds)} runs" if len(rounds) > 1 else ""
    if action == "compact":
        snapshots = [r.get("snapshot_id") for r in rounds if r.get("snapshot_id") is not None]
        return (f"{total('files_read')} file(s) rewritten into {total('files_written')}"
                + (f", snapshot {snapshots[-1]}" if snapshots else "") + runs)
    if action == "expire-snapshots":
        return f"{total('expired_snapshots')} snapshot(s) and {total('deleted_files')} file(s) deleted{runs}"
    if action == "expire-changelogs":
        return f"{total('expired_changelogs')} changelog(s) expired{runs}"
    if action == "expire-partitions":
        return f"{total('expired')} partition(s) dropped{runs}"
    if action == "expire-tags":
        return f"{total('expired')} tag(s) deleted"
    if action == "auto-tag":
        return f"{total('created')} tag(s) created, {total('deleted')} deleted"
    return f"consumer {rounds[0].get('consumer')!r} deleted"


def run_action(table: Table, action: MaintenanceAction, *, policy: MaintenancePolicy,
               clock: Callable[[], float] = time.time) -> ActionOutcome:
    """Re-check ``action`` on ``table`` now and run it while it stays due (at most
    :data:`MAX_ROUNDS` times, stopping when a run changes nothing the planner measures)."""
    def now() -> int:
        return int(clock() * 1000)

    fresh = recheck(table, action, policy=policy, now_millis=now())
    if fresh is None:
        return ActionOutcome(table=action.table, action=action.action, status="skipped",
                             detail="no longer due when re-checked (done meanwhile)")
    rounds: list[Mapping[str, Any]] = []
    try:
        for _ in range(MAX_ROUNDS):
            rounds.append(run_once(table, fresh))
            again = recheck(table, action, policy=policy, now_millis=now())
            if again is None or again.to_dict() == fresh.to_dict():
                break
            fresh = again
    except PaimonflowError as exc:
        done = f" after {len(rounds)} run(s)" if rounds else ""
        return ActionOutcome(table=action.table, action=action.action, status="failed",
                             detail=f"{type(exc).__name__}: {' '.join(str(exc).split())}{done}", rounds=tuple(rounds))
    still = recheck(table, action, policy=policy, now_millis=now())
    detail = _summary(action.action, rounds) + (f"; still due: {still.why}" if still is not None else "")
    return ActionOutcome(table=action.table, action=action.action, status="done", detail=detail, rounds=tuple(rounds))


def run_plan(catalog: Catalog, plan: WarehousePlan, *, policy: MaintenancePolicy,
             report: Callable[[ActionOutcome], None] | None = None) -> list[ActionOutcome]:
    """Run ``plan``'s actions: each table's in :data:`~paimonflow.core.maintenance.policy.ACTIONS`
    order, tables most urgent first, at most ``policy.concurrent_compactions`` tables at once.
    ``report`` hears each outcome as it comes. Returns the outcomes in the plan's order."""
    by_table: dict[str, list[MaintenanceAction]] = {}
    for action in plan.actions:
        by_table.setdefault(action.table, []).append(action)
    lock = threading.Lock()

    def maintain(identifier: str) -> list[ActionOutcome]:
        outcomes = []
        try:
            table = catalog.get_table(identifier)
        except PaimonflowError as exc:
            table, reason = None, f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        for action in sorted(by_table[identifier], key=lambda a: (ACTIONS.index(a.action), a.key[2])):
            outcome = (run_action(table, action, policy=policy) if table is not None else
                       ActionOutcome(table=identifier, action=action.action, status="failed", detail=reason))
            outcomes.append(outcome)
            if report is not None:
                with lock:
                    report(outcome)
        return outcomes

    if policy.concurrent_compactions == 1 or len(by_table) == 1:
        done = {identifier: maintain(identifier) for identifier in by_table}
    else:
        with ThreadPoolExecutor(max_workers=policy.concurrent_compactions, thread_name_prefix="maintain") as pool:
            futures = {identifier: pool.submit(maintain, identifier) for identifier in by_table}
            try:
                done = {identifier: future.result() for identifier, future in futures.items()}
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)  # the tables not started stay as they are
                raise
    order = {a.key: i for i, a in enumerate(plan.actions)}
    outcomes = [o for found in done.values() for o in found]
    return sorted(outcomes, key=lambda o: order.get((o.table, o.action, _consumer(o)), len(order)))


def _consumer(outcome: ActionOutcome) -> str:
    return str(outcome.rounds[0].get("consumer", "")) if outcome.action == "reset-consumer" and outcome.rounds else ""


def _plan_rows(actions: Sequence[MaintenanceAction]) -> list[dict[str, object]]:
    return [{"table": a.table, "action": a.action, "urgency": a.urgency, "priority": a.priority, "option": a.option,
             "why": a.why} for a in actions]


@command("maintain")
def maintain_(
    warehouse: Warehouse,
    tables: Annotated[str | None, typer.Option(
        help="Only the tables matching this glob over <database>.<table>, e.g. 'shop.*' or '*.orders' "
             "(a glob without a dot names databases)")] = None,
    policy_file: Annotated[Path | None, typer.Option(
        "--policy", help="A policy file (.json, .toml, .yaml): defaults for tables without options, exclusions, "
                         "priorities, actions, budget (docs/maintenance.md)")] = None,
    dry_run: DryRun = False,
) -> None:
    """Plan every table's maintenance by its own Paimon options (and a policy); --dry-run shows the plan."""
    policy = load_policy(policy_file) if policy_file is not None else MaintenancePolicy()
    catalog = catalog_of(warehouse)
    started = time.monotonic()
    plan = plan_warehouse(catalog, tables, policy)
    took = time.monotonic() - started
    if dry_run:
        if out.json:
            out.document(plan.to_dict())
            return
        out.rows(_plan_rows(plan.actions), title=f"maintenance plan: {len(plan.actions)} action(s)",
                 columns=["table", "action", "urgency", "priority", "option", "why"])
        _notes(plan, took)
        return
    if not out.json:
        _notes(plan, took)
    total = len(plan.actions)
    count = 0

    def report(outcome: ActionOutcome) -> None:
        nonlocal count
        count += 1
        if not out.json:
            typer.echo(f"[{count}/{total}] {outcome.table} {outcome.action}: {outcome.status}: {outcome.detail}",
                       err=True)

    outcomes = run_plan(catalog, plan, policy=policy, report=report)
    if out.json:
        out.document({"plan": plan.to_dict(), "results": [o.to_dict() for o in outcomes]})
    else:
        out.rows([{"table": o.table, "action": o.action, "status": o.status, "detail": o.detail} for o in outcomes],
                 title="maintenance", columns=["table", "action", "status", "detail"])
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        first = failed[0]
        kind, _, message = first.detail.partition(": ")
        emit_error(kind, f"{len(failed)} of {total} action(s) failed; the first: {first.table} {first.action}: "
                         f"{message}", as_json=out.json)
        raise typer.Exit(2)


def _notes(plan: WarehousePlan, took: float) -> None:
    """What the plan leaves out, on stderr (stdout keeps the plan or the results alone)."""
    for skipped in plan.skipped:
        typer.echo(f"skipped {skipped.table}: {skipped.reason}", err=True)
    for action in plan.deferred:
        typer.echo(f"deferred {action.table} {action.action}: over the policy's budget max-compactions", err=True)
    typer.echo(f"planned {len(plan.actions)} action(s) over {len(plan.tables)} table(s) in {took:.2f} s"
               + (f"; {len(plan.skipped)} skipped" if plan.skipped else ""), err=True)
