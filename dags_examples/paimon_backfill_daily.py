"""A daily load that backfills safely: each run overwrites exactly its day's partition
(``dt={{ ds }}``) with that day's landed files, under a commit user derived from the logical date.
Rerunning a day (a retry, a cleared run, ``airflow dags backfill`` over a range that was already
loaded) leaves the table as it was: a retried commit is recognised and skipped, and a rerun that
does write replaces the same partition with the same rows.

Catch-up is off: unpausing does not start weeks of runs. Backfill a range on purpose
(``airflow backfill create --dag-id paimon_backfill_daily --from-date ... --to-date ...``). The
``paimon_default`` connection names the warehouse and the engine; the Variable
``paimonflow_landing`` holds ``daily/<YYYY-MM-DD>/`` folders. A manual run loads the day it runs."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from paimonflow.operators.airflow import PaimonWriteOperator, connection_table_asset

TABLE = "shop.daily_sales"
DAY = "{{ (dag_run.logical_date or dag_run.run_after) | ds }}"

with DAG(
    dag_id="paimon_backfill_daily",
    schedule="@daily",
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=4,
    tags=["paimonflow"],
):
    PaimonWriteOperator(
        task_id="load_day",
        table=TABLE,
        path="{{ var.value.paimonflow_landing }}/daily/" + DAY,
        mode="overwrite",
        overwrite_partition="dt=" + DAY,
        if_missing="skip",  # a day with nothing landed is skipped, not failed
        outlets=[connection_table_asset(TABLE)],
    )
