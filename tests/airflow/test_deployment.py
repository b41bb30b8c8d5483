"""The example DAGs in a real Airflow deployment (``deployment.py``): PostgreSQL, and the API server,
scheduler (LocalExecutor), dag-processor and triggerer as separate processes on 127.0.0.1, with real
users. Everything goes through the REST API as a team would drive it: the ``paimon`` connection
and the Variables are created there, runs are triggered, cleared and backfilled there, and their
states read from there. Commits made outside Airflow come from the core (another writer).

The tests run in file order and build on each other (one deployment for the module): set-up; the
hourly ingestion (scheduled, manual, cleared and rerun; its deferrable sensor released by the
triggerer); the event-driven DAG (one run per external commit across re-parses and a triggerer
restart, none for compactions); the nightly maintenance; the backfill (its rerun commits nothing);
the table-health page behind login, rendered by Chromium. What happened is written to the module's
report (``PAIMONFLOW_DEPLOYMENT_REPORT``, if set, receives a copy)."""

from __future__ import annotations

import glob
import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog

from .deployment import Deployment, wait_for

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])
HOURLY, ON_COMMIT, NIGHTLY, BACKFILL = ("paimon_ingest_hourly", "paimon_on_commit", "paimon_maintenance_nightly",
                                        "paimon_backfill_daily")
REPORT: dict[str, Any] = {}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("deployment")
    started = time.monotonic()
    deployed = Deployment(home=root / "airflow", warehouse=root / "warehouse", landing=root / "landing")
    try:
        deployed.start()
        deployed.wait_for_dags(HOURLY, ON_COMMIT, NIGHTLY, BACKFILL)  # and no import error
        REPORT["start_seconds"] = round(time.monotonic() - started, 1)
        yield deployed
    finally:
        try:
            REPORT["runs"] = {dag: [(r["run_type"], r["dag_run_id"], r["state"]) for r in deployed.runs(dag)]
                              for dag in (HOURLY, ON_COMMIT, NIGHTLY, BACKFILL)}
        except Exception as exc:  # the report must not hide the test's own failure
            REPORT["runs"] = f"unavailable: {exc}"
        deployed.stop()
        REPORT["total_seconds"] = round(time.monotonic() - started, 1)
        text = json.dumps(REPORT, indent=1, default=str)
        (root / "report.json").write_text(text)
        if os.environ.get("PAIMONFLOW_DEPLOYMENT_REPORT"):
            Path(os.environ["PAIMONFLOW_DEPLOYMENT_REPORT"]).write_text(text)


def orders(deployment: Deployment):
    return Catalog(str(deployment.warehouse)).get_table("shop.orders")


def snapshots(table) -> list[tuple[int, str, str]]:
    return [(s.id, s.commit_kind, s.commit_user) for s in table.snapshot_manager.snapshots()]


def external_commit(deployment: Deployment, ids: range) -> int:
    """A commit of another writer (not Airflow): new order ids; returns its snapshot id."""
    table = orders(deployment)
    table.write(pa.table({"id": list(ids), "dt": ["2026-11-20"] * len(ids), "amount": [1.5] * len(ids)},
                         schema=SCHEMA), commit_user="external-writer")
    return orders(deployment).snapshot_manager.latest_id()


def test_the_connection_variables_and_tables_are_set_up_through_the_rest_api(deployment):
    connection = {"connection_id": "paimon_default", "conn_type": "paimon", "host": str(deployment.warehouse),
                  "extra": json.dumps({"engine": "core"})}
    # a viewer may not create connections; an admin may
    assert deployment.request("POST", "/api/v2/connections", user="analyst", json=connection).status_code == 403
    assert deployment.request("POST", "/api/v2/connections", user=None, json=connection).status_code == 401
    deployment.api("POST", "/connections", json=connection, expect=201)
    for key, value in {"paimonflow_landing": str(deployment.landing), "paimonflow_orphan_age": "0 ms",
                       "paimonflow_orphan_min_age": "0 ms"}.items():
        deployment.api("POST", "/variables", json={"key": key, "value": value}, expect=201)
    # the tables, created beforehand as a data-platform team does (docs/airflow.md)
    catalog = Catalog(str(deployment.warehouse))
    catalog.create_database("shop")
    catalog.create_table("shop.orders", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2"})
    catalog.create_table("shop.daily_sales", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1"})
    assert deployment.api("GET", "/connections/paimon_default")["conn_type"] == "paimon"


def _land_hour(deployment: Deployment, hour: datetime, ids: range) -> None:
    folder = deployment.landing / hour.strftime("%Y-%m-%dT%H")
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": list(ids), "dt": [hour.strftime("%Y-%m-%d")] * len(ids),
                             "amount": [2.0] * len(ids)}, schema=SCHEMA), folder / "orders.parquet")


