"""Hourly ingestion with a sensor-triggered downstream incremental read.

``load`` writes the hour's Parquet files into ``shop.orders`` (exactly once per logical hour:
the commit user comes from the DAG, task and logical date); ``wait_for_commit`` fires on the new
APPEND/OVERWRITE snapshots (deferrable: the wait runs in the triggerer) and pushes the snapshot
range; ``read_changes`` writes exactly the rows that changed in that range, with their row kind,
for the downstream consumers.

Deploy: the ``paimon_default`` connection names the warehouse (its host) and the engine (its
``engine`` extra, default ``spark``); the Airflow Variable ``paimonflow_landing`` is where the hourly
files land, as ``<landing>/<YYYY-MM-DDTHH>/*.parquet``. A manual run (no logical date) loads the hour
it was triggered in.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from paimonflow.operators.airflow import (
    PaimonReadChangesOperator,
    PaimonWriteOperator,
    connection_table_asset,
)
from paimonflow.sensors.airflow import PaimonSnapshotSensor

TABLE = "shop.orders"
LANDING = "{{ var.value.paimonflow_landing }}"
HOUR = "{{ (logical_date or dag_run.run_after).strftime('%Y-%m-%dT%H') }}"

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
        path=f"{LANDING}/{HOUR}",
        if_missing="skip",  # an hour with nothing landed: the run is skipped (and so are the sensor and the read)
        outlets=[connection_table_asset(TABLE)],
    )
    wait_for_commit = PaimonSnapshotSensor(
        task_id="wait_for_commit",
        table=TABLE,
        deferrable=True,
        poke_interval=5,
        timeout=3600,
    )
    read_changes = PaimonReadChangesOperator(
        task_id="read_changes",
        table=TABLE,
        start_snapshot="{{ ti.xcom_pull(task_ids='wait_for_commit')['start_snapshot'] }}",
        end_snapshot="{{ ti.xcom_pull(task_ids='wait_for_commit')['end_snapshot'] }}",
        output_path=f"{LANDING}/changes/{HOUR}",
    )
    load >> wait_for_commit >> read_changes
