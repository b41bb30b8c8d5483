"""Dagster assets, ops, asset checks and a factory for a table's whole life.

* ``paimon_job_op(job, table, **arguments)``: an op running one paimonflow job (``write``,
  ``compact``, ``expire-snapshots``, ``create-tag``, ``rollback``, ``remove-orphan-files``,
  ``read-changes``...) through the ``spark`` resource; its result is the op's output and its
  materialization/output metadata.
* ``paimon_table(TableSpec(...))``: the table as an asset, materialized by the write job from a
  source path (for partitioned assets each partition overwrites its own table partition), with
  health asset checks, a maintenance job (compact, tag the day, expire snapshots, expire tags,
  remove orphans) and its schedule: a table's life from a few lines. The maintenance job runs in
  one process (Dagster's in-process executor: its steps are a chain anyway), so its Spark steps
  share one Spark session and no step pays for a process of its own; the tag and expiry steps run
  on the core (:meth:`SparkResource.runs_on_core`).

Commit identity: ``dagster.<step>.<partition or "all">.<root run id>``, so a re-executed run (same
root run, same partition) recognises its own landed commit and never commits twice.
"""

# No ``from __future__ import annotations``: Dagster reads context annotations at runtime.

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg

from paimonflow.core.errors import TableNotFoundError
from paimonflow.jobs.registry import JOBS

from .metadata import table_metadata
from .resources import PaimonResource, SparkResource

COMMITTING = {"write", "compact", "expire-partitions"}


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def commit_identity(context, step: str) -> tuple[str, int]:
    run = context.run
    root = run.root_run_id or run.run_id
    partition = context.partition_key if context.has_partition_key else "all"
    user = re.sub(r"[^\w\-.@+~]", "_", f"dagster.{step}.{partition}.{root}")[:200]
    return user, 1


def result_metadata(result: dict[str, Any]) -> dict[str, Any]:
    """Job result -> metadata a person reads at a glance (numbers stay numbers), each key in the
    ``paimon/`` namespace beside Dagster's ``dagster/`` ones (``paimon/rows_written``)."""
    out: dict[str, Any] = {}
    for key, value in result.items():
        if value is None:
            continue
        name = key if "/" in key else f"paimon/{key}"
        out[name] = value if isinstance(value, bool | int | float | str) else dg.MetadataValue.json(value)
    return out


def job_table_metadata(paimon: PaimonResource, table: str, job: str, result: dict[str, Any], *,
                       partition_rows: int | None = None) -> dict[str, Any]:
    """Dagster's standard table metadata after ``job`` ran: the snapshot it made and the rows the
    table then holds, if it committed; else the latest snapshot, schema and location (a
    maintenance job changes no rows, so none are counted)."""
    try:
        opened = paimon.table(table)
    except TableNotFoundError:
        return {}
    committed = job in COMMITTING and not result.get("already_committed") and bool(result.get("snapshot_id"))
    return table_metadata(opened, snapshot_id=result.get("snapshot_id") if committed else None, committed=committed,
                          partition_rows=partition_rows, row_count=committed)


