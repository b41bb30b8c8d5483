"""Which jobs are driver-only is a fact about their code, checked here: every job of the registry runs
on the shared local session, and exactly the jobs of ``DRIVER_ONLY_JOBS`` start no Spark job (the
others start at least one). A driver-only job submitted with ``spark-submit`` asks for no executors
(``tests/spark/test_cluster.py`` shows the standalone master giving it none), so a job wrongly in
the set would wait for executors it never asked for, and one wrongly out of it holds a cluster's
cores for nothing."""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from paimonflow.jobs.location import TableLocation
from paimonflow.jobs.registry import DRIVER_ONLY_JOBS, JOBS, METADATA_ONLY_JOBS, run_job
from paimonflow.jobs.submit import NO_EXECUTORS_CONF, submit_command

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


def test_the_sets_name_jobs_of_the_registry() -> None:
    unknown, not_metadata = DRIVER_ONLY_JOBS - JOBS.keys(), DRIVER_ONLY_JOBS - METADATA_ONLY_JOBS
    assert not unknown and not METADATA_ONLY_JOBS - DRIVER_ONLY_JOBS
    assert not_metadata == {"analyze"}  # it reads every row of the table


def test_a_driver_only_command_asks_for_no_executors_and_the_callers_conf_wins() -> None:
    location = TableLocation("/wh", "db.t")
    tag = submit_command("create-tag", location, {"name": "t"}, result_file=None)
    assert tag.conf == NO_EXECUTORS_CONF
    argv = tag.argv(spark_submit="spark-submit", conf={"spark.dynamicAllocation.enabled": "false",
                                                        "spark.ui.enabled": "false"})
    confs = [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]
    assert "spark.dynamicAllocation.enabled=false" in confs and "spark.dynamicAllocation.enabled=true" not in confs
    assert "spark.dynamicAllocation.initialExecutors=0" in confs and "spark.ui.enabled=false" in confs
    assert argv.index(confs[-1]) < argv.index(tag.application)  # Spark settings before the application
    for job, arguments in (("write", {"path": "/in"}), ("compact", {}), ("read-changes", {"start_snapshot": 1}),
                           ("remove-orphan-files", {})):
        command = submit_command(job, location, arguments, result_file=None)
        assert command.conf == {} and "--conf" not in command.argv()


def _table(warehouse: str) -> None:
    """A table on which every job has work: three snapshots in an expired and a live partition,
    tags, a branch, a consumer."""
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "1", "partition.expiration-time": "7 d",
                                          "partition.timestamp-formatter": "yyyy-MM-dd",
                                          "tag.automatic-creation": "process-time", "tag.creation-period": "daily"})
    for i, dt in enumerate(("2020-01-01", "2999-01-01", "2999-01-01")):
        table.write(pa.table({"id": [i, i + 1], "v": ["x", "y"], "dt": [dt, dt]}, schema=SCHEMA))
    table.tags.create("t1", snapshot_id=1)
    table.tags.create("t2", snapshot_id=2)
    table.branches.create("b1", tag="t1")
    table.consumer_manager.record("c1", 2)


def _arguments(job: str, tmp_path) -> dict:
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [7], "v": ["z"], "dt": ["2999-01-01"]}, schema=SCHEMA), source)
    return {
        "write": {"path": str(source)},
        "compact": {},
        "expire-snapshots": {"retain_min": 1, "retain_max": 1, "older_than_millis": 0},
        "expire-changelogs": {"delete_all": True},
        "expire-partitions": {},
        "analyze": {},
        "create-tag": {"name": "t9"},
        "delete-tag": {"name": "t2"},
        "rename-tag": {"name": "t2", "new_name": "t3"},
        "replace-tag": {"name": "t2", "snapshot_id": 3},
        "expire-tags": {"older_than_millis": 0},
        "auto-tag": {},
        "create-branch": {"branch": "b2", "tag": "t2"},
        "delete-branch": {"branch": "b1"},
        "rename-branch": {"branch": "b1", "new_name": "b3"},
        "fast-forward": {"branch": "b1"},
        "rollback": {"snapshot_id": 2},
        "reset-consumer": {"consumer_id": "c1", "next_snapshot": 3},
        "clear-consumers": {},
        "remove-orphan-files": {"older_than_millis": 0, "min_older_than_millis": 0, "dry_run": True},
        "read-changes": {"start_snapshot": 1, "output": str(tmp_path / "changes")},
    }[job]


def _spark_jobs_of(spark, run) -> int:
    """How many Spark jobs ``run()`` started: it runs under a job group of its own, then a marker job
    under another; the status store hears of jobs in the order they started, so once it knows the
    marker it knows every job ``run()`` started."""
    context, tracker = spark.sparkContext, spark.sparkContext.statusTracker()
    group, marker = f"driver-only-{time.monotonic_ns()}", f"marker-{time.monotonic_ns()}"
    context.setJobGroup(group, "the job under test")
    try:
        run()
        context.setJobGroup(marker, "marks the end")
        spark.range(1).count()
    finally:  # SparkContext.clearJobGroup, which PySpark does not have
        for key in ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"):
            context.setLocalProperty(key, None)
    deadline = time.monotonic() + 60
    while not tracker.getJobIdsForGroup(marker):
        assert time.monotonic() < deadline, "the status store never heard of the marker job"
        time.sleep(0.05)
    return len(tracker.getJobIdsForGroup(group))


@pytest.mark.parametrize("job", sorted(JOBS))
def test_exactly_the_driver_only_jobs_start_no_spark_job(spark, tmp_path, job: str) -> None:
    warehouse = str(tmp_path / "wh")
    _table(warehouse)
    arguments = _arguments(job, tmp_path)
    results: list[dict] = []
    started = _spark_jobs_of(spark, lambda: results.append(run_job(job, spark, TableLocation(warehouse, "db.t"),
                                                                   arguments)))
    assert results[0]["job"] == job
    if job in DRIVER_ONLY_JOBS:
        assert started == 0, f"{job} is in DRIVER_ONLY_JOBS but started {started} Spark job(s)"
    else:
        assert started > 0, f"{job} starts no Spark job: add it to DRIVER_ONLY_JOBS"
