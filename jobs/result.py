"""What every job prints: one JSON object (job, table, snapshot id, duration, the Spark master it
ran on, how many executors ran its tasks, and the job's counts)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResult:
    job: str
    table: str
    snapshot_id: int | None = None
    duration_s: float = 0.0
    master: str | None = None  # filled in by the job runner from the session
    executors: int = 0  # executors that ran the job's Spark tasks (0: it ran on the driver alone)
    metrics: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job, "table": self.table, "snapshot_id": self.snapshot_id,
                "duration_s": round(self.duration_s, 3), "master": self.master, "executors": self.executors,
                **self.metrics}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=str, sort_keys=False)


class Stopwatch:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start
