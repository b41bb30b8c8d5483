"""A daily load that backfills safely: each run overwrites exactly its day's partition
(``dt={{ ds }}``) with that day's landed files, under a commit user derived from the logical date.
Rerunning a day (a retry, a cleared run, ``airflow dags backfill`` over a range that was already
loaded) leaves the table as it was: a retried commit is recognised and skipped, and a rerun that
does write replaces the same partition with the same rows."""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from paimonflow.operators.airflow import PaimonWriteOperator, table_asset

WAREHOUSE = os.environ.get("PAIMONFLOW_WAREHOUSE", os.path.abspath("demo-warehouse"))
LANDING = os.environ.get("PAIMONFLOW_LANDING", os.path.abspath("demo-landing"))
TABLE = "shop.daily_sales"
ENGINE = os.environ.get("PAIMONFLOW_ENGINE", "spark")

with DAG(
    dag_id="paimon_backfill_daily",
    schedule="@daily",
    start_date=datetime(2026, 11, 1),
    catchup=True,
    max_active_runs=4,
    tags=["paimonflow"],
):
    PaimonWriteOperator(
        task_id="load_day",
        table=TABLE,
        warehouse=WAREHOUSE,
        engine=ENGINE,
        path=LANDING + "/daily/{{ ds }}",
        mode="overwrite",
        overwrite_partition="dt={{ ds }}",
        outlets=[table_asset(WAREHOUSE, TABLE)],
    )
