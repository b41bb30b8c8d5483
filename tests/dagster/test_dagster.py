"""The Dagster suite with real Spark (local), a real warehouse and real materializations."""

# No ``from __future__ import annotations``: Dagster reads annotations at runtime.

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog

from .conftest import LANDING, WAREHOUSE, import_definitions

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])
HOUR = "2026-11-21-10:00"


@pytest.fixture(scope="module")
def defs_module(dagster_env):
    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("shop", ignore_if_exists=True)
    catalog.create_table("shop.orders", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2"}, ignore_if_exists=True)
    catalog.create_table("shop.daily_sales", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1"}, ignore_if_exists=True)
    return import_definitions()


def land(folder: str, ids, dt: str, amount: float) -> None:
    path = LANDING / folder
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": list(ids), "dt": [dt] * len(ids), "amount": [amount] * len(ids)}, schema=SCHEMA),
                   path / "part.parquet")


def orders():
    return Catalog(str(WAREHOUSE)).get_table("shop.orders")


def test_definitions_validate_with_the_dagster_cli(dagster_env):
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "dagster"), "definitions", "validate",
                           "-m", "paimonflow.dags_examples.dagster_definitions"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "passed validation" in (proc.stdout + proc.stderr)


@pytest.mark.slow
def test_write_asset_materializes_and_a_reexecution_commits_nothing(spark, defs_module, tmp_path):
    land(HOUR, range(8), "2026-11-21", 1.0)
    job = dg.reconstructable(defs_module.write_orders_job)
    (tmp_path / "dagster-home").mkdir()
    with dg.DagsterInstance.local_temp(str(tmp_path / "dagster-home")) as instance:
        with dg.execute_job(job, instance, tags={"dagster/partition": HOUR}) as first:
            assert first.success
            meta = first.asset_materializations_for_node("paimon__shop__orders")[0].metadata
            assert meta["paimon/rows_written"].value == 8 and meta["paimon/snapshot_id"].value == 1
            assert not [k for k in meta if "/" not in k]  # every key in a namespace
            # Dagster's standard table metadata, as the UI shows it
            assert meta["dagster/table_name"].value == "shop.orders" and meta["dagster/uri"].value == Path(orders().path).as_uri()
            assert meta["dagster/partition_row_count"].value == 8
            # a primary-key table's row count needs a merge of all its keys: not done after every write
            assert "dagster/row_count" not in meta
            assert [c.name for c in meta["dagster/column_schema"].value.columns] == ["id", "dt", "amount"]
            assert meta["paimon/snapshot_id"].value == 1 and meta["paimon/files_written"].value >= 1
            assert meta["paimon/bytes_written"].value == orders().delta_stats(1).added_bytes
            run_id = first.run_id
        assert orders().read().num_rows == 8
        # Dagster's re-execution of that run (a new run, same root run, same partition)
        options = dg.ReexecutionOptions(parent_run_id=run_id)
        with dg.execute_job(job, instance, reexecution_options=options, tags={"dagster/partition": HOUR}) as again:
            assert again.success and again.run_id != run_id
            assert instance.get_run_by_id(again.run_id).root_run_id == run_id
    t = orders()
    assert run_id in t.latest_snapshot().commit_user
    assert t.snapshot_manager.latest_id() == 1 and t.read().num_rows == 8  # nothing committed twice


