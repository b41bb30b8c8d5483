"""Deferrable spark-submit (operators/airflow/spark_app.py) on the tests' Spark standalone cluster:
the task starts its application and defers; the trigger follows it through the master's JSON status
and the result file; the task resumes with the job's result (or its typed error) and the
application's link. The real-deployment test (tests/airflow/test_deployment.py) shows the freed
worker slot; these drive the same objects in process."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from types import SimpleNamespace

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import DataError, PaimonflowError

from .conftest import FAKE_SECRET, LANDING, WAREHOUSE, load_dag

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
SPARK_CONF = {"spark.ui.enabled": "false", "spark.executor.memory": "512m", "spark.driver.memory": "512m"}


@pytest.fixture
def cluster_connection(spark_cluster, monkeypatch):
    host, port = spark_cluster.url.rsplit(":", 1)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps({
        "conn_type": "spark", "host": host, "port": int(port),
        "extra": {"master_web_ui": f"http://127.0.0.1:{spark_cluster.ui_port}"}}))
    return spark_cluster


def _table(name: str):
    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("lab", ignore_if_exists=True)
    return catalog.create_table(f"lab.{name}", SCHEMA, primary_keys=["id"], options={"bucket": "1"},
                                ignore_if_exists=True)


def _land(folder: str, table: pa.Table) -> str:
    path = LANDING / "lab" / folder
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path / "part-0.parquet")
    return str(path)


class _TI(SimpleNamespace):
    def xcom_push(self, key, value):
        self.pushed[key] = value


def _context(task_id: str):
    ti = _TI(dag_id="direct", task_id=task_id, map_index=-1, pushed={})
    return {"ti": ti, "logical_date": datetime(2026, 11, 20, tzinfo=UTC), "run_id": "manual", "outlet_events": None}


def _deferred(operator, context):
    from airflow.sdk.exceptions import TaskDeferred

    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context)
    return deferred.value


def _restarted(trigger):
    """The trigger as a triggerer re-creates it after a restart: from its serialized form alone."""
    import importlib

    classpath, kwargs = trigger.serialize()
    module, _, name = classpath.rpartition(".")
    json.dumps(kwargs)  # it is stored as JSON in the trigger's row
    return getattr(importlib.import_module(module), name)(**kwargs)


async def _first_event(trigger, timeout: float = 300):
    async def first():
        async for event in trigger.run():
            return event.payload
        raise AssertionError("the trigger ended without an event")

    return await asyncio.wait_for(first(), timeout)


def test_a_deferred_write_runs_on_the_cluster_and_links_its_application(airflow_db, cluster_connection):
    """Through dag.test (Airflow runs the trigger inline): the task defers, the write lands as an
    application of the cluster, and the task's XCom and extra link name that application."""
    _table("deferred")
    _land("deferred", pa.table({"id": list(range(10)), "v": ["d"] * 10}, schema=SCHEMA))
    run = load_dag("paimon_test_spark_deferred").test(logical_date=datetime(2026, 11, 20, tzinfo=UTC))
    assert str(run.state) == "success"
    [ti] = run.get_task_instances()
    result = ti.xcom_pull(task_ids="deferred_write")
    assert result["rows_written"] == 10 and result["master"] == cluster_connection.url
    application = ti.xcom_pull(task_ids="deferred_write", key="spark_application")
    assert application["name"].startswith("paimonflow-write-paimon_test_spark_deferred.deferred_write-")
    app = cluster_connection.application(application["name"])
    assert application["id"] == app["id"] and app["state"] == "FINISHED"
    page = httpx.get(application["url"], timeout=30)
    assert page.status_code == 200 and app["id"] in page.text  # the master's page of that application
    assert Catalog(str(WAREHOUSE)).get_table("lab.deferred").read().num_rows == 10


