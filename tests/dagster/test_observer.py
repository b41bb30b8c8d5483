"""Commits made outside Dagster become asset events: the commit observer sensor against real
commits (core writes, compaction, rollback, expiry), and declarative automation reacting to the
event. (The same under a running ``dagster-daemon``: tests/dagster/test_deployment.py.)"""

# No ``from __future__ import annotations``: Dagster reads annotations at runtime.

import datetime
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
        with dg.build_sensor_context(cursor=self.cursor, resources=self.resources, instance=self.instance) as context:
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


# -- partition-aware: one event per partition key a range touched -------------------------------

DAILY = dg.DailyPartitionsDefinition(start_date="2026-11-01")
DAYS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                  ("v", pa.string())])
SALES = dg.AssetKey(["paimon", "db", "sales"])


def day_rows(dt, *ids):
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": ["x"] * len(ids)}, schema=DAYS)


def by_partition(events) -> dict:
    return {e.partition: ({k: v.value for k, v in e.metadata.items()}, e.tags["dagster/data_version"])
            for e in events}


@pytest.fixture
def sales(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.sales", DAYS, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "1"})
    return table, {"paimon": PaimonResource(warehouse=str(tmp_path / "wh"))}


def test_a_daily_asset_gets_one_materialization_per_day_the_commits_touched(sales):
    table, resources = sales
    tick = Ticks(resources)
    tick.sensor = paimon_commit_observer("db.sales", SALES, partitions_def=DAILY, partition_column="dt")
    assert tick() == []
    table.write(pa.concat_tables([day_rows("2026-11-02", 1, 2), day_rows("2026-11-03", 3)]), commit_user="flink")
    table.write(day_rows("2026-11-03", 4, 5), commit_user="flink")
    events = by_partition(tick())
    assert set(events) == {"2026-11-02", "2026-11-03"}
    meta, version = events["2026-11-02"]
    assert version == "1" and meta["paimon/delta_records"] == 2 and meta["paimon/commit_kinds"] == {"APPEND": 1}
    meta, version = events["2026-11-03"]
    assert version == "2" and meta["paimon/delta_records"] == 3 and meta["paimon/commit_kinds"] == {"APPEND": 2}
    assert (meta["paimon/start_snapshot"], meta["paimon/end_snapshot"]) == (0, 2)
    assert meta["dagster/table_name"] == "db.sales"
    # an overwrite of one day is that day's event; a compaction is none
    table.write(day_rows("2026-11-02", 7), overwrite={"dt": "2026-11-02"}, commit_user="spark-backfill")
    table.compact(full=True)
    events = by_partition(tick())
    assert set(events) == {"2026-11-02"}
    meta, version = events["2026-11-02"]
    assert version == "3" and meta["paimon/delta_records"] == 1 - 2 and meta["paimon/commit_kinds"] == {"OVERWRITE": 1}
    assert tick() == []


def test_days_touched_only_by_dagster_runs_are_not_reported_again_and_non_keys_are_left_out(sales, capfd):
    table, resources = sales
    tick = Ticks(resources)
    tick.sensor = paimon_commit_observer("db.sales", SALES, partitions_def=DAILY, partition_column="dt")
    table.write(day_rows("2026-11-04", 1), commit_user="dagster.io.db.sales.dt_2026-11-04.abc.run1",
                commit_identifier=1)
    table.write(pa.concat_tables([day_rows("2026-11-05", 2), day_rows("2019-01-01", 3), day_rows("soon", 4)]),
                commit_user="flink")
    events = by_partition(tick())
    assert set(events) == {"2026-11-05"}  # 2026-11-04 was the Dagster run's; the others are no keys
    assert events["2026-11-05"][0]["paimon/commit_users"] == ["flink"]
    assert "touched dt values that are no partition keys of paimon/db/sales, not reported: '2019-01-01', 'soon'" \
        in capfd.readouterr().err  # the tick's log


@pytest.mark.parametrize("column_type, definition, values, keys", [
    (pa.date32(), DAILY, [datetime.date(2026, 11, 2), datetime.date(2026, 11, 3)], {"2026-11-02", "2026-11-03"}),
    (pa.timestamp("us"), dg.HourlyPartitionsDefinition(start_date="2026-11-21-00:00"),
     [datetime.datetime(2026, 11, 21, 5, 0), datetime.datetime(2026, 11, 21, 7, 0)],
     {"2026-11-21-05:00", "2026-11-21-07:00"}),
    (pa.string(), dg.StaticPartitionsDefinition(["eu", "us"]), ["eu", "us"], {"eu", "us"}),
])
def test_date_timestamp_and_static_partitions_map_to_their_keys(tmp_path, column_type, definition, values, keys):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", column_type, nullable=False)])
    table = catalog.create_table("db.sales", schema, partition_keys=["p"])
    tick = Ticks({"paimon": PaimonResource(warehouse=str(tmp_path / "wh"))})
    tick.sensor = paimon_commit_observer("db.sales", SALES, partitions_def=definition, partition_column="p")
    table.write(pa.table({"id": list(range(len(values))), "p": values}, schema=schema))
    assert set(by_partition(tick())) == keys


def test_a_partitioned_asset_without_a_mapping_is_refused_when_the_definitions_load():
    from paimonflow.core.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError) as caught:
        paimon_commit_observer("db.sales", SALES, partitions_def=DAILY)
    assert str(caught.value) == (
        "the commit observer of db.sales (paimon/db/sales): the asset is partitioned (DailyPartitionsDefinition): "
        "give partition_column, the table's partition column whose values are its partition keys, so each commit "
        "is reported for the partitions it touched")
    multi = dg.MultiPartitionsDefinition({"day": DAILY, "shop": dg.StaticPartitionsDefinition(["a"])})
    with pytest.raises(InvalidArgumentError, match="the asset has MultiPartitionsDefinition partitions, for which no "
                                                    "mapping from a table partition to a partition key is defined"):
        paimon_commit_observer("db.sales", SALES, partitions_def=multi, partition_column="dt")