def _changes(deployment: Deployment) -> dict[str, list[int]]:
    """What ``read_changes`` wrote downstream, per snapshot-range folder."""
    return {Path(folder).name: sorted(pq.read_table(folder).column("id").to_pylist())
            for folder in sorted(glob.glob(str(deployment.landing / "changes" / "*-*")))}


def _sensor_range(deployment: Deployment, run_id: str) -> dict[str, Any]:
    return deployment.api("GET", f"/dags/{HOURLY}/dagRuns/{run_id}/taskInstances/wait_for_commit/xcomEntries/"
                                 "return_value")["value"]


@pytest.mark.timeout(900)  # up to 5 minutes of waiting for the next hour, then about 2 of runs
def test_the_hourly_ingestion_reads_each_committed_row_once_across_scheduled_manual_and_cleared_runs(deployment):
    now = datetime.now(UTC)
    if now.minute >= 55:  # the scheduled and the manual runs must fall in the same hour: wait for the next one
        time.sleep((60 - now.minute) * 60 - now.second + 5)
        now = datetime.now(UTC)
    hour = now.replace(minute=0, second=0, microsecond=0)
    _land_hour(deployment, hour, range(0, 10))
    # A DAG parsed in the previous hour still has that hour as its next run: unpaused now, it would
    # get that run too. Have it parsed again until its next run is this hour.
    (deployment.dags / f"{HOURLY}.py").touch()
    wait_for(f"{HOURLY}'s next run to be {hour:%H}:00", lambda: _next_run(deployment, HOURLY) >= hour,
             timeout=120, every=2, log=deployment.logs)

    # 1. scheduled: unpausing creates the run of the latest hour (catch-up is off)
    deployment.set_paused(HOURLY, False)
    scheduled = wait_for("the scheduled hourly run", lambda: next(
        (r for r in deployment.runs(HOURLY) if r["run_type"] == "scheduled"), None), timeout=120, every=2,
        log=deployment.logs)
    assert datetime.fromisoformat(scheduled["logical_date"]) == hour
    deployment.wait_for_run(HOURLY, scheduled["dag_run_id"])
    table = orders(deployment)
    assert table.read().num_rows == 10
    assert table.latest_snapshot().commit_user == f"airflow.paimon_ingest_hourly.load.{hour:%Y-%m-%dT%H}"

    # 2. manual (no logical date), in the same hour: its load recognises the hour as loaded and commits
    # nothing; the sensor defers, and the triggerer releases it on the next commit, made outside Airflow
    manual = deployment.trigger(HOURLY)
    wait_for("the sensor to defer", lambda: deployment.task_instances(HOURLY, manual).get("wait_for_commit")
             == "deferred", timeout=180, every=2, log=deployment.logs)
    assert orders(deployment).snapshot_manager.latest_id() == table.snapshot_manager.latest_id()
    first_external = external_commit(deployment, range(100, 105))
    deployment.wait_for_run(HOURLY, manual)
    released = _sensor_range(deployment, manual)
    assert released["end_snapshot"] == first_external

    # 3. cleared and rerun after another external commit: the rerun returns the range it had claimed
    second_external = external_commit(deployment, range(200, 205))
    deployment.api("POST", f"/dags/{HOURLY}/dagRuns/{manual}/clear", json={"dry_run": False})
    wait_for("the cleared run to start again", lambda: deployment.api(
        "GET", f"/dags/{HOURLY}/dagRuns/{manual}")["state"] in ("queued", "running"), timeout=60, every=1)
    deployment.wait_for_run(HOURLY, manual)
    assert _sensor_range(deployment, manual) == released

    # 4. the next (manual) run takes what the cleared one left: the second external commit
    following = deployment.trigger(HOURLY)
    deployment.wait_for_run(HOURLY, following)
    assert _sensor_range(deployment, following)["end_snapshot"] == second_external

    changes = _changes(deployment)
    downstream = sorted(i for ids in changes.values() for i in ids)
    assert downstream == [*range(0, 10), *range(100, 105), *range(200, 205)]  # each committed row exactly once
    assert len(changes) == 3
    REPORT["hourly"] = {"hour": hour.isoformat(), "runs": {
        "scheduled": scheduled["dag_run_id"], "manual (deferred, cleared and rerun)": manual, "manual": following},
        "ranges": {run: _sensor_range(deployment, run) for run in (scheduled["dag_run_id"], manual, following)},
        "changes": {folder: len(ids) for folder, ids in changes.items()},
        "snapshots": snapshots(orders(deployment))}


