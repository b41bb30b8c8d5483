"""Hourly ingestion with a sensor-triggered downstream incremental read.

``load`` writes the hour's Parquet files into ``shop.orders`` (exactly once per logical hour:
the commit user comes from the DAG, task and logical date); ``wait_for_commit`` fires on the new
APPEND/OVERWRITE snapshots (deferrable: the wait runs in the triggerer) and pushes the snapshot
range; ``read_changes`` writes exactly the rows that changed in that range, with their row kind,
for the downstream consumers. Set ``PAIMONFLOW_WAREHOUSE`` and ``PAIMONFLOW_LANDING`` (where the
hourly files land as ``<landing>/<YYYY-MM-DDTHH>/*.parquet``).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG

from paimonflow.operators.airflow import PaimonReadChangesOperator, PaimonWriteOperator, table_asset
from paimonflow.sensors.airflow import PaimonSnapshotSensor

WAREHOUSE = os.environ.get("PAIMONFLOW_WAREHOUSE", os.path.abspath("demo-warehouse"))
LANDING = os.environ.get("PAIMONFLOW_LANDING", os.path.abspath("demo-landing"))
TABLE = "shop.orders"
ENGINE = os.environ.get("PAIMONFLOW_ENGINE", "spark")

with DAG(
    dag_id="paimon_ingest_hourly",
    schedule="@hourly",
    start_date=datetime(2026, 11, 21),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=1)},
    tags=["paimonflow"],
):
    load = PaimonWriteOperator(
        task_id="load",
        table=TABLE,
        warehouse=WAREHOUSE,
        engine=ENGINE,
        path=LANDING + "/{{ logical_date.strftime('%Y-%m-%dT%H') }}",
        outlets=[table_asset(WAREHOUSE, TABLE)],
    )
    wait_for_commit = PaimonSnapshotSensor(
        task_id="wait_for_commit",
        table=TABLE,
        warehouse=WAREHOUSE,
        deferrable=True,
        poke_interval=5,
        timeout=3600,
    )
    read_changes = PaimonReadChangesOperator(
        task_id="read_changes",
        table=TABLE,
        warehouse=WAREHOUSE,
        engine=ENGINE,
        start_snapshot="{{ ti.xcom_pull(task_ids='wait_for_commit')['start_snapshot'] }}",
        end_snapshot="{{ ti.xcom_pull(task_ids='wait_for_commit')['end_snapshot'] }}",
        output_path=LANDING + "/changes/{{ logical_date.strftime('%Y-%m-%dT%H') }}",
    )
    load >> wait_for_commit >> read_changes