def test_a_table_not_partitioned_by_the_column_fails_the_tick_in_one_line(setup):
    from paimonflow.core.errors import InvalidArgumentError

    table, resources = setup  # db.events has no partition keys
    sensor = paimon_commit_observer("db.events", KEY, partitions_def=DAILY, partition_column="dt")
    table.write(rows(1))
    with pytest.raises(InvalidArgumentError) as caught, dg.build_sensor_context(resources=resources) as context:
        sensor.evaluate_tick(context)
    assert str(caught.value) == ("db.events is not partitioned by 'dt' (its partition keys are []): its partitions "
                                 "map to no partition key")


def test_an_eager_daily_asset_is_requested_for_the_day_an_external_commit_touched(sales):
    table, resources = sales

    @dg.asset(key=SALES, partitions_def=DAILY)
    def sales_asset():
        raise AssertionError("written by another engine, never materialized here")

    @dg.asset(deps=[SALES], partitions_def=DAILY, automation_condition=dg.AutomationCondition.eager())
    def daily_report():
        return None

    with dg.DagsterInstance.ephemeral() as instance:
        tick = Ticks(resources, instance)
        tick.sensor = paimon_commit_observer("db.sales", SALES, partitions_def=DAILY, partition_column="dt")
        cursor = dg.evaluate_automation_conditions(defs=[sales_asset, daily_report], instance=instance).cursor
        today = DAILY.get_last_partition_key()  # eager() follows the latest day
        table.write(pa.concat_tables([day_rows(today, 1), day_rows("2026-11-06", 2)]), commit_user="flink")
        for event in tick():
            instance.report_runless_asset_event(event)
        result = dg.evaluate_automation_conditions(defs=[sales_asset, daily_report], instance=instance, cursor=cursor)
        assert result.get_requested_partitions(daily_report.key) == {today}
        records = instance.fetch_materializations(SALES, limit=10).records
        assert sorted(r.partition_key for r in records) == sorted({"2026-11-06", today})


def test_a_long_range_is_reported_in_parts_oldest_first_none_left_out(sales, monkeypatch):
    """A range longer than the snapshots read per tick (``MAX_ATTRIBUTED``, 2 here) is reported
    part by part, the cursor stopping at each part's last snapshot: every day is reported once."""
    from paimonflow.sensors.dagster import observer

    monkeypatch.setattr(observer, "MAX_ATTRIBUTED", 2)
    table, resources = sales
    tick = Ticks(resources)
    tick.sensor = paimon_commit_observer("db.sales", SALES, partitions_def=DAILY, partition_column="dt")
    for day in range(2, 7):
        table.write(day_rows(f"2026-11-0{day}", day), commit_user="flink")
    parts = [sorted(by_partition(tick())) for _ in range(4)]
    assert parts == [["2026-11-02", "2026-11-03"], ["2026-11-04", "2026-11-05"], ["2026-11-06"], []]
    assert json.loads(tick.cursor)["snapshot_id"] == 5
