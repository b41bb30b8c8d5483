"""The example DAGs, run end to end with ``dag.test()`` (real Airflow metadata database, real local
Spark, a real warehouse on disk); each test checks the table afterwards, not only task states."""

from __future__ import annotations

import glob
import os
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog

from .conftest import LANDING, WAREHOUSE, load_dag

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])
HOUR = datetime(2026, 11, 21, 10, tzinfo=UTC)


@pytest.fixture(scope="module")
def orders():
    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("shop", ignore_if_exists=True)
    return catalog.create_table("shop.orders", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "2", "snapshot.num-retained.min": "2",
                                         "snapshot.time-retained": "1 ms"}, ignore_if_exists=True)


def land(hour: datetime, ids, amount: float) -> None:
    folder = LANDING / hour.strftime("%Y-%m-%dT%H")
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": list(ids), "dt": [hour.strftime("%Y-%m-%d")] * len(ids),
                             "amount": [amount] * len(ids)}, schema=SCHEMA), folder / f"part-{amount}.parquet")


def states(run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


@pytest.mark.slow
def test_hourly_ingestion_then_incremental_read(airflow_db, spark, orders):
    land(HOUR, range(10), 1.0)
    run = load_dag("paimon_ingest_hourly").test(logical_date=HOUR)
    assert str(run.state) == "success", states(run)
    table = Catalog(str(WAREHOUSE)).get_table("shop.orders")
    assert table.read().num_rows == 10
    changes = pq.read_table(glob.glob(str(LANDING / "changes" / "*-*" / "*.parquet")))
    assert sorted(changes.column("id").to_pylist()) == list(range(10))
    assert set(changes.column("rowkind").to_pylist()) == {"+I"}
    load_user = table.latest_snapshot().commit_user
    assert load_user == "airflow.paimon_ingest_hourly.load.2026-11-21T10"  # one identity per hour
    # the load task emitted an Asset event for the table, the snapshot id in its extra
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        events = session.execute(select(AssetEvent.extra).join(AssetModel, AssetEvent.asset_id == AssetModel.id)
                                 .where(AssetModel.name == "paimon/paimon_default/shop.orders")).scalars().all()
    assert {"table": "shop.orders", "job": "write", "snapshot_id": table.latest_snapshot().id} in events

    # the same hour's load again (a retry, or a cleared run): nothing is committed twice. dag.test()
    # deletes the earlier run, and with it the range the sensor claimed in that run's task state, so
    # the sensor would (rightly) wait for new commits: only the load runs again here
    snapshots = table.snapshot_manager.list_ids()
    run = load_dag("paimon_ingest_hourly").test(logical_date=HOUR, mark_success_pattern="wait_for_commit|read_changes")
    assert str(run.state) == "success", states(run)
    table = Catalog(str(WAREHOUSE)).get_table("shop.orders")
    assert table.read().num_rows == 10
    assert [s for s in table.snapshot_manager.list_ids() if s not in snapshots] == []


@pytest.mark.slow
def test_nightly_maintenance(airflow_db, spark, orders):
    for i in range(3):
        Catalog(str(WAREHOUSE)).get_table("shop.orders").write(
            pa.table({"id": [100 + i], "dt": ["2026-11-22"], "amount": [float(i)]}, schema=SCHEMA))
    table = Catalog(str(WAREHOUSE)).get_table("shop.orders")
    stray = os.path.join(table.path, "dt=2026-11-22", "bucket-0", "data-crashed-writer.parquet")
    pq.write_table(pa.table({"x": [1]}), stray)
    before = {(r["id"], r["dt"]): r["amount"] for r in table.read().to_pylist()}
    night = datetime(2026, 11, 22, 2, tzinfo=UTC)
    run = load_dag("paimon_maintenance_nightly").test(logical_date=night)
    assert str(run.state) == "success", states(run)
    table = Catalog(str(WAREHOUSE)).get_table("shop.orders")
    assert {(r["id"], r["dt"]): r["amount"] for r in table.read().to_pylist()} == before
    assert len(table.snapshot_manager.list_ids()) == 2  # expired down to snapshot.num-retained.min
    assert "2026-11-22" in table.tags.list()
    tag = table.tags.get("2026-11-22")
    assert tag.tag_time_retained is not None and tag.commit_kind.value == "COMPACT"
    assert not os.path.exists(stray)
    assert all(len(s.files) == 1 for s in table.plan())  # compacted: one file per bucket


@pytest.mark.slow
def test_backfill_is_idempotent_when_rerun(airflow_db, spark):
    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("shop", ignore_if_exists=True)
    catalog.create_table("shop.daily_sales", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1"}, ignore_if_exists=True)
    days = [datetime(2026, 11, d, tzinfo=UTC) for d in (1, 2, 3)]
    for n, day in enumerate(days):
        folder = LANDING / "daily" / day.strftime("%Y-%m-%d")
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": list(range(n + 2)), "dt": [day.strftime("%Y-%m-%d")] * (n + 2),
                                 "amount": [float(n)] * (n + 2)}, schema=SCHEMA), folder / "sales.parquet")
    dag = load_dag("paimon_backfill_daily")
    for day in days:
        assert str(dag.test(logical_date=day).state) == "success"
    sales = catalog.get_table("shop.daily_sales")
    expected = {(r["id"], r["dt"]): r["amount"] for r in sales.read().to_pylist()}
    assert len(expected) == 2 + 3 + 4
    snapshots = sales.snapshot_manager.latest_id()
    for day in days:  # the whole range again
        assert str(load_dag("paimon_backfill_daily").test(logical_date=day).state) == "success"
    sales = catalog.get_table("shop.daily_sales")
    assert {(r["id"], r["dt"]): r["amount"] for r in sales.read().to_pylist()} == expected
    assert sales.snapshot_manager.latest_id() == snapshots  # every rerun was recognised: nothing committed