def _with_range(arguments: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """String arguments with ``{start_snapshot}``/``{end_snapshot}`` filled from the op config (or
    the fixed arguments): a read-changes output folder per range, so each run keeps its batch."""
    merged = {**arguments, **config}
    values = {"start_snapshot": merged.get("start_snapshot", ""), "end_snapshot": merged.get("end_snapshot", "")}
    return {k: (v.format(**values) if isinstance(v, str) and "_snapshot}" in v else v) for k, v in arguments.items()}


def paimon_job_op(job: str, table: str, *, name: str | None = None, **arguments: Any) -> dg.OpDefinition:
    """An op running ``job`` on ``table`` with fixed ``arguments``; ``read-changes`` also takes
    ``start_snapshot``/``end_snapshot`` from the op config (what the snapshot sensor requests), and
    string arguments may name them (``output=".../changes/{start_snapshot}-{end_snapshot}"``)."""
    if job not in JOBS:
        raise ValueError(f"unknown job {job!r}; jobs are {', '.join(sorted(JOBS))}")
    op_name = name or f"paimon_{_safe(job)}_{_safe(table)}"

    @dg.op(name=op_name, config_schema={"start_snapshot": dg.Field(int, is_required=False),
                                        "end_snapshot": dg.Field(int, is_required=False)},
           ins={"after": dg.In(dg.Nothing)}, out=dg.Out(dict), tags={"kind": "paimon"})
    def _op(context: dg.OpExecutionContext, paimon: PaimonResource, spark: SparkResource) -> dict:
        config = {k: v for k, v in (context.op_config or {}).items() if v is not None}
        args = {**_with_range(arguments, config), **config}
        if job in COMMITTING and "commit_user" not in args:
            args["commit_user"], args["commit_identifier"] = commit_identity(context, op_name)
            if job == "expire-partitions":
                args.pop("commit_identifier")
        result = spark.run(job, paimon, table, args, context=context)
        context.add_output_metadata({**result_metadata(result), **job_table_metadata(paimon, table, job, result)})
        return result

    return _op


@dataclass(frozen=True)
class TableSpec:
    """A table's life in a few lines: where its rows come from and how it is maintained.

    ``source`` is a path template; ``{partition}`` is the asset partition key (e.g. a date), and
    with ``partition_column`` each partition overwrites its own table partition (idempotent)."""

    table: str
    source: str | None = None
    format: str = "parquet"
    partitions_def: dg.PartitionsDefinition | None = None
    partition_column: str | None = None
    maintenance_cron: str = "0 2 * * *"
    tag_time_retained: str = "30 d"
    orphan_older_than: str = "1 d"
    orphan_min_older_than: str = "1 h"  # a shorter orphan window is refused (writers' new files)
    max_small_file_fraction: float = 0.5
    max_level0_runs: int = 5
    min_snapshots: int = 1
    tag_days: int = 0  # tags expected for the last N days (0: not checked)
    deps: list = field(default_factory=list)
    #: how the asset is kept up to date declaratively (e.g. ``dg.AutomationCondition.on_cron(...)``)
    automation_condition: dg.AutomationCondition | None = None
    #: the newest commit (made anywhere) at most this old: a Dagster freshness policy on the asset
    #: and a ``fresh`` health check on the table's latest snapshot
    freshness: timedelta | None = None

    def __post_init__(self) -> None:
        if self.freshness is not None and self.freshness < timedelta(minutes=1):
            from paimonflow.core.errors import InvalidArgumentError

            raise InvalidArgumentError(f"TableSpec({self.table!r}): freshness must be at least 1 minute (Dagster's "
                                       f"smallest freshness window), got {self.freshness}")


def table_asset_key(table: str) -> dg.AssetKey:
    """The asset key of a table's asset made by :func:`paimon_table`: ``paimon/<database>/<table>``."""
    database, name = table.split("$", 1)[0].split(".")
    return dg.AssetKey(["paimon", database, name])


def paimon_table(spec: TableSpec) -> dict[str, list]:
    """Assets, asset checks, jobs and schedules for one table (merge into ``dg.Definitions``)."""
    key = table_asset_key(spec.table)
    step = "write_" + _safe(spec.table)

    @dg.asset(key=key, partitions_def=spec.partitions_def, group_name="paimon", kinds={"paimon"},
              deps=spec.deps, description=f"Paimon table {spec.table}",
              automation_condition=spec.automation_condition,
              freshness_policy=dg.FreshnessPolicy.time_window(fail_window=spec.freshness) if spec.freshness else None)
    def table_asset(context: dg.AssetExecutionContext, paimon: PaimonResource,
                    spark: SparkResource) -> dg.MaterializeResult:
        if spec.source is None:
            raise dg.Failure(f"TableSpec({spec.table!r}) has no source to write from")
        partition = context.partition_key if context.has_partition_key else None
        if spec.partitions_def is not None and partition is None:
            raise dg.Failure(f"{spec.table} is partitioned: materialize one partition at a time")
        args: dict[str, Any] = {"path": spec.source.format(partition=partition), "format": spec.format}
        if partition is not None and spec.partition_column:
            args.update(mode="overwrite", overwrite_partition=f"{spec.partition_column}={partition}")
        args["commit_user"], args["commit_identifier"] = commit_identity(context, step)
        result = spark.run("write", paimon, spec.table, args, context=context)
        standard = job_table_metadata(paimon, spec.table, "write", result,
                                      partition_rows=result.get("rows_written", 0) if partition is not None else None)
        return dg.MaterializeResult(metadata={**result_metadata(result), **standard})

    checks = _health_checks(spec, key)
    ops = [paimon_job_op("compact", spec.table, name=f"compact_{_safe(spec.table)}", full=True),
           _daily_tag_op(spec),
           paimon_job_op("expire-snapshots", spec.table, name=f"expire_snapshots_{_safe(spec.table)}"),
           paimon_job_op("expire-tags", spec.table, name=f"expire_tags_{_safe(spec.table)}"),
           paimon_job_op("remove-orphan-files", spec.table, name=f"remove_orphans_{_safe(spec.table)}",
                         older_than_millis=_millis(spec.orphan_older_than),
                         min_older_than_millis=_millis(spec.orphan_min_older_than))]

    # one process for the chain: the Spark steps share a session (a multiprocess run started a local
    # Spark per step, minutes on a 12-row table), the metadata-only steps run on the core
    @dg.job(name=f"maintain_{_safe(spec.table)}", tags={"kind": "paimon"}, executor_def=dg.in_process_executor)
    def maintenance():
        compact, tag, expire, expire_tags, orphans = ops
        orphans(expire_tags(expire(tag(compact()))))

    schedule = dg.ScheduleDefinition(job=maintenance, cron_schedule=spec.maintenance_cron,
                                      name=f"maintain_{_safe(spec.table)}_schedule")
    return {"assets": [table_asset], "asset_checks": checks, "jobs": [maintenance], "schedules": [schedule]}


def _millis(text: str) -> int:
    from paimonflow.core.options.parse import parse_duration_millis

    return parse_duration_millis(text)


def _daily_tag_op(spec: TableSpec) -> dg.OpDefinition:
    name = f"tag_day_{_safe(spec.table)}"

    @dg.op(name=name, ins={"after": dg.In(dg.Nothing)}, out=dg.Out(dict), tags={"kind": "paimon"})
    def _tag(context: dg.OpExecutionContext, paimon: PaimonResource) -> dict:
        """Tag the latest snapshot with the run's day (the schedule's time, else today, UTC)."""
        scheduled = context.run.tags.get("dagster/scheduled_execution_time")
        day = (datetime.fromisoformat(scheduled) if scheduled else datetime.now(UTC)).strftime("%Y-%m-%d")
        table = paimon.table(spec.table)
        latest = table.snapshot_manager.latest_id()
        existing = table.tags.list().get(day)
        if existing is None:
            table.tags.create(day, time_retained=spec.tag_time_retained)
        result = {"job": "create-tag", "table": spec.table, "tag": day, "snapshot_id": latest,
                  "already_existed": existing is not None}
        context.add_output_metadata(result_metadata(result))
        return result

    return _tag


def _health_checks(spec: TableSpec, key: dg.AssetKey) -> list:
    from paimonflow.plugins.health import table_health

    specs = [dg.AssetCheckSpec(name, asset=key)
             for name in ("small_files", "level0_runs", "snapshots_retained", "recent_tags")]
    if spec.freshness is not None:
        specs.append(dg.AssetCheckSpec("fresh", asset=key, description=f"newest commit at most {spec.freshness} old"))

    @dg.multi_asset_check(specs=specs, name=f"health_{_safe(spec.table)}")
    def health(context: dg.AssetCheckExecutionContext, paimon: PaimonResource):
        table = paimon.table(spec.table)
        report = table_health(table)
        fraction = report.small_files / report.total_files if report.total_files else 0.0
        yield dg.AssetCheckResult(check_name="small_files", asset_key=key,
                                  passed=fraction <= spec.max_small_file_fraction,
                                  metadata={"small_files": report.small_files, "data_files": report.total_files,
                                            "fraction": round(fraction, 3),
                                            "allowed": spec.max_small_file_fraction})
        level0: dict[str, int] = {}
        for (partition, bucket, level), (count, _) in report.files_by_bucket_level.items():
            if level == 0:
                level0[f"{partition}/bucket-{bucket}"] = count
        worst = max(level0.values(), default=0)
        yield dg.AssetCheckResult(check_name="level0_runs", asset_key=key, passed=worst <= spec.max_level0_runs,
                                  metadata={"max_level0_files_per_bucket": worst, "allowed": spec.max_level0_runs,
                                            "buckets_over": sum(v > spec.max_level0_runs for v in level0.values())})
        retained = len(report.snapshots)
        yield dg.AssetCheckResult(check_name="snapshots_retained", asset_key=key, passed=retained >= spec.min_snapshots,
                                  metadata={"retained": retained, "earliest": report.earliest_snapshot or 0,
                                            "latest": report.latest_snapshot or 0})
        today = datetime.now(UTC).date()
        wanted = [(today - timedelta(days=d)).strftime("%Y-%m-%d") for d in range(1, spec.tag_days + 1)]
        missing = [d for d in wanted if d not in report.tags]
        yield dg.AssetCheckResult(check_name="recent_tags", asset_key=key, passed=not missing,
                                  severity=dg.AssetCheckSeverity.WARN,
                                  metadata={"missing": dg.MetadataValue.json(missing), "tags": len(report.tags)})
        if spec.freshness is not None:
            latest = table.latest_snapshot()  # commits made anywhere count, not only Dagster's
            age = datetime.now(UTC) - datetime.fromtimestamp(latest.time_millis / 1000, UTC) if latest else None
            yield dg.AssetCheckResult(check_name="fresh", asset_key=key,
                                      passed=age is not None and age <= spec.freshness,
                                      metadata={"latest_snapshot": latest.id if latest else 0,
                                                "age_seconds": round(age.total_seconds(), 1) if age else -1.0,
                                                "allowed_seconds": spec.freshness.total_seconds()})

    return [health]


__all__ = ["TableSpec", "commit_identity", "job_table_metadata", "paimon_job_op", "paimon_table", "result_metadata",
           "table_asset_key"]
