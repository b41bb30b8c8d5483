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
  ``analytics.orders_by_day`` by the IO manager.
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


orders_asset_job = dg.define_asset_job("write_orders", selection=[dg.AssetKey(["paimon", "shop", "orders"])],
                                       executor_def=dg.in_process_executor)

def _python_definitions() -> dg.Definitions:
    """The definitions written in Python above (one Definitions object at module scope: ``defs``)."""
    return dg.Definitions(
        assets=[*orders["assets"], *daily_sales["assets"], orders_by_day, customers, customer_count],
        asset_checks=[*orders["asset_checks"], *daily_sales["asset_checks"]],
        jobs=[*orders["jobs"], *daily_sales["jobs"], read_order_changes, orders_asset_job],
        schedules=[*orders["schedules"], *daily_sales["schedules"]],
        sensors=[orders_sensor, customers_observer],
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
