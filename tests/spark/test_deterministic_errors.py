"""A deterministic data error in the write job's tasks fails the job at once, on a real cluster.

On a Spark cluster ``spark.task.maxFailures`` is 4: a task that raises is run again three times
before the job fails. Rows that do not fit the table (a null key, a value its column cannot hold)
fail every attempt the same way, so the write job's tasks hand such an error
(``jobs/spark_errors.DETERMINISTIC_ERRORS``) to the driver as data and the driver raises it once:
the job exits 2 with the typed line, no task attempt failed (Spark's event log says so), nothing
is committed and no data file is left. Other failures (storage, a lost executor) are still
retried by Spark.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from paimonflow.jobs.location import TableLocation
from paimonflow.jobs.submit import submit_command
from tests.spark.cluster import spark_submit

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("qty", pa.int32())])


def task_failures(event_logs: Path) -> tuple[int, int]:
    """(task attempts that failed, task attempts that succeeded) in the application's event log."""
    failed = succeeded = 0
    # Spark 4 writes a rolling event log: a folder per application, its events in events_<n>_* files
    lines = [line for log in sorted(event_logs.rglob("events_*")) for line in log.read_text().splitlines()]
    assert lines, f"no event log in {event_logs}"
    for line in lines:
        event = json.loads(line)
        if event.get("Event") == "SparkListenerTaskEnd":
            if event["Task End Reason"]["Reason"] == "Success":
                succeeded += 1
            else:
                failed += 1
    return failed, succeeded


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("rows", "error", "message"), [
    ({"id": pa.array(["a", None, "c", "d"], pa.string()), "qty": pa.array([1, 2, 3, 4], pa.int64())},
     "DataError", "primary key column 'id' is NOT NULL but has 1 null value(s)"),
    ({"id": ["a", "b", "c", "d"], "qty": pa.array([1, 2, 2**40, 4], pa.int64())},
     "SchemaError", "column 'qty' holds int64 values that the table's type INT cannot hold exactly"),
], ids=["null key", "value out of range"])
def test_a_bad_row_fails_the_write_once_with_its_typed_line_and_commits_nothing(spark_cluster, tmp_path, rows, error,
                                                                                message):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    source = tmp_path / "rows.parquet"
    pq.write_table(pa.table(rows), source)
    events = tmp_path / "events"
    events.mkdir()
    command = submit_command("write", TableLocation(str(tmp_path / "wh"), "db.t"),
                             {"path": str(source), "parallelism": 2}, result_file=None)
    command = dataclasses.replace(command, conf={**command.conf, "spark.eventLog.enabled": "true",
                                                 "spark.eventLog.dir": events.as_uri(), "spark.eventLog.compress": "false"})
    proc = spark_submit(spark_cluster, f"write-{error}", command)
    assert proc.returncode == 2, proc.stderr[-3000:]
    # the driver's one JSON line (spark-submit hands the Python driver's stderr on through its stdout)
    [line] = [json.loads(x) for x in (proc.stdout + proc.stderr).splitlines() if x.startswith('{"job"')]
    assert (line["job"], line["error"]) == ("write", error) and message in line["message"], line
    failed, succeeded = task_failures(events)
    assert failed == 0 and succeeded >= 2, f"{failed} task attempts failed (Spark retried a deterministic error)"
    table = catalog.get_table("db.t")
    assert table.latest_snapshot() is None
    assert not [p for p in (tmp_path / "wh" / "db.db" / "t").rglob("*") if p.is_file() and "bucket-" in str(p)]
