"""The postpone compaction on Spark (tables with ``bucket = -2``): the core plans one task per
partition holding postpone or level-0 files (its bucket count decided on the driver), executors
replay each partition's postpone files into its real buckets and compact them, the driver commits
one COMPACT snapshot. Exactly-once with a commit user and identifier.

A partition is one task, as in Paimon a partition's postpone files feed one writer per bucket:
parallelism comes from the partitions."""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from paimonflow.core.compact.postpone import (
    commit_postpone_compaction,
    plan_postpone_compaction,
    run_postpone_task,
)
from paimonflow.core.faults import crash_point

from .result import JobResult, Stopwatch
from .tasks import run_tasks

if TYPE_CHECKING:
    from paimonflow.core.table import Table

    from .location import TableLocation


def compact_postpone(spark, location: TableLocation, table: Table, *,
                     partitions: Sequence[Mapping[str, object]] | None = None, buckets: Iterable[int] | None = None,
                     commit_user: str | None = None, commit_identifier: int | None = None,
                     watch: Stopwatch | None = None) -> JobResult:
    """Run the postpone compaction of ``table`` (opened from ``location``, pinned to its schema)."""
    watch = watch or Stopwatch()
    plan = plan_postpone_compaction(table, partitions=partitions, buckets=buckets, commit_user=commit_user,
                                    commit_identifier=commit_identifier)
    if plan.done is not None:
        return JobResult(job="compact", table=location.identifier, snapshot_id=plan.done.snapshot_id,
                         duration_s=watch.elapsed, metrics={**plan.done.to_dict(), "tasks": 0, "postpone": True})
    payloads = [pickle.dumps(task) for task in plan.tasks]

    def run(payload: bytes) -> bytes:
        return pickle.dumps(run_postpone_task(location.open(), pickle.loads(payload)))

    ran = run_tasks(spark, payloads, run)
    messages = [m for b in ran.payloads for m in pickle.loads(b)]
    crash_point("spark-compact:before-commit")
    result = commit_postpone_compaction(table, plan, messages)
    return JobResult(job="compact", table=location.identifier, snapshot_id=result.snapshot_id,
                     duration_s=watch.elapsed, metrics={**result.to_dict(), "tasks": len(payloads), "postpone": True},
                     executors=len(ran.executors))
