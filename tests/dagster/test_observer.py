"""Commits made outside Dagster become asset events: the commit observer sensor against real
commits (core writes, compaction, rollback, expiry), and declarative automation reacting to the
event. (The same under a running ``dagster-daemon``: tests/dagster/test_deployment.py.)"""

# No ``from __future__ import annotations``: Dagster reads annotations at runtime.

import json

import dagster as dg
import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.operators.dagster import PaimonResource
from paimonflow.sensors.dagster import paimon_commit_observer

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
KEY = dg.AssetKey(["paimon", "db", "events"])


@pytest.fixture
def setup(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.events", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    return table, {"paimon": PaimonResource(warehouse=str(tmp_path / "wh"))}


def rows(*ids):
    return pa.table({"id": list(ids), "v": ["x"] * len(ids)}, schema=SCHEMA)


class Ticks:
    """The sensor evaluated tick after tick, its cursor carried over as the daemon does."""

    def __init__(self, resources, instance=None):
        self.sensor = paimon_commit_observer("db.events", KEY)
        self.resources, self.instance, self.cursor = resources, instance, None

    def __call__(self):
        context = dg.build_sensor_context(cursor=self.cursor, resources=self.resources, instance=self.instance)
        data = self.sensor.evaluate_tick(context)
        self.cursor = data.cursor
        return data.asset_events


def test_each_external_commit_range_is_exactly_one_materialization(setup):
    table, resources = setup
    tick = Ticks(resources)
    assert tick() == []  # an empty table
    table.write(rows(1, 2))
    [event] = tick()
    assert event.asset_key == KEY and event.tags["dagster/data_version"] == "1"
    meta = {k: v.value for k, v in event.metadata.items()}
    assert (meta["paimon/start_snapshot"], meta["paimon/end_snapshot"], meta["paimon/delta_records"]) == (0, 1, 2)
    assert meta["paimon/commit_kinds"] == {"APPEND": 1} and meta["dagster/table_name"] == "db.events"
    assert tick() == []  # seen: nothing again
    table.write(rows(3))
    table.write(rows(4))
    [event] = tick()  # two commits between ticks: one event for the range
    assert event.tags["dagster/data_version"] == "3"
    assert {k: v.value for k, v in event.metadata.items()}["paimon/start_snapshot"] == 1
    table.compact(full=True)
    assert tick() == []  # a compaction changes no data
    assert json.loads(tick.cursor)["snapshot_id"] == 4


def test_commits_of_dagster_runs_are_not_reported_twice(setup):
    table, resources = setup
    tick = Ticks(resources)
    table.write(rows(1), commit_user="dagster.write_db_events.all.0b1e", commit_identifier=1)
    assert tick() == []  # that run materialized the asset itself
    table.write(rows(2), commit_user="flink-job-7")
    [event] = tick()
    assert {k: v.value for k, v in event.metadata.items()}["paimon/commit_users"] == ["flink-job-7"]


def test_a_rollback_and_unseen_expiry_are_reported_not_skipped(setup):
    table, resources = setup
    tick = Ticks(resources)
    for i in range(3):
        table.write(rows(i))
    assert len(tick()) == 1
    table.rollback(snapshot_id=1)
    table.write(rows(9))
    [event] = tick()
    meta = {k: v.value for k, v in event.metadata.items()}
    assert meta["paimon/rolled_back"] is True and event.tags["dagster/data_version"] == "2"
    for i in range(10, 14):
        table.write(rows(i))
    table.expire_snapshots(retain_min=1, retain_max=1)  # all but the latest go before the sensor saw them
    [event] = tick()
    meta = {k: v.value for k, v in event.metadata.items()}
    latest = table.snapshot_manager.latest_id()
    assert meta["paimon/expired_past"] is True and event.tags["dagster/data_version"] == str(latest)


def test_an_eager_downstream_asset_is_requested_after_an_external_commit(setup):
    table, resources = setup

    @dg.asset(key=KEY)
    def events():
        raise AssertionError("written by another engine, never materialized here")

    @dg.asset(deps=[KEY], automation_condition=dg.AutomationCondition.eager())
    def event_counts():
        return None

    with dg.DagsterInstance.ephemeral() as instance:
        tick = Ticks(resources, instance)

        def requested():
            result = dg.evaluate_automation_conditions(defs=[events, event_counts], instance=instance,
                                                       cursor=requested.cursor)
            requested.cursor = result.cursor
            return result.get_requested_partitions(event_counts.key)

        requested.cursor = None
        assert not requested()
        table.write(rows(1))
        for event in tick():
            instance.report_runless_asset_event(event)
        assert requested() == {None}  # the unpartitioned asset is requested once
        assert not requested()  # and not again without a new commit


def test_the_fresh_health_check_reads_the_latest_commit_made_anywhere(setup):
    from datetime import timedelta

    from paimonflow.operators.dagster import TableSpec, paimon_table

    table, resources = setup

    def fresh(window):
        [checks] = paimon_table(TableSpec(table="db.events", freshness=window))["asset_checks"]
        results = {r.check_name: r for r in checks(dg.build_op_context(resources=resources))}
        return results["fresh"]

    assert fresh(timedelta(hours=1)).passed is False  # no commit at all yet
    import time

    with table.new_write() as writer:  # a commit made outside Dagster two hours ago
        writer.write(rows(1))
        table.new_commit("flink-job-7", clock=lambda: time.time() - 7200).commit(writer.prepare_commit())
    stale = fresh(timedelta(hours=1))
    assert stale.passed is False and stale.metadata["age_seconds"].value >= 7200
    table.write(rows(2), commit_user="flink-job-7")  # and one now
    result = fresh(timedelta(hours=1))
    assert result.passed is True and result.metadata["latest_snapshot"].value == 2


def test_a_freshness_window_under_a_minute_is_refused_in_one_line():
    from datetime import timedelta

    from paimonflow.core.errors import InvalidArgumentError
    from paimonflow.operators.dagster import TableSpec

    with pytest.raises(InvalidArgumentError) as caught:
        TableSpec(table="db.events", freshness=timedelta(seconds=5))
    assert str(caught.value) == ("TableSpec('db.events'): freshness must be at least 1 minute (Dagster's smallest "
                                 "freshness window), got 0:00:05")