def _next_run(deployment: Deployment, dag_id: str) -> datetime:
    """The logical date of the DAG's next scheduled run (as its last parse computed it)."""
    found = deployment.api("GET", f"/dags/{dag_id}")["next_dagrun_logical_date"]
    return datetime.fromisoformat(found) if found else datetime.min.replace(tzinfo=UTC)


def _commit_runs(deployment: Deployment) -> list[dict[str, Any]]:
    return [r for r in deployment.runs(ON_COMMIT) if r["run_type"] == "asset_triggered"]


def _reported(deployment: Deployment, run_id: str) -> list[int]:
    events = deployment.api("GET", f"/dags/{ON_COMMIT}/dagRuns/{run_id}/upstreamAssetEvents")["asset_events"]
    return sorted(e["extra"]["payload"]["end_snapshot"] for e in events)


def _reparsed(deployment: Deployment, since: str) -> bool:
    return deployment.api("GET", f"/dags/{ON_COMMIT}/details")["last_parsed_time"] > since


def test_the_event_driven_dag_runs_once_per_external_commit_across_reparses_and_a_triggerer_restart(deployment):
    assets = deployment.api("GET", "/assets", params={"uri_pattern": "paimonflow=commits"})["assets"]
    assert len(assets) == 1, assets
    cursor = f"/assets/{assets[0]['id']}/state-store/paimonflow.commit-cursor"
    deployment.set_paused(ON_COMMIT, False)
    # the watcher is running once it has stored its starting point in the asset's state store
    wait_for("the commit watcher's cursor", lambda: deployment.request("GET", f"/api/v2{cursor}").status_code == 200,
             timeout=180, every=2, log=deployment.logs)
    commits: list[int] = []

    def commit_and_wait(ids: range) -> None:
        commits.append(external_commit(deployment, ids))
        wait_for(f"a run for snapshot {commits[-1]}", lambda: len(_commit_runs(deployment)) >= len(commits),
                 timeout=180, every=2, log=deployment.logs)

    commit_and_wait(range(300, 301))
    # the DAG files are parsed again (each file every 10 s here; touched to be sure): the watcher lives on
    parsed = deployment.api("GET", f"/dags/{ON_COMMIT}/details")["last_parsed_time"]
    for path in deployment.dags.glob("paimon_*.py"):
        path.touch()
    wait_for("a re-parse of the DAG files", lambda: _reparsed(deployment, parsed), timeout=120, every=2)
    commit_and_wait(range(301, 302))
    # the triggerer stops, a commit lands while it is down, it starts again: one run for that commit
    deployment.processes["triggerer"].terminate()
    deployment.processes["triggerer"].wait(timeout=60)
    commits.append(external_commit(deployment, range(302, 303)))
    deployment.restart("triggerer")
    wait_for(f"a run for snapshot {commits[-1]} after the restart",
             lambda: len(_commit_runs(deployment)) >= len(commits), timeout=240, every=2, log=deployment.logs)
    commit_and_wait(range(303, 304))

    time.sleep(25)  # two and a half polls more: no late duplicate
    runs = _commit_runs(deployment)
    assert len(runs) == len(commits), (runs, commits)
    for run in runs:
        deployment.wait_for_run(ON_COMMIT, run["dag_run_id"])
    reported = sorted(s for run in runs for s in _reported(deployment, run["dag_run_id"]))
    assert reported == commits  # one event per commit, none lost across the restart, none repeated
    REPORT["on_commit"] = {"commits": commits, "runs": [(r["dag_run_id"], _reported(deployment, r["dag_run_id"]))
                                                       for r in runs]}


