"""Dagster definitions mirroring the Airflow examples (load with
``dagster definitions validate -m paimonflow.dags_examples.dagster_definitions``).

* ``paimon/shop/orders``: hourly partitions written from ``<landing>/<hour>/`` (the ingestion),
  with health checks, a nightly maintenance job and its schedule;
* ``read_order_changes``: requested by a sensor on the table's snapshots, one run per new range,
  reading exactly that range (the downstream incremental read);
* ``paimon/shop/daily_sales``: daily partitions, each overwriting its own table partition (the
  idempotent backfill);
* ``paimon/shop/customers``: a table written outside Dagster; ``customers_observer`` reports its
  commits as materializations and ``analytics/customer_count`` (``AutomationCondition.eager()``)
  follows each of them;
* ``paimon/shop/returns`` (from ``dagster_defs/returns/defs.yaml``, a ``PaimonTableComponent``):
  daily partitions, health checks with freshness, a maintenance job and schedule, a commit observer;
* ``analytics/orders_by_day``: an asset computed from the orders and stored in the Paimon table
  ``analytics.orders_by_day`` by the IO manager (it replaces the table: ``write_mode`` overwrite);
* ``analytics/price_list`` (job ``upsert_prices``): the latest landed price list upserted by sku
  (``write_mode: upsert``), and ``analytics/order_snapshots`` (job ``log_order_snapshots``): one
  row appended per run (``write_mode: append``);
* ``customer_changes``: requested by a snapshot sensor started from the latest snapshot
  (``start_from="latest"``): only commits made after it was turned on are read (on the core).
Resources: ``paimon`` (``PAIMONFLOW_WAREHOUSE``), ``spark`` (a local session; with
``PAIMONFLOW_SPARK_SUBMIT=1`` every job is spark-submitted through Dagster Pipes to
``PAIMONFLOW_SPARK_MASTER``), ``paimon_io_manager`` (assets opt in with
``io_manager_key="paimon_io_manager"``; op results keep Dagster's default IO manager).
"""

# No ``from __future__ import annotations``: Dagster reads context annotations at runtime.

import os
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from paimonflow.operators.dagster import (
    PaimonIOManager,
    PaimonResource,
    SparkResource,
    TableSpec,
    paimon_job_op,
    paimon_table,
)
from paimonflow.sensors.dagster import paimon_commit_observer, paimon_snapshot_sensor

WAREHOUSE = os.environ.get("PAIMONFLOW_WAREHOUSE", os.path.abspath("demo-warehouse"))
LANDING = os.environ.get("PAIMONFLOW_LANDING", os.path.abspath("demo-landing"))

SPARK = SparkResource(master=os.environ.get("PAIMONFLOW_SPARK_MASTER", "local[2]"),
                      submit=os.environ.get("PAIMONFLOW_SPARK_SUBMIT", "") == "1")

hourly = dg.HourlyPartitionsDefinition(start_date="2026-11-21-00:00")
daily = dg.DailyPartitionsDefinition(start_date="2026-11-01")

orders = paimon_table(TableSpec(table="shop.orders", source=LANDING + "/{partition}", partitions_def=hourly,
                                maintenance_cron=os.environ.get("PAIMONFLOW_MAINTENANCE_CRON", "0 2 * * *"),
                                orphan_older_than=os.environ.get("PAIMONFLOW_ORPHAN_AGE", "1 d"),
                                orphan_min_older_than=os.environ.get("PAIMONFLOW_ORPHAN_MIN_AGE", "1 h")))
daily_sales = paimon_table(TableSpec(table="shop.daily_sales", source=LANDING + "/daily/{partition}",
                                     partitions_def=daily, partition_column="dt"))

read_changes = paimon_job_op("read-changes", "shop.orders", name="read_order_changes_op",
                             output=LANDING + "/changes/dagster/{start_snapshot}-{end_snapshot}", start_snapshot=0)


@dg.job(name="read_order_changes")
def read_order_changes():
    read_changes()


orders_sensor = paimon_snapshot_sensor("shop.orders", read_order_changes, read_op="read_order_changes_op")


@dg.asset(key=["analytics", "orders_by_day"], deps=[dg.AssetKey(["paimon", "shop", "orders"])],
          io_manager_key="paimon_io_manager", metadata={"paimon/primary_keys": ["dt"]}, group_name="paimon")
def orders_by_day(paimon: PaimonResource) -> pa.Table:
    """Order totals per day, stored in the Paimon table analytics.orders_by_day (database from the
    key prefix, table from its last part)."""
    rows = paimon.table("shop.orders").read(columns=["dt", "amount"])
    totals = rows.group_by("dt").aggregate([("amount", "sum"), ("amount", "count")])
    return totals.rename_columns(["dt", "amount", "orders"])


# shop.customers is written by another engine (the CRM's Flink job): an external asset, its commits
# reported by the observer sensor, and an eager asset downstream recomputed after each of them.
customers = dg.AssetSpec(["paimon", "shop", "customers"], kinds={"paimon"}, group_name="paimon",
                         description="Paimon table shop.customers, written outside Dagster")
