"""``make demo``: a guided tour of what paimonflow does today, on a local warehouse.

Creates ``./demo-warehouse`` (removed and recreated on every run), a primary-key table and an
append table, writes, updates and deletes rows, reads them back, travels in time, and shows the
system tables; then the same table from Spark, Airflow and Dagster. Every step prints what it
shows and where the files are. Logs are quiet (errors only) unless ``--verbose``
(``make demo DEMO_ARGS=--verbose``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import warnings
from pathlib import Path

import pyarrow as pa
from rich.console import Console
from rich.table import Table as RichTable

from paimonflow.core import Catalog, col

console = Console(width=120)


def show(title: str, table: pa.Table, limit: int = 12) -> None:
    console.print(f"[bold cyan]{title}[/bold cyan]")
    view = RichTable()
    for name in table.column_names:
        view.add_column(name)
    for row in table.slice(0, limit).to_pylist():
        view.add_row(*("∅" if v is None else str(v) for v in row.values()))
    console.print(view)


def step(text: str) -> None:
    console.rule(f"[bold]{text}")


#: Spark's JVM logging for the demo: errors only (without it, Spark prints its log4j banner and warnings;
#: PySpark's launcher classes at the root's level keep it from announcing a level of its own)
QUIET_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
logger.submit.name = org.apache.spark.deploy.SparkSubmit
logger.submit.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""

VERBOSE = {"on": False}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo", description=__doc__.split("\n")[0])
    parser.add_argument("warehouse", nargs="?", default="demo-warehouse")
    parser.add_argument("--verbose", action="store_true", help="Spark's, Airflow's and Dagster's own logs too")
    args = parser.parse_args(argv)
    VERBOSE["on"] = args.verbose
    if not args.verbose:  # the libraries' deprecation and preview notices are not the tour
        warnings.filterwarnings("ignore")
    root = Path(args.warehouse).resolve()
    if root.exists():
        shutil.rmtree(root)
    step(f"1. A warehouse at {root}")
    catalog = Catalog(str(root))
    catalog.create_database("shop")
    console.print("created database [bold]shop[/bold] →", catalog.database_path("shop"))

    step("2. A primary-key table: orders(id, dt) partitioned by dt, 2 buckets")
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        pa.field("customer", pa.string()),
        pa.field("amount", pa.float64()),
    ])
    orders = catalog.create_table("shop.orders", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                                  options={"bucket": "2"})
    console.print(f"table at {orders.path}; schema file schema/schema-0")

    step("3. Write: one commit, one snapshot")
    first = orders.write(pa.table({
        "id": [1, 2, 3, 4],
        "dt": ["2026-11-21", "2026-11-21", "2026-11-22", "2026-11-22"],
        "customer": ["ada", "grace", "alan", "edsger"],
        "amount": [10.0, 20.0, 30.0, 40.0],
    }, schema=schema))
    console.print(first.to_dict())
    show("orders after snapshot 1", orders.read().sort_by("id"))

    step("4. Update and delete: upserts by primary key, -D rows delete")
    orders.write(pa.table({"id": [2, 5], "dt": ["2026-11-21", "2026-11-22"], "customer": ["grace", "barbara"],
                           "amount": [25.0, 50.0]}, schema=schema))
    orders.write(pa.table({"id": [3], "dt": ["2026-11-22"], "customer": ["alan"], "amount": [30.0]}, schema=schema),
                 row_kinds="-D")
    show("orders now (2 updated, 5 inserted, 3 deleted)", orders.read().sort_by("id"))

    step("5. Read with a filter and a projection (partition pruning + statistics)")
    show("dt = 2026-11-22, columns id, amount",
         orders.read(columns=["id", "amount"], filter=col("dt") == "2026-11-22").sort_by("id"))

    step("6. Time travel")
    show("as of snapshot 1", orders.read(snapshot_id=1).sort_by("id"))
    show("$snapshots", orders.system_table("snapshots").select(
        ["snapshot_id", "commit_kind", "total_record_count", "delta_record_count"]))
    show("$files", orders.system_table("files").select(["partition", "bucket", "level", "record_count",
                                                         "file_size_in_bytes"]))

    step("7. An append table and a partition overwrite")
    events = catalog.create_table("shop.events", pa.schema([("dt", pa.string()), ("kind", pa.string()),
                                                             ("n", pa.int32())]), partition_keys=["dt"])
    events.write(pa.table({"dt": ["a", "a", "b"], "kind": ["view", "click", "view"], "n": [1, 2, 3]}))
    events.write(pa.table({"dt": ["a"], "kind": ["buy"], "n": [9]}), overwrite={"dt": "a"})
    show("events after overwriting partition dt=a", events.read().sort_by("n"))

    step("8. Bad input is refused with a clear error, and nothing is written")
    for label, action in [
        ("null primary key", lambda: orders.write(pa.table({"id": [None], "dt": ["x"], "customer": ["?"],
                                                              "amount": [1.0]}))),
        ("tag name ../x", lambda: orders.read(tag="../x")),
        ("unknown option", lambda: catalog.create_table("shop.bad", schema, options={"buckett": "2"})),
    ]:
        try:
            action()
        except Exception as exc:
            console.print(f"[yellow]{label}[/yellow] → {type(exc).__name__}: {exc}")
    console.print(f"orders still has {orders.read().num_rows} rows and snapshot {orders.latest_snapshot().id}")

    step("9. The LSM engine: merge-on-write with deletion vectors and a lookup changelog")
    stock = catalog.create_table("shop.stock", pa.schema([pa.field("sku", pa.int64(), nullable=False),
                                                          ("qty", pa.int64())]),
                                 primary_keys=["sku"],
                                 options={"bucket": "2", "deletion-vectors.enabled": "true",
                                          "changelog-producer": "lookup", "write-buffer-size": "1mb"})
    stock.write(pa.table({"sku": list(range(1000)), "qty": [10] * 1000}))
    stock.write(pa.table({"sku": [1, 2, 3], "qty": [7, 0, 12]}))
    stock.write(pa.table({"sku": [2], "qty": [0]}), row_kinds="-D")
    show("stock snapshots: each write is APPEND, then the writer's COMPACT",
         stock.system_table("snapshots").select(["snapshot_id", "commit_kind", "total_record_count"]))
    show("deletion vectors: replaced rows are deleted in place, reads need no merging",
         stock.system_table("index_files").select(["bucket", "index_type", "row_count", "deleted_rows"]))
    last = stock.latest_snapshot()
    changes = [e.file.row_count for e in stock.manifest_io.changelog_entries(last)]
    console.print(f"stock has {stock.read().num_rows} skus; the last commit's lookup changelog holds "
                  f"{sum(changes)} row(s) (-D of sku 2)")

    step("10. Branches: try a change on a branch, then fast-forward main to it")
    orders.tags.create("before-fix")
    fix = orders.branches.create("fix", tag="before-fix")
    fix.write(pa.table({"id": [1], "dt": ["2026-11-21"], "customer": ["ann (fixed)"], "amount": [10.5]},
                       schema=fix.arrow_schema))
    console.print(f"branch {fix.identifier}: {fix.read().num_rows} rows; main untouched at snapshot "
                  f"{orders.refresh().latest_snapshot().id}")
    orders.branches.fast_forward("fix")
    console.print(f"main fast-forwarded: latest snapshot {catalog.get_table('shop.orders').latest_snapshot().id}")

    step("11. The same table from Spark (local[2]): the write job, a compaction job, the data source")
    spark_ready = spark_demo(root)

    step("12. Airflow (dag.test() on a local SQLite database): hourly ingestion, then nightly maintenance")
    if spark_ready:
        airflow_demo(root)
    else:
        console.print("[yellow]skipped: the DAGs run their jobs on Spark, which needs Java[/yellow]")

    step("13. Dagster (in process): materialize an hour of orders, run the health checks and the sensor")
    if spark_ready:
        dagster_demo(root)

    step("Done")
    if not VERBOSE["on"]:
        console.print("[dim](logs were quiet: make demo DEMO_ARGS=--verbose shows Spark's, Airflow's and Dagster's)[/dim]")
    console.print(f"Look at the files under {root}; try:\n"
                  f"  .venv/bin/paimonflow describe shop.orders -w {root}\n"
                  f"  .venv/bin/paimonflow snapshots shop.orders -w {root}\n"
                  f"  .venv/bin/paimonflow read shop.orders -w {root} --snapshot 1")
    return 0


def spark_demo(root: Path) -> bool:
    """The Spark step; False when it was skipped (no usable Java)."""
    from paimonflow.jobs.compact import compact
    from paimonflow.jobs.environment import detect_java
    from paimonflow.jobs.location import TableLocation
    from paimonflow.jobs.session import spark_session
    from paimonflow.jobs.write import write

    if not detect_java().usable:
        console.print("[yellow]no Java 17+: skipping the Spark step (make java-check says how to get it)[/yellow]")
        return False
    conf = {}
    if not VERBOSE["on"]:
        (root / "log4j2.properties").write_text(QUIET_LOG4J)
        conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{root / 'log4j2.properties'}"
    console.print("[dim]starting Spark (a JVM, about 10 s)…[/dim]")
    spark = spark_session(app_name="paimonflow-demo", conf=conf)
    location = TableLocation(str(root), "shop.orders")
    rows = spark.range(100, 5100).selectExpr("id", "'2026-11-22' as dt", "concat('c', id % 97) as customer",
                                             "cast(id % 1000 as double) / 10 as amount")
    result = write(spark, location, rows, commit_user="demo.spark_write", commit_identifier=1)
    console.print(f"write job: {result.to_json()}")
    again = write(spark, location, rows, commit_user="demo.spark_write", commit_identifier=1)
    console.print(f"the same job rerun (a retried task) commits nothing: already_committed="
                  f"{again.metrics.get('already_committed')}, snapshot {again.snapshot_id}")
    console.print(f"compaction job: {compact(spark, location, full=True).to_json()}")
    frame = spark.read.format("paimonflow").option("warehouse", str(root)).load("shop.orders")
    console.print("spark.read.format('paimonflow'): rows per day")
    for row in frame.groupBy("dt").count().orderBy("dt").collect():
        console.print(f"  {row['dt']}: {row['count']}")
    return True


def airflow_demo(root: Path) -> None:
    """Run the example ingestion and maintenance DAGs against the demo warehouse."""
    import json
    import os
    from datetime import UTC, datetime

    import pyarrow.parquet as pq

    home = root / "airflow"
    landing = root / "landing"
    hour = datetime(2026, 11, 23, 10, tzinfo=UTC)
    folder = landing / hour.strftime("%Y-%m-%dT%H")
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"id": [7001, 7002, 1], "dt": ["2026-11-23", "2026-11-23", "2026-11-21"],
                             "customer": ["kay", "linus", "ada (late update)"], "amount": [70.0, 71.0, 12.5]}),
                   folder / "orders.parquet")
    dags = Path(__file__).resolve().parent
    os.environ.update({"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
                       "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                       "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
                       "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO" if VERBOSE["on"] else "ERROR",
                       "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon", "host": str(root)}),
                       "AIRFLOW_VAR_PAIMONFLOW_LANDING": str(landing)})
    home.mkdir()
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils import db

    db.initdb()
    bag = DagBag(dag_folder=str(dags))
    for dag_id, logical_date in (("paimon_ingest_hourly", hour), ("paimon_maintenance_nightly", hour)):
        run = bag.get_dag(dag_id).test(logical_date=logical_date)
        states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
        console.print(f"DAG [bold]{dag_id}[/bold]: {run.state} {states}")
    orders = Catalog(str(root)).get_table("shop.orders")
    show("shop.orders snapshots after the DAGs", orders.system_table("snapshots")
         .select(["snapshot_id", "commit_kind", "commit_user", "total_record_count"]), limit=20)
    console.print(f"tags: {sorted(orders.tags.list())}; the incremental read wrote "
                  f"{sorted(str(p) for p in (landing / 'changes').iterdir())}; Airflow's database and logs: {home}")


def dagster_demo(root: Path) -> None:
    """Materialize the example Dagster asset for one hour and evaluate the snapshot sensor."""
    import os

    import pyarrow.parquet as pq

    os.environ.update({"PAIMONFLOW_WAREHOUSE": str(root), "PAIMONFLOW_LANDING": str(root / "landing")})
    hour = "2026-11-22-11:00"  # a past hour: hourly partitions end at the current time
    folder = root / "landing" / hour
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"id": [8001, 8002], "dt": ["2026-11-22", "2026-11-22"], "customer": ["mary", "niklaus"],
                             "amount": [80.0, 81.0]}), folder / "orders.parquet")
    import dagster as dg

    from paimonflow.dags_examples import dagster_definitions as example
    from paimonflow.operators.dagster import PaimonResource

    level = "DEBUG" if VERBOSE["on"] else "ERROR"  # Dagster logs every event of the run at DEBUG
    result = example.defs.resolve_job_def("write_orders").execute_in_process(
        partition_key=hour, run_config={"loggers": {"console": {"config": {"log_level": level}}}})
    metadata = result.asset_materializations_for_node("paimon__shop__orders")[0].metadata
    console.print(f"materialized paimon/shop/orders[{hour}]: snapshot {metadata['paimon/snapshot_id'].value}, "
                  f"{metadata['paimon/rows_written'].value} rows")
    console.print("the table's health checks ran after it (what they report is what Dagster's UI shows):")
    for check in result.get_asset_check_evaluations():
        found = {k: v.value for k, v in check.metadata.items()}
        console.print(f"  check {check.check_name}: {'passed' if check.passed else '[yellow]FAILED[/yellow]'} {found}")
        if check.check_name == "small_files" and not check.passed:
            console.print("    [yellow]as expected here:[/yellow] every hourly write and the steps above added "
                          "small files; this check is how you learn it is time to compact (the nightly "
                          "maintenance job, or `paimonflow compact`), and it passes again afterwards")
    tick = example.orders_sensor.evaluate_tick(dg.build_sensor_context(
        cursor=None, resources={"paimon": PaimonResource(warehouse=str(root))}))
    if not tick.run_requests:
        console.print("[red]snapshot sensor: no run request for the new snapshots[/red]")
        return
    request = tick.run_requests[0]
    console.print(f"snapshot sensor: one run request for snapshots {request.tags['paimon/start_snapshot']}.."
                  f"{request.tags['paimon/end_snapshot']} (run_key {request.run_key})")


if __name__ == "__main__":
    sys.exit(main())
