"""``engine="spark"`` takes its master from Airflow's Spark connection (issue 18, item 6): a
classic master with the connection's port, or a Spark Connect URL from a ``spark_connect``
connection; no connection leaves the choice to the session (``local[2]``)."""

from __future__ import annotations

import json

import pytest

from paimonflow.operators.airflow.hook import spark_master_from_connection

CASES = [
    ({"conn_type": "spark", "host": "spark://10.0.0.5", "port": 7077}, "spark://10.0.0.5:7077"),
    ({"conn_type": "spark", "host": "spark://10.0.0.5:7078", "port": 7077}, "spark://10.0.0.5:7078"),
    ({"conn_type": "spark", "host": "local[3]"}, "local[3]"),
    ({"conn_type": "spark", "host": "yarn"}, "yarn"),
    ({"conn_type": "spark", "host": "k8s://https://10.0.0.1", "port": 6443}, "k8s://https://10.0.0.1"),
    ({"conn_type": "spark_connect", "host": "10.0.0.9", "port": 15002}, "sc://10.0.0.9:15002/"),
    ({"conn_type": "spark_connect", "host": "10.0.0.9", "port": 15002, "login": "etl", "password": "t0k",
      "extra": {"use_ssl": True}}, "sc://10.0.0.9:15002/;user_id=etl;token=t0k;use_ssl=True"),
    ({"conn_type": "spark", "host": "sc://10.0.0.9", "port": 15003}, "sc://10.0.0.9:15003"),
    ({"conn_type": "spark"}, None),
]


@pytest.mark.parametrize(("connection", "master"), CASES, ids=[c[1] or "no-host" for c in CASES])
def test_master_from_the_spark_connection(monkeypatch, connection: dict, master: str | None) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_UNDER_TEST", json.dumps(connection))
    assert spark_master_from_connection("spark_under_test") == master


def test_no_spark_connection_leaves_the_default() -> None:
    assert spark_master_from_connection("no_such_spark_connection") is None
