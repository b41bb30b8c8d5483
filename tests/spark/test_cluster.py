"""The jobs on a real Spark standalone cluster (a master and two 1-core workers on 127.0.0.1,
tests/spark/cluster.py), submitted with ``spark-submit --master spark://...`` as a team runs them:
each runs as an application of the master, with executors on the workers unless it is driver-only
(then it holds no core), says so in its result, and leaves the table as the core reads it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.jobs.location import TableLocation
from paimonflow.jobs.registry import DRIVER_ONLY_JOBS
from paimonflow.jobs.submit import submit_command
from tests.spark.cluster import spark_submit

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


def csv(path, ids, v: str) -> str:
    path.write_text("id,v,dt\n" + "".join(f"{i},{v}{i},2026-11-{21 + i % 2}\n" for i in ids))
    return str(path)


def submit(cluster, tmp_path, name: str, job: str, location: TableLocation, arguments: dict) -> dict:
    """spark-submit ``job``; its result comes back through the warehouse as the integrations get it
    (jobs/results.py), and matches the JSON line the driver printed."""
    from paimonflow.jobs.results import RESULTS_DIR, ResultFile

    with ResultFile(location.warehouse, location.storage_options) as result_file:
        command = submit_command(job, location, arguments, result_file=result_file.uri)
        proc = spark_submit(cluster, name, command)
        assert proc.returncode == 0, f"{job}: {proc.stderr[-3000:]}"
        result = result_file.take()
    assert result == json.loads(proc.stdout.strip().splitlines()[-1])
    assert not list((Path(location.warehouse) / RESULTS_DIR).iterdir())  # read back and deleted
    assert result["master"] == cluster.url, result  # the job ran on the cluster, not in local mode
    app = cluster.application(name)
    executors = cluster.executors_of(app["id"])
    if job in DRIVER_ONLY_JOBS:  # it asked for no executors and got none
        assert app["state"] == "FINISHED" and app["cores"] == 0 and not executors, (app, executors)
        return result
    assert app["state"] == "FINISHED" and app["cores"] >= 1, app
    assert executors and {e["worker"] for e in executors} <= {w["id"] for w in cluster.status()["workers"]}
    return result


@pytest.mark.timeout(1800)  # ten spark-submits of a minute each on a loaded 2-core machine
def test_every_job_submitted_to_the_cluster_runs_there(spark_cluster, tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2", "changelog-producer": "input", "write-only": "true",
                                  "snapshot.num-retained.min": "1", "changelog.num-retained.max": "2"})
    location = TableLocation(str(tmp_path / "wh"), "db.t")
    run = iter(range(100))

    def job(name: str, arguments: dict) -> dict:
        return submit(spark_cluster, tmp_path, f"{name}-{next(run)}", name, location, arguments)

    first = job("write", {"path": csv(tmp_path / "a.csv", range(400), "a"), "format": "csv", "parallelism": 4})
    assert first["rows_written"] == 400 and first["executors"] == 2  # both workers wrote
    job("write", {"path": csv(tmp_path / "b.csv", range(200, 600), "b"), "format": "csv"})
    compacted = job("compact", {})
    assert compacted["executors"] >= 1 and compacted["snapshot_id"] == 3
    job("create-tag", {"name": "after_compaction"})
    job("write", {"path": csv(tmp_path / "c.csv", range(600, 700), "c"), "format": "csv"})
    changes = job("read-changes", {"start_snapshot": 3, "output": str(tmp_path / "changes")})
    assert changes["rows"] == 100 and changes["row_kinds"] == {"+I": 100} and changes["executors"] >= 1
    expired = job("expire-snapshots", {"retain_max": 1, "older_than_millis": 0})
    assert expired["expired_snapshots"] == 3
    job("expire-changelogs", {"retain_max": 1, "older_than_millis": 0})
    job("rollback", {"tag": "after_compaction"})
    stray = tmp_path / "wh" / "db.db" / "t" / "dt=2026-11-21" / "bucket-0" / "data-stray.parquet"
    stray.write_bytes(b"left by a killed writer")
    orphans = job("remove-orphan-files", {"older_than_millis": 0, "min_older_than_millis": 0})
    assert orphans["executors"] >= 1 and orphans["orphans"] == 1 and not stray.exists()

    table = catalog.get_table("db.t")
    data = table.read()
    assert table.latest_snapshot().id == 3 and data.num_rows == 600
    assert sorted(data.column("id").to_pylist()) == list(range(600))
    by_id = dict(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True))
    assert by_id[0] == "a0" and by_id[300] == "b300" and by_id[599] == "b599"


@pytest.mark.timeout(600)
def test_a_driver_only_job_holds_no_core_of_the_cluster_while_it_runs(spark_cluster, tmp_path):
    """Issue 35: a tag or an expiry submitted to the standalone cluster used to hold every core of
    it (the master gives an application every free core at once) while its driver did seconds of
    metadata work. Submitted with the command of ``submit_command``, such an application is seen
    by the master, in every poll while it is active, with 0 cores; no worker ever ran an executor
    for it; and its work is done."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "1", "snapshot.num-retained.min": "1"})
    for i in range(3):
        table.write(pa.table({"id": [i], "v": ["x"], "dt": ["2026-11-21"]}, schema=SCHEMA))
    location = TableLocation(str(tmp_path / "wh"), "db.t")
    for n, (job, arguments) in enumerate([("create-tag", {"name": "held", "snapshot_id": 2}),
                                          ("expire-snapshots", {"retain_max": 1, "older_than_millis": 0})]):
        name = f"driver-only-{job}-{n}"
        seen: list[int] = []  # the application's cores in each poll of the master while it is active
        done = threading.Event()

        def poll(name=name, seen=seen, done=done) -> None:
            while not done.is_set():
                with contextlib.suppress(OSError):
                    seen += [a["cores"] for a in spark_cluster.status()["activeapps"] if a["name"] == name]
                time.sleep(0.1)

        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
        try:
            proc = spark_submit(spark_cluster, name, submit_command(job, location, arguments, result_file=None))
        finally:
            done.set()
            watcher.join(timeout=60)
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert result["job"] == job and result["master"] == spark_cluster.url, result
        assert seen and set(seen) == {0}, f"{job}: cores while active {seen}"
        app = spark_cluster.application(name)
        assert app["cores"] == 0 and spark_cluster.executors_of(app["id"]) == [], app
    table = catalog.get_table("db.t")
    assert table.tags.get("held").id == 2 and table.snapshot_manager.earliest_id() == 3


