"""pypaimon 2.1.0 reads the tags our automatic tag creation made after commits: the tag JSON
(with ``tagCreateTime``/``tagTimeRetained`` when ``tag.default-time-retained`` is set), names
with a space (hourly tags), and the table at each tag."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

from .oracle import Oracle, canonical, oracle_python

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])

_SCRIPT = """
import json, sys
from pypaimon import CatalogFactory

args = json.load(sys.stdin)
table = CatalogFactory.create({"warehouse": args["warehouse"]}).get_table("db.t")
manager = table.tag_manager()
out = {}
for name in sorted(manager.list_tags()):
    tag = manager.get_or_throw(name)
    out[name] = {"id": tag.id,
                 "create_time": tag.tag_create_time.isoformat() if tag.tag_create_time else None,
                 "retained_s": tag.tag_time_retained.total_seconds() if tag.tag_time_retained else None}
json.dump(out, sys.stdout)
"""


def _pypaimon_tags(warehouse) -> dict:
    proc = subprocess.run([oracle_python(), "-c", _SCRIPT], input=json.dumps({"warehouse": str(warehouse)}),
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, f"pypaimon failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout)


def _commit_at(table, when: datetime, ids, v: str) -> None:
    with table.new_write() as writer:
        writer.write(pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA))
        messages = writer.prepare_commit()
    table.new_commit(clock=lambda: when.timestamp()).commit(messages)


def test_pypaimon_reads_our_automatic_tags(tmp_path):
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "2", "tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
        "sink.process-time-zone": "UTC", "tag.default-time-retained": "3650 d"})
    _commit_at(t, datetime(2024, 1, 1, 10, 5, tzinfo=UTC), range(4), "a")
    _commit_at(t, datetime(2024, 1, 1, 10, 40, tzinfo=UTC), [1, 2], "b")
    _commit_at(t, datetime(2024, 1, 1, 11, 1, tzinfo=UTC), [2, 7], "c")
    ours = {name: snap.id for name, snap in t.tags.list().items()}
    assert ours == {"2024-01-01 09": 1, "2024-01-01 10": 3}

    theirs = _pypaimon_tags(wh)
    assert {name: tag["id"] for name, tag in theirs.items()} == ours
    created_at = {"2024-01-01 09": datetime(2024, 1, 1, 10, 5, tzinfo=UTC),  # by the commits' maintenance
                  "2024-01-01 10": datetime(2024, 1, 1, 11, 1, tzinfo=UTC)}
    for name, tag in theirs.items():  # a TTL was set: both fields present and parsed
        assert tag["retained_s"] == 3650 * 86400
        # a local date-time, as Java's LocalDateTime.now() writes it
        assert datetime.fromisoformat(tag["create_time"]) == created_at[name].astimezone().replace(tzinfo=None)

    oracle = Oracle(tmp_path)
    oracle.read(wh, "db.t", tag="2024-01-01 09")
    oracle.read(wh, "db.t", tag="2024-01-01 10")
    first, second = oracle.run()
    assert canonical(first) == canonical(t.read(tag="2024-01-01 09"))
    assert canonical(second) == canonical(t.read(tag="2024-01-01 10"))
    assert sorted(second.column("v").to_pylist()) == ["a", "a", "b", "c", "c"]
