"""Dagster definitions mirroring the Airflow examples (load with
``dagster definitions validate -m paimonflow.dags_examples.dagster_definitions``).

* ``paimon/shop/orders``: hourly partitions written from ``<landing>/<hour>/`` (the ingestion),
  with health checks, a nightly maintenance job and its schedule;
* ``read_order_changes``: requested by a sensor on the table's snapshots, one run per new range,
  reading exactly that range (the downstream incremental read);
* ``paimon/shop/daily_sales``: daily partitions, each overwriting its own table partition (the
  idempotent backfill);
* ``orders_by_day``: an asset computed from the orders and stored in a Paimon table by the IO
  manager.
Resources: ``paimon`` (``PAIMONFLOW_WAREHOUSE``), ``spark`` (local), ``paimon_io_manager`` (assets
opt in with ``io_manager_key="paimon_io_manager"``; op results keep Dagster's default IO manager).
"""

# No ``from __future__ import annotations``: Dagster reads context annotations at runtime.

import os

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
from paimonflow.sensors.dagster import paimon_snapshot_sensor

WAREHOUSE = os.environ.get("PAIMONFLOW_WAREHOUSE", os.path.abspath("demo-warehouse"))
LANDING = os.environ.get("PAIMONFLOW_LANDING", os.path.abspath("demo-landing"))

hourly = dg.HourlyPartitionsDefinition(start_date="2026-11-21-00:00")
daily = dg.DailyPartitionsDefinition(start_date="2026-11-01")

orders = paimon_table(TableSpec(table="shop.orders", source=LANDING + "/{partition}", partitions_def=hourly,
                                orphan_older_than=os.environ.get("PAIMONFLOW_ORPHAN_AGE", "1 d"),
                                orphan_min_older_than=os.environ.get("PAIMONFLOW_ORPHAN_MIN_AGE", "1 h")))
daily_sales = paimon_table(TableSpec(table="shop.daily_sales", source=LANDING + "/daily/{partition}",
                                     partitions_def=daily, partition_column="dt"))

read_changes = paimon_job_op("read-changes", "shop.orders", name="read_order_changes_op",
                             output=LANDING + "/changes/dagster", start_snapshot=0)


@dg.job(name="read_order_changes")
def read_order_changes():
    read_changes()


orders_sensor = paimon_snapshot_sensor("shop.orders", read_order_changes, read_op="read_order_changes_op")


@dg.asset(key=["orders_by_day"], deps=[dg.AssetKey(["paimon", "shop", "orders"])], io_manager_key="paimon_io_manager",
          metadata={"paimon/primary_keys": ["dt"]}, group_name="paimon")
def orders_by_day(paimon: PaimonResource) -> pa.Table:
    """Order totals per day, stored in the Paimon table dagster.orders_by_day."""
    rows = paimon.table("shop.orders").read(columns=["dt", "amount"])
    totals = rows.group_by("dt").aggregate([("amount", "sum"), ("amount", "count")])
    return totals.rename_columns(["dt", "amount", "orders"])


orders_asset_job = dg.define_asset_job("write_orders", selection=[dg.AssetKey(["paimon", "shop", "orders"])],
                                       executor_def=dg.in_process_executor)

defs = dg.Definitions(
    assets=[*orders["assets"], *daily_sales["assets"], orders_by_day],
    asset_checks=[*orders["asset_checks"], *daily_sales["asset_checks"]],
    jobs=[*orders["jobs"], *daily_sales["jobs"], read_order_changes, orders_asset_job],
    schedules=[*orders["schedules"], *daily_sales["schedules"]],
    sensors=[orders_sensor],
    resources={"paimon": PaimonResource(warehouse=WAREHOUSE), "spark": SparkResource(),
               "paimon_io_manager": PaimonIOManager(paimon=PaimonResource(warehouse=WAREHOUSE))},
)


def write_orders_job():
    """The orders write job, reconstructable (``dg.reconstructable(write_orders_job)``), which is
    what Dagster's re-execution of a run needs."""
    return defs.resolve_job_def("write_orders")
