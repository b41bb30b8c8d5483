"""The Spark jobs' error contract, walked through every job with inputs a user gets wrong: one
JSON line on stderr (``{"job", "error", "message"}``, or ``{"error", "message"}`` for the command
line's own usage errors), exit code 2, nothing on stdout, nothing written (on the shared session)."""

from __future__ import annotations

import json
import shlex

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from paimonflow.core import Catalog
from paimonflow.jobs.cli import app
from tests.files import tree

W = "-w {wh} -t db.t"
# (what the user got wrong, argv with {wh} and {d} (a folder of inputs), the error kind)
CASES: list[tuple[str, str, str]] = [
    ("an unknown job", "wirte " + W, "UsageError"),
    ("a missing required option", "create-tag " + W, "UsageError"),
    ("a Spark setting without a value", "compact " + W + " --conf spark.sql.shuffle.partitions", "InvalidArgumentError"),
    ("a storage option without a value", "compact " + W + " --storage-option s3.endpoint", "InvalidArgumentError"),
    ("a table that does not exist", "write -w {wh} -t db.nope --path {d}/rows.parquet", "TableNotFoundError"),
    ("an input path that does not exist", "write " + W + " --path {d}/missing.parquet", "SourceError"),
    ("a CSV line with a column missing", "write " + W + " --path {d}/short.csv --format csv", "DataError"),
    ("a partition without a value", "compact " + W + " --partition dt", "InvalidArgumentError"),
    ("an age that is neither duration nor time", "expire-snapshots " + W + " --older-than soon", "InvalidArgumentError"),
    ("a retention below one", "expire-changelogs " + W + " --retain-min 0", "InvalidArgumentError"),
    ("an expiration that is not a duration", "expire-partitions " + W + " --expiration weekly", "InvalidArgumentError"),
    ("statistics of a column that does not exist", "analyze " + W + " --column price", "SchemaError"),
    ("a tag name with a path in it", "create-tag " + W + " --name ../x", "InvalidNameError"),
    ("a tag that does not exist", "delete-tag " + W + " --name nope", "TagNotFoundError"),
    ("renaming a tag that does not exist", "rename-tag " + W + " --name nope --new-name other", "TagNotFoundError"),
    ("replacing a tag that does not exist", "replace-tag " + W + " --name nope", "TagNotFoundError"),
    ("a branch name that is a number", "create-branch " + W + " --branch 123", "InvalidNameError"),
    ("a branch that does not exist", "delete-branch " + W + " --branch nope", "BranchNotFoundError"),
    ("renaming a branch that does not exist", "rename-branch " + W + " --branch nope --new-name b", "BranchNotFoundError"),
    ("fast-forwarding to a branch that does not exist", "fast-forward " + W + " --branch nope", "BranchNotFoundError"),
    ("a consumer id with a slash", "reset-consumer " + W + " --consumer-id a/b --next-snapshot 1", "InvalidNameError"),
    ("a consumer pattern that is no regular expression", "clear-consumers " + W + " --including '('",
     "InvalidArgumentError"),
    ("a tag age that is not a duration", "expire-tags " + W + " --older-than old", "InvalidArgumentError"),
    ("automatic tags of a table that does not exist", "auto-tag -w {wh} -t db.nope", "TableNotFoundError"),
    ("a rollback with no target", "rollback " + W, "InvalidArgumentError"),
    ("orphan removal below the safety floor", "remove-orphan-files " + W + " --older-than '10 min'",
     "InvalidArgumentError"),
    ("changes from past the latest snapshot", "read-changes " + W + " --start 99 --output {d}/changes",
     "InvalidArgumentError"),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("job-errors")
    wh, inputs = root / "wh", root / "in"
    inputs.mkdir()
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    table = catalog.create_table("db.t", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2"})
    table.write(pa.table({"id": [1], "dt": ["2026-11-21"]}, schema=schema))
    pq.write_table(pa.table({"id": [2], "dt": ["2026-11-21"]}), inputs / "rows.parquet")
    (inputs / "short.csv").write_text("id,dt\n3,2026-11-21\n4\n")
    return wh, inputs


@pytest.mark.spark
@pytest.mark.parametrize(("what", "template", "kind"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_job_input_is_one_json_line_exit_2_and_writes_nothing(spark, world, what, template, kind):
    wh, inputs = world
    before = tree(wh)
    argv = shlex.split(template.replace("{wh}", str(wh)).replace("{d}", str(inputs)))
    result = CliRunner().invoke(app, argv, catch_exceptions=False, env={"PAIMONFLOW_WAREHOUSE": None})
    assert (result.exit_code, result.stdout) == (2, ""), result.output
    [line] = result.stderr.splitlines()
    error = json.loads(line)
    assert error["error"] == kind, line
    assert error["message"] and "Traceback" not in error["message"] and "\n" not in error["message"]
    assert tree(wh) == before, f"{what}: something was written"