@pytest.mark.slow
def test_sensor_requests_one_run_per_new_range(defs_module):
    from paimonflow.operators.dagster import PaimonResource

    sensor = defs_module.orders_sensor
    resources = {"paimon": PaimonResource(warehouse=str(WAREHOUSE))}
    t = orders()
    if t.latest_snapshot() is None:
        t.write(pa.table({"id": [1], "dt": ["2026-11-21"], "amount": [1.0]}, schema=SCHEMA))
    context = dg.build_sensor_context(cursor=None, resources=resources)
    first = sensor.evaluate_tick(context)
    assert len(first.run_requests) == 1
    request = first.run_requests[0]
    latest = orders().snapshot_manager.latest_id()
    assert request.tags["paimon/end_snapshot"] == str(latest)
    assert request.run_config["ops"]["read_order_changes_op"]["config"]["end_snapshot"] == latest
    context = dg.build_sensor_context(cursor=first.cursor, resources=resources)
    assert sensor.evaluate_tick(context).run_requests == []  # nothing new
    for i in range(2):
        orders().write(pa.table({"id": [200 + i], "dt": ["2026-11-21"], "amount": [2.0]}, schema=SCHEMA))
    context = dg.build_sensor_context(cursor=first.cursor, resources=resources)
    tick = sensor.evaluate_tick(context)
    assert len(tick.run_requests) == 1  # one run for the two new snapshots
    config = tick.run_requests[0].run_config["ops"]["read_order_changes_op"]["config"]
    assert (config["start_snapshot"], config["end_snapshot"]) == (latest, latest + 2)
    assert json.loads(tick.cursor)["snapshot_id"] == latest + 2
    # a rollback is reported on the requested run, not skipped
    orders().rollback(snapshot_id=latest)
    orders().write(pa.table({"id": [300], "dt": ["2026-11-21"], "amount": [3.0]}, schema=SCHEMA))
    context = dg.build_sensor_context(cursor=tick.cursor, resources=resources)
    rolled = sensor.evaluate_tick(context)
    assert len(rolled.run_requests) == 1 and rolled.run_requests[0].tags["paimon/rolled_back"] == "true"


