"""The compaction job: the core plans (per bucket, or per bin of small files for unaware-bucket
append tables), executors compact one task each in parallel, the driver commits one COMPACT
snapshot. Exactly-once with a commit user and identifier."""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping, Sequence

from paimonflow.core.compact.dedicated import commit_compaction, plan_compaction, run_compaction_task
from paimonflow.core.faults import crash_point
from paimonflow.core.write.postpone import is_postpone

from .compact_postpone import compact_postpone
from .location import TableLocation
from .result import JobResult, Stopwatch
from .tasks import run_tasks


def compact(spark, location: TableLocation, *, full: bool = True,
            partitions: Sequence[Mapping[str, object]] | None = None, buckets: Iterable[int] | None = None,
            commit_user: str | None = None, commit_identifier: int | None = None) -> JobResult:
    watch = Stopwatch()
    table = location.open()
    location = location.pinned(table.schema.id)
    if is_postpone(table.options):
        return compact_postpone(spark, location, table, partitions=partitions, buckets=buckets,
                                commit_user=commit_user, commit_identifier=commit_identifier, watch=watch)
    plan = plan_compaction(table, full=full, partitions=partitions, buckets=buckets, commit_user=commit_user,
                           commit_identifier=commit_identifier)
    if plan.done is not None:
        return JobResult(job="compact", table=location.identifier, snapshot_id=plan.done.snapshot_id,
                         duration_s=watch.elapsed, metrics={**plan.done.to_dict(), "tasks": 0})
    payloads = [pickle.dumps(task) for task in plan.tasks]

    def run(payload: bytes) -> bytes:
        return pickle.dumps(run_compaction_task(location.open(), pickle.loads(payload)))

    ran = run_tasks(spark, payloads, run)
    messages = [pickle.loads(b) for b in ran.payloads]
    crash_point("spark-compact:before-commit")
    result = commit_compaction(table, plan, messages)
    return JobResult(job="compact", table=location.identifier, snapshot_id=result.snapshot_id,
                     duration_s=watch.elapsed, metrics={**result.to_dict(), "tasks": len(payloads), "full": full},
                     executors=len(ran.executors))
