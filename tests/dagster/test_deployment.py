"""The example definitions in a real Dagster deployment (tests/dagster/deployment.py):
``dagster-daemon`` and ``dagster-webserver`` as separate processes, runs launched by the daemon,
everything checked through Dagster's GraphQL API, the asset page rendered by Chromium.

* a commit made outside Dagster (the core's ``Table.write``, as Flink or Spark would) becomes
  exactly one materialization of ``paimon/shop/customers`` (the observer sensor), and the eager
  ``analytics/customer_count`` is then materialized by a run the daemon launches;
* a commit to ``shop.orders`` makes the snapshot sensor request a ``read_order_changes`` run that
  reads exactly that range;
* the maintenance schedule's tick runs the maintenance job;
* the IO manager's upsert and append modes in runs the daemon launches, and a refused write (a
  new column with a null key) that leaves the table's schema as it was;
* a snapshot sensor started from the latest snapshot reads only the commits made after it.
"""

# No ``from __future__ import annotations``: kept like the other Dagster test modules.

import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from tests.processes import python_processes, wait_for

from .deployment import DagsterDeployment

pytestmark = [pytest.mark.slow, pytest.mark.spark]

CUSTOMERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("country", pa.string())])
ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])
AUTOMATION = "default_automation_condition_sensor"


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    root = tmp_path_factory.mktemp("dagster-deployment")
    warehouse, landing = root / "warehouse", root / "landing"
    catalog = Catalog(str(warehouse))
    catalog.create_database("shop")
    catalog.create_table("shop.customers", CUSTOMERS, primary_keys=["id"], options={"bucket": "1"})
    catalog.create_table("shop.orders", ORDERS, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1"})
    deployment = DagsterDeployment(env_extra={
        "PAIMONFLOW_WAREHOUSE": str(warehouse), "PAIMONFLOW_LANDING": str(landing),
        "PAIMONFLOW_MAINTENANCE_CRON": "* * * * *",
        # every Spark job spark-submitted through Dagster Pipes, as on a cluster
        "PAIMONFLOW_SPARK_SUBMIT": "1", "PAIMONFLOW_SPARK_MASTER": "local[1]"})
    deployment.start()
    deployment.warehouse, deployment.landing = warehouse, landing  # type: ignore[attr-defined]
    try:
        yield deployment
    finally:
        deployment.stop()


def table(deployed, name):
    return Catalog(str(deployed.warehouse)).get_table(name)


def test_an_external_commit_is_one_asset_event_and_the_eager_asset_follows(deployed):
    for sensor in ("paimon_commits_shop_customers", AUTOMATION):
        if deployed.sensor_status(sensor) != "RUNNING":
            deployed.turn_on("sensor", sensor)
    # let the observer take its first (empty) look and automation its first evaluation
    wait_for("the observer's first tick", lambda: _ticked(deployed, "paimon_commits_shop_customers"), timeout=120,
             every=3, log=deployed.logs)
    table(deployed, "shop.customers").write(
        pa.table({"id": [1, 2, 3], "country": ["fr", "fr", "de"]}, schema=CUSTOMERS), commit_user="crm-flink")
    events = wait_for("the commit as a materialization of paimon/shop/customers",
                      lambda: deployed.materializations(["paimon", "shop", "customers"]), timeout=180, every=3,
                      log=deployed.logs)
    tags = {t["key"]: t["value"] for t in events[0]["tags"]}
    assert tags["dagster/data_version"] == "1"
    counted = wait_for("analytics/customer_count materialized by the daemon's run",
                       lambda: deployed.materializations(["analytics", "customer_count"]), timeout=420, every=3,
                       log=deployed.logs)
    run_id = counted[0]["runId"]
    wait_for("the run to end", lambda: deployed.run_status(run_id) in ("SUCCESS", "FAILURE", "CANCELED"),
             timeout=180, every=1, log=deployed.logs)
    assert deployed.run_status(run_id) == "SUCCESS"
    rows = table(deployed, "analytics.customer_count").read().to_pylist()
    assert sorted((r["country"], r["customers"]) for r in rows) == [("de", 1), ("fr", 2)]
    meta = {m["label"] for m in counted[0]["metadataEntries"]}
    assert {"dagster/row_count", "dagster/column_schema", "dagster/table_name", "dagster/uri"} <= meta
    # nothing more without a new commit: still exactly one event, one materialization downstream
    time.sleep(45)
    assert len(deployed.materializations(["paimon", "shop", "customers"])) == 1
    assert len(deployed.materializations(["analytics", "customer_count"])) == 1


def _ticked(deployed, sensor: str) -> bool:
    data = deployed.graphql("""query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) {
        ... on Sensor { sensorState { ticks(limit: 5) { status } } } } }""",
                            s=deployed.selector("sensor", sensor))
    return any(t["status"] in ("SKIPPED", "SUCCESS") for t in data["sensorOrError"]["sensorState"]["ticks"])


def test_a_commit_to_the_orders_makes_the_sensor_launch_a_read_of_its_range(deployed):
    deployed.turn_on("sensor", "paimon_snapshots_shop_orders")
    orders = table(deployed, "shop.orders")
    orders.write(pa.table({"id": [1, 2], "dt": ["2026-11-21"] * 2, "amount": [1.0, 2.0]}, schema=ORDERS))
    [run] = deployed.wait_for_success("read_order_changes", timeout=480)
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert (tags["paimon/start_snapshot"], tags["paimon/end_snapshot"]) == ("0", "1")
    written = [p for p in (deployed.landing / "changes" / "dagster").rglob("*") if p.is_file()]
    assert written, "the run wrote the range's changes"


def test_the_schedule_tick_runs_the_maintenance_job(deployed):
    deployed.turn_on("schedule", "maintain_shop_orders_schedule")  # every minute in this deployment
    try:
        [run] = deployed.wait_for_success("maintain_shop_orders", timeout=480)
    finally:
        deployed.stop_schedule("maintain_shop_orders_schedule")
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert "dagster/schedule_name" in tags
    assert table(deployed, "shop.orders").tags.list(), "the maintenance job tagged the day"
    # with every job spark-submitted, the metadata-only ones (the expiries) ran on the core:
    # seconds, not a Spark application each; compaction and orphan removal were submitted
    on_core = {step for step, message in deployed.run_messages(run["runId"])
               if "a metadata-only job, run on the core" in message}
    assert on_core == {"expire_snapshots_shop_orders", "expire_tags_shop_orders"}, on_core


def test_terminating_a_run_stops_its_submitted_job_before_it_commits(deployed):
    """A write of the orders (spark-submitted through Pipes by the run the daemon launched) is
    terminated through GraphQL as from the UI: the run ends CANCELED, the job's driver stops, and
    nothing is committed."""
    hour, rows = "2026-11-21-05:00", 3_000_000  # long enough to be stopped mid-write on local[1]
    folder = deployed.landing / hour
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"id": np.arange(rows), "dt": ["2026-11-21"] * rows, "amount": np.ones(rows)},
                            schema=ORDERS), folder / "part.parquet")
    before = table(deployed, "shop.orders").snapshot_manager.latest_id()
    run_id = deployed.launch("write_orders", {"dagster/partition": hour})
    wait_for("the submitted write's driver", lambda: python_processes("jobs/submit.py", str(folder)), timeout=300, every=0.5, log=deployed.logs)
    time.sleep(3)
    deployed.terminate(run_id)
    wait_for("the run to end", lambda: deployed.run_status(run_id) in ("CANCELED", "FAILURE", "SUCCESS"),
             timeout=180, every=1, log=deployed.logs)
    assert deployed.run_status(run_id) == "CANCELED"
    wait_for("the driver to stop", lambda: not python_processes("jobs/submit.py", str(folder)), timeout=60, every=0.5)
    assert table(deployed, "shop.orders").snapshot_manager.latest_id() == before  # nothing committed