def test_a_refused_deferred_write_fails_with_the_jobs_typed_line_after_a_triggerer_restart(airflow_db,
                                                                                           cluster_connection):
    """A null key: the driver writes its error record, the trigger (re-created from its serialized
    form, as after a triggerer restart, holding no storage option) reports the end, and the task
    fails with the job's own DataError line, nothing committed."""
    from paimonflow.operators.airflow import PaimonWriteOperator

    table = _table("refused")
    nullable = pa.schema([pa.field("id", pa.int64()), ("v", pa.string())])
    path = _land("refused", pa.table({"id": [1, None, 3], "v": ["a", "b", "c"]}, schema=nullable))
    operator = PaimonWriteOperator(task_id="refused", table="lab.refused", paimon_conn_id="paimon_secret",
                                   engine="spark-submit", spark_conn_id="spark_cluster", deferrable=True,
                                   poll_interval=1, path=path, spark_conf=SPARK_CONF)
    context = _context("refused")
    deferred = _deferred(operator, context)
    classpath, kwargs = deferred.trigger.serialize()
    assert FAKE_SECRET not in json.dumps(kwargs) and "s3." not in json.dumps(kwargs)
    assert classpath == "paimonflow.operators.airflow.spark_app.SparkApplicationTrigger"
    event = asyncio.run(_first_event(_restarted(deferred.trigger)))
    assert event["status"] == "done"
    with pytest.raises(DataError, match="id") as refused:
        getattr(operator, deferred.method_name)(context, event)
    assert "\n" not in str(refused.value)
    assert context["ti"].pushed["spark_application"]["name"] == kwargs["app_name"]
    assert table.snapshot_manager.latest_id() is None


def test_killing_a_deferred_task_kills_its_application_and_commits_nothing(airflow_db, cluster_connection):
    """A user marks the deferred task failed: the triggerer calls the trigger's on_kill, which kills
    the application through the master; the driver stops before its commit."""
    from paimonflow.operators.airflow import PaimonWriteOperator

    table = _table("killed")
    operator = PaimonWriteOperator(task_id="endless", table="lab.killed", warehouse=str(WAREHOUSE),
                                   engine="spark-submit", spark_conn_id="spark_cluster", deferrable=True,
                                   poll_interval=1, spark_conf=SPARK_CONF,
                                   sql="select id, cast(id as string) as v from range(0, 5000000000, 1, 4)")
    context = _context("endless")
    deferred = _deferred(operator, context)
    trigger = deferred.trigger

    async def kill_when_running():
        deadline = time.monotonic() + 240
        while True:
            app = await trigger._application()
            if app is not None and app["state"] == "RUNNING":
                break
            assert time.monotonic() < deadline, "the application never ran"
            await asyncio.sleep(1)
        await trigger.on_kill()
        return await _first_event(_restarted(trigger), timeout=240)

    event = asyncio.run(kill_when_running())
    assert cluster_connection.application(trigger.app_name)["state"] == "KILLED"
    # the driver saw its application killed and wrote its error record; the task fails with it
    with pytest.raises(PaimonflowError) as failed:
        operator.execute_complete(context, event)
    assert "stopped from outside" in str(failed.value) and "\n" not in str(failed.value)
    assert table.snapshot_manager.latest_id() is None


def test_a_blocking_spark_submit_fails_with_the_jobs_typed_line_not_the_providers(airflow_db):
    """Without deferral, the provider's hook reports ``Cannot execute: <command> ... Error code is:
    2``; the task's error is the job's own line, read from its result file."""
    from paimonflow.operators.airflow import PaimonWriteOperator

    _table("blocking")
    nullable = pa.schema([pa.field("id", pa.int64()), ("v", pa.string())])
    path = _land("blocking", pa.table({"id": [None], "v": ["x"]}, schema=nullable))
    operator = PaimonWriteOperator(task_id="blocking", table="lab.blocking", warehouse=str(WAREHOUSE),
                                   engine="spark-submit", spark_conn_id="spark_local", path=path,
                                   spark_conf={"spark.ui.enabled": "false"})
    with pytest.raises(DataError, match="id") as refused:
        operator.execute(_context("blocking"))
    assert "Cannot execute" not in str(refused.value)


def test_an_already_committed_write_starts_no_spark_application(airflow_db, cluster_connection, monkeypatch):
    """A rerun whose commit is already in the table: the operator finds it in the snapshots and
    submits nothing (with no spark-submit on the PATH, a submission would fail the task)."""
    from paimonflow.operators.airflow import PaimonWriteOperator

    table = _table("rerun")
    table.write(pa.table({"id": [1], "v": ["x"]}, schema=SCHEMA), commit_user="airflow.direct.rerun.20261120T000000",
                commit_identifier=1)
    operator = PaimonWriteOperator(task_id="rerun", table="lab.rerun", warehouse=str(WAREHOUSE),
                                   engine="spark-submit", spark_conn_id="spark_cluster", deferrable=True,
                                   path=_land("rerun", pa.table({"id": [2], "v": ["y"]}, schema=SCHEMA)))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    result = operator.execute(_context("rerun"))
    assert result["already_committed"] is True and result["snapshot_id"] == 1
    assert table.read().num_rows == 1
