"""Airflow 3 for the tests: one AIRFLOW_HOME and one SQLite metadata database per test run, a
DAGs folder holding the example DAGs (``dags_examples/``) and the test DAGs (``tests/airflow/dags``),
and one warehouse: the ``paimon_default`` connection's (the example DAGs) and ``PAIMONFLOW_WAREHOUSE``
(the test DAGs). Set before Airflow is imported."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FAKE_SECRET = "fake-secret-8f3a1c9e77d2"
FAKE_TOKEN = "fake-session-token-5b7e"
HOME = Path(tempfile.mkdtemp(prefix="paimonflow-airflow-"))
DAGS = HOME / "dags"
WAREHOUSE = HOME / "warehouse"
LANDING = HOME / "landing"

DAGS.mkdir()
for source in [*(REPO / "dags_examples").glob("paimon_*.py"), *(REPO / "tests" / "airflow" / "dags").glob("*.py")]:
    shutil.copy(source, DAGS / source.name)
os.environ.update({
    "AIRFLOW_HOME": str(HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{HOME / 'airflow.db'}",
    "AIRFLOW__CORE__PLUGINS_FOLDER": str(HOME / "plugins"),
    "PAIMONFLOW_WAREHOUSE": str(WAREHOUSE),
    "PAIMONFLOW_LANDING": str(LANDING),
    # what the example DAGs take from Airflow: the connection (warehouse, engine) and Variables
    "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon", "host": str(WAREHOUSE)}),
    "AIRFLOW_VAR_PAIMONFLOW_LANDING": str(LANDING),
    "AIRFLOW_VAR_PAIMONFLOW_ORPHAN_AGE": "0 ms",
    "AIRFLOW_VAR_PAIMONFLOW_ORPHAN_MIN_AGE": "0 ms",  # nothing else writes into the test tables
    "AIRFLOW_CONN_SPARK_LOCAL": json.dumps({"conn_type": "spark", "host": "local[1]"}),
    # spark-submit (the Airflow Spark provider runs it from PATH) and its Python workers
    "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    "PYSPARK_PYTHON": sys.executable,
    # a connection holding fake secrets: they must never reach logs, XCom or rendered templates
    "AIRFLOW_CONN_PAIMON_SECRET": json.dumps({
        "conn_type": "paimon", "host": str(WAREHOUSE), "login": "AKIAFAKEACCESSKEY",
        "password": FAKE_SECRET, "extra": {"s3.session-token": FAKE_TOKEN, "s3.region": "eu-west-1"}}),
})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/airflow/" in str(item.fspath):
            item.add_marker(pytest.mark.airflow)


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """The migrated metadata database (created once, ~5 s)."""
    from airflow.utils import db

    db.initdb()
    return HOME


def load_dag(dag_id: str):
    """A DAG from the DAGs folder, parsed as Airflow parses it."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS))
    assert not bag.import_errors, bag.import_errors
    return bag.get_dag(dag_id)
