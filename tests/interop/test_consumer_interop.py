"""pypaimon 2.1.0's own ``pypaimon.consumer`` code reads consumer files we wrote, and we read its."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from paimonflow.core.fs import LocalFileIO
from paimonflow.core.meta.consumers import Consumer, ConsumerManager
from tests.interop.oracle import oracle_python

pytestmark = pytest.mark.interop

_SCRIPT = """
import json, sys
from pypaimon.common.file_io import FileIO
from pypaimon.consumer import Consumer, ConsumerManager

args = json.load(sys.stdin)
table = args["table"]
manager = ConsumerManager(FileIO.get(table), table)
for consumer_id, next_snapshot in args["record"].items():
    manager.reset_consumer(consumer_id, Consumer(next_snapshot=next_snapshot))
out = {"ids": sorted(manager.list_all_ids()), "consumers": manager.consumers(),
       "min": manager.min_next_snapshot(),
       "get": {i: (c.next_snapshot if (c := manager.consumer(i)) else None) for i in args["get"]}}
json.dump(out, sys.stdout)
"""


def _pypaimon(table: Path, *, record: dict[str, int] | None = None, get: tuple[str, ...] = ()) -> dict[str, Any]:
    proc = subprocess.run([oracle_python(), "-c", _SCRIPT],
                          input=json.dumps({"table": str(table), "record": record or {}, "get": list(get)}),
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, f"pypaimon failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout)


def test_pypaimon_reads_our_consumers_and_we_read_its(tmp_path: Path) -> None:
    table = tmp_path / "wh" / "db.db" / "t"
    ours = ConsumerManager(LocalFileIO(), str(table))
    ours.record("flink-job", 7)
    ours.record("spark_job.2", 3)

    seen = _pypaimon(table, record={"py-reader": 11, "flink-job": 9}, get=("spark_job.2", "missing"))
    # pypaimon read what we wrote (Java's pretty-printed bytes) ...
    assert seen["get"] == {"spark_job.2": 3, "missing": None}
    assert seen["ids"] == ["flink-job", "py-reader", "spark_job.2"]
    assert seen["consumers"] == {"flink-job": 9, "py-reader": 11, "spark_job.2": 3}
    assert seen["min"] == 3

    # ... and we read what it wrote: a new consumer and an overwrite of ours.
    assert ours.get("py-reader") == Consumer(next_snapshot=11)
    assert ours.list() == {"flink-job": Consumer(next_snapshot=9), "py-reader": Consumer(next_snapshot=11),
                           "spark_job.2": Consumer(next_snapshot=3)}
    assert ours.min_next_snapshot() == 3

    # Our deletes and clears are visible to pypaimon.
    assert ours.clear("spark.*") == ["spark_job.2"]
    ours.reset("flink-job", None)
    assert _pypaimon(table)["consumers"] == {"py-reader": 11}