RETURNS = pa.schema([("order_id", pa.int64()), ("dt", pa.string()), ("amount", pa.float64()), ("reason", pa.string())])


def land_returns(day: str, part: str, order_ids, amounts) -> None:
    folder = LANDING / "returns" / day
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"order_id": list(order_ids), "dt": [day] * len(order_ids), "amount": list(amounts),
                             "reason": ["damaged"] * len(order_ids)}, schema=RETURNS), folder / f"{part}.parquet")


@pytest.mark.slow
def test_table_lifecycle_creates_loads_checks_and_compacts(airflow_db, spark):
    catalog = Catalog(str(WAREHOUSE))
    assert not catalog.table_exists("shop.returns")  # the DAG creates it
    land_returns("2026-11-23", "part-0", range(6), [10.0] * 6)
    land_returns("2026-11-23", "part-1", range(4, 10), [12.5] * 6)  # 4 and 5 twice: one row per key
    day = datetime(2026, 11, 23, tzinfo=UTC)
    run = load_dag("paimon_table_lifecycle").test(logical_date=day)
    assert str(run.state) == "success", states(run)
    results = {ti.task_id: ti.xcom_pull(task_ids=ti.task_id) for ti in run.get_task_instances()}
    assert results["create_table"]["created"] and results["create_table"]["schema_id"] == 0
    table = catalog.get_table("shop.returns")
    assert [(f.name, str(f.type)) for f in table.schema.fields] == [
        ("order_id", "BIGINT NOT NULL"), ("dt", "STRING NOT NULL"), ("amount", "DOUBLE"), ("reason", "STRING")]
    assert table.primary_keys == ("order_id", "dt") and table.schema.options["bucket"] == "2"
    assert table.read().num_rows == 10
    check = results["check"]
    assert check["passed"] and check["partition"] == {"dt": "2026-11-23"}
    assert {name: c["value"] for name, c in check["checks"].items()} == {
        "row_count": 10, "amount.null_check": 0, "amount.min": 10.0}
    assert table.latest_snapshot().commit_kind.value == "COMPACT"
    assert all(len(s.files) == 1 for s in table.plan())  # compacted: one file per bucket

    # the same day again: the table is found as defined, and nothing is committed twice
    snapshots = table.snapshot_manager.list_ids()
    run = load_dag("paimon_table_lifecycle").test(logical_date=day)
    assert str(run.state) == "success", states(run)
    assert not run.get_task_instances()[0].xcom_pull(task_ids="create_table")["created"]
    assert catalog.get_table("shop.returns").snapshot_manager.list_ids() == snapshots

    # a day whose rows fail a check: the run fails at the check, and the partition is not compacted
    land_returns("2026-11-24", "part-0", range(3), [5.0, -1.0, None])
    run = load_dag("paimon_table_lifecycle").test(logical_date=datetime(2026, 11, 24, tzinfo=UTC))
    assert str(run.state) == "failed"
    assert states(run) == {"create_table": "success", "load": "success", "check": "failed",
                           "compact": "upstream_failed"}
    assert catalog.get_table("shop.returns").latest_snapshot().commit_kind.value == "OVERWRITE"


