"""The warehouse planner (issue 40): a generated warehouse of 20 tables in known states, each
planned by its own Paimon options and a policy; reasons quote the numbers and the option; the same
state plans the same actions; planning opens no data file; running the plan leaves every table
within its options' bounds and loses no row it should keep."""

from __future__ import annotations

import time
from datetime import date

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.cli.maintain import run_plan
from paimonflow.core.errors import InvalidArgumentError, InvalidOptionError
from paimonflow.core.maintenance.planner import plan_warehouse, warehouse_tables
from paimonflow.core.maintenance.policy import MaintenancePolicy, load_policy
from paimonflow.core.meta.schema_changes import SetOption
from tests.file_opens import FileOpens

PK = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                ("v", pa.float64())])
APPEND = pa.schema([("id", pa.int64()), pa.field("dt", pa.string(), nullable=False), ("v", pa.float64())])
TODAY = date.today().isoformat()
WRITE_ONLY = {"write-only": "true"}  # commits run no maintenance: the state stays as generated


def _rows(first: int, count: int, dt: str = TODAY, schema: pa.Schema = PK) -> pa.Table:
    return pa.table({"id": list(range(first, first + count)), "dt": [dt] * count,
                     "v": [float(i) for i in range(count)]}, schema=schema)


def build_warehouse(root) -> tuple[Catalog, dict[str, set[str]]]:
    """20 tables; returns the catalog and the actions each planned table is due (by its name)."""
    catalog = Catalog(str(root))
    for database in ("shop", "logs", "staging"):
        catalog.create_database(database)
    due: dict[str, set[str]] = {}

    for i in range(3):  # primary-key tables with piles of level-0 files
        name = f"shop.orders_{i}"
        t = catalog.create_table(name, PK, primary_keys=["id", "dt"], partition_keys=["dt"], options={
            **WRITE_ONLY, "bucket": "2", "num-sorted-run.compaction-trigger": "3"})
        for n in range(5 + i):
            t.write(_rows(n * 10, 10))
        due[name] = {"compact"}
    for i in range(3):  # append tables of small files
        name = f"logs.events_{i}"
        t = catalog.create_table(name, APPEND, partition_keys=["dt"], options={
            **WRITE_ONLY, "compaction.min.file-num": "4"})
        for n in range(4 + i):
            t.write(_rows(n * 10, 10, schema=APPEND))
        due[name] = {"compact"}
    for i in range(3):  # partitioned tables with partitions past partition.expiration-time
        name = f"shop.daily_{i}"
        t = catalog.create_table(name, PK, primary_keys=["id", "dt"], partition_keys=["dt"], options={
            **WRITE_ONLY, "bucket": "1", "partition.expiration-time": "30 d"})
        t.write(pa.concat_tables([_rows(0, 5, "2020-01-0" + str(i + 1)), _rows(0, 5, "2020-02-01"),
                                  _rows(100, 5)]))
        due[name] = {"expire-partitions"}
    for i in range(3):  # too many snapshots for snapshot.num-retained.max
        name = f"logs.clicks_{i}"
        t = catalog.create_table(name, APPEND, options={
            **WRITE_ONLY, "compaction.min.file-num": "50", "snapshot.num-retained.min": "2",
            "snapshot.num-retained.max": "3"})
        for n in range(6 + i):
            t.write(_rows(n * 10, 10, schema=APPEND))
        due[name] = {"expire-snapshots"}
    for i in range(1):  # tags past their time-to-live
        name = f"shop.tagged_{i}"
        t = catalog.create_table(name, PK, primary_keys=["id", "dt"], options={"bucket": "1"})
        t.write(_rows(0, 3))
        t.tags.create("old", time_retained="1 ms")
        t.tags.create("kept")
        due[name] = {"expire-tags"}
    name = "shop.changes"  # long-lived changelogs beyond changelog.num-retained.max (after an alter)
    t = catalog.create_table(name, PK, primary_keys=["id", "dt"], options={
        **WRITE_ONLY, "bucket": "1", "changelog-producer": "input", "num-sorted-run.compaction-trigger": "10",
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2", "changelog.num-retained.min": "1",
        "changelog.num-retained.max": "4"})
    for n in range(8):
        t.write(_rows(n * 10, 10))
    t.expire_snapshots()  # snapshots 5 and 6 become changelogs (8 - 4 + 1 = 5)
    t.alter([SetOption("changelog.num-retained.max", "3"), SetOption("changelog.time-retained", "1 ms")])
    due[name] = {"expire-changelogs"}
    name = "shop.watched"  # a consumer past consumer.expiration-time
    t = catalog.create_table(name, PK, primary_keys=["id", "dt"], options={
        "bucket": "1", "consumer.expiration-time": "1 ms"})
    t.write(_rows(0, 3))
    t.consumer_manager.record("stale-reader", 1)
    due[name] = {"reset-consumer"}
    name = "shop.hourly"  # automatic tags due (a write-only writer never creates them)
    t = catalog.create_table(name, PK, primary_keys=["id", "dt"], options={
        **WRITE_ONLY, "bucket": "1", "tag.automatic-creation": "process-time", "tag.creation-period": "hourly"})
    t.write(_rows(0, 3))
    due[name] = {"auto-tag"}
    name = "shop.later"  # a postpone-bucket table: rows wait in bucket-postpone
    t = catalog.create_table(name, PK, primary_keys=["id", "dt"], options={"bucket": "-2"})
    t.write(_rows(0, 4))
    due[name] = {"compact"}
    for i in range(2):  # healthy tables: nothing to do
        name = f"shop.healthy_{i}"
        t = catalog.create_table(name, PK, primary_keys=["id", "dt"], options={"bucket": "1"})
        t.write(_rows(0, 3))
        due[name] = set()
    t = catalog.create_table("staging.tmp", PK, primary_keys=["id", "dt"], options={**WRITE_ONLY, "bucket": "1"})
    for n in range(8):  # due, but excluded by the policy
        t.write(_rows(n, 1))
    t = catalog.create_table("logs.evolving", APPEND, options={  # compaction refused by the capability gate
        "row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    t.write(_rows(0, 3, schema=APPEND))
    time.sleep(0.02)  # the 1 ms time-to-live and expiration time pass
    return catalog, due


POLICY = MaintenancePolicy(exclude=("staging.*",), priorities=(("shop.orders_*", 5),))


@pytest.fixture
def warehouse(tmp_path):
    return build_warehouse(tmp_path / "wh")


def _planned(plan) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {t.table: set() for t in plan.tables}
    for action in plan.actions:
        found[action.table].add(action.action)
    return found


def _contents(catalog: Catalog, identifier: str) -> list[tuple]:
    rows = catalog.get_table(identifier).read().to_pylist()
    return sorted((r["id"], r["dt"], r["v"]) for r in rows)


def test_each_table_plans_what_its_options_call_for_with_the_numbers(warehouse):
    catalog, due = warehouse
    plan = plan_warehouse(catalog, policy=POLICY)
    assert _planned(plan) == due
    assert {(s.table, s.reason.split(":")[0]) for s in plan.skipped} == {
        ("staging.tmp", "excluded by the policy (staging.*)"), ("logs.evolving", "UnsupportedFeatureError")}
    assert "data evolution" in next(s.reason for s in plan.skipped if s.table == "logs.evolving")
    why = {(a.table, a.action): a for a in plan.actions}
    orders = why["shop.orders_2", "compact"]
    assert orders.option == "num-sorted-run.compaction-trigger" and orders.arguments == {"full": False}
    assert "2 of 2 bucket(s) above num-sorted-run.compaction-trigger (3) sorted runs; the most: 7 runs " \
           "(7 level-0 files)" in orders.why and orders.urgency == round(7 / 3, 2) and orders.priority == 5
    events = why["logs.events_0", "compact"]
    assert events.arguments == {"full": True} and events.option == "compaction.min.file-num"
    assert "at least compaction.min.file-num (4) files" in events.why and "4 small files" in events.why
    daily = why["shop.daily_1", "expire-partitions"]
    assert daily.arguments == {"expiration_millis": 30 * 86_400_000}
    assert daily.why.startswith("2 of 3 partition(s) older than partition.expiration-time (30 d): "
                                "dt=2020-01-02, dt=2020-02-01")
    clicks = why["logs.clicks_2", "expire-snapshots"]
    assert clicks.arguments == {"retain_min": 2, "retain_max": 3, "older_than_millis": 3_600_000, "max_deletes": 50}
    changes = why["shop.changes", "expire-changelogs"]
    assert changes.arguments == {"retain_min": 1, "retain_max": 3, "older_than_millis": 1, "max_deletes": 50}
    assert changes.why.startswith("1 of 2 long-lived changelog(s) beyond changelog.num-retained.min (1) / max (3) "
                                  "and changelog.time-retained (1 ms): changelogs 5 to 5")
    assert clicks.why.startswith("5 of 8 retained snapshot(s) beyond snapshot.num-retained.max (3): snapshots 1 "
                                 "to 5") and clicks.option == "snapshot.num-retained.max"
    assert "1 of 2 tag(s) past their time-to-live" in why["shop.tagged_0", "expire-tags"].why
    assert why["shop.watched", "reset-consumer"].arguments == {"consumer_id": "stale-reader"}
    assert why["shop.later", "compact"].why.startswith("1 file(s) wait in bucket-postpone")
    assert why["shop.hourly", "auto-tag"].option == "tag.automatic-creation"
    # most urgent first: the policy's priority, then urgency
    assert [a.table for a in plan.actions[:3]] == ["shop.orders_2", "shop.orders_1", "shop.orders_0"]
    health = {h.table: h for h in plan.tables}
    assert health["shop.orders_2"].max_sorted_runs == 7 and health["shop.orders_2"].level0_files == 14
    assert health["logs.clicks_2"].snapshots == 8 and health["logs.clicks_2"].snapshots_due == 5
    assert health["shop.later"].postpone_files == 1
    assert health["shop.healthy_0"].millis_since_compaction is None and health["shop.healthy_0"].data_files == 1


def test_the_same_state_plans_the_same_actions_and_planning_changes_nothing(warehouse, tmp_path):
    catalog, _ = warehouse
    from tests.files import tree

    plan_warehouse(catalog, policy=POLICY)  # may write a missing EARLIEST hint, as expiry's planning does
    before = tree(tmp_path / "wh")
    first = plan_warehouse(catalog, policy=POLICY, now_millis=int(time.time() * 1000))
    second = plan_warehouse(catalog, policy=POLICY, now_millis=first.now_millis)
    assert first.to_dict() == second.to_dict() and first.actions
    assert tree(tmp_path / "wh") == before
    import json

    json.dumps(first.to_dict())  # JSON-able as it is


def test_planning_opens_no_data_file(warehouse, tmp_path):
    catalog, _ = warehouse
    with FileOpens(str(tmp_path / "wh")) as opens:
        plan = plan_warehouse(catalog, policy=POLICY)
    assert plan.actions
    assert opens.data_files == set(), sorted(opens.data_files)
    assert any("/manifest/manifest-" in f and "list" not in f for f in opens.files)  # the counter sees manifests


def test_running_the_plan_leaves_every_table_within_its_options_and_loses_no_row(warehouse):
    catalog, due = warehouse
    planned = set(due)
    before = {name: _contents(catalog, name) for name in planned}
    assert before["shop.later"] == []  # batch reads skip the postpone bucket until a compaction
    before["shop.later"] = sorted((r["id"], r["dt"], r["v"]) for r in _rows(0, 4).to_pylist())
    plan = plan_warehouse(catalog, policy=POLICY)
    outcomes = run_plan(catalog, plan, policy=POLICY)
    assert [o.status for o in outcomes] == ["done"] * len(plan.actions), [o.to_dict() for o in outcomes]
    assert all("still due" not in o.detail for o in outcomes), [o.detail for o in outcomes]
    after = plan_warehouse(catalog, policy=POLICY)
    assert after.actions == (), [a.to_dict() for a in after.actions]
    for name in planned:
        kept = [r for r in before[name] if not r[1].startswith("2020-")]  # expired partitions go
        assert _contents(catalog, name) == kept, name
    health = {h.table: h for h in after.tables}
    assert all(health[f"shop.orders_{i}"].max_sorted_runs <= 3 for i in range(3))
    assert all(health[f"logs.clicks_{i}"].snapshots <= 3 for i in range(3))
    assert health["shop.later"].postpone_files == 0 and health["shop.tagged_0"].tags == 1
    assert health["shop.changes"].changelogs == 1
    assert catalog.get_table("shop.watched").consumer_manager.ids() == []
    assert health["shop.orders_0"].millis_since_compaction is not None
    # a second run has nothing to do
    assert run_plan(catalog, after, policy=POLICY) == []


def test_an_action_done_meanwhile_is_dropped_when_rechecked(warehouse):
    catalog, _ = warehouse
    plan = plan_warehouse(catalog, "shop.orders_*", policy=POLICY)
    assert [a.table for a in plan.actions] == ["shop.orders_2", "shop.orders_1", "shop.orders_0"]
    catalog.get_table("shop.orders_1").compact(full=True)  # someone else compacts one of them
    outcomes = run_plan(catalog, plan, policy=POLICY)
    assert [(o.table, o.status) for o in outcomes] == [
        ("shop.orders_2", "done"), ("shop.orders_1", "skipped"), ("shop.orders_0", "done")]
    assert "no longer due" in outcomes[1].detail


def test_globs_policy_defaults_actions_and_budget(warehouse, tmp_path):
    catalog, _ = warehouse
    assert warehouse_tables(catalog, "*.healthy_*") == ["shop.healthy_0", "shop.healthy_1"]
    assert warehouse_tables(catalog, "logs") == [f"logs.{n}" for n in (
        "clicks_0", "clicks_1", "clicks_2", "events_0", "events_1", "events_2", "evolving")]
    # defaults fill options the tables do not set: the healthy tables now keep too many snapshots
    t = catalog.get_table("shop.healthy_0")
    t.write(_rows(10, 1))
    t.write(_rows(20, 1))
    strict = MaintenancePolicy(defaults={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
    plan = plan_warehouse(catalog, "shop.healthy_*", policy=strict)
    [action] = plan.actions
    assert (action.table, action.action, action.arguments["retain_max"]) == ("shop.healthy_0", "expire-snapshots", 2)
    assert "1 of 3 retained snapshot(s) beyond snapshot.num-retained.max (2)" in action.why
    # a maximum below the tables' minimum (10) contradicts: each table is skipped saying so, none planned
    contradicting = MaintenancePolicy(defaults={"snapshot.num-retained.max": "2"})
    plan = plan_warehouse(catalog, "shop.healthy_*", policy=contradicting)
    assert plan.actions == () and [s.reason for s in plan.skipped] == [
        "InvalidArgumentError: retain_max (2) must be at least retain_min (10)"] * 2
    # only some actions; a budget of compactions defers the least urgent
    only = MaintenancePolicy(actions=("compact",), max_compactions=2, exclude=("staging.*",))
    plan = plan_warehouse(catalog, policy=only)
    assert {a.action for a in plan.actions} == {"compact"} and len(plan.actions) == 2
    assert len(plan.deferred) == 5 and all(a.urgency <= plan.actions[-1].urgency for a in plan.deferred)
    # a policy file, in each format
    (tmp_path / "p.json").write_text('{"exclude": ["staging.*"], "budget": {"concurrent-compactions": 2}}')
    (tmp_path / "p.toml").write_text('exclude = ["staging.*"]\n[defaults]\n"partition.expiration-time" = "7 d"\n')
    (tmp_path / "p.yaml").write_text("priorities:\n  'shop.*': 3\nactions: [compact]\n")
    assert load_policy(tmp_path / "p.json").concurrent_compactions == 2
    assert load_policy(tmp_path / "p.toml").defaults == {"partition.expiration-time": "7 d"}
    assert load_policy(tmp_path / "p.yaml").priority_of("shop.x") == 3


@pytest.mark.parametrize(("document", "error", "words"), [
    ({"exclude": ["a.*"], "retention": 3}, InvalidArgumentError, "unknown key 'retention'"),
    ({"defaults": {"bucket": "2"}}, InvalidArgumentError, "'bucket' cannot be defaulted"),
    ({"defaults": {"snapshot.num-retained.max": "0"}}, InvalidOptionError, "snapshot.num-retained.max"),
    ({"defaults": {"partition.expiration-time": "soon"}}, InvalidOptionError, "partition.expiration-time"),
    ({"actions": ["vacuum"]}, InvalidArgumentError, "unknown action 'vacuum'"),
    ({"budget": {"concurrent-compactions": 0}}, InvalidArgumentError, "at least 1"),
    ({"budget": {"cores": 4}}, InvalidArgumentError, "unknown budget key 'cores'"),
])
def test_a_bad_policy_is_one_typed_error(document, error, words):
    with pytest.raises(error, match=words):
        MaintenancePolicy.from_mapping(document)


def test_a_concurrent_run_within_the_budget_does_the_same(warehouse):
    catalog, _ = warehouse
    policy = MaintenancePolicy(exclude=("staging.*",), concurrent_compactions=3)
    plan = plan_warehouse(catalog, policy=policy)
    outcomes = run_plan(catalog, plan, policy=policy)
    assert sorted((o.table, o.action) for o in outcomes) == sorted((a.table, a.action) for a in plan.actions)
    assert {o.status for o in outcomes} == {"done"}
    assert plan_warehouse(catalog, policy=policy).actions == ()