def test_the_nightly_maintenance_runs_and_commits_no_event(deployment):
    before = orders(deployment)
    rows = before.read().num_rows
    events_before = len(_commit_runs(deployment))
    deployment.set_paused(NIGHTLY, False)  # the scheduler starts last night's run (catch-up is off)
    scheduled = wait_for("the scheduled nightly run", lambda: next(
        (r for r in deployment.runs(NIGHTLY) if r["run_type"] == "scheduled"), None), timeout=120, every=2,
        log=deployment.logs)
    run_id = scheduled["dag_run_id"]
    run = deployment.wait_for_run(NIGHTLY, run_id, timeout=400)
    after = orders(deployment)
    assert after.read().num_rows == rows
    assert after.latest_snapshot().commit_kind in ("COMPACT", "APPEND")
    assert any(s.commit_kind == "COMPACT" for s in after.snapshot_manager.snapshots())
    day = datetime.fromisoformat(run["logical_date"]).strftime("%Y-%m-%d")
    assert day in after.tags.list()
    time.sleep(25)  # the watcher polls every 10 s: a compaction is not a commit it reports
    assert len(_commit_runs(deployment)) == events_before
    REPORT["nightly"] = {"run": run_id, "tasks": deployment.task_instances(NIGHTLY, run_id),
                         "tags": sorted(after.tags.list()), "snapshots": snapshots(after)}


def _completed(deployment: Deployment, job: str) -> list[dict[str, Any]]:
    return [e for e in deployment.lineage_events() if e.get("eventType") == "COMPLETE" and e["job"]["name"] == job]