@pytest.mark.slow
def test_event_driven_dag_and_its_watcher(airflow_db, orders):
    import asyncio

    from paimonflow.sensors.airflow import PaimonCommitEventTrigger

    dag = load_dag("paimon_on_commit")
    condition = dag.timetable.asset_condition
    asset = condition.objects[0] if hasattr(condition, "objects") else condition
    watchers = asset.watchers
    assert watchers and isinstance(watchers[0].trigger, PaimonCommitEventTrigger)
    trigger = PaimonCommitEventTrigger(**{**watchers[0].trigger.serialize()[1], "poll_interval": 0.2})
    table = Catalog(str(WAREHOUSE)).get_table("shop.orders")

    async def next_event():
        agen = trigger.run()
        waiting = asyncio.ensure_future(agen.__anext__())
        await asyncio.sleep(1.0)  # the watcher has seen the current latest snapshot
        await asyncio.to_thread(table.write, pa.table({"id": [900], "dt": ["2026-11-30"], "amount": [9.0]},
                                                      schema=SCHEMA))
        return await asyncio.wait_for(waiting, timeout=30)

    event = asyncio.run(next_event())
    assert event.payload["end_snapshot"] == table.snapshot_manager.latest_id()
    run = dag.test(logical_date=datetime(2026, 11, 30, tzinfo=UTC))
    assert str(run.state) == "success"
    summary = run.get_task_instances()[0].xcom_pull(task_ids="summarize")
    assert summary["snapshot_id"] == table.snapshot_manager.latest_id() and summary["days"] >= 1


def test_the_example_folder_is_a_dag_folder_as_it_stands(airflow_db):
    """``dags_examples/`` as a user copies it: its ``.airflowignore`` keeps Airflow away from the
    Dagster definitions and the demo runner, every DAG imports, and none reads the process's
    working directory or environment for its warehouse or landing folder."""
    from airflow.dag_processing.dagbag import DagBag

    from .conftest import REPO

    folder = REPO / "dags_examples"
    bag = DagBag(dag_folder=str(folder))
    assert not bag.import_errors, bag.import_errors
    parsed = {os.path.basename(stat.file.lstrip("/")) for stat in bag.dagbag_stats}
    assert parsed == {"paimon_backfill_daily.py", "paimon_ingest_hourly.py", "paimon_maintenance_nightly.py",
                      "paimon_on_commit.py", "paimon_table_lifecycle.py", "paimon_warehouse_maintenance.py"}
    assert set(bag.dag_ids) == {"paimon_backfill_daily", "paimon_ingest_hourly", "paimon_maintenance_nightly",
                                "paimon_on_commit", "paimon_table_lifecycle", "paimon_warehouse_maintenance"}
    for path in folder.glob("paimon_*.py"):
        text = path.read_text()
        assert "os.environ" not in text and "abspath" not in text, path.name
    assert not bag.get_dag("paimon_backfill_daily").catchup
    warehouse = bag.get_dag("paimon_warehouse_maintenance")
    assert not warehouse.catchup and warehouse.max_active_runs == 1


