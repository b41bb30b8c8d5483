"""Event-driven scheduling on table commits (Airflow 3 asset watchers): the triggerer runs
``PaimonCommitEventTrigger`` on ``shop.orders``; every batch of new APPEND/OVERWRITE snapshots
becomes an asset event, which starts this DAG: once per batch of commits, whoever made them (the
trigger's cursor survives triggerer restarts in the asset's state store). The run reads the table
as of the snapshot the event reports and refreshes a summary."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, task

from paimonflow.sensors.airflow import table_commits_asset

TABLE = "shop.orders"

# the commits of shop.orders in the paimon_default connection's warehouse (not the table's own
# asset, which the writing tasks name as outlets)
orders_commits = table_commits_asset(TABLE, poll_interval=10)

with DAG(dag_id="paimon_on_commit", schedule=[orders_commits], start_date=datetime(2026, 11, 1), catchup=False,
         tags=["paimonflow"]):

    @task
    def summarize(**context) -> dict:
        """Totals per day of the orders as of the snapshot the event reported (or the latest)."""
        import pyarrow.compute as pc

        from paimonflow.operators.airflow import PaimonHook

        # an asset watcher's event carries the trigger's payload under "payload" in its extra
        events = context.get("triggering_asset_events") or {}
        reported = [(e.extra or {}).get("payload", {}).get("end_snapshot") for evs in events.values() for e in evs]
        orders = PaimonHook().get_table(TABLE)
        snapshot = max([s for s in reported if s] or [orders.snapshot_manager.latest_id()])
        rows = orders.read(snapshot_id=snapshot, columns=["dt", "amount"])
        totals = rows.group_by("dt").aggregate([("amount", "sum")])
        return {"snapshot_id": snapshot, "reported": sorted(s for s in reported if s), "days": totals.num_rows,
                "amount": float(pc.sum(rows.column("amount")).as_py() or 0)}

    summarize()
