"""Maintenance jobs. Planning is metadata work and runs on the driver through the core (the same
code, plans and crash safety as the CLI); orphan removal lists and deletes files on the
executors, one table directory per task, since that is where the I/O is."""

from __future__ import annotations

import pickle
import time
from collections.abc import Sequence

from paimonflow.core.errors import InvalidArgumentError

from .location import TableLocation
from .result import JobResult, Stopwatch
from .tasks import run_tasks


def _result(job: str, location: TableLocation, watch: Stopwatch, snapshot_id=None, *, executors: int = 0,
            **metrics) -> JobResult:
    return JobResult(job=job, table=location.identifier, snapshot_id=snapshot_id, duration_s=watch.elapsed,
                     executors=executors, metrics=metrics)


def expire_snapshots(spark, location: TableLocation, *, retain_min: int | None = None, retain_max: int | None = None,
                     older_than_millis: int | None = None, max_deletes: int | None = None,
                     dry_run: bool = False) -> JobResult:
    watch = Stopwatch()
    table = location.open()
    done = table.expire_snapshots(retain_min=retain_min, retain_max=retain_max, older_than_millis=older_than_millis,
                                  max_deletes=max_deletes, dry_run=dry_run)
    return _result("expire-snapshots", location, watch, table.snapshot_manager.earliest_id(), **done.to_dict())


def expire_changelogs(spark, location: TableLocation, *, retain_min: int | None = None,
                      retain_max: int | None = None, older_than_millis: int | None = None,
                      max_deletes: int | None = None, delete_all: bool = False, dry_run: bool = False) -> JobResult:
    watch = Stopwatch()
    table = location.open()
    done = table.expire_changelogs(retain_min=retain_min, retain_max=retain_max, older_than_millis=older_than_millis,
                                   max_deletes=max_deletes, delete_all=delete_all, dry_run=dry_run)
    return _result("expire-changelogs", location, watch, table.snapshot_manager.latest_id(), **done.to_dict())


def expire_partitions(spark, location: TableLocation, *, expiration_millis: int | None = None,
                      dry_run: bool = False, commit_user: str | None = None) -> JobResult:
    watch = Stopwatch()
    table = location.open()
    done = table.expire_partitions(expiration_millis=expiration_millis, dry_run=dry_run, commit_user=commit_user)
    metrics = {k: v for k, v in done.to_dict().items() if k != "snapshot_id"}
    return _result("expire-partitions", location, watch, done.snapshot_id, **metrics)


def analyze(spark, location: TableLocation, *, columns: Sequence[str] | None = None,
            commit_user: str | None = None) -> JobResult:
    watch = Stopwatch()
    table = location.open()
    table.analyze(columns, commit_user=commit_user)
    latest = table.snapshot_manager.latest()
    return _result("analyze", location, watch, latest.id if latest else None,
                   statistics_file=latest.statistics if latest else None)


def create_tag(spark, location: TableLocation, *, name: str, snapshot_id: int | None = None,
               timestamp_millis: int | None = None, time_retained: str | None = None) -> JobResult:
    watch = Stopwatch()
    tag = location.open().tags.create(name, snapshot_id=snapshot_id, timestamp_millis=timestamp_millis,
                                      time_retained=time_retained)
    return _result("create-tag", location, watch, tag.id, tag=name)


def delete_tag(spark, location: TableLocation, *, name: str, dry_run: bool = False) -> JobResult:
    watch = Stopwatch()
    done = location.open().tags.delete(name, dry_run=dry_run)
    return _result("delete-tag", location, watch, done.snapshot_id, tag=name, freed_files=len(done.freed_files),
                   dry_run=dry_run)


def rename_tag(spark, location: TableLocation, *, name: str, new_name: str) -> JobResult:
    watch = Stopwatch()
    table = location.open()
    table.tags.rename(name, new_name)
    return _result("rename-tag", location, watch, table.tags.get(new_name).id, tag=new_name, renamed_from=name)


def replace_tag(spark, location: TableLocation, *, name: str, snapshot_id: int | None = None,
                time_retained: str | None = None) -> JobResult:
    watch = Stopwatch()
    tag = location.open().tags.replace(name, snapshot_id=snapshot_id, time_retained=time_retained)
    return _result("replace-tag", location, watch, tag.id, tag=name)