def test_a_day_with_nothing_landed_is_skipped_and_a_missing_path_is_one_line(airflow_db):
    from airflow.sdk.exceptions import AirflowSkipException

    from paimonflow.core.errors import SourceError
    from paimonflow.operators.airflow import PaimonHook, PaimonWriteOperator

    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("shop", ignore_if_exists=True)
    catalog.create_table("shop.daily_sales", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1"}, ignore_if_exists=True)
    before = catalog.get_table("shop.daily_sales").snapshot_manager.latest_id()
    run = load_dag("paimon_backfill_daily").test(logical_date=datetime(2026, 11, 15, tzinfo=UTC))  # nothing landed
    assert states(run) == {"load_day": "skipped"}
    assert catalog.get_table("shop.daily_sales").snapshot_manager.latest_id() == before

    (LANDING / "empty-folder").mkdir(parents=True, exist_ok=True)
    for path in (LANDING / "no-such-folder", LANDING / "empty-folder"):
        write = PaimonWriteOperator(task_id="w", table="shop.daily_sales", path=str(path), engine="spark")
        arguments = write.arguments({})
        with pytest.raises(SourceError, match=r"^no source files at ") as info:
            write._check_source(PaimonHook(), arguments)  # before any engine (no Spark, no Java stack)
        assert "\n" not in str(info.value)
        write.if_missing = "skip"
        with pytest.raises(AirflowSkipException):
            write._check_source(PaimonHook(), arguments)


def fleet_table(name: str, *, primary_keys=(), writes: int, **options):
    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("fleet", ignore_if_exists=True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = catalog.create_table(f"fleet.{name}", schema, primary_keys=list(primary_keys), options=options)
    for i in range(writes):
        table.write(pa.table({"id": [i, 1000 + i], "v": [name, name]}, schema=schema))
    return catalog.get_table(f"fleet.{name}")


def fleet_rows(name: str) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in Catalog(str(WAREHOUSE)).get_table(f"fleet.{name}").read().to_pylist())


@pytest.mark.slow
def test_warehouse_maintenance_maps_one_task_per_due_action(airflow_db, spark):
    import time

    from paimonflow.core.maintenance.planner import plan_warehouse

    # level-0 files over the trigger; snapshots over snapshot.num-retained.max; a tag past its TTL; healthy
    fleet_table("events", primary_keys=["id"], writes=5, **{"bucket": "1", "write-only": "true",
                                                             "num-sorted-run.compaction-trigger": "3"})
    fleet_table("clicks", writes=8, **{"write-only": "true", "snapshot.num-retained.min": "1",
                                       "snapshot.num-retained.max": "3",
                                       "compaction.min.file-num": "50"})
    audits = fleet_table("audits", primary_keys=["id"], writes=1, bucket="1")
    audits.tags.create("old", time_retained="1 ms")
    fleet_table("healthy", primary_keys=["id"], writes=1, bucket="1")
    time.sleep(0.01)
    rows = {name: fleet_rows(name) for name in ("events", "clicks", "audits", "healthy")}
    healthy_snapshot = Catalog(str(WAREHOUSE)).get_table("fleet.healthy").snapshot_manager.latest_id()

    run = load_dag("paimon_warehouse_maintenance").test(logical_date=datetime(2026, 12, 2, tzinfo=UTC),
                                                        run_conf={"tables": "fleet.*"})
    instances = run.get_task_instances()
    assert str(run.state) == "success", {(ti.task_id, ti.map_index): str(ti.state) for ti in instances}
    mapped = sorted((ti.map_index, str(ti.state)) for ti in instances if ti.task_id == "maintain")
    assert mapped == [(0, "success"), (1, "success"), (2, "success")]
    summary = instances[0].xcom_pull(task_ids="summary")
    assert sorted((d["table"], d["action"]) for d in summary["done"]) == [
        ("fleet.audits", "expire-tags"), ("fleet.clicks", "expire-snapshots"), ("fleet.events", "compact")]
    assert summary["skipped"] == [] and summary["planned"] == 3
    catalog = Catalog(str(WAREHOUSE))
    events, clicks = catalog.get_table("fleet.events"), catalog.get_table("fleet.clicks")
    assert events.latest_snapshot().commit_user.startswith("airflow.paimon_warehouse_maintenance.maintain.m")
    assert len(clicks.snapshot_manager.list_ids()) <= 3
    assert not catalog.get_table("fleet.audits").tags.list()
    assert catalog.get_table("fleet.healthy").snapshot_manager.latest_id() == healthy_snapshot
    assert {name: fleet_rows(name) for name in rows} == rows  # no row lost
    fleet = plan_warehouse(catalog, "fleet.*")
    assert fleet.actions == ()  # every table within its options' bounds
    assert next(t for t in fleet.tables if t.table == "fleet.events").max_sorted_runs <= 3

    # the next day: nothing is due, nothing is mapped, nothing is committed
    latest = {name: catalog.get_table(f"fleet.{name}").snapshot_manager.latest_id() for name in rows}
    run = load_dag("paimon_warehouse_maintenance").test(logical_date=datetime(2026, 12, 3, tzinfo=UTC),
                                                        run_conf={"tables": "fleet.*"})
    instances = run.get_task_instances()
    assert str(run.state) == "success", {(ti.task_id, ti.map_index): str(ti.state) for ti in instances}
    assert instances[0].xcom_pull(task_ids="plan") == []
    assert instances[0].xcom_pull(task_ids="summary") == {"planned": 0, "done": [], "skipped": []}
    assert {name: catalog.get_table(f"fleet.{name}").snapshot_manager.latest_id() for name in rows} == latest