customers_observer = paimon_commit_observer("shop.customers", customers.key)


@dg.asset(key=["analytics", "customer_count"], deps=[customers.key], io_manager_key="paimon_io_manager",
          automation_condition=dg.AutomationCondition.eager(), group_name="paimon")
def customer_count(paimon: PaimonResource) -> pa.Table:
    """Customers per country after every commit to shop.customers, in analytics.customer_count."""
    rows = paimon.table("shop.customers").read(columns=["country"])
    return rows.group_by("country").aggregate([("country", "count")]).rename_columns(["country", "customers"])


@dg.asset(key=["analytics", "price_list"], io_manager_key="paimon_io_manager", group_name="paimon",
          metadata={"paimon/primary_keys": ["sku"], "write_mode": "upsert"})
def price_list() -> pa.Table:
    """The latest price list landed (``<landing>/prices/latest.parquet``), upserted by sku into
    analytics.price_list: a changed price replaces the old row, a new sku is added, the others stay.
    A list whose rows the table refuses (a null sku) fails the run in one line and changes nothing,
    its new columns included."""
    return pq.read_table(LANDING + "/prices/latest.parquet")


@dg.asset(key=["analytics", "order_snapshots"], deps=[dg.AssetKey(["paimon", "shop", "orders"])],
          io_manager_key="paimon_io_manager", group_name="paimon", metadata={"write_mode": "append"})
def order_snapshots(context: dg.AssetExecutionContext, paimon: PaimonResource) -> pa.Table:
    """One row appended per run to analytics.order_snapshots: the run and the orders table's latest
    snapshot then (a retried step appends nothing twice: the IO manager's commit identity)."""
    latest = paimon.table("shop.orders").snapshot_manager.latest_id()
    return pa.table({"run_id": [context.run_id], "orders_snapshot": pa.array([latest], pa.int64())})


prices_job = dg.define_asset_job("upsert_prices", selection=[dg.AssetKey(["analytics", "price_list"])])
order_snapshots_job = dg.define_asset_job("log_order_snapshots",
                                          selection=[dg.AssetKey(["analytics", "order_snapshots"])])


@dg.op(config_schema={"start_snapshot": int, "end_snapshot": int})
def count_customer_changes(context: dg.OpExecutionContext, paimon: PaimonResource) -> dict:
    """The changes of shop.customers in the requested snapshot range, counted by row kind (core)."""
    start, end = context.op_config["start_snapshot"], context.op_config["end_snapshot"]
    kinds = paimon.table("shop.customers").read_changes(start, end).column("rowkind").to_pylist()
    counts = {kind: kinds.count(kind) for kind in sorted(set(kinds))}
    context.add_output_metadata({"paimon/start_snapshot": start, "paimon/end_snapshot": end,
                                 "paimon/row_kinds": dg.MetadataValue.json(counts)})
    return counts


@dg.job(name="customer_changes")
def customer_changes():
    count_customer_changes()


# added beside a table with history: reads only the commits made after it is turned on
new_customers_sensor = paimon_snapshot_sensor("shop.customers", customer_changes, name="paimon_new_customer_changes",
                                              read_op="count_customer_changes", start_from="latest")

orders_asset_job = dg.define_asset_job("write_orders", selection=[dg.AssetKey(["paimon", "shop", "orders"])],
                                       executor_def=dg.in_process_executor)

def _python_definitions() -> dg.Definitions:
    """The definitions written in Python above (one Definitions object at module scope: ``defs``)."""
    return dg.Definitions(
        assets=[*orders["assets"], *daily_sales["assets"], orders_by_day, customers, customer_count, price_list,
                order_snapshots],
        asset_checks=[*orders["asset_checks"], *daily_sales["asset_checks"]],
        jobs=[*orders["jobs"], *daily_sales["jobs"], read_order_changes, orders_asset_job, prices_job,
              order_snapshots_job, customer_changes],
        schedules=[*orders["schedules"], *daily_sales["schedules"]],
        sensors=[orders_sensor, customers_observer, new_customers_sensor],
        resources={"paimon": PaimonResource(warehouse=WAREHOUSE), "spark": SPARK,
                   "paimon_io_manager": PaimonIOManager(paimon=PaimonResource(warehouse=WAREHOUSE))},
    )


# The component project: dagster_defs/<name>/defs.yaml (shop.returns, a PaimonTableComponent); its
# YAML reads the landing folder from the environment.
os.environ.setdefault("PAIMONFLOW_LANDING", LANDING)
# (dg.toml beside this file names dagster_defs as the project's defs module)
defs = dg.Definitions.merge(_python_definitions(),
                            dg.load_from_defs_folder(path_within_project=Path(__file__).parent))


def write_orders_job():
    """The orders write job, reconstructable (``dg.reconstructable(write_orders_job)``), which is
    what Dagster's re-execution of a run needs."""
    return defs.resolve_job_def("write_orders")


def maintain_orders_job():
    """The orders maintenance job, reconstructable (``dg.execute_job`` runs it as a deployment does,
    with its own executor)."""
    return defs.resolve_job_def("maintain_shop_orders")