def test_the_asset_page_shows_the_standard_metadata(deployed):
    from tests.chromium import render

    wait_for("a materialization to show", lambda: deployed.materializations(["analytics", "customer_count"]),
             timeout=60)
    page = render(f"{deployed.base_url}/assets/analytics/customer_count", timeout=120, until="paimon/snapshot_id")
    assert page.status == 200
    text = page.text
    # the column schema (names and Paimon types), the row count and the commit's metadata
    for shown in ("country", "STRING", "customers", "BIGINT", "Row count", "paimon/commit_kind", "OVERWRITE",
                  "paimon/files_written", "dagster/storage_kind", "paimon"):
        assert shown in text, f"{shown!r} not on the asset page"
    if os.environ.get("PAIMONFLOW_SCREENSHOT_TO"):
        with open(os.environ["PAIMONFLOW_SCREENSHOT_TO"].replace(".png", "-dagster.png"), "wb") as out:
            out.write(page.png)


def _land_prices(deployed, table: pa.Table) -> None:
    folder = deployed.landing / "prices"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "latest.parquet")


def test_upserts_and_appends_under_the_daemon_and_a_refused_write_leaves_the_schema(deployed):
    """The IO manager's write modes in runs the daemon launches: ``upsert_prices`` upserts the
    landed price list by sku; a list with a new column and a null sku fails the run in one line
    and leaves the table's schema (files and latest) and rows as they were; ``log_order_snapshots``
    appends one row per run."""
    _land_prices(deployed, pa.table({"sku": [1, 2], "price": [1.0, 2.0]}))
    assert deployed.wait_for_run(deployed.launch("upsert_prices", {})) == "SUCCESS"
    _land_prices(deployed, pa.table({"sku": [2, 3], "price": [2.5, 3.0]}))
    assert deployed.wait_for_run(deployed.launch("upsert_prices", {})) == "SUCCESS"
    prices = table(deployed, "analytics.price_list")
    assert sorted((r["sku"], r["price"]) for r in prices.read().to_pylist()) == [(1, 1.0), (2, 2.5), (3, 3.0)]
    schema_dir = deployed.warehouse / "analytics.db" / "price_list" / "schema"
    schemas = sorted(p.name for p in schema_dir.iterdir())

    _land_prices(deployed, pa.table({"sku": pa.array([4, None], pa.int64()), "price": [4.0, 5.0],
                                     "currency": ["EUR", "USD"]}))
    run_id = deployed.launch("upsert_prices", {})
    assert deployed.wait_for_run(run_id) == "FAILURE"
    assert deployed.step_failures(run_id) == [
        ("analytics__price_list", "analytics/price_list: primary key column 'sku' is NOT NULL but has 1 null value(s)")]
    after = table(deployed, "analytics.price_list")
    assert sorted(p.name for p in schema_dir.iterdir()) == schemas and after.schema.id == prices.schema.id
    assert [f.name for f in after.schema.fields] == ["sku", "price"]
    assert sorted((r["sku"], r["price"]) for r in after.read().to_pylist()) == [(1, 1.0), (2, 2.5), (3, 3.0)]

    runs = [deployed.launch("log_order_snapshots", {}) for _ in range(2)]
    assert [deployed.wait_for_run(r) for r in runs] == ["SUCCESS", "SUCCESS"]
    logged = table(deployed, "analytics.order_snapshots").read().to_pylist()
    assert sorted(r["run_id"] for r in logged) == sorted(runs)  # one row appended per run
    events = deployed.materializations(["analytics", "order_snapshots"])
    assert len(events) == 2 and all("dagster/row_count" in {m["label"] for m in e["metadataEntries"]} for e in events)