def reset_consumer(spark, location: TableLocation, *, consumer_id: str, next_snapshot: int | None = None) -> JobResult:
    """Point a consumer at ``next_snapshot``, or delete it when none is given (Paimon's ``reset_consumer``)."""
    watch = Stopwatch()
    location.open().consumer_manager.reset(consumer_id, next_snapshot)
    return _result("reset-consumer", location, watch, next_snapshot, consumer=consumer_id,
                   deleted=next_snapshot is None)


def clear_consumers(spark, location: TableLocation, *, including: str = ".*", excluding: str | None = None) -> JobResult:
    """Delete the consumers whose ids match ``including`` and not ``excluding`` (regular expressions)."""
    watch = Stopwatch()
    cleared = location.open().consumer_manager.clear(including, excluding)
    return _result("clear-consumers", location, watch, cleared=list(cleared))


def expire_tags(spark, location: TableLocation, *, older_than_millis: int | None = None,
                dry_run: bool = False) -> JobResult:
    watch = Stopwatch()
    names = location.open().tags.expire(older_than_millis=older_than_millis, dry_run=dry_run)
    return _result("expire-tags", location, watch, expired=names, dry_run=dry_run)


def auto_tag(spark, location: TableLocation) -> JobResult:
    """Create the automatic tags that are due (``tag.automatic-creation``), and trim by
    ``tag.num-retained-max``; commits nothing."""
    watch = Stopwatch()
    table = location.open()
    done = table.run_auto_tag()
    return _result("auto-tag", location, watch, table.snapshot_manager.latest_id(), **done.to_dict())


def create_branch(spark, location: TableLocation, *, branch: str, tag: str | None = None) -> JobResult:
    watch = Stopwatch()
    created = location.open().branches.create(branch, tag=tag)
    return _result("create-branch", location, watch, created.snapshot_manager.latest_id(), branch=branch, tag=tag)


def delete_branch(spark, location: TableLocation, *, branch: str) -> JobResult:
    watch = Stopwatch()
    location.open().branches.delete(branch)
    return _result("delete-branch", location, watch, branch=branch)


def rename_branch(spark, location: TableLocation, *, branch: str, new_name: str) -> JobResult:
    watch = Stopwatch()
    location.open().branches.rename(branch, new_name)
    return _result("rename-branch", location, watch, branch=new_name, renamed_from=branch)


def fast_forward(spark, location: TableLocation, *, branch: str) -> JobResult:
    watch = Stopwatch()
    done = location.open().branches.fast_forward(branch)
    return _result("fast-forward", location, watch, done.copied_snapshots[-1] if done.copied_snapshots else None,
                   branch=branch, removed_snapshots=list(done.removed_snapshots),
                   copied_snapshots=list(done.copied_snapshots))


def rollback(spark, location: TableLocation, *, snapshot_id: int | None = None, tag: str | None = None,
             timestamp_millis: int | None = None) -> JobResult:
    watch = Stopwatch()
    done = location.open().rollback(snapshot_id=snapshot_id, tag=tag, timestamp_millis=timestamp_millis)
    return _result("rollback", location, watch, done.target, removed_snapshots=list(done.removed_snapshots),
                   removed_tags=list(done.removed_tags), deleted_files=done.deleted_files)


