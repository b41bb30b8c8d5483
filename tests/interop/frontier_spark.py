"""The Spark face of the feature frontier (``frontier.py``): each Spark job through its command
line (``paimonflow.jobs.cli``, in process through typer's ``CliRunner``, as
``tests/spark/test_jobs.py`` runs them) and a batch read through the ``paimonflow`` data source,
on the caller's SparkSession (``run_frontier(..., spark=session)``).

A job that runs must leave what its core operation leaves (the same :class:`Expect`); a refused
job exits 2 with one JSON line on stderr naming ``UnsupportedFeatureError``; a refused read
surfaces the core's one line inside Spark's exception. Every kind gets every Spark cell: on these
tiny tables a job takes ~0.3 s on the shared local[2] session (217 cells, 65-75 s on 2 cores,
mostly while the CLI cells still run).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from paimonflow.core.meta.capabilities import Operation as Gate

from .frontier import NEW_TAG, TAG, EngineError, Expect, FrontierTable, JobRun, Operation


def _job(verb: str, *args: str, source: bool = False):
    """A Spark job on the table, through the jobs' command line; ``source``: with ``--path`` a
    Parquet file of the table's fresh rows (written beside the warehouse, outside the table)."""

    def run(t: FrontierTable, spark: Any) -> JobRun:
        from typer.testing import CliRunner

        from paimonflow.jobs.cli import app

        extra = list(args)
        if source:
            path = t.warehouse.parent / f"fresh-{t.feature}.parquet"
            pq.write_table(t.fresh, path)
            extra += ["--path", str(path)]
        result = CliRunner().invoke(app, [verb, "-w", str(t.warehouse), "-t", t.identifier, *extra],
                                    catch_exceptions=False, env={"PAIMONFLOW_WAREHOUSE": None})
        return JobRun(job=verb, exit_code=result.exit_code, stdout=result.stdout, stderr=result.stderr)

    return run


def _read(t: FrontierTable, spark: Any) -> pa.Table | EngineError:
    """The latest snapshot through the ``paimonflow`` data source, by the table's directory."""
    try:
        return spark.read.format("paimonflow").load(str(t.path)).toArrow()
    except Exception as exc:  # Spark raises its own exception, quoting the data source's error
        return EngineError(type_name=type(exc).__name__, message=str(exc))


def _spark(name: str, run, expect: Expect = Expect.SAME, *, gate: Gate, read_only: bool = False) -> Operation:
    return Operation(name, run, expect, read_only=read_only, spark=True, gate=gate)


SPARK_OPERATIONS: tuple[Operation, ...] = (
    _spark("spark_read", _read, read_only=True, gate=Gate.READ),
    _spark("spark_write", _job("write", source=True), Expect.FRESH, gate=Gate.WRITE),
    _spark("spark_compact", _job("compact"), Expect.FULL_COMPACTION, gate=Gate.COMPACT),
    _spark("spark_expire_snapshots", _job("expire-snapshots", "--retain-min", "1", "--retain-max", "1",
                                          "--older-than", "0 ms"), gate=Gate.EXPIRE),
    _spark("spark_remove_orphans", _job("remove-orphan-files", "--older-than", "0 ms", "--min-older-than", "0 ms"),
           gate=Gate.ORPHANS),
    _spark("spark_create_tag", _job("create-tag", "--name", NEW_TAG), Expect.NEW_TAG, gate=Gate.HISTORY),
    _spark("spark_rollback", _job("rollback", "--tag", TAG), Expect.TAG_AS_LATEST, gate=Gate.HISTORY),
)