def test_a_sensor_starting_from_latest_reads_only_later_commits(tmp_path):
    """Issue 39: a sensor added beside a table with history reads none of it with
    ``start_from="latest"``; the first later commit is one run of exactly its range. On a table
    without snapshots, the first commit is read."""
    from paimonflow.core.errors import InvalidArgumentError
    from paimonflow.operators.dagster import PaimonResource
    from paimonflow.sensors.dagster import paimon_snapshot_sensor

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("shop")
    history = catalog.create_table("shop.history", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"])
    empty = catalog.create_table("shop.empty", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"])
    for i in range(5):
        history.write(pa.table({"id": [i], "dt": ["2026-11-21"], "amount": [1.0]}, schema=SCHEMA))

    @dg.op
    def noop() -> None:
        return None

    @dg.job
    def follow() -> None:
        noop()

    resources = {"paimon": PaimonResource(warehouse=str(tmp_path / "wh"))}
    for t in (history.refresh(), empty):
        before = t.snapshot_manager.latest_id() or 0
        sensor = paimon_snapshot_sensor(t.identifier, follow, start_from="latest",
                                        default_status=dg.DefaultSensorStatus.RUNNING)
        assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
        first = sensor.evaluate_tick(dg.build_sensor_context(cursor=None, resources=resources))
        assert first.run_requests == [] and first.cursor
        t.refresh().write(pa.table({"id": [99], "dt": ["2026-11-21"], "amount": [2.0]}, schema=SCHEMA))
        tick = sensor.evaluate_tick(dg.build_sensor_context(cursor=first.cursor, resources=resources))
        [request] = tick.run_requests
        assert (request.tags["paimon/start_snapshot"], request.tags["paimon/end_snapshot"]) == \
            (str(before), str(before + 1)), t.identifier
    with pytest.raises(InvalidArgumentError, match="start_from must be"):
        paimon_snapshot_sensor("shop.history", follow, start_from="newest")


@pytest.mark.slow
def test_read_changes_job_with_the_requested_range(spark, defs_module):
    t = orders()
    before = t.snapshot_manager.latest_id() or 0
    t.write(pa.table({"id": [400, 401], "dt": ["2026-11-22"] * 2, "amount": [4.0, 4.5]}, schema=SCHEMA))
    job = defs_module.defs.resolve_job_def("read_order_changes")
    config = {"ops": {"read_order_changes_op": {"config": {"start_snapshot": before,
                                                          "end_snapshot": before + 1}}}}
    result = job.execute_in_process(run_config=config)
    assert result.success
    out = result.output_for_node("read_order_changes_op")
    assert out["rows"] == 2 and out["row_kinds"] == {"+I": 2}
    # each range in its own folder: a later run never overwrites this batch
    assert any((LANDING / "changes" / "dagster" / f"{before}-{before + 1}").rglob("*.parquet"))


@pytest.mark.slow
def test_a_missing_landing_hour_fails_in_one_line(spark, defs_module):
    assets = defs_module.orders["assets"]
    result = dg.materialize(assets, resources=defs_module.defs.resources, partition_key="2026-11-21-23:00",
                            raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    description = failure.event_specific_data.user_failure_data.description
    assert description.startswith("write shop.orders: SourceError: [PATH_NOT_FOUND] Path does not exist")
    assert "\n" not in description and str(LANDING / "2026-11-21-23:00") in description


@pytest.mark.slow
def test_health_checks_fail_on_small_files_and_pass_after_compaction(spark, defs_module):
    from paimonflow.operators.dagster import PaimonResource, SparkResource

    catalog = Catalog(str(WAREHOUSE))
    catalog.create_table("shop.daily_sales", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1"}, ignore_if_exists=True)
    from paimonflow.core.meta.schema_changes import SetOption

    sales = catalog.get_table("shop.daily_sales").alter([SetOption("write-only", "true")])  # writers never compact
    for i in range(7):  # seven small level-0 files in one bucket
        sales.write(pa.table({"id": [i], "dt": ["2026-11-02"], "amount": [float(i)]}, schema=SCHEMA))
    resources = {"paimon": PaimonResource(warehouse=str(WAREHOUSE)), "spark": SparkResource()}
    checks = defs_module.daily_sales["asset_checks"]
    job = defs_module.defs.resolve_job_def("maintain_shop_daily_sales")

    def evaluate():
        context = dg.build_op_context(resources=resources)
        return {r.check_name: r.passed for r in checks[0](context)}

    before = evaluate()
    assert before["level0_runs"] is False and before["small_files"] is False
    assert job.execute_in_process(resources=resources).success  # compaction first
    after = evaluate()
    assert after["level0_runs"] is True and after["small_files"] is True and after["snapshots_retained"] is True


@pytest.mark.slow
def test_daily_backfill_is_idempotent_and_the_io_manager_round_trips(spark, defs_module):
    from paimonflow.operators.dagster import PaimonResource, SparkResource

    for n, day in enumerate(("2026-11-05", "2026-11-06")):
        land(f"daily/{day}", range(n + 2), day, float(n))
    resources = defs_module.defs.resources
    assets = defs_module.daily_sales["assets"]
    for _ in range(2):  # the backfill, twice
        for day in ("2026-11-05", "2026-11-06"):
            assert dg.materialize(assets, resources=resources, partition_key=day).success
    sales = Catalog(str(WAREHOUSE)).get_table("shop.daily_sales")
    got = [(r["id"], r["dt"]) for r in sales.read().to_pylist() if r["dt"] in ("2026-11-05", "2026-11-06")]
    assert sorted(got) == sorted([(0, "2026-11-05"), (1, "2026-11-05"), (0, "2026-11-06"), (1, "2026-11-06"),
                                  (2, "2026-11-06")])

    result = dg.materialize([defs_module.orders_by_day], resources={
        "paimon": PaimonResource(warehouse=str(WAREHOUSE)), "spark": SparkResource(),
        "paimon_io_manager": defs_module.defs.resources["paimon_io_manager"]})
    assert result.success
    stored = Catalog(str(WAREHOUSE)).get_table("analytics.orders_by_day")
    assert stored.primary_keys == ("dt",)
    totals = {r["dt"]: r["orders"] for r in stored.read().to_pylist()}
    assert sum(totals.values()) == orders().read().num_rows


def test_branch_and_changelog_ops_run_in_a_job(defs_module):
    from paimonflow.operators.dagster import PaimonResource, SparkResource, paimon_job_op

    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("lab", ignore_if_exists=True)
    t = catalog.create_table("lab.b", SCHEMA, primary_keys=["id", "dt"], options={"bucket": "1"},
                             ignore_if_exists=True)
    t.write(pa.table({"id": [1], "dt": ["d"], "amount": [1.0]}, schema=SCHEMA))
    t.tags.create("base")
    create = paimon_job_op("create-branch", "lab.b", name="create_fix", branch="fix", tag="base")
    changelogs = paimon_job_op("expire-changelogs", "lab.b", name="expire_changelogs_b", dry_run=True)

    @dg.job
    def branch_job():
        changelogs(create())

    result = branch_job.execute_in_process(resources={"paimon": PaimonResource(warehouse=str(WAREHOUSE)),
                                                      "spark": SparkResource()})
    assert result.success
    assert result.output_for_node("create_fix")["snapshot_id"] == 1
    assert Catalog(str(WAREHOUSE)).get_table("lab.b").branches.list() == ["fix"]
    assert result.output_for_node("expire_changelogs_b")["expired_changelogs"] == 0


def test_paimon_resource_takes_s3_secrets_from_the_environment(monkeypatch):
    from paimonflow.operators.dagster import PaimonResource, S3Storage

    monkeypatch.setenv("TEST_S3_SECRET", "env-secret-value")
    resource = PaimonResource(warehouse="s3://lake/wh",
                              storage=S3Storage(endpoint="http://127.0.0.1:9", access_key="AK",
                                                secret_key=dg.EnvVar("TEST_S3_SECRET")))

    @dg.op
    def options(paimon: PaimonResource) -> dict:
        return paimon.storage_options()

    @dg.job
    def show():
        options()

    result = show.execute_in_process(resources={"paimon": resource})
    assert result.output_for_node("options") == {"s3.endpoint": "http://127.0.0.1:9", "s3.access-key": "AK",
                                                 "s3.secret-key": "env-secret-value"}


def test_spark_resource_builds_the_shared_command_with_credentials_in_the_environment(s3_storage_options):
    """``SparkResource(submit=True)`` submits :func:`paimonflow.jobs.submit.submit_command`'s argv with
    its own master, name and conf; the S3 secret travels in ``PAIMONFLOW_STORAGE_OPTIONS`` only
    (reliability S9). The command as built, nothing started (the next tests submit for real)."""
    from paimonflow.jobs.submit import APPLICATION
    from paimonflow.operators.dagster import PaimonResource, S3Storage, SparkResource

    options = s3_storage_options
    storage = S3Storage(endpoint=options["s3.endpoint"], region=options["s3.region"],
                        access_key=options["s3.access-key"], secret_key=options["s3.secret-key"])
    paimon = PaimonResource(warehouse="s3://lake/wh", storage=storage)
    spark = SparkResource(master="yarn", conf={"spark.ui.enabled": "false"}, submit=True, spark_submit="/opt/spark-submit")
    argv, env = spark._command("compact", paimon.location("shop.orders"), {"full": True}, "s3://lake/wh/r.json")
    assert argv == ["/opt/spark-submit", "--master", "yarn", "--name", "paimonflow-compact", "--conf",
                    "spark.ui.enabled=false", APPLICATION, "--result-file", "s3://lake/wh/r.json",
                    "compact", "-w", "s3://lake/wh", "-t", "shop.orders", "--full"]
    assert json.loads(env["PAIMONFLOW_STORAGE_OPTIONS"]) == storage.options()
    assert not any(options["s3.secret-key"] in a or "s3." in a for a in argv)


def _recording_spark_submit(tmp_path) -> tuple[str, "os.PathLike[str]"]:
    """A stand-in for spark-submit that records its argv (one argument a line) and fails."""
    calls = tmp_path / "spark-submit-calls"
    script = tmp_path / "spark-submit"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {calls}\necho "---" >> {calls}\nexit 1\n')
    script.chmod(0o755)
    return str(script), calls


def test_spark_resource_runs_metadata_jobs_on_the_core_unless_told_otherwise(tmp_path):
    """Issue 35: ``SparkResource(submit=True)`` runs a metadata-only job (a tag, an expiry, a
    rollback) on the core in the step's process, from an op (with its context) or plain code, and
    spark-submit never starts; a job with Spark tasks is still submitted; with
    ``metadata_jobs_on_core=False`` the tag is submitted too, asking for no executors."""
    from paimonflow.jobs.submit import NO_EXECUTORS_CONF
    from paimonflow.operators.dagster import PaimonResource, SparkResource, paimon_job_op

    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    for i in range(2):
        t.write(pa.table({"id": [i], "v": ["x"]}, schema=schema))
    spark_submit, calls = _recording_spark_submit(tmp_path)
    paimon = PaimonResource(warehouse=warehouse)
    spark = SparkResource(master="spark://nowhere:7077", submit=True, spark_submit=spark_submit)
    assert spark.run("create-tag", paimon, "db.t", {"name": "first", "snapshot_id": 1})["master"] is None  # no Spark
    branch = paimon_job_op("create-branch", "db.t", name="branch_op", branch="b", tag="first")
    expire = paimon_job_op("expire-snapshots", "db.t", name="expire_op", retain_min=1, retain_max=1,
                           older_than_millis=0)

    @dg.job
    def maintenance():
        expire(branch())

    result = maintenance.execute_in_process(resources={"paimon": paimon, "spark": spark})
    assert result.success
    assert result.output_for_node("branch_op")["master"] is None
    assert result.output_for_node("expire_op")["expired_snapshots"] == 1
    assert spark.run("rollback", paimon, "db.t", {"tag": "first"})["snapshot_id"] == 1
    assert catalog.get_table("db.t").branches.list() == ["b"] and not calls.exists()

    with pytest.raises(dg.Failure, match="spark-submit compact failed"):
        spark.run("compact", paimon, "db.t", {})
    submitted = SparkResource(master="spark://nowhere:7077", submit=True, spark_submit=spark_submit,
                              metadata_jobs_on_core=False)
    with pytest.raises(dg.Failure, match="spark-submit create-tag failed"):
        submitted.run("create-tag", paimon, "db.t", {"name": "submitted"})
    compact_argv, tag_argv, _ = calls.read_text().split("---\n")
    assert "compact" in compact_argv.splitlines() and "spark.dynamicAllocation" not in compact_argv
    assert "create-tag" in tag_argv.splitlines()
    assert {f"{k}={v}" for k, v in NO_EXECUTORS_CONF.items()} <= set(tag_argv.splitlines())


@pytest.mark.slow
def test_spark_resource_submits_a_job_on_an_s3_warehouse(s3_bucket, s3_storage_options, tmp_path):
    """A real spark-submit (local master) on a warehouse on the S3 test server: credentials reach
    the driver through the environment, its result comes back through the warehouse and is deleted."""
    from paimonflow.jobs.results import RESULTS_DIR
    from paimonflow.operators.dagster import PaimonResource, S3Storage, SparkResource

    options = s3_storage_options
    storage = S3Storage(endpoint=options["s3.endpoint"], region=options["s3.region"],
                        access_key=options["s3.access-key"], secret_key=options["s3.secret-key"])
    warehouse = f"s3://{s3_bucket}/submitted"
    paimon = PaimonResource(warehouse=warehouse, storage=storage)
    catalog = paimon.catalog()
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    pq.write_table(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema), tmp_path / "in.parquet")
    spark = SparkResource(master="local[1]", submit=True, conf={"spark.ui.enabled": "false"},
                          spark_submit=os.path.join(os.path.dirname(sys.executable), "spark-submit"))
    result = spark.run("write", paimon, "db.t", {"path": str(tmp_path / "in.parquet")})
    assert result["rows_written"] == 3 and result["master"] == "local[1]"
    assert sorted(catalog.get_table("db.t").read().column("id").to_pylist()) == [1, 2, 3]
    results = f"{warehouse}/{RESULTS_DIR}"
    left = catalog.file_io.list_dir(results) if catalog.file_io.exists(results) else []
    assert left == []  # the result was read back and deleted


@pytest.mark.slow
def test_spark_resource_submits_to_the_standalone_cluster(spark_cluster, tmp_path):
    """``SparkResource(submit=True)`` against the tests' standalone cluster: the job is an
    application of that master with executors on its workers, and the table holds the rows."""
    from paimonflow.operators.dagster import PaimonResource, SparkResource
    from tests.spark.cluster import SUBMIT_CONF

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "2"})
    pq.write_table(pa.table({"id": list(range(30)), "v": ["x"] * 30}, schema=schema), tmp_path / "in.parquet")
    spark = SparkResource(master=spark_cluster.url, submit=True,
                          spark_submit=os.path.join(os.path.dirname(sys.executable), "spark-submit"),
                          conf=SUBMIT_CONF)
    before = {a["id"] for a in spark_cluster.status()["completedapps"]}  # the Airflow test's write has the same name
    result = spark.run("write", PaimonResource(warehouse=str(tmp_path / "wh")), "db.t",
                       {"path": str(tmp_path / "in.parquet")})
    assert result["master"] == spark_cluster.url and result["rows_written"] == 30 and result["executors"] >= 1
    status = spark_cluster.wait(lambda s: {a["id"] for a in s["completedapps"]} - before, 60, "no application")
    [app] = [a for a in status["completedapps"] if a["id"] not in before]
    assert app["name"] == "paimonflow-write" and app["state"] == "FINISHED" and spark_cluster.executors_of(app["id"])
    assert catalog.get_table("db.t").read().num_rows == 30


def test_the_example_follows_external_commits_to_customers(defs_module):
    """The example's observer reports a commit made outside Dagster; the eager customer_count is
    then requested by declarative automation and, materialized, counts the committed rows."""
    from paimonflow.operators.dagster import PaimonResource

    catalog = Catalog(str(WAREHOUSE))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("country", pa.string())])
    customers = catalog.create_table("shop.customers", schema, primary_keys=["id"], options={"bucket": "1"},
                                     ignore_if_exists=True)
    resources = {"paimon": PaimonResource(warehouse=str(WAREHOUSE))}
    defs = dg.Definitions(assets=[defs_module.customers, defs_module.customer_count],
                          resources=defs_module.defs.resources)
    with dg.DagsterInstance.ephemeral() as instance:
        observer = defs_module.customers_observer
        first = observer.evaluate_tick(dg.build_sensor_context(resources=resources, instance=instance))
        assert first.asset_events == []
        before = dg.evaluate_automation_conditions(defs=defs, instance=instance)  # the daemon's earlier tick
        assert before.get_requested_partitions(defs_module.customer_count.key) == set()
        customers.write(pa.table({"id": [1, 2, 3], "country": ["fr", "fr", "de"]}, schema=schema),
                        commit_user="crm-flink")
        tick = observer.evaluate_tick(dg.build_sensor_context(cursor=first.cursor, resources=resources,
                                                              instance=instance))
        [event] = tick.asset_events
        instance.report_runless_asset_event(event)
        evaluated = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=before.cursor)
        assert evaluated.get_requested_partitions(defs_module.customer_count.key) == {None}
    assert dg.materialize([defs_module.customer_count], resources=defs_module.defs.resources).success
    counts = Catalog(str(WAREHOUSE)).get_table("analytics.customer_count").read().to_pylist()
    assert sorted((r["country"], r["customers"]) for r in counts) == [("de", 1), ("fr", 2)]


