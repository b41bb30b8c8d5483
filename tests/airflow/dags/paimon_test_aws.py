"""Test DAG (tests/airflow/test_aws_connection.py): a core-engine write into a table on S3 whose
``paimon_aws`` connection takes its S3 credentials from the ``aws_lake`` Amazon Web Services
connection (both come from the test's environment); the secrets must reach no log and no XCom."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from paimonflow.operators.airflow import PaimonWriteOperator

with DAG(dag_id="paimon_test_aws", schedule=None, start_date=datetime(2026, 11, 1), catchup=False):
    PaimonWriteOperator(task_id="write_with_aws_credentials", table="lab.aws", paimon_conn_id="paimon_aws",
                        engine="core", path="{{ dag_run.conf['path'] }}", format="csv")
