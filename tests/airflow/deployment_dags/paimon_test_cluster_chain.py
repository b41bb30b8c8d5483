"""A table's whole chain on the deployment's Spark standalone cluster (tests/airflow/test_deployment.py):
create it (DDL) >> write 200,000 rows (a deferrable spark-submit) >> check >> compact (deferrable
spark-submit). The submitted tasks run in the one-slot pool ``spark_slot``; ``probe``, in the
same pool and with a lower priority, can only run while ``write`` is deferred, and records the
write's application running on the master at that moment. The ``spark_cluster`` connection (with
``master_web_ui``) and the pool are created by the test through the REST API."""

from __future__ import annotations

import time
from datetime import datetime

from airflow.sdk import DAG, task

from paimonflow.operators.airflow import (
    PaimonCompactOperator,
    PaimonCreateTableOperator,
    PaimonTableCheckOperator,
    PaimonWriteOperator,
)

TABLE = "shop.cluster_chain"
ROWS = 200_000
SUBMITTED = {"engine": "spark-submit", "spark_conn_id": "spark_cluster", "deferrable": True, "poll_interval": 2,
             "pool": "spark_slot", "weight_rule": "absolute", "priority_weight": 10,
             "spark_conf": {"spark.executor.memory": "512m", "spark.driver.memory": "512m",
                            "spark.ui.enabled": "false"}}

with DAG(dag_id="paimon_test_cluster_chain", schedule=None, start_date=datetime(2026, 11, 1), catchup=False):
    create = PaimonCreateTableOperator(task_id="create_table", table=TABLE, primary_keys=["id"],
                                       columns={"id": "BIGINT", "amount": "DOUBLE"}, options={"bucket": "2"},
                                       create_database=True)
    write = PaimonWriteOperator(task_id="write", table=TABLE, **SUBMITTED,
                                sql=f"select id, cast(id % 100 as double) as amount from range(0, {ROWS}, 1, 4)")

    @task(pool="spark_slot", weight_rule="absolute", priority_weight=1)
    def probe() -> dict:
        """Runs only when the pool's one slot is free: looks for the write's application on the master."""
        import httpx
        from airflow.sdk import BaseHook

        ui = BaseHook.get_connection("spark_cluster").extra_dejson["master_web_ui"]
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            active = [a for a in httpx.get(f"{ui}/json/", timeout=30).json()["activeapps"]
                      if a["name"].startswith("paimonflow-write-paimon_test_cluster_chain.write-")]
            if active:
                return {"seen_running": [a["id"] for a in active]}
            time.sleep(1)
        return {"seen_running": []}

    check = PaimonTableCheckOperator(task_id="check", table=TABLE,
                                     checks={"row_count": {"equal_to": ROWS}, "unique_key": {"columns": ["id"]}},
                                     column_checks={"amount": {"min": {"geq_to": 0}}})
    compact = PaimonCompactOperator(task_id="compact", table=TABLE, **SUBMITTED)
    create >> [write, probe()]
    write >> check >> compact