def test_a_sensor_started_from_latest_reads_only_the_commits_after_it_under_the_daemon(deployed):
    """``paimon_new_customer_changes`` (``start_from="latest"``) turned on beside shop.customers'
    history: its first tick requests nothing; the next commit is one run reading exactly it."""
    customers = table(deployed, "shop.customers")
    if customers.latest_snapshot() is None:
        customers.write(pa.table({"id": [1], "country": ["fr"]}, schema=CUSTOMERS), commit_user="crm-flink")
    history = customers.snapshot_manager.latest_id()
    sensor = "paimon_new_customer_changes"
    deployed.turn_on("sensor", sensor)
    wait_for("the sensor's first tick", lambda: deployed.sensor_ticks(sensor), timeout=120, every=3,
             log=deployed.logs)
    [first] = deployed.sensor_ticks(sensor)
    assert first["status"] == "SKIPPED" and f"reading commits after snapshot {history}" in first["skipReason"]
    assert deployed.runs("customer_changes") == []  # the history was not requested
    customers.write(pa.table({"id": [7, 8], "country": ["it", "es"]}, schema=CUSTOMERS), commit_user="crm-flink")
    [run] = deployed.wait_for_success("customer_changes", timeout=300)
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert (tags["paimon/start_snapshot"], tags["paimon/end_snapshot"]) == (str(history), str(history + 1))
