"""The snapshot sensor's durable cursor (issue 18): whatever the runs' logical dates (a manual run
with none, a backfill of an earlier day, a scheduled day), each run reports exactly the snapshots
committed since the previous run, and a downstream read of each range sees every row once."""

from __future__ import annotations

import contextlib
import threading
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from tests.airflow.conftest import WAREHOUSE, load_dag

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _table(name: str):
    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("lab", ignore_if_exists=True)
    return catalog.create_table(f"lab.{name}", SCHEMA, primary_keys=["id"], options={"bucket": "1"})


def _write(table, ids: list[int]) -> None:
    table.write(pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA))


def _outputs(run) -> tuple[dict, list[int]]:
    assert str(run.state) == "success"
    tis = {ti.task_id: ti for ti in run.get_task_instances()}
    return tis["wait"].xcom_pull(task_ids="wait"), tis["changed_ids"].xcom_pull(task_ids="changed_ids")


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(("dag_id", "name"), [("paimon_test_cursor", "cursor_poke"),
                                              ("paimon_test_cursor_deferred", "cursor_deferred")])
def test_each_run_reads_what_was_committed_since_the_previous_run(airflow_db, dag_id: str, name: str) -> None:
    dag, table = load_dag(dag_id), _table(name)
    _write(table, [1, 2])
    _write(table, [3])
    first, ids = _outputs(dag.test(logical_date=None))  # a manual run: no logical date at all
    assert (first["start_snapshot"], first["end_snapshot"]) == (0, 2) and ids == [1, 2, 3]

    _write(table, [4])
    table.compact(full=True)  # a compaction alone is not news
    backfill, ids = _outputs(dag.test(logical_date=datetime(2026, 11, 2, tzinfo=UTC)))  # before the first run
    assert backfill["start_snapshot"] == 2 and backfill["end_snapshot"] >= 3 and ids == [4]

    # the next run waits: its commit arrives while the sensor pokes (or sits in the trigger)
    threading.Timer(3.0, _write, (table, [5, 6])).start()
    scheduled, ids = _outputs(dag.test(logical_date=datetime(2026, 11, 25, tzinfo=UTC)))
    assert scheduled["start_snapshot"] == table.snapshot_manager.latest_id() - 1 and ids == [5, 6]


class DictAssetState:
    """Stands in for the triggerer's ``AssetStateStoreAccessors`` of the watched asset (``aget``,
    ``aset``), which needs the triggerer's supervisor behind it; the same dict across trigger
    instances is what the metadata database is across triggerer restarts. The real store under a
    real triggerer is exercised by the deployment tests."""

    def __init__(self) -> None:
        self.values: dict = {}

    async def aget(self, key: str, default=None):
        return self.values.get(key, default)

    async def aset(self, key: str, value) -> None:
        assert value is not None
        self.values[key] = value


def test_commit_watcher_waits_for_its_table_and_resumes_from_its_stored_cursor(airflow_db) -> None:
    import asyncio

    from paimonflow.sensors.airflow import PaimonCommitEventTrigger

    store = DictAssetState()

    def watcher() -> PaimonCommitEventTrigger:  # what the triggerer builds from the serialized kwargs
        trigger = PaimonCommitEventTrigger(table="lab.watched", warehouse=str(WAREHOUSE), poll_interval=0.1)
        trigger.asset_state_store = store
        return trigger

    async def events(trigger, n: int, while_waiting=None) -> list[dict]:
        """Run the trigger as the triggerer does (one task iterating its events) until it has
        reported ``n`` events, then cancel it (as a restart or a re-parse does)."""
        got: list[dict] = []

        async def consume() -> None:
            async for event in trigger.run():
                got.append(event.payload)

        task = asyncio.ensure_future(consume())
        if while_waiting is not None:
            await asyncio.sleep(0.5)
            await asyncio.to_thread(while_waiting)
        for _ in range(300):
            if len(got) >= n or task.done():
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)  # nothing more arrives
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return got

    holder: dict = {}

    def create_and_write() -> None:
        holder["table"] = _table("watched")
        _write(holder["table"], [1])

    # the table does not exist when the watcher starts: it waits, then reports the first commit
    first = asyncio.run(events(watcher(), 1, while_waiting=create_and_write))
    assert [(e["start_snapshot"], e["end_snapshot"]) for e in first] == [(0, 1)]

    # commits made while no watcher runs: the next one reports them once, from the stored cursor
    table = holder["table"]
    _write(table, [2])
    _write(table, [3])
    table.compact(full=True)
    again = asyncio.run(events(watcher(), 1))
    assert [(e["start_snapshot"], e["end_snapshot"]) for e in again] == [(1, 4)]

    # and a third instance has nothing to report until the next commit
    later = asyncio.run(events(watcher(), 1, while_waiting=lambda: _write(table, [4])))
    assert [(e["start_snapshot"], e["end_snapshot"]) for e in later] == [(4, 5)]
