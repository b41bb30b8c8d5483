"""The warehouse operators with real Airflow (dag.test() on SQLite) and a real warehouse on disk:
the plan's XCom, a mapped action re-checked and skipped when someone else did it meanwhile, a
retry that never commits twice, and bad action documents refused with one line."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

from .conftest import DAGS, WAREHOUSE, load_dag

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
DAY = datetime(2026, 12, 1, tzinfo=UTC)


def states(run) -> dict[str, str]:
    return {f"{ti.task_id}[{ti.map_index}]": str(ti.state) for ti in run.get_task_instances()}


def primary_key_table(name: str, writes: int):
    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("ops", ignore_if_exists=True)
    table = catalog.create_table(f"ops.{name}", SCHEMA, primary_keys=["id"],
                                 options={"bucket": "1", "num-sorted-run.compaction-trigger": "3", "write-only": "true"})
    for i in range(writes):
        table.write(pa.table({"id": [i, 100], "v": [f"w{i}", f"w{i}"]}, schema=SCHEMA))
    return catalog.get_table(f"ops.{name}")


SKIP_DAG = """
from datetime import datetime
from airflow.sdk import DAG, task
from paimonflow.core import Catalog
from paimonflow.operators.airflow import PaimonMaintenanceActionOperator, PaimonPlanWarehouseOperator

with DAG(dag_id="paimon_test_warehouse_skip", schedule=None, start_date=datetime(2026, 12, 1), catchup=False):
    plan = PaimonPlanWarehouseOperator(task_id="plan", tables="ops.done_elsewhere")

    @task
    def meanwhile() -> None:  # another writer compacts the table between the plan and the action
        Catalog({warehouse!r}).get_table("ops.done_elsewhere").compact(full=True, commit_user="someone-else")

    plan >> meanwhile() >> PaimonMaintenanceActionOperator.partial(task_id="maintain").expand(action=plan.output)
"""


def dag_from_source(dag_id: str, source: str):
    """A test DAG written into the DAGs folder (so Airflow parses and serializes it), then loaded."""
    (DAGS / f"{dag_id}.py").write_text(source)
    return load_dag(dag_id)


def test_an_action_done_by_someone_else_between_plan_and_run_is_skipped(airflow_db):
    primary_key_table("done_elsewhere", writes=5)

    dag = dag_from_source("paimon_test_warehouse_skip", SKIP_DAG.format(warehouse=str(WAREHOUSE)))
    run = dag.test(logical_date=DAY)
    assert states(run) == {"plan[-1]": "success", "meanwhile[-1]": "success", "maintain[0]": "skipped"}, states(run)
    planned = run.get_task_instances()[0].xcom_pull(task_ids="plan")
    assert [(a["table"], a["action"]) for a in planned] == [("ops.done_elsewhere", "compact")]
    assert set(planned[0]) == {"table", "action", "arguments", "why", "option", "urgency", "priority"}
    table = Catalog(str(WAREHOUSE)).get_table("ops.done_elsewhere")
    compactions = [s.commit_user for s in table.snapshot_manager.snapshots() if s.commit_kind.value == "COMPACT"]
    assert compactions == ["someone-else"]  # the mapped task committed nothing


RETRY_DAG = """
from datetime import datetime
from airflow.sdk import DAG
from paimonflow.operators.airflow import PaimonMaintenanceActionOperator, PaimonPlanWarehouseOperator

with DAG(dag_id="paimon_test_warehouse_retry", schedule=None, start_date=datetime(2026, 12, 1), catchup=False):
    plan = PaimonPlanWarehouseOperator(task_id="plan", tables="ops.retried")
    plan >> PaimonMaintenanceActionOperator.partial(task_id="maintain", engine="core").expand(action=plan.output)
"""


def test_a_rerun_of_the_same_run_never_commits_twice(airflow_db):
    primary_key_table("retried", writes=5)
    dag = dag_from_source("paimon_test_warehouse_retry", RETRY_DAG)
    run = dag.test(logical_date=DAY)
    assert states(run) == {"plan[-1]": "success", "maintain[0]": "success"}, states(run)
    first = run.get_task_instances()[0].xcom_pull(task_ids="maintain", map_indexes=0)
    assert first["status"] == "done" and first["rounds"] == 1 and first["still_due"] is None
    table = Catalog(str(WAREHOUSE)).get_table("ops.retried")
    user = table.latest_snapshot().commit_user
    assert user == "airflow.paimon_test_warehouse_retry.maintain.m0.20261201T000000"
    for i in range(4):  # due again, but this run's identity has already compacted
        table.write(pa.table({"id": [200 + i], "v": ["late"]}, schema=SCHEMA))
    before = table.snapshot_manager.latest_id()
    run = dag.test(logical_date=DAY)
    assert states(run) == {"plan[-1]": "success", "maintain[0]": "success"}, states(run)
    again = run.get_task_instances()[0].xcom_pull(task_ids="maintain", map_indexes=0)
    assert again["rounds"] == 0 and again["result"]["already_committed"]
    table = Catalog(str(WAREHOUSE)).get_table("ops.retried")
    assert table.snapshot_manager.latest_id() == before
    assert [s.commit_user for s in table.snapshot_manager.snapshots()].count(user) == 1


@pytest.mark.parametrize(("document", "message"), [
    ("compact", "a mapping"),
    ({"action": "compact"}, "no 'table'"),
    ({"table": "ops.t", "action": "vacuum"}, "action must be one of"),
    ({"table": "ops.t", "action": "compact", "arguments": ["full"]}, "arguments must be a mapping"),
    ({"table": "ops.t", "action": "compact", "urgency": "high"}, "must be numbers"),
])
def test_a_bad_action_document_is_one_line_naming_it(document, message):
    from paimonflow.core.errors import InvalidArgumentError
    from paimonflow.operators.airflow.warehouse import parse_action

    with pytest.raises(InvalidArgumentError, match=message):
        parse_action(document)


def test_the_summary_counts_what_returned_nothing_as_skipped():
    from paimonflow.operators.airflow.warehouse import summarize

    planned = [{"table": "a.t", "action": "compact", "why": "runs"},
               {"table": "a.t", "action": "reset-consumer", "arguments": {"consumer_id": "c1"}, "why": "old"},
               {"table": "a.t", "action": "reset-consumer", "arguments": {"consumer_id": "c2"}, "why": "old"}]
    done = {"table": "a.t", "action": "reset-consumer", "arguments": {"consumer_id": "c2"}, "status": "done"}
    summary = summarize(planned, [None, done])
    assert summary["done"] == [done] and summary["planned"] == 3
    assert [(s["action"], s["why"]) for s in summary["skipped"]] == [("compact", "runs"), ("reset-consumer", "old")]
