"""Every Spark job on local[2], through its command line (in process, on the shared session) and
its Python function; tables written by the jobs read the same in the core and in pypaimon."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from paimonflow.core import Catalog
from paimonflow.core.errors import SourceError
from paimonflow.jobs.cli import app
from paimonflow.jobs.location import TableLocation
from paimonflow.jobs.registry import run_job

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
runner = CliRunner()


def job(*args: str) -> dict:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


@pytest.fixture
def wh(tmp_path) -> str:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    c.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
    return c.warehouse


def source(tmp_path, name: str, ids, v: str, dt: str = "2026-11-21") -> str:
    path = str(tmp_path / f"{name}.parquet")
    pq.write_table(pa.table({"id": list(ids), "v": [v] * len(ids), "dt": [dt] * len(ids)}), path)
    return path


def rows(wh: str, **kw) -> dict:
    return {(r["id"], r["dt"]): r["v"] for r in Catalog(wh).get_table("db.t").read(**kw).to_pylist()}


def test_write_job_shuffles_by_bucket_and_commits_once(spark, wh, tmp_path):
    out = job("write", "-w", wh, "-t", "db.t", "--path", source(tmp_path, "a", range(100), "a"))
    assert out["snapshot_id"] == 1 and out["rows_written"] == 100 and out["buckets"] == 4
    t = Catalog(wh).get_table("db.t")
    assert all(len({f.file_name for f in s.files}) == 1 for s in t.plan())  # one file per bucket: one task each
    job("write", "-w", wh, "-t", "db.t", "--path", source(tmp_path, "b", range(50, 150), "b"))
    got = rows(wh)
    assert len(got) == 150 and got[(10, "2026-11-21")] == "a" and got[(60, "2026-11-21")] == "b"


@pytest.mark.parametrize("key_type", [pa.int64(), pa.int32(), pa.string()])
def test_each_bucket_is_written_by_one_task_whether_spark_or_python_hashes_it(spark, tmp_path, key_type):
    """Integer keys are bucketed by a Spark expression, other keys by the core in Python workers:
    either way every bucket lands in one task (one file) and holds the rows the core puts there."""
    schema = pa.schema([pa.field("k", key_type, nullable=False), pa.field("v", pa.string())])
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    data = pa.table({"k": pa.array(range(-500, 1500)).cast(key_type), "v": ["x"] * 2000}, schema=schema)
    for name in ("spark", "core"):
        c.create_table(f"db.{name}", schema, primary_keys=["k"], options={"bucket": "7"})
    pq.write_table(data, tmp_path / "in.parquet")
    out = job("write", "-w", c.warehouse, "-t", "db.spark", "--path", str(tmp_path / "in.parquet"), "--parallelism", "3")
    assert out["buckets"] == 7
    c.get_table("db.core").write(data)

    def by_bucket(name: str) -> dict[int, set]:
        t = c.get_table(f"db.{name}")
        return {s.bucket: {k for b in t.split_reader().read_batches([s], columns=["k"]) for k in b.column(0).to_pylist()}
                for s in t.plan()}

    assert all(len(s.files) == 1 for s in c.get_table("db.spark").plan())
    assert by_bucket("spark") == by_bucket("core")


def test_write_job_from_sql_and_overwrite(spark, wh, tmp_path):
    job("write", "-w", wh, "-t", "db.t", "--path", source(tmp_path, "a", range(10), "a", "p1"))
    job("write", "-w", wh, "-t", "db.t", "--path", source(tmp_path, "b", range(10), "b", "p2"))
    out = job("write", "-w", wh, "-t", "db.t", "--mode", "overwrite", "--overwrite-partition", "dt=p1",
              "--sql", "select cast(id as long) id, 'sql' v, 'p1' dt from range(3)")
    assert out["rows_written"] == 3
    got = rows(wh)
    assert sorted(k for k in got if k[1] == "p1") == [(0, "p1"), (1, "p1"), (2, "p1")]
    assert len([k for k in got if k[1] == "p2"]) == 10


def test_write_job_is_exactly_once_with_a_commit_identity(spark, wh, tmp_path):
    path = source(tmp_path, "a", range(20), "a")
    first = job("write", "-w", wh, "-t", "db.t", "--path", path, "--commit-user", "dag.task",
                "--commit-identifier", "20261121")
    again = job("write", "-w", wh, "-t", "db.t", "--path", path, "--commit-user", "dag.task",
                "--commit-identifier", "20261121")
    assert again["already_committed"] and again["snapshot_id"] == first["snapshot_id"]
    assert Catalog(wh).get_table("db.t").snapshot_manager.latest_id() == first["snapshot_id"]


def test_dynamic_bucket_and_append_tables(spark, tmp_path):
    c = Catalog(str(tmp_path / "wh2"))
    c.create_database("db")
    c.create_table("db.dyn", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "-1"})
    c.create_table("db.log", SCHEMA, partition_keys=["dt"])
    for name in ("dyn", "log"):
        for i in range(2):
            job("write", "-w", c.warehouse, "-t", f"db.{name}",
                "--path", source(tmp_path, f"{name}{i}", range(i * 5, i * 5 + 10), f"w{i}"))
    assert c.get_table("db.dyn").read().num_rows == 15
    assert c.get_table("db.log").read().num_rows == 20


def test_compact_job_compacts_buckets_in_parallel(spark, wh, tmp_path):
    for i in range(3):
        job("write", "-w", wh, "-t", "db.t", "--path", source(tmp_path, f"s{i}", range(i, i + 40), f"w{i}"))
    before = rows(wh)
    out = job("compact", "-w", wh, "-t", "db.t", "--commit-user", "compactor", "--commit-identifier", "1")
    assert out["tasks"] == 4 and out["files_read"] > out["files_written"] and out["snapshot_id"] == 4
    assert rows(wh) == before
    assert job("compact", "-w", wh, "-t", "db.t", "--commit-user", "compactor",
               "--commit-identifier", "1")["already_committed"]


def test_maintenance_jobs(spark, wh, tmp_path):
    for i in range(4):
        job("write", "-w", wh, "-t", "db.t", "--path", source(tmp_path, f"s{i}", [i], f"w{i}"))
    assert job("create-tag", "-w", wh, "-t", "db.t", "--name", "t2", "--snapshot", "2")["snapshot_id"] == 2
    plan = job("expire-snapshots", "-w", wh, "-t", "db.t", "--retain-min", "1", "--older-than", "0 ms", "--dry-run")
    assert plan["dry_run"] and plan["snapshot_ids"] == [1, 2, 3]
    done = job("expire-snapshots", "-w", wh, "-t", "db.t", "--retain-min", "1", "--older-than", "0 ms")
    assert done["expired_snapshots"] == 3 and done["snapshot_id"] == 4
    assert job("analyze", "-w", wh, "-t", "db.t")["statistics_file"]
    assert job("rollback", "-w", wh, "-t", "db.t", "--tag", "t2")["snapshot_id"] == 2
    assert sorted(k[0] for k in rows(wh)) == [0, 1]
    assert job("delete-tag", "-w", wh, "-t", "db.t", "--name", "t2")["tag"] == "t2"
    assert job("expire-tags", "-w", wh, "-t", "db.t")["expired"] == []
    table_dir = Catalog(wh).get_table("db.t").path
    for bucket in range(3):  # what crashed writers leave behind
        stray = os.path.join(table_dir, "dt=2026-11-21", f"bucket-{bucket}", "data-crashed-writer.parquet")
        os.makedirs(os.path.dirname(stray), exist_ok=True)
        pq.write_table(pa.table({"x": [1]}), stray)
    orphans = job("remove-orphan-files", "-w", wh, "-t", "db.t", "--older-than", "0 ms", "--min-older-than", "0 ms", "--dry-run")
    assert orphans["orphans"] == 3 and orphans["dry_run"]
    removed = job("remove-orphan-files", "-w", wh, "-t", "db.t", "--older-than", "0 ms", "--min-older-than", "0 ms")
    assert removed["orphans"] == orphans["orphans"]
    assert job("remove-orphan-files", "-w", wh, "-t", "db.t", "--older-than", "0 ms", "--min-older-than", "0 ms")["orphans"] == 0
    assert sorted(k[0] for k in rows(wh)) == [0, 1]


def test_expire_partitions_job(spark, tmp_path):
    c = Catalog(str(tmp_path / "wh3"))
    c.create_database("db")
    c.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                   options={"bucket": "1", "partition.expiration-time": "7 d",
                            "partition.timestamp-formatter": "yyyy-MM-dd"})
    for dt in ("2020-01-01", "2999-01-01"):
        job("write", "-w", c.warehouse, "-t", "db.t", "--path", source(tmp_path, dt, [1], "x", dt))
    out = job("expire-partitions", "-w", c.warehouse, "-t", "db.t")
    assert out["snapshot_id"] == 3
    assert {r["dt"] for r in c.get_table("db.t").read().to_pylist()} == {"2999-01-01"}


def test_read_changes_job(spark, wh, tmp_path):
    job("write", "-w", wh, "-t", "db.t", "--path", source(tmp_path, "a", range(5), "a"))
    job("write", "-w", wh, "-t", "db.t", "--path", source(tmp_path, "b", [1, 7], "b"))
    out_dir = str(tmp_path / "changes")
    out = job("read-changes", "-w", wh, "-t", "db.t", "--start", "1", "--output", out_dir)
    written = spark.read.parquet(out_dir)
    got = sorted((r["rowkind"], r["id"], r["v"]) for r in written.collect())
    assert got == [("+I", 7, "b"), ("+U", 1, "b"), ("-U", 1, "a")] and out["rows"] == 3
    assert out["row_kinds"] == {"-U": 1, "+U": 1, "+I": 1}
    assert out["executors"] == 1  # local mode: the driver's one executor read and wrote the changes
    delta = str(tmp_path / "delta")
    out = job("read-changes", "-w", wh, "-t", "db.t", "--start", "0", "--mode", "delta", "--output", delta)
    assert out["rows"] == 7 and out["row_kinds"] == {"+I": 7} and out["executors"] == 1
    assert spark.read.parquet(delta).columns == ["rowkind", "id", "v", "dt"]  # nothing but the changes


def test_bad_input_is_one_clear_line(spark, wh, tmp_path):
    result = runner.invoke(app, ["write", "-w", wh, "-t", "db.nope", "--path", source(tmp_path, "a", [1], "a")])
    assert result.exit_code == 2 and "TableNotFoundError" in result.output
    result = runner.invoke(app, ["create-tag", "-w", wh, "-t", "db.t", "--name", "../x"])
    assert result.exit_code == 2 and "InvalidNameError" in result.output


def one_error_line(result) -> dict:
    """The job's error: exit code 2 and, as the last line it printed, one JSON object."""
    assert result.exit_code == 2, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def test_bad_sources_fail_with_one_typed_line_and_commit_nothing(spark, wh, tmp_path):
    missing = one_error_line(runner.invoke(app, ["write", "-w", wh, "-t", "db.t", "--path",
                                                 str(tmp_path / "nope.csv"), "--format", "csv"]))
    assert missing["error"] == "SourceError" and "nope.csv" in missing["message"]
    malformed = tmp_path / "malformed.csv"  # Spark's default PERMISSIVE mode would commit nulls here
    malformed.write_text("id,v,dt\n1,a,2026-11-21\nbob,20\n3,c,2026-11-21\n")
    error = one_error_line(runner.invoke(app, ["write", "-w", wh, "-t", "db.t", "--path", str(malformed),
                                               "--format", "csv"]))
    assert error["error"] == "DataError" and "'bob,20'" in error["message"] and "malformed.csv" in error["message"]
    wrong_type = tmp_path / "wrong_type.json"
    wrong_type.write_text('{"id": "x1", "v": "a", "dt": "2026-11-21"}\n')
    error = one_error_line(runner.invoke(app, ["write", "-w", wh, "-t", "db.t", "--path", str(wrong_type),
                                               "--format", "json"]))
    assert error["error"] == "DataError"
    error = one_error_line(runner.invoke(app, ["write", "-w", wh, "-t", "db.t", "--sql", "SELECT nope FROM nowhere"]))
    assert error["error"] == "SourceError"
    assert Catalog(wh).get_table("db.t").latest_snapshot() is None  # nothing committed
    with pytest.raises(SourceError):  # the Python API (operators, resources) gets the same typed error
        run_job("write", spark, TableLocation(wh, "db.t"), {"path": str(tmp_path / "nope.csv"), "format": "csv"})