@pytest.mark.slow
def test_a_submitted_op_runs_through_dagster_pipes_on_the_standalone_cluster(spark_cluster, tmp_path):
    """With the op's context, ``SparkResource(submit=True)`` submits through Dagster Pipes: the
    driver (a spark-submit application of the tests' standalone master) reports its log line and
    its result as Pipes messages under the warehouse, and the Pipes folder is gone afterwards."""
    from paimonflow.jobs.results import RESULTS_DIR
    from paimonflow.operators.dagster import PaimonResource, SparkResource, paimon_job_op
    from tests.spark.cluster import SUBMIT_CONF

    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    catalog.create_table("db.piped", schema)  # an append table: its row count is in the snapshot
    pq.write_table(pa.table({"id": list(range(12)), "v": ["p"] * 12}, schema=schema), tmp_path / "in.parquet")
    write = paimon_job_op("write", "db.piped", name="write_piped", path=str(tmp_path / "in.parquet"))

    @dg.job
    def piped():
        write()

    spark = SparkResource(master=spark_cluster.url, submit=True, conf=SUBMIT_CONF,
                          spark_submit=os.path.join(os.path.dirname(sys.executable), "spark-submit"))
    with dg.DagsterInstance.ephemeral() as instance:
        result = piped.execute_in_process(resources={"paimon": PaimonResource(warehouse=warehouse), "spark": spark},
                                          instance=instance)
        # the driver's Pipes log line, a log entry of the step
        logs = [entry.user_message for entry in instance.all_logs(result.run_id)]
    assert result.success
    out = result.output_for_node("write_piped")
    assert out["master"] == spark_cluster.url and out["rows_written"] == 12 and out["executors"] >= 1
    assert any(f"paimonflow write finished on {spark_cluster.url}" in m for m in logs), logs[-20:]
    output = next(e for e in result.all_events if e.event_type_value == "STEP_OUTPUT")
    metadata = output.event_specific_data.metadata
    assert metadata["dagster/row_count"].value == 12 and metadata["paimon/snapshot_id"].value == 1
    assert catalog.get_table("db.piped").read().num_rows == 12
    pipes_dir = tmp_path / "wh" / RESULTS_DIR / "pipes"
    assert not pipes_dir.exists() or not any(p.is_file() for p in pipes_dir.rglob("*"))