def test_each_operator_reported_its_lineage_through_the_openlineage_provider(deployment):
    """The events the OpenLineage provider emitted for the tasks above (file transport)."""
    from paimonflow.core.meta.manifest import FileKind

    namespace = "file://" + str(deployment.warehouse)
    table = orders(deployment)
    [load] = wait_for("the load task's COMPLETE event", lambda: _completed(deployment, f"{HOURLY}.load")[:1],
                      timeout=60)
    [output] = load["outputs"]
    assert (output["namespace"], output["name"]) == (namespace, "shop.orders")
    assert [f["name"] for f in output["facets"]["schema"]["fields"]] == ["id", "dt", "amount"]
    assert output["facets"]["storage"]["storageLayer"] == "paimon"
    assert output["facets"]["version"]["datasetVersion"] == "1"  # the snapshot the load committed
    first = table.snapshot_manager.snapshot(1)
    added = [e.file for e in table.manifest_io.delta_entries(first)]
    assert output["outputFacets"]["outputStatistics"] == {
        "rowCount": 10, "fileCount": len(added), "size": sum(f.file_size for f in added),
        **{k: v for k, v in output["outputFacets"]["outputStatistics"].items() if k.startswith("_")}}
    [source] = load["inputs"]
    assert source["namespace"] == "file" and source["name"].startswith(str(deployment.landing))
    reads = _completed(deployment, f"{HOURLY}.read_changes")
    assert reads and all(r["inputs"][0]["name"] == "shop.orders" and r["outputs"][0]["namespace"] == "file"
                         for r in reads)
    assert sorted(r["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] for r in reads)[-1] == 10
    [compact] = _completed(deployment, f"{NIGHTLY}.compact")
    compacted = [s.id for s in table.snapshot_manager.snapshots() if s.commit_kind == "COMPACT"][-1]
    assert compact["outputs"][0]["facets"]["version"]["datasetVersion"] == str(compacted)
    written = [e.file for e in table.manifest_io.delta_entries(table.snapshot_manager.snapshot(compacted))
               if e.kind is FileKind.ADD]
    assert {k: v for k, v in compact["outputs"][0]["outputFacets"]["outputStatistics"].items()
            if not k.startswith("_")} == {"rowCount": sum(f.row_count for f in written), "fileCount": len(written),
                                          "size": sum(f.file_size for f in written)}
    for task in ("tag_the_day", "expire_snapshots", "expire_changelogs", "expire_tags", "remove_orphan_files"):
        [event] = _completed(deployment, f"{NIGHTLY}.{task}")
        assert [(o["namespace"], o["name"]) for o in event["outputs"]] == [(namespace, "shop.orders")], task
        # the table's version after the compaction (an expiry's own "snapshot_id" is its earliest)
        assert event["outputs"][0]["facets"]["version"]["datasetVersion"] == str(compacted), task
    # the task's link to its table's page, kept in XCom by the worker when the task ended
    links = deployment.api("GET", f"/dags/{NIGHTLY}/dagRuns/{compact['run']['facets']['airflow']['dagRun']['run_id']}"
                                  "/taskInstances/compact/links")
    assert links["extra_links"]["Paimon table health"] == (deployment.base_url +
                                            "/paimonflow/connections/paimon_default/health/shop.orders")
    REPORT["lineage"] = {"events": len(deployment.lineage_events()), "load": output}


def test_a_backfill_loads_each_day_and_its_rerun_commits_nothing(deployment):
    days = [datetime(2026, 11, d, tzinfo=UTC) for d in (22, 23, 24)]
    for n, day in enumerate(days):
        folder = deployment.landing / "daily" / day.strftime("%Y-%m-%d")
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"id": list(range(n + 2)), "dt": [day.strftime("%Y-%m-%d")] * (n + 2),
                                 "amount": [float(n)] * (n + 2)}, schema=SCHEMA), folder / "sales.parquet")
    deployment.set_paused(BACKFILL, False)  # catch-up is off: at most the latest day is scheduled (nothing landed)

    def backfill(reprocess: str) -> list[tuple[str, str]]:
        """A backfill of the three days through the REST API; its runs once the scheduler completed it."""
        created = deployment.api("POST", "/backfills", json={
            "dag_id": BACKFILL, "from_date": days[0].isoformat(), "to_date": days[-1].isoformat(),
            "reprocess_behavior": reprocess, "max_active_runs": 2})
        wait_for(f"backfill {created['id']} to complete", lambda: deployment.api(
            "GET", f"/backfills/{created['id']}")["completed_at"], timeout=400, every=2, log=deployment.logs)
        runs = [r for r in deployment.runs(BACKFILL)
                if r["logical_date"] and datetime.fromisoformat(r["logical_date"]) in days]
        assert sorted(datetime.fromisoformat(r["logical_date"]) for r in runs if r["state"] == "success") == days, runs
        tries = {r["dag_run_id"]: deployment.api("GET", f"/dags/{BACKFILL}/dagRuns/{r['dag_run_id']}/taskInstances/"
                                                 "load_day")["try_number"] for r in runs}
        return [(run_id, tries[run_id]) for run_id in sorted(tries)]

    first = backfill("none")
    sales = Catalog(str(deployment.warehouse)).get_table("shop.daily_sales")
    loaded = {(r["id"], r["dt"]): r["amount"] for r in sales.read().to_pylist()}
    assert len(loaded) == 2 + 3 + 4
    latest = sales.snapshot_manager.latest_id()
    assert latest == 3
    assert [tries for _, tries in first] == [1, 1, 1]
    second = backfill("completed")  # the whole range again: each day's task runs a second time
    assert [tries for _, tries in second] == [2, 2, 2]
    sales = Catalog(str(deployment.warehouse)).get_table("shop.daily_sales")
    assert {(r["id"], r["dt"]): r["amount"] for r in sales.read().to_pylist()} == loaded
    assert sales.snapshot_manager.latest_id() == latest  # every rerun was recognised: nothing committed
    REPORT["backfill"] = {"first": first, "rerun": second, "snapshots": snapshots(sales)}


CHAIN = "paimon_test_cluster_chain"


