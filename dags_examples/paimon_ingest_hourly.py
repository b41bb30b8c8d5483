"""Hourly ingestion with a sensor-triggered downstream incremental read.

``load`` writes the hour's Parquet files into ``shop.orders``, exactly once per hour: the commit
user names the hour, so a retry, a cleared run or a manual run of an hour already loaded commits
nothing. ``wait_for_commit`` fires on the APPEND/OVERWRITE snapshots committed since its previous
run, whoever made them (deferrable: the wait runs in the triggerer; its cursor is durable, see
docs/airflow.md), and pushes the snapshot range; ``read_changes`` writes exactly the rows that
changed in that range, with their row kind, to ``<landing>/changes/<start>-<end>/`` (start
exclusive): every committed row reaches one such folder, once, and a rerun of a run rewrites its
own folder.

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
HOUR = "{{ (dag_run.logical_date or dag_run.run_after).strftime('%Y-%m-%dT%H') }}"
START, END = ("{{ ti.xcom_pull(task_ids='wait_for_commit')['" + key + "'] }}"  # the range the sensor pushed
              for key in ("start_snapshot", "end_snapshot"))

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
        commit_user=f"airflow.paimon_ingest_hourly.load.{HOUR}",
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
        start_snapshot=START,
        end_snapshot=END,
        output_path=f"{LANDING}/changes/{START}-{END}",
    )
    load >> wait_for_commit >> read_changes