@pytest.mark.slow
def test_the_maintenance_job_runs_in_one_process_and_its_spark_steps_share_one_session(spark, defs_module, tmp_path):
    """Issue: every step of a maintenance run was a process of its own starting its own local
    Spark (minutes for five steps on a 12-row table). Run as a deployment runs it (``execute_job``,
    the job's own executor), every step is in the run's process, the compaction and the orphan
    removal run on one Spark application, and the tag and expiry steps on the core."""
    import os as os_

    if orders().latest_snapshot() is None:
        orders().write(pa.table({"id": [1], "dt": ["2026-11-21"], "amount": [1.0]}, schema=SCHEMA))
    job = dg.reconstructable(defs_module.maintain_orders_job)
    (tmp_path / "dagster-home").mkdir()
    with dg.DagsterInstance.local_temp(str(tmp_path / "dagster-home")) as instance:
        with dg.execute_job(job, instance) as result:
            assert result.success
            step_pids = {e.pid for e in result.all_events if e.step_key}
            run_id = result.run_id
        logs = [(e.step_key, e.user_message) for e in instance.all_logs(run_id)]
    assert step_pids == {os_.getpid()}  # no process per step
    spark_steps = {step: message.split("on Spark application ", 1)[1].split(" ", 1)[0]
                   for step, message in logs if "on Spark application" in message}
    assert set(spark_steps) == {"compact_shop_orders", "remove_orphans_shop_orders"}
    assert len(set(spark_steps.values())) == 1  # one application for both
    assert any(step == "remove_orphans_shop_orders" and "shared with the earlier steps in this process" in message
               for step, message in logs)
    on_core = {step for step, message in logs if "a metadata-only job, run on the core" in message}
    assert on_core == {"expire_snapshots_shop_orders", "expire_tags_shop_orders"}