@pytest.mark.timeout(1200)
def test_a_chain_on_the_cluster_defers_its_spark_submits_and_links_their_applications(deployment, spark_cluster):
    """DDL >> write >> check >> compact on a new table, the write and the compaction deferrable
    spark-submits on the tests' standalone cluster in a one-slot pool: ``probe`` (same pool,
    lower priority) runs while the write's application runs, so the deferred write held no slot;
    the triggerer restarted while the write is deferred loses nothing; each submitted task's Spark
    link, read through the REST API, opens its application's page."""
    host, port = spark_cluster.url.rsplit(":", 1)
    web_ui = f"http://127.0.0.1:{spark_cluster.ui_port}"
    deployment.api("POST", "/connections", expect=201, json={
        "connection_id": "spark_cluster", "conn_type": "spark", "host": host, "port": int(port),
        "extra": json.dumps({"master_web_ui": web_ui})})
    deployment.api("POST", "/pools", expect=201, json={"name": "spark_slot", "slots": 1, "include_deferred": False})
    deployment.wait_for_dags(CHAIN)
    deployment.set_paused(CHAIN, False)
    run_id = deployment.trigger(CHAIN)
    # while the write is deferred, the triggerer is restarted: the new one follows the same application
    wait_for("the write to defer", lambda: deployment.task_instances(CHAIN, run_id).get("write") == "deferred",
             timeout=300, every=1, log=deployment.logs)
    deployment.restart("triggerer")
    deployment.wait_for_run(CHAIN, run_id, timeout=1000)
    xcom = f"/dags/{CHAIN}/dagRuns/{run_id}/taskInstances/{{}}/xcomEntries/{{}}"
    seen = deployment.api("GET", xcom.format("probe", "return_value"))["value"]["seen_running"]
    write_app = deployment.api("GET", xcom.format("write", "spark_application"))["value"]
    assert seen == [write_app["id"]]  # the probe ran in the one slot while the write's application ran
    apps = {}
    for task_id in ("write", "compact"):
        links = deployment.api("GET", f"/dags/{CHAIN}/dagRuns/{run_id}/taskInstances/{task_id}/links")["extra_links"]
        url = links["Spark application"]
        app = next(a for a in spark_cluster.status()["completedapps"] if a["id"] in url)
        assert app["state"] == "FINISHED" and app["name"].startswith(f"paimonflow-{'write' if task_id == 'write' else 'compact'}-")
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200 and app["id"] in page.text
        apps[task_id] = app["id"]
    check = deployment.api("GET", xcom.format("check", "return_value"))["value"]
    assert check["passed"] and check["checks"]["row_count"]["value"] == 200_000
    table = Catalog(str(deployment.warehouse)).get_table("shop.cluster_chain")
    assert table.latest_snapshot().commit_kind == "COMPACT" and table.read().num_rows == 200_000
    REPORT["cluster_chain"] = {"run": run_id, "tasks": deployment.task_instances(CHAIN, run_id), "applications": apps,
                               "probe_saw": seen}


def test_the_table_health_page_behind_login_rendered_by_chromium(deployment):
    from tests.chromium import render

    page = "/paimonflow/connections/paimon_default/health/shop.orders"
    assert deployment.request("GET", page, user=None).status_code == 401
    assert deployment.request("GET", page, user="analyst").status_code == 403  # a viewer: no connections
    url = deployment.base_url + page
    # the UI's session cookie, as Airflow's login page sets it, for a user with the OP role
    shown = render(url, cookies={"_token": deployment.token("operator")})
    assert shown.status == 200
    assert "Table health: shop.orders" in shown.dom and "snapshot timeline" in shown.dom and "<svg" in shown.dom
    assert shown.png[:8] == b"\x89PNG\r\n\x1a\n" and len(shown.png) > 10_000
    anonymous = render(url)
    assert anonymous.status == 401 and "shop.orders" not in anonymous.dom.replace(page, "")
    keep = os.environ.get("PAIMONFLOW_SCREENSHOT_TO")  # set by hand to refresh docs/images/
    if keep:
        Path(keep).write_bytes(shown.png)
    REPORT["page"] = {"operator": shown.status, "viewer": 403, "anonymous": anonymous.status}


def test_the_deployment_logged_no_secret(deployment):
    """The JWT secret, the Fernet key and the users' passwords reach no Airflow log."""
    env = deployment.env()
    secrets = [env["AIRFLOW__API_AUTH__JWT_SECRET"], env["AIRFLOW__CORE__FERNET_KEY"], *deployment.passwords.values()]
    logs = [p for p in (deployment.home / "logs").rglob("*.log")]
    assert logs
    for path in logs:
        text = path.read_text(errors="replace")
        assert not [s for s in secrets if s in text], path

