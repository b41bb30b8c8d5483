"""Test DAGs (tests/airflow): a snapshot sensor whose cursor must survive runs of any logical date,
in poke mode and deferred, each feeding a downstream read of exactly the changes it reported."""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, task

from paimonflow.sensors.airflow import PaimonSnapshotSensor

WAREHOUSE = os.environ["PAIMONFLOW_WAREHOUSE"]

for dag_id, deferrable, table in (("paimon_test_cursor", False, "lab.cursor_poke"),
                                  ("paimon_test_cursor_deferred", True, "lab.cursor_deferred")):
    with DAG(dag_id=dag_id, schedule="@daily", start_date=datetime(2026, 11, 1), catchup=False,
             max_active_runs=1):
        wait = PaimonSnapshotSensor(task_id="wait", table=table, warehouse=WAREHOUSE,
                                    deferrable=deferrable, mode="poke", poke_interval=1, timeout=60)

        @task
        def changed_ids(snapshots: dict) -> list[int]:
            """The ids of the rows added in the reported range (what a downstream job would read)."""
            from paimonflow.core import Catalog

            table = Catalog(WAREHOUSE).get_table(snapshots["table"])
            changes = table.read_changes(snapshots["start_snapshot"], snapshots["end_snapshot"])
            return sorted(changes.column("id").to_pylist())

        changed_ids(wait.output)
