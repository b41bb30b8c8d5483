"""Operators, sensor, triggers, provider and plugin with real Airflow (dag.test() on SQLite)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog

from .conftest import FAKE_SECRET, FAKE_TOKEN, LANDING, WAREHOUSE, load_dag

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def table(name: str, **options):
    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("lab", ignore_if_exists=True)
    return catalog.create_table(f"lab.{name}", SCHEMA, primary_keys=["id"],
                                options={"bucket": "2", **options}, ignore_if_exists=True)


def land(folder: str, ids, v: str) -> None:
    path = LANDING / "lab" / folder
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA), path / "part-0.parquet")


def xcoms(run) -> dict:
    return {ti.task_id: ti.xcom_pull(task_ids=ti.task_id) for ti in run.get_task_instances()}


@pytest.mark.slow
def test_every_operator_in_one_dag_run(airflow_db):
    table("t")
    land("1", range(5), "first")
    land("2", range(3, 8), "second")
    run = load_dag("paimon_test_operators").test(logical_date=datetime(2026, 11, 20, tzinfo=UTC))
    results = xcoms(run)
    assert str(run.state) == "success", {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    t = Catalog(str(WAREHOUSE)).get_table("lab.t")
    assert results["write_1"]["snapshot_id"] == 1 and results["tag"]["snapshot_id"] == 1
    assert results["compact"]["snapshot_id"] == 3 and results["analyze"]["statistics_file"]
    assert results["branch"]["table"] == "lab.t$branch_fix"
    assert results["changes"]["rows"] == 5  # the delta of snapshot 2
    assert results["expire_plan"]["dry_run"] and results["expire_plan"]["snapshot_ids"]
    assert results["rollback"]["snapshot_id"] == 1 and results["fast_forward"]["copied_snapshots"] == [1]
    assert "after-first" not in t.tags.list()
    # after rolling back to the tag (and fast-forwarding to the branch made from it), main holds the first write
    assert sorted((r["id"], r["v"]) for r in t.read().to_pylist()) == [(i, "first") for i in range(5)]
    users = {s.commit_user for s in t.snapshot_manager.snapshots()}
    assert users == {"airflow.paimon_test_operators.write_1.20261120T000000"}


@pytest.mark.slow
def test_a_fake_secret_never_reaches_logs_xcom_or_templates(airflow_db, capfd, caplog):
    t = table("s")
    t.write(pa.table({"id": [1], "v": ["x"]}, schema=SCHEMA))
    run = load_dag("paimon_test_secret").test(logical_date=datetime(2026, 11, 20, tzinfo=UTC))
    assert str(run.state) == "success"
    out, err = capfd.readouterr()
    seen = out + err + caplog.text + json.dumps(xcoms(run), default=str)
    for ti in run.get_task_instances():
        from airflow.models.renderedtifields import RenderedTaskInstanceFields

        seen += json.dumps(RenderedTaskInstanceFields.get_templated_fields(ti) or {}, default=str)
    assert "analyze_with_secret" in seen  # the logs were captured at all
    assert FAKE_SECRET not in seen and FAKE_TOKEN not in seen


def test_hook_reads_the_connection_and_masks_secrets():
    from airflow.sdk.log import mask_secret  # noqa: F401  (the masker the hook feeds)

    from paimonflow.operators.airflow import PaimonHook

    hook = PaimonHook("paimon_secret")
    location = hook.location("lab.s")
    assert location.warehouse == str(WAREHOUSE)
    assert location.storage_options["s3.secret-key"] == FAKE_SECRET
    assert FAKE_SECRET not in repr(location) and FAKE_SECRET not in repr(hook.get_conn())
    WAREHOUSE.mkdir(parents=True, exist_ok=True)  # (the Test button fails for a warehouse that does not exist)
    assert hook.test_connection()[0]


def test_trigger_serializes_round_trips_and_fires(airflow_db):
    from paimonflow.sensors.airflow import PaimonSnapshotTrigger

    t = table("trig")
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    from paimonflow.core.read.watch import Observation

    cursor = Observation.of(t.latest_snapshot()).to_dict()
    trigger = PaimonSnapshotTrigger(table="lab.trig", warehouse=str(WAREHOUSE), last_observation=cursor,
                                    poll_interval=0.2)
    path, kwargs = trigger.serialize()
    assert path == "paimonflow.sensors.airflow.snapshot.PaimonSnapshotTrigger"
    again = PaimonSnapshotTrigger(**json.loads(json.dumps(kwargs)))
    assert again.serialize() == (path, kwargs)

    async def first_event():
        agen = again.run()
        return await asyncio.wait_for(agen.__anext__(), timeout=30)

    threading.Timer(1.0, lambda: t.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))).start()
    event = asyncio.run(first_event())
    assert event.payload["status"] == "success"
    assert (event.payload["payload"]["start_snapshot"], event.payload["payload"]["end_snapshot"]) == (1, 2)

    # a rollback past the observation is an error event, not a silent restart
    t.rollback(snapshot_id=1)
    t.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))  # reuses id 2 with another identity
    late = PaimonSnapshotTrigger(table="lab.trig", warehouse=str(WAREHOUSE),
                                 last_observation=event.payload["payload"]["cursor"], poll_interval=0.2)
    error = asyncio.run(asyncio.wait_for(late.run().__anext__(), timeout=30))
    assert error.payload["status"] == "error" and "rolled back" in error.payload["message"]


@pytest.mark.slow
def test_deferrable_sensor_defers_and_resumes(airflow_db):
    t = table("d")
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    from paimonflow.core.read.watch import Observation

    cursor = json.dumps(Observation.of(t.latest_snapshot()).to_dict())
    threading.Timer(4.0, lambda: t.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))).start()
    started = time.monotonic()
    run = load_dag("paimon_test_deferral").test(logical_date=datetime(2026, 11, 20, tzinfo=UTC),
                                                run_conf={"cursor": cursor})
    assert str(run.state) == "success"
    payload = xcoms(run)["wait"]
    assert (payload["start_snapshot"], payload["end_snapshot"]) == (1, 2)
    assert time.monotonic() - started >= 3  # it waited (deferred) for the commit


def test_provider_and_plugin_are_registered():
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    assert "paimonflow" in ProvidersManager().providers
    hooks = ProvidersManagerTaskRuntime().hooks
    assert "paimon" in hooks and hooks["paimon"].hook_class_name.endswith("PaimonHook")
    from airflow import plugins_manager

    info = {p["name"]: p for p in plugins_manager.get_plugin_info()}
    assert "paimonflow" in info
    apps, _ = plugins_manager.get_fastapi_plugins()
    assert any(app["url_prefix"] == "/paimonflow" for app in apps)


def test_macros_and_the_health_report():
    """The macros, and the health report the pages show (served behind Airflow's authentication:
    ``test_plugin_security.py``)."""
    from paimonflow.plugins.airflow.plugin import latest_snapshot_id, table_options, tag_snapshot_id
    from paimonflow.plugins.health import render_html, table_health

    t = table("h", **{"target-file-size": "1 mb"})
    for i in range(3):
        t.write(pa.table({"id": [i, i + 10], "v": ["x", "y"]}, schema=SCHEMA))
    t.tags.create("v1", snapshot_id=2)
    t.consumer_manager.record("reader", 3)
    assert latest_snapshot_id("lab.h", warehouse=str(WAREHOUSE)) == t.snapshot_manager.latest_id()
    assert tag_snapshot_id("lab.h", "v1", warehouse=str(WAREHOUSE)) == 2
    assert table_options("lab.h", warehouse=str(WAREHOUSE))["target-file-size"] == "1 mb"
    body = render_html(table_health(t))
    assert "<svg" in body and "snapshot timeline" in body and "files per bucket and level" in body
    assert ">v1<" in body and ">reader<" in body and "small file(s)" in body
    assert "<td>target-file-size</td><td>1 mb</td>" in body


@pytest.mark.slow
def test_spark_submit_engine_through_the_airflow_spark_provider(airflow_db):
    t = table("sub")
    land("sub", range(6), "submitted")
    run = load_dag("paimon_test_spark_submit").test(logical_date=datetime(2026, 11, 20, tzinfo=UTC))
    assert str(run.state) == "success"
    result = xcoms(run)["submitted_write"]
    assert result["job"] == "write" and result["rows_written"] == 6 and result["snapshot_id"] == 1
    t = Catalog(str(WAREHOUSE)).get_table("lab.sub")
    assert t.read().num_rows == 6
    assert t.latest_snapshot().commit_user == "airflow.paimon_test_spark_submit.submitted_write.20261120T000000"


@pytest.mark.slow
def test_spark_submit_engine_runs_on_the_standalone_cluster(airflow_db, spark_cluster, monkeypatch):
    """The operator's ``spark-submit`` engine with a Spark connection to the tests' standalone
    cluster: the job becomes an application of that master, with executors on its workers."""
    host, port = spark_cluster.url.rsplit(":", 1)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps({"conn_type": "spark", "host": host, "port": int(port)}))
    table("cluster")
    land("cluster", range(20), "clustered")
    before = {a["id"] for a in spark_cluster.status()["completedapps"]}
    run = load_dag("paimon_test_spark_cluster").test(logical_date=datetime(2026, 11, 20, tzinfo=UTC))
    assert str(run.state) == "success"
    result = xcoms(run)["cluster_write"]
    assert result["master"] == spark_cluster.url and result["rows_written"] == 20 and result["executors"] >= 1
    new = spark_cluster.wait(lambda s: {a["id"] for a in s["completedapps"]} - before, 60, "no application")
    [app] = [a for a in new["completedapps"] if a["id"] not in before]
    assert app["state"] == "FINISHED" and spark_cluster.executors_of(app["id"])
    assert Catalog(str(WAREHOUSE)).get_table("lab.cluster").read().num_rows == 20


@pytest.mark.slow
def test_on_kill_cancels_the_running_spark_job(airflow_db, spark):
    """Airflow calls on_kill when a task is killed: the operator interrupts its Spark job tag and
    nothing is committed."""
    from types import SimpleNamespace

    from paimonflow.operators.airflow import PaimonWriteOperator

    table("kill")
    operator = PaimonWriteOperator(task_id="endless", table="lab.kill", warehouse=str(WAREHOUSE), engine="spark",
                                   sql="select id, cast(id as string) as v from range(0, 5000000000, 1, 4)")
    context = {"ti": SimpleNamespace(dag_id="d", task_id="endless", map_index=-1),
               "logical_date": datetime(2026, 11, 20, tzinfo=UTC), "run_id": "manual", "outlet_events": None}
    outcome: dict = {}

    def run():
        try:
            outcome["result"] = operator.execute(context)
        except Exception as exc:  # the cancelled job
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    started = time.monotonic()
    worker.start()
    time.sleep(8)
    operator.on_kill()
    worker.join(timeout=120)
    assert not worker.is_alive() and "error" in outcome, outcome
    assert "cancel" in str(outcome["error"]).lower()
    assert time.monotonic() - started < 100
    assert Catalog(str(WAREHOUSE)).get_table("lab.kill").snapshot_manager.latest_id() is None



def test_commit_user_applies_only_to_operators_that_commit():
    """``commit_user=`` names who commits; an operator that commits nothing refuses it in one line."""
    from paimonflow.core.errors import InvalidArgumentError
    from paimonflow.operators.airflow import PaimonAnalyzeOperator, PaimonWriteOperator

    analyze = PaimonAnalyzeOperator(task_id="analyze", table="db.t", engine="core", warehouse="/nowhere",
                                    commit_user="someone")
    with pytest.raises(InvalidArgumentError, match=r"^analyze commits nothing: commit_user does not apply$"):
        analyze.execute({})
    assert "commit_user" in PaimonWriteOperator.template_fields


def test_operators_refuse_a_table_paimonflow_cannot_change_in_one_line(tmp_path):
    """The capability gate through the Airflow operators (core engine): a table whose options hold
    one paimonflow does not know is refused by every operator that changes files, and nothing changes."""
    import os
    from types import SimpleNamespace

    from paimonflow.core.errors import UnsupportedFeatureError
    from paimonflow.operators.airflow import (
        PaimonCompactOperator,
        PaimonCreateTagOperator,
        PaimonExpireSnapshotsOperator,
        PaimonRemoveOrphanFilesOperator,
    )
    from tests.files import tree

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("lab")
    t = catalog.create_table("lab.g", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    schema_file = os.path.join(t.path, "schema", "schema-0")
    with open(schema_file) as f:
        doc = json.load(f)
    doc["options"]["a.future-paimon-option"] = "on"
    with open(schema_file, "w") as f:
        json.dump(doc, f)
    before = tree(tmp_path)
    common = {"table": "lab.g", "engine": "core", "warehouse": str(tmp_path / "wh")}
    for operator in (PaimonCompactOperator(task_id="compact", **common),
                     PaimonExpireSnapshotsOperator(task_id="expire", **common),
                     PaimonCreateTagOperator(task_id="tag", name="t1", **common),
                     PaimonRemoveOrphanFilesOperator(task_id="orphans", older_than="0 ms", min_older_than="0 ms",
                                                     **common)):
        # the task instance's names only (what the commit identity is derived from): no Airflow run here
        context = {"ti": SimpleNamespace(dag_id="gate", task_id=operator.task_id, map_index=-1),
                   "logical_date": datetime(2026, 11, 20, tzinfo=UTC)}
        with pytest.raises(UnsupportedFeatureError, match="an option paimonflow does not know") as info:
            operator.execute(context)
        assert "\n" not in str(info.value)
    assert tree(tmp_path) == before


METADATA_OPERATORS = {"PaimonCreateTagOperator": {"name": "t"}, "PaimonDeleteTagOperator": {"name": "t"},
                      "PaimonExpireSnapshotsOperator": {}, "PaimonExpireChangelogsOperator": {},
                      "PaimonExpirePartitionsOperator": {}, "PaimonExpireTagsOperator": {},
                      "PaimonRollbackOperator": {"snapshot_id": 1}, "PaimonBranchOperator": {"branch": "b"}}
SPARK_OPERATORS = {"PaimonWriteOperator": {"path": "/in"}, "PaimonCompactOperator": {},
                   "PaimonAnalyzeOperator": {}, "PaimonRemoveOrphanFilesOperator": {},
                   "PaimonReadChangesOperator": {"start_snapshot": 0, "output_path": "/out"}}


@pytest.fixture
def submitting_connection(monkeypatch):
    """A ``paimon`` connection whose default engine is spark-submit (to a Spark connection that does
    not exist: a task that really submitted would fail)."""
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_SUBMITTING", json.dumps({
        "conn_type": "paimon", "host": str(WAREHOUSE), "extra": {"engine": "spark-submit",
                                                                 "spark_conn_id": "spark_nowhere"}}))
    return "paimon_submitting"


def test_metadata_only_operators_run_on_the_core_unless_given_an_engine(airflow_db, submitting_connection):
    """Issue 35: with a connection whose engine is spark-submit, the metadata-only operators (tags,
    expiries, rollback, branches) choose the core engine; the others the connection's; an operator's
    own ``engine=`` (also rendered from a template) is always what runs, and an empty rendering falls
    back to the default."""
    import paimonflow.operators.airflow as operators
    from paimonflow.operators.airflow import PaimonHook

    hook = PaimonHook(submitting_connection)
    for name, arguments in {**METADATA_OPERATORS, **SPARK_OPERATORS}.items():
        cls = getattr(operators, name)
        common = {"task_id": "t", "table": "lab.engines", "paimon_conn_id": submitting_connection, **arguments}
        default = "core" if name in METADATA_OPERATORS else "spark-submit"
        assert cls(**common).choose_engine(hook) == default, name
        for given in ("spark-submit", "spark", "core"):
            assert cls(engine=given, **common).choose_engine(hook) == given, (name, given)
        assert cls(engine="", **common).choose_engine(hook) == default, name  # a template rendering nothing


def test_a_tag_with_a_spark_submit_connection_runs_on_the_core_and_engine_opts_out(airflow_db, submitting_connection,
                                                                                  monkeypatch):
    """The task itself: the tag is made by the core, nothing is submitted; ``engine="spark-submit"``
    on the operator submits it (caught here, before spark-submit would start)."""
    from types import SimpleNamespace

    from paimonflow.operators.airflow import PaimonCreateTagOperator, PaimonJobOperator

    t = table("engines")
    t.write(pa.table({"id": [1], "v": ["x"]}, schema=SCHEMA))
    submitted: list[str] = []

    def run_submitted(self, hook, arguments, context):
        submitted.append(self.task_id)
        return {"job": self.job, "submitted": True}

    monkeypatch.setattr(PaimonJobOperator, "_run_submitted", run_submitted)
    context = {"ti": SimpleNamespace(dag_id="engines", task_id="tag", map_index=-1),
               "logical_date": datetime(2026, 11, 20, tzinfo=UTC)}
    result = PaimonCreateTagOperator(task_id="tag", table="lab.engines", paimon_conn_id=submitting_connection,
                                     name="daily").execute(context)
    assert result["snapshot_id"] == 1 and result["master"] is None and submitted == []  # no Spark at all
    assert Catalog(str(WAREHOUSE)).get_table("lab.engines").tags.get("daily").id == 1
    PaimonCreateTagOperator(task_id="tag_submitted", table="lab.engines", paimon_conn_id=submitting_connection,
                            name="other", engine="spark-submit").execute(context)
    assert submitted == ["tag_submitted"]


def test_a_submitted_driver_only_job_asks_for_no_executors_unless_spark_conf_says_otherwise(airflow_db):
    """The ``SparkSubmitHook`` of a driver-only job carries the settings that start no executor
    (``paimonflow.jobs.submit.NO_EXECUTORS_CONF``); a job with Spark tasks does not; the operator's
    ``spark_conf`` wins key by key."""
    from types import SimpleNamespace

    from paimonflow.jobs.submit import NO_EXECUTORS_CONF
    from paimonflow.operators.airflow import PaimonCompactOperator, PaimonCreateTagOperator, PaimonHook

    hook = PaimonHook(None, warehouse=str(WAREHOUSE))
    context = {"ti": SimpleNamespace(dag_id="d", task_id="t", map_index=-1), "logical_date": None, "run_id": "r"}
    common = {"task_id": "t", "table": "lab.engines", "warehouse": str(WAREHOUSE), "engine": "spark-submit",
              "spark_conn_id": "spark_local"}

    def confs(op) -> list[str]:
        command = op.submit_hook(hook, op.arguments(context), "/tmp/r.json")._build_spark_submit_command("/app.py")
        return [command[i + 1] for i, a in enumerate(command) if a == "--conf"]

    tag = confs(PaimonCreateTagOperator(name="t", **common))
    assert set(tag) >= {f"{k}={v}" for k, v in NO_EXECUTORS_CONF.items()}
    assert not any(c.startswith("spark.dynamicAllocation") for c in confs(PaimonCompactOperator(**common)))
    mine = confs(PaimonCreateTagOperator(name="t", spark_conf={"spark.dynamicAllocation.enabled": "false"}, **common))
    assert "spark.dynamicAllocation.enabled=false" in mine and "spark.dynamicAllocation.enabled=true" not in mine
