"""Every job by name, for callers that hold a job name and plain arguments (the Dagster resource,
scheduler integrations): ``run_job(name, spark, location, arguments)`` runs it in process, and
``cli_arguments`` turns the same arguments into the job command line for ``spark-submit``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from paimonflow.core.errors import InvalidArgumentError

from . import maintenance
from .location import TableLocation


def _write(spark, location: TableLocation, a: Mapping[str, Any]):
    from .write import WriteSource, partition_spec, write

    source = WriteSource(path=a.get("path"), format=a.get("format", "parquet"), spark_table=a.get("source_table"),
                         sql=a.get("sql"))
    return write(spark, location, a.get("dataframe", source), mode=a.get("mode", "append"),
                 overwrite_partition=partition_spec(a.get("overwrite_partition")),
                 row_kind_column=a.get("row_kind_column"), commit_user=a.get("commit_user"),
                 commit_identifier=a.get("commit_identifier"))


def _compact(spark, location: TableLocation, a: Mapping[str, Any]):
    from .compact import compact
    from .write import partition_specs

    return compact(spark, location, full=a.get("full", True), partitions=partition_specs(a.get("partitions")),
                   buckets=a.get("buckets"), commit_user=a.get("commit_user"),
                   commit_identifier=a.get("commit_identifier"))


def _maintenance(name: str) -> Callable:
    function = getattr(maintenance, name)
    return lambda spark, location, a: function(spark, location, **a)


JOBS: dict[str, Callable] = {
    "write": _write,
    "compact": _compact,
    **{name.replace("_", "-"): _maintenance(name) for name in (
        "expire_snapshots", "expire_changelogs", "expire_partitions", "analyze", "create_tag", "delete_tag", "expire_tags", "auto_tag",
        "rollback", "remove_orphan_files", "read_changes", "create_branch", "delete_branch", "fast_forward",
        "rename_tag", "replace_tag", "rename_branch", "reset_consumer", "clear_consumers")},
}

DRIVER_ONLY_JOBS: frozenset[str] = frozenset({
    "expire-snapshots", "expire-changelogs", "expire-partitions", "analyze",
    "create-tag", "delete-tag", "rename-tag", "replace-tag", "expire-tags", "auto-tag",
    "create-branch", "delete-branch", "rename-branch", "fast-forward", "rollback",
    "reset-consumer", "clear-consumers"})
"""The jobs that run no Spark task: the core's work on the driver, whatever the session. Submitted,
they ask for no executors (:func:`paimonflow.jobs.submit.submit_command`). The others (``write``,
``compact``, ``remove-orphan-files``, ``read-changes``) run their work in Spark tasks.
``tests/spark/test_driver_only.py`` runs every job and checks that exactly these start no Spark job."""

METADATA_ONLY_JOBS: frozenset[str] = DRIVER_ONLY_JOBS - {"analyze"}
"""The driver-only jobs whose work is bounded by the table's metadata, not its data (``analyze``
reads every row of the latest snapshot): the Airflow operators and the Dagster ``SparkResource``
run these on the core engine unless told otherwise, since starting Spark for them costs more
than the work."""

# argument name -> command-line flag, where they differ
_FLAGS = {"source_table": "--source-table", "partitions": "--partition", "buckets": "--bucket",
          "start_snapshot": "--start", "end_snapshot": "--end", "snapshot_id": "--snapshot",
          "columns": "--column"}
_DURATIONS = {"older_than_millis": "--older-than", "min_older_than_millis": "--min-older-than",
              "expiration_millis": "--expiration"}


def run_job(name: str, spark, location: TableLocation, arguments: Mapping[str, Any]) -> dict[str, Any]:
    if name not in JOBS:
        raise InvalidArgumentError(f"unknown job {name!r}; jobs are {', '.join(sorted(JOBS))}")
    from dataclasses import replace

    from .session import cancellable
    from .spark_errors import typed_errors
    from .spark_info import master_of

    if spark is None:  # the core engine: the job's planning and acting without Spark
        return JOBS[name](None, location, dict(arguments)).to_dict()
    # callers (operators, resources) catch paimonflow's errors; an interrupted caller cancels the work
    with typed_errors(), cancellable(spark, name):
        result = JOBS[name](spark, location, dict(arguments))
    return replace(result, master=master_of(spark)).to_dict()


def cli_arguments(arguments: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in arguments.items():
        if value is None:
            continue
        if key == "full":
            out.append("--full" if value else "--no-full")
            continue
        if key in _DURATIONS:
            out += [_DURATIONS[key], f"{int(value)} ms"]
            continue
        flag = _FLAGS.get(key, "--" + key.replace("_", "-"))
        if value is True:
            out.append(flag)
        elif value is False:
            continue
        elif isinstance(value, list | tuple):
            for item in value:
                out += [flag, str(item)]
        else:
            out += [flag, str(value)]
    return out


__all__ = ["DRIVER_ONLY_JOBS", "JOBS", "METADATA_ONLY_JOBS", "cli_arguments", "run_job"]