def executor_pids(app_id: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", f"CoarseGrainedExecutorBackend.*{app_id}"], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


@pytest.mark.timeout(1200)
def test_an_executor_killed_in_the_middle_of_a_write_is_replaced_and_rows_land_once(spark_cluster, tmp_path):
    """SIGKILL one executor JVM of the write job as soon as the writer tasks start producing files:
    Spark reruns its tasks on an executor the master launches in its place, and the one commit holds
    every row exactly once (the killed attempt's files are never committed)."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "4", "write-only": "true"})
    n = 400_000
    source = tmp_path / "big.parquet"
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": pa.array(range(n), pa.int64()), "v": [f"v{i}" for i in range(n)],
                             "dt": ["2026-11-21" if i % 2 else "2026-11-22" for i in range(n)]}), source)
    name = "write-killed-executor"
    killed: list[int] = []

    def kill_one_executor_when_files_appear() -> None:
        table_dir = tmp_path / "wh" / "db.db" / "t"
        deadline = time.monotonic() + 300
        app_id = None
        while time.monotonic() < deadline and not killed:
            if app_id is None:
                with contextlib.suppress(OSError):  # a slow status page: ask again
                    app_id = next((a["id"] for a in spark_cluster.status()["activeapps"] if a["name"] == name), None)
            if app_id is not None and any(table_dir.glob("dt=*/bucket-*/data-*")):
                pids = executor_pids(app_id)
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])
                    return
            time.sleep(0.05)

    watcher = threading.Thread(target=kill_one_executor_when_files_appear, daemon=True)
    watcher.start()
    location = TableLocation(str(tmp_path / "wh"), "db.t")
    result = submit(spark_cluster, tmp_path, name, "write", location, {"path": str(source), "parallelism": 8})
    watcher.join(timeout=10)
    assert killed, "no executor was killed (the writer tasks never produced a file while the job ran)"
    app = spark_cluster.application(name)
    assert len(spark_cluster.executors_of(app["id"])) >= 3  # the master replaced the killed executor
    table = catalog.get_table("db.t")
    ids = table.read(columns=["id"]).column("id").to_numpy()
    assert result["rows_written"] == n and len(ids) == n and len(set(ids.tolist())) == n
    assert table.latest_snapshot().id == 1  # one commit


@pytest.mark.timeout(900)
def test_a_job_submitted_to_the_cluster_on_a_table_it_cannot_change_is_refused_in_one_line(spark_cluster, tmp_path):
    """The capability gate where jobs really run: a compaction and an orphan removal submitted to the
    standalone cluster on a data-evolution table and on one with an option paimonflow does not know
    (as Paimon 2.x writers leave them) exit 2 with one JSON error line naming the feature and the
    operation, and no file of the table changes."""
    from tests.files import tree

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": ["2026-11-21", "2026-11-22"]}, schema=SCHEMA))
    schema_file = Path(t.path) / "schema" / "schema-0"
    doc = json.loads(schema_file.read_text())
    doc["options"].update({"data-evolution.enabled": "true", "some.future-option": "on"})
    schema_file.write_text(json.dumps(doc))
    location = TableLocation(str(tmp_path / "wh"), "db.t")
    before = tree(Path(t.path))
    for n, (job, arguments, feature, operation) in enumerate([
            ("compact", {}, "data evolution", "compaction"),
            ("remove-orphan-files", {"older_than_millis": 0, "min_older_than_millis": 0},
             "an option paimonflow does not know", "orphan removal")]):
        command = submit_command(job, location, arguments, result_file=None)
        proc = spark_submit(spark_cluster, f"refused-{job}-{n}", command)
        assert proc.returncode == 2, proc.stderr[-3000:]
        # the driver's one JSON line (the result's place: stdout under spark-submit's log lines)
        [line] = [x for x in (proc.stdout + proc.stderr).splitlines() if x.startswith('{"job"')]
        error = json.loads(line)
        assert error["error"] == "UnsupportedFeatureError", error
        assert feature in error["message"] and f"for {operation}" in error["message"], error
    assert tree(Path(t.path)) == before


@pytest.mark.timeout(900)
def test_a_write_driver_stopped_while_executors_write_removes_every_file_they_wrote(spark_cluster, tmp_path):
    """Issue 37: SIGTERM to the Python driver of a write submitted to the cluster (as a scheduler
    stopping its task does) while the executors' tasks write files: the driver interrupts them,
    waits until none runs and deletes every file they wrote, finished tasks' included (their
    messages never reached it); spark-submit exits 143 with the driver's one JSON line; no file is
    left and nothing is committed."""
    import psutil
    import pyarrow.parquet as pq

    from tests.spark.cluster import BIN, SUBMIT_CONF, spark_env

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "8", "target-file-size": "256 kb"})
    n = 600_000
    source = tmp_path / "big.parquet"
    pq.write_table(pa.table({"id": pa.array(range(n), pa.int64()), "v": [f"v{i}" for i in range(n)],
                             "dt": ["2026-11-21" if i % 2 else "2026-11-22" for i in range(n)]}), source)
    location = TableLocation(str(tmp_path / "wh"), "db.t")
    command = submit_command("write", location, {"path": str(source), "parallelism": 12}, result_file=None)
    argv = command.argv(spark_submit=os.path.join(BIN, "spark-submit"), master=spark_cluster.url, conf=SUBMIT_CONF,
                        name="write-driver-stopped")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=spark_env(**command.env))
    table_dir = tmp_path / "wh" / "db.db" / "t"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and not any(table_dir.glob("dt=*/bucket-*/data-*")):
        time.sleep(0.02)
    time.sleep(1.0)  # some tasks done, others writing
    drivers = [p for p in psutil.Process(proc.pid).children(recursive=True)
               if "python" in p.name() and "write" in p.cmdline()]
    assert drivers, "no Python driver under spark-submit"
    drivers[0].send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    if proc.returncode == 0:
        pytest.fail("the write ended before the signal reached its driver: make the input larger")
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    # spark-submit hands the Python driver's stderr on through its own stdout
    line = json.loads(next(x for x in reversed(stdout.strip().splitlines()) if x.startswith('{"job"')))
    assert line["error"] == "JobInterrupted" and "files its tasks had written were removed" in line["message"], line
    removed = int(line["message"].split(" uncommitted files")[0].rsplit(" ", 1)[-1])
    app = spark_cluster.application("write-driver-stopped")
    assert spark_cluster.executors_of(app["id"])  # the tasks ran on the workers' executors
    left = [p for p in table_dir.rglob("*") if p.is_file() and "bucket-" in str(p.parent)]
    assert removed > 0 and not left, (removed, left[:3])
    assert table.snapshot_manager.latest_id() is None


@pytest.mark.timeout(900)
def test_a_postpone_compaction_submitted_to_the_cluster_runs_there(spark_cluster, tmp_path):
    """A postpone-bucket table (``bucket = -2``, as Paimon 2.x writers make them) written by the core,
    then compacted by the Spark job on the cluster: its tasks run on the workers' executors, the
    postponed rows get real buckets in one COMPACT snapshot, and every row reads back."""
    from paimonflow.core.meta.layout import POSTPONE_BUCKET

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "-2", "postpone.default-bucket-num": "2"})
    for i, dt in enumerate(("2026-11-21", "2026-11-22")):
        table.write(pa.table({"id": list(range(i * 100, i * 100 + 300)), "v": [f"x{dt}"] * 300, "dt": [dt] * 300},
                             schema=SCHEMA))
    assert table.refresh().read().num_rows == 0  # everything waits in the postpone bucket
    location = TableLocation(str(tmp_path / "wh"), "db.p")
    result = submit(spark_cluster, tmp_path, "postpone-compact", "compact", location, {})
    assert result["postpone"] and result["tasks"] == 2 and result["executors"] >= 1, result
    t = table.refresh()
    snapshot = t.latest_snapshot()
    assert snapshot.commit_kind.value == "COMPACT" and result["snapshot_id"] == snapshot.id
    entries = t.manifest_io.live_entries(snapshot)
    assert {e.total_buckets for e in entries} == {2} and not any(e.bucket == POSTPONE_BUCKET for e in entries)
    assert t.read().num_rows == 600