def connect_job():
    """(Reconstructable, for ``execute_job``.) A compaction and an orphan removal of ``db.t``, each
    step a process of its own (the multiprocess executor), on the Spark Connect server
    ``PAIMONFLOW_TEST_CONNECT`` names, in the warehouse ``PAIMONFLOW_TEST_WAREHOUSE``."""
    from paimonflow.operators.dagster import PaimonResource, SparkResource, paimon_job_op

    compact = paimon_job_op("compact", "db.t", name="compact_t", full=True)
    orphans = paimon_job_op("remove-orphan-files", "db.t", name="orphans_t", older_than_millis=3_600_000)

    @dg.job(executor_def=dg.multiprocess_executor, resource_defs={
        "paimon": PaimonResource(warehouse=os.environ["PAIMONFLOW_TEST_WAREHOUSE"]),
        "spark": SparkResource(master=os.environ["PAIMONFLOW_TEST_CONNECT"])})
    def on_connect():
        orphans(compact())

    return on_connect


@pytest.mark.slow
def test_step_processes_share_one_spark_connect_server(spark_connect, tmp_path, monkeypatch):
    """``SparkResource(master="sc://...")``: steps in processes of their own (the multiprocess
    executor) are clients of one Spark Connect server, each on its one application, none starting a
    Spark of its own."""
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    for i in range(12):
        t.write(pa.table({"id": [i], "v": ["x"]}, schema=schema))
    monkeypatch.setenv("PAIMONFLOW_TEST_WAREHOUSE", warehouse)
    monkeypatch.setenv("PAIMONFLOW_TEST_CONNECT", spark_connect.url)
    (tmp_path / "dagster-home").mkdir()
    with dg.DagsterInstance.local_temp(str(tmp_path / "dagster-home")) as instance:
        with dg.execute_job(dg.reconstructable(connect_job), instance) as result:
            assert result.success
            step_pids = {e.step_key: e.pid for e in result.all_events if e.step_key}
            masters = {e.step_key: e.event_specific_data.metadata["paimon/master"].value
                       for e in result.all_events if e.event_type_value == "STEP_OUTPUT"}
            run_id = result.run_id
        logs = [(e.step_key, e.user_message) for e in instance.all_logs(run_id)]
    assert len(set(step_pids.values())) == 2 and os.getpid() not in step_pids.values()  # a process per step
    assert masters == {"compact_t": spark_connect.master, "orphans_t": spark_connect.master}
    apps = {step: message.split("on Spark application ", 1)[1].split(" ", 1)[0]
            for step, message in logs if "on Spark application" in message}
    assert set(apps) == {"compact_t", "orphans_t"} and len(set(apps.values())) == 1  # the server's application
    assert catalog.get_table("db.t").latest_snapshot().commit_kind.value == "COMPACT"
