"""Running Python functions as Spark tasks through the DataFrame API (so on a classic cluster and
on Spark Connect alike: no RDDs, no ``sparkContext``).

``run_tasks(spark, payloads, fn)`` runs ``fn(payload) -> bytes`` once per payload, one Spark task
each, and returns the results in payload order with the executor that produced each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from .executor import executor_identity

TASK_INPUT_SCHEMA = "task int, payload binary"
TASK_OUTPUT_SCHEMA = "task int, payload binary, executor string"
_OUTPUT = pa.schema([("task", pa.int32()), ("payload", pa.binary()), ("executor", pa.string())])


@dataclass(frozen=True, slots=True)
class TaskResults:
    payloads: tuple[bytes, ...]  # in the order of the inputs
    executors: frozenset[str]  # the executors that ran the tasks


def run_tasks(spark, payloads: Sequence[bytes], fn: Callable[[bytes], bytes]) -> TaskResults:
    """Run ``fn`` on each payload in its own Spark task; ``fn`` and its results are pickled."""
    if not payloads:
        return TaskResults((), frozenset())
    frame = spark.createDataFrame(list(enumerate(payloads)), TASK_INPUT_SCHEMA).repartition(len(payloads), "task")

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        executor = executor_identity()
        for batch in batches:
            tasks = batch.column("task").to_pylist()
            results = [fn(p) for p in batch.column("payload").to_pylist()]
            yield pa.RecordBatch.from_pydict({"task": tasks, "payload": results,
                                              "executor": [executor] * len(tasks)}, schema=_OUTPUT)

    rows = sorted(frame.mapInArrow(run, TASK_OUTPUT_SCHEMA).collect(), key=lambda r: r.task)
    return TaskResults(tuple(bytes(r.payload) for r in rows), frozenset(r.executor for r in rows))
