"""Daily maintenance of a whole warehouse, planned from each table's health and its own Paimon
options: ``plan`` lists the actions due (metadata only, most urgent first), ``maintain`` runs one
mapped task per (table, action), each re-checked right before it runs (skipped when no longer due)
and committing under its own identity, and ``summary`` reports what was done and skipped.

The ``paimon_default`` connection names the warehouse and the engine of the compactions
(metadata-only actions run on the core). ``tables`` (a glob over ``<database>.<table>``) and
``policy`` (a policy file on the workers) come from the run's params, so a manual run can narrow
them. Give the mapped task a ``pool`` (``pool="spark"``) to bound the compactions that hold Spark
capacity at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk import DAG, Param, task

from paimonflow.operators.airflow import PaimonMaintenanceActionOperator, PaimonPlanWarehouseOperator
from paimonflow.operators.airflow.warehouse import summarize

with DAG(
    dag_id="paimon_warehouse_maintenance",
    schedule="@daily",
    start_date=datetime(2026, 11, 21),
    catchup=False,
    max_active_runs=1,  # two plans of the same warehouse never race
    tags=["paimonflow"],
    params={"tables": Param("*.*", type="string", description="the tables: a glob over <database>.<table>"),
            "policy": Param("", type="string", description="a policy file on the workers; empty: none")},
):
    plan = PaimonPlanWarehouseOperator(task_id="plan", tables="{{ params.tables }}", policy="{{ params.policy }}")
    maintain = PaimonMaintenanceActionOperator.partial(
        task_id="maintain", policy="{{ params.policy }}", retries=1,
    ).expand(action=plan.output)

    @task(trigger_rule="none_failed")  # after every action, done or skipped; not after a failure
    def summary(actions: Any, results: Any) -> dict[str, Any]:
        done = summarize(actions, [r for r in results if r] if results else [])
        for outcome in done["done"]:
            print(f"done {outcome['table']} {outcome['action']} ({outcome['rounds']} run(s)): {outcome['why']}")
        for skipped in done["skipped"]:
            print(f"skipped {skipped['table']} {skipped['action']}: no longer due")
        return done

    summary(plan.output, maintain.output)