def remove_orphan_files(spark, location: TableLocation, *, older_than_millis: int = 24 * 3600 * 1000,
                        min_older_than_millis: int = 3600 * 1000, dry_run: bool = False) -> JobResult:
    """Orphan removal with the listing and the deletes spread over executors (one top-level table
    directory per task); what is referenced is gathered on the driver first, and nothing is
    deleted if any snapshot, tag or branch cannot be read completely. ``min_older_than_millis``
    (default 1 hour) refuses a window short enough to delete a running writer's new files."""
    from paimonflow.core.maintenance.orphans import check_window, referenced_files, scan_roots

    watch = Stopwatch()
    check_window(older_than_millis, min_older_than_millis)
    table = location.open()
    keep = frozenset(p.rstrip("/") for p in referenced_files(table))
    cutoff = time.time() * 1000 - older_than_millis
    directories = scan_roots(table)
    if not directories:
        return _result("remove-orphan-files", location, watch, orphans=0, orphan_bytes=0, scanned_files=0,
                       unknown_files=0, dry_run=dry_run)

    def scan(payload: bytes) -> bytes:
        from paimonflow.core.maintenance.orphans import find_orphans

        found = find_orphans(location.open().file_io, pickle.loads(payload), keep=keep, cutoff_millis=cutoff)
        return pickle.dumps((found.scanned, found.orphans, found.unknown))

    scanned = run_tasks(spark, [pickle.dumps(root) for root in directories], scan)  # ``keep`` travels with scan
    listed = [pickle.loads(p) for p in scanned.payloads]
    orphans = [item for _, found, _ in listed for item in found]
    unknown = sum(len(u) for _, _, u in listed)
    executors = set(scanned.executors)
    if not dry_run and orphans:
        def delete(payload: bytes) -> bytes:
            import contextlib

            from paimonflow.core.errors import FileNotFoundStorageError

            io = location.open().file_io
            for path in pickle.loads(payload):
                with contextlib.suppress(FileNotFoundStorageError):
                    io.delete(path)
            return b""

        paths = [p for p, _ in orphans]
        slices = min(len(paths), 2 * len(directories))
        executors |= run_tasks(spark, [pickle.dumps(paths[i::slices]) for i in range(slices)], delete).executors
    return _result("remove-orphan-files", location, watch, orphans=len(orphans),
                   orphan_bytes=sum(size for _, size in orphans), scanned_files=sum(n for n, _, _ in listed),
                   unknown_files=unknown, dry_run=dry_run, tasks=len(directories), executors=len(executors))


def read_changes(spark, location: TableLocation, *, start_snapshot: int, end_snapshot: int | None = None,
                 mode: str = "auto", output: str, output_format: str = "parquet") -> JobResult:
    """Write the changes after ``start_snapshot`` up to ``end_snapshot`` (default: latest), with
    their ``rowkind`` column, to ``output`` (Spark ``overwrite``). Changelog and delta reads run one
    Spark task per snapshot; ``diff`` (the default for primary-key tables without a changelog
    producer, :func:`~paimonflow.core.read.incremental.changes_mode`) compares two states in one
    task. The counts (``rows``, ``row_kinds``) and ``executors`` (those that read and wrote the
    changes; 0 when there are none) are gathered while Spark writes, as observed metrics."""
    from pyspark.sql import functions as F

    from paimonflow.core.data.data_file import ROW_KIND_NAMES
    from paimonflow.core.read.incremental import ROWKIND, changes_mode

    from .datasource import FORMAT
    from .executor import EXECUTOR_IDENTITY_SQL
    from .spark_info import observation

    watch = Stopwatch()
    table = location.open()
    end = end_snapshot if end_snapshot is not None else table.snapshot_manager.latest_id()
    if end is None:
        raise InvalidArgumentError(f"table {location.identifier!r} has no snapshot")
    if not 0 <= start_snapshot < end:  # on the driver, before Spark wraps the reader's error in its own
        raise InvalidArgumentError(f"read-changes needs 0 <= start < end, got start {start_snapshot} and end {end}")
    reader = spark.read.format(FORMAT).option("warehouse", location.warehouse)
    for key, value in location.storage_options.items():
        reader = reader.option(key, value)
    frame = (reader.option("incremental-between", f"{start_snapshot},{end}")
             .option("incremental-between-scan-mode", changes_mode(table, mode))
             .option("with-rowkind", "true").load(location.identifier))
    observed, executor = observation(spark, "read-changes"), "__paimonflow_executor"
    counts = [F.count_if(F.col(ROWKIND) == kind).alias(kind) for kind in ROW_KIND_NAMES]
    (frame.withColumn(executor, F.expr(EXECUTOR_IDENTITY_SQL))
     .observe(observed, F.collect_set(executor).alias(executor), *counts).drop(executor)
     .write.mode("overwrite").format(output_format).save(output))
    metrics = observed.get
    kinds = {kind: metrics[kind] for kind in ROW_KIND_NAMES if metrics[kind]}
    return _result("read-changes", location, watch, end, executors=len(metrics[executor]),
                   start_snapshot=start_snapshot, end_snapshot=end, rows=sum(kinds.values()), output=output,
                   row_kinds=kinds)