def test_a_malformed_csv_names_every_bad_column_with_its_record(spark, tmp_path):
    """Spark's FAILFAST error names the first bad value's Java exception only; the job's names
    each column holding a value its type cannot take (the first one, its file and its record:
    blank lines are no records) and the first record with a field missing, and commits nothing."""
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.float64()), ("n", pa.int32()),
                        pa.field("dt", pa.string(), nullable=False)])
    c.create_table("db.m", schema, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    source = tmp_path / "two_bad_columns.csv"
    source.write_text("id,amount,n,dt\n1,1.5,3,2026-11-21\n2,lots,7,2026-11-21\n\n3,2.5,x7,2026-11-21\n"
                      "4,2.0,many,2026-11-21\n5,2.0\n")
    error = one_error_line(runner.invoke(app, ["write", "-w", c.warehouse, "-t", "db.m", "--path", str(source),
                                               "--format", "csv"]))
    assert error["error"] == "DataError"
    assert error["message"].replace(f"file:{source}", "F") == (
        "the CSV source does not fit the table's columns (parse mode FAILFAST; nothing was committed): "
        "column 'amount' (DOUBLE) cannot hold 'lots' (record 2 of F); column 'n' (INT) cannot hold 'x7' "
        "(record 3 of F); record 5 of F ('5,2.0') has 2 fields where the header has 4")
    assert c.get_table("db.m").latest_snapshot() is None


def test_source_columns_of_refused_types_fail_on_the_driver_and_commit_nothing(spark, wh, tmp_path):
    """A Parquet source whose ``dt`` holds integers: the STRING partition key refuses them (it
    once made partition dt=20261120), naming the column and both types, before any task runs."""
    path = str(tmp_path / "int_dt.parquet")
    pq.write_table(pa.table({"id": [1], "v": ["a"], "dt": [20261120]}), path)
    error = one_error_line(runner.invoke(app, ["write", "-w", wh, "-t", "db.t", "--path", path]))
    assert error["error"] == "SchemaError"
    assert "column 'dt' holds int64 values but the table's type is STRING" in error["message"]
    assert Catalog(wh).get_table("db.t").latest_snapshot() is None


def test_csv_columns_are_matched_by_header_name_with_the_table_types(spark, wh, tmp_path):
    reordered = tmp_path / "reordered.csv"  # header order differs from the table's; zero-padded ids stay exact
    reordered.write_text("dt,v,id,extra\n2026-11-21,007,7,x\n2026-11-22,010,10,y\n")
    job("write", "-w", wh, "-t", "db.t", "--path", str(reordered), "--format", "csv")
    assert rows(wh) == {(7, "2026-11-21"): "007", (10, "2026-11-22"): "010"}


@pytest.mark.slow
def test_write_killed_before_commit_then_rerun_lands_rows_once(spark, wh, tmp_path):
    """SIGKILL between writing the files and committing (a real spark job in a subprocess), then a
    rerun with the same commit identity: the rows appear exactly once."""
    path = source(tmp_path, "a", range(30), "a")
    args = ["write", "-w", wh, "-t", "db.t", "--path", path, "--commit-user", "dag.write",
            "--commit-identifier", "42", "--conf", "spark.sql.shuffle.partitions=2"]
    proc = subprocess.run([sys.executable, "-m", "paimonflow.jobs", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PAIMONFLOW_CRASH_AT": "spark-write:before-commit"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    t = Catalog(wh).get_table("db.t")
    assert t.snapshot_manager.latest_id() is None  # files written, nothing committed
    out = job(*args[:-2])
    assert out["snapshot_id"] == 1 and out["rows_written"] == 30
    assert job(*args[:-2])["already_committed"]
    assert len(rows(wh)) == 30 and Catalog(wh).get_table("db.t").read().num_rows == 30
    assert Catalog(wh).get_table("db.t").remove_orphan_files(older_than_millis=0).orphans  # the first attempt's


def test_python_api_returns_the_same_results(spark, wh, tmp_path):
    from paimonflow.jobs.compact import compact
    from paimonflow.jobs.write import WriteSource, write

    location = TableLocation(wh, "db.t")
    df = spark.createDataFrame([(1, "a", "d"), (2, "b", "d")], "id long, v string, dt string")
    assert write(spark, location, df).snapshot_id == 1
    assert write(spark, location, WriteSource(path=source(tmp_path, "x", [3], "c", "d"))).snapshot_id == 2
    assert compact(spark, location, full=True).metrics["buckets"] >= 1
    assert sorted(k[0] for k in rows(wh)) == [1, 2, 3]


def test_submit_command_puts_arguments_on_argv_and_storage_options_in_the_environment():
    """The one spark-submit builder (Airflow operators and the Dagster resource both use it)."""
    from paimonflow.jobs.submit import APPLICATION, submit_command

    location = TableLocation("s3://lake/wh", "shop.orders$branch_b",
                             {"s3.region": "eu-west-1", "s3.secret-key": "fake-secret-3e1a"})
    command = submit_command("compact", location, {"full": True, "partitions": ["dt=2026-11-21"], "buckets": None,
                                                   "commit_user": "u1", "commit_identifier": 1},
                             result_file="/tmp/result.json")
    assert command.application == APPLICATION and APPLICATION.endswith("submit.py")
    assert command.argv(master="local[1]", conf={"spark.ui.enabled": "false"}, name="paimonflow-compact") == [
        "spark-submit", "--master", "local[1]", "--name", "paimonflow-compact", "--conf", "spark.ui.enabled=false",
        APPLICATION, "--result-file", "/tmp/result.json", "compact", "-w", "s3://lake/wh", "-t",
        "shop.orders$branch_b", "--full", "--partition", "dt=2026-11-21", "--commit-user", "u1",
        "--commit-identifier", "1"]
    assert json.loads(command.env["PAIMONFLOW_STORAGE_OPTIONS"]) == dict(location.storage_options)
    assert "fake-secret" not in repr(command) and not any("s3." in a for a in command.argv())
    assert submit_command("analyze", TableLocation("/wh", "db.t"), {}, result_file="r").env == {}


@pytest.mark.slow
def test_spark_submit_runs_a_job(wh, tmp_path):
    """The real ``spark-submit`` with the job file (as on a cluster, minus the shipping), through the
    command the integrations build."""
    from paimonflow.jobs.submit import submit_command

    bin_dir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    result_file = tmp_path / "result.json"
    command = submit_command("write", TableLocation(wh, "db.t"), {"path": source(tmp_path, "a", range(12), "a")},
                             result_file=str(result_file))
    argv = command.argv(spark_submit=os.path.join(bin_dir, "spark-submit"), master="local[1]",
                        conf={"spark.ui.enabled": "false", "spark.driver.memory": "1g"})
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, env={**env, **command.env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["job"] == "write" and result["rows_written"] == 12 and result["snapshot_id"] == 1
    assert json.loads(result_file.read_text()) == result


def test_auto_tag_job_and_batch_tags_after_the_write_job(spark, tmp_path):
    c = Catalog(str(tmp_path / "wh4"))
    c.create_database("db")
    c.create_table("db.b", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                   options={"bucket": "1", "tag.automatic-creation": "batch"})
    c.create_table("db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                   options={"bucket": "1", "tag.automatic-creation": "process-time",
                            "tag.creation-period": "daily"})
    job("write", "-w", c.warehouse, "-t", "db.b", "--path", source(tmp_path, "b", [1, 2], "x"))
    tags = c.get_table("db.b").tags.list()
    assert len(tags) == 1 and next(iter(tags)).startswith("batch-write-")
    job("write", "-w", c.warehouse, "-t", "db.p", "--path", source(tmp_path, "p", [1], "x"))
    # the commit's maintenance already tagged the day before the first snapshot (Paimon's rule) ...
    from datetime import datetime, timedelta

    committed = datetime.fromtimestamp(c.get_table("db.p").latest_snapshot().time_millis / 1000)
    yesterday = (committed - timedelta(days=1)).strftime("%Y-%m-%d")
    assert set(c.get_table("db.p").tags.list()) == {yesterday}
    # ... so the on-demand job finds nothing due, and deleting the tag makes it due again
    assert job("auto-tag", "-w", c.warehouse, "-t", "db.p")["created"] == []
    c.get_table("db.p").tags.delete(yesterday)
    assert job("auto-tag", "-w", c.warehouse, "-t", "db.p")["created"] == [{"tag": yesterday, "snapshot_id": 1}]


def test_older_than_takes_a_duration_or_paimons_timestamp(spark, wh, tmp_path):
    """Paimon's expire_snapshots / remove_orphan_files procedures take ``older_than`` as a
    timestamp; the jobs take that or a duration, and refuse anything else with one typed line."""
    for i in range(3):
        job("write", "-w", wh, "-t", "db.t", "--path", source(tmp_path, f"w{i}", [i], "a"))
    future = job("expire-snapshots", "-w", wh, "-t", "db.t", "--retain-min", "1", "--older-than", "2000-01-01 00:00:00")
    assert future["expired_snapshots"] == 0  # nothing is older than the year 2000
    done = job("expire-snapshots", "-w", wh, "-t", "db.t", "--retain-min", "1", "--retain-max", "5",
               "--older-than", "0 ms")
    assert done["expired_snapshots"] == 2
    error = one_error_line(runner.invoke(app, ["expire-snapshots", "-w", wh, "-t", "db.t", "--older-than", "soon"]))
    assert error["error"] == "InvalidArgumentError" and "timestamp" in error["message"]
    error = one_error_line(runner.invoke(app, ["remove-orphan-files", "-w", wh, "-t", "db.t",
                                               "--older-than", "2999-01-01 00:00:00"]))
    assert error["error"] == "InvalidArgumentError" and "future" in error["message"]


def test_retain_max_alone_is_not_refused_for_the_default_retain_min(spark, tmp_path):
    """``--retain-max 1`` alone keeps one snapshot and one changelog id whatever
    ``*.num-retained.min`` says (10 for snapshots by default, 20 for changelogs here)."""
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    c.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                   options={"bucket": "1", "changelog-producer": "input", "write-only": "true",
                            "changelog.num-retained.min": "20"})
    w = ["-w", c.warehouse, "-t", "db.t"]
    for i in range(4):
        job("write", *w, "--path", source(tmp_path, f"s{i}", [i], "x"))
    assert job("expire-snapshots", *w, "--retain-max", "1")["to_changelog"] == [1, 2, 3]
    assert job("expire-changelogs", *w, "--retain-max", "1")["changelog_ids"] == [1, 2]
    error = one_error_line(runner.invoke(app, ["expire-changelogs", *w, "--retain-min", "3", "--retain-max", "2"]))
    assert error == {"job": "expire-changelogs", "error": "InvalidArgumentError",
                     "message": "retain_max (2) must be at least retain_min (3)"}


def test_tag_branch_and_consumer_jobs_of_paimons_procedures(spark, wh, tmp_path):
    """The jobs for Paimon's rename_tag, replace_tag, create/rename/delete_branch, fast_forward,
    reset_consumer and clear_consumers procedures, through the command line."""
    w = ["-w", wh, "-t", "db.t"]
    for i in range(2):
        job("write", *w, "--path", source(tmp_path, f"p{i}", [i], "a"))
    job("create-tag", *w, "--name", "t1", "--snapshot", "1")
    assert job("rename-tag", *w, "--name", "t1", "--new-name", "first")["snapshot_id"] == 1
    assert job("replace-tag", *w, "--name", "first", "--snapshot", "2")["snapshot_id"] == 2
    table = Catalog(wh).get_table("db.t")
    assert list(table.tags.list()) == ["first"] and table.tags.get("first").id == 2
    job("create-branch", *w, "--branch", "b", "--tag", "first")
    job("rename-branch", *w, "--branch", "b", "--new-name", "dev")
    job("write", "-w", wh, "-t", "db.t$branch_dev", "--path", source(tmp_path, "dev", [42], "dev"))
    forwarded = job("fast-forward", *w, "--branch", "dev")
    assert (42, "2026-11-21") in rows(wh) and forwarded["copied_snapshots"]
    job("delete-branch", *w, "--branch", "dev")
    assert not Catalog(wh).get_table("db.t").branches.list()
    table.consumer_manager.record("etl", 1)
    table.consumer_manager.record("adhoc", 1)
    assert job("reset-consumer", *w, "--consumer-id", "etl", "--next-snapshot", "2")["consumer"] == "etl"
    assert table.consumer_manager.get("etl").next_snapshot == 2
    assert job("clear-consumers", *w, "--including", "ad.*")["cleared"] == ["adhoc"]
    assert job("reset-consumer", *w, "--consumer-id", "etl")["deleted"] is True
    assert table.consumer_manager.get("etl") is None


def test_an_error_raised_inside_a_task_comes_back_as_its_own_type():
    """A task's traceback reaches the driver as text; errors built from named parts
    (InvalidOptionError, InvalidNameError) come back with their type and message too."""
    from paimonflow.core.errors import InvalidNameError, InvalidOptionError
    from paimonflow.jobs.spark_errors import typed_error

    task_failure = RuntimeError("Traceback (most recent call last):\n  File ...\n"
                                "paimonflow.core.errors.InvalidOptionError: table option 'bucket'='x': not an integer\n")
    error = typed_error(task_failure)
    assert isinstance(error, InvalidOptionError) and str(error) == "table option 'bucket'='x': not an integer"
    error = typed_error(RuntimeError("paimonflow.core.errors.InvalidNameError: invalid tag name '..': dots"))
    assert isinstance(error, InvalidNameError) and "dots" in str(error)
    assert typed_error(RuntimeError("a defect")) is None  # not a user's mistake: reported in full
    # the data source reports its errors without a traceback, after Spark's own words on one line
    from paimonflow.core.errors import SchemaError

    one_line = RuntimeError("[PYTHON_DATA_SOURCE_ERROR] Failed to initialize Python data source writer: "
                            "paimonflow.core.errors.SchemaError: column 'id' holds string values\n SQLSTATE: 38000")
    error = typed_error(one_line)
    assert isinstance(error, SchemaError) and str(error) == "column 'id' holds string values"


def test_sigterm_interrupts_a_job_only_while_it_runs_and_only_from_the_main_thread():
    import threading

    from paimonflow.jobs.cli import _sigterm_interrupts, _terminated

    before = signal.getsignal(signal.SIGTERM)
    with _sigterm_interrupts():
        assert signal.getsignal(signal.SIGTERM) is _terminated
    assert signal.getsignal(signal.SIGTERM) is before  # the process's own handler is back
    seen: dict = {}

    def in_a_thread():  # signal.signal would raise ValueError here
        with _sigterm_interrupts():
            seen["handler"] = signal.getsignal(signal.SIGTERM)

    worker = threading.Thread(target=in_a_thread)
    worker.start()
    worker.join()
    assert seen["handler"] is before
