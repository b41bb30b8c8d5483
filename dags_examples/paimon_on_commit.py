"""Event-driven scheduling on table commits (Airflow 3 asset watchers): the triggerer runs
``PaimonCommitEventTrigger`` on ``shop.orders``; every batch of new APPEND/OVERWRITE snapshots
becomes an asset event, which starts this DAG. The run reads what changed between the snapshots
the event reports and refreshes a downstream summary table."""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, Asset, AssetWatcher, task

from paimonflow.operators.airflow import table_asset
from paimonflow.sensors.airflow import PaimonCommitEventTrigger

WAREHOUSE = os.environ.get("PAIMONFLOW_WAREHOUSE", os.path.abspath("demo-warehouse"))
TABLE = "shop.orders"

_orders = table_asset(WAREHOUSE, TABLE)
orders_commits = Asset(
    uri=_orders.uri,
    name=_orders.name,
    watchers=[AssetWatcher(name="paimon_orders_commits",
                           trigger=PaimonCommitEventTrigger(table=TABLE, warehouse=WAREHOUSE, poll_interval=30))],
)

with DAG(dag_id="paimon_on_commit", schedule=[orders_commits], start_date=datetime(2026, 11, 1), catchup=False,
         tags=["paimonflow"]):

    @task
    def summarize(**context) -> dict:
        """Totals per day of the orders as of the snapshot the event reported (or the latest)."""
        import pyarrow.compute as pc

        from paimonflow.core import Catalog

        events = context.get("triggering_asset_events") or {}
        reported = [e.extra.get("end_snapshot") for evs in events.values() for e in evs if e.extra]
        orders = Catalog(WAREHOUSE).get_table(TABLE)
        snapshot = max([s for s in reported if s] or [orders.snapshot_manager.latest_id()])
        rows = orders.read(snapshot_id=snapshot, columns=["dt", "amount"])
        totals = rows.group_by("dt").aggregate([("amount", "sum")])
        return {"snapshot_id": snapshot, "days": totals.num_rows,
                "amount": float(pc.sum(rows.column("amount")).as_py() or 0)}

    summarize()
