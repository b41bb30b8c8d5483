"""ANALYZE: Paimon's statistics JSON, an ANALYZE snapshot that changes no rows, inheritance by
later snapshots, and expiry/orphan handling of the statistics file."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import SchemaError
from paimonflow.core.maintenance.statistics import read_statistics
from paimonflow.core.meta.snapshots import CommitKind

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("x", pa.float64())])


@pytest.fixture
def table(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    t = c.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "name": ["a", "bbb", None], "x": [1.5, None, -2.0]}, schema=SCHEMA))
    t.write(pa.table({"id": [3], "name": ["cc"], "x": [0.0]}, schema=SCHEMA))
    return t


def test_analyze_writes_paimons_statistics_in_an_analyze_snapshot(table):
    before = table.read().to_pylist()
    result = table.analyze()
    snap = table.latest_snapshot()
    assert result.snapshot_id == snap.id and snap.commit_kind is CommitKind.ANALYZE and snap.delta_record_count == 0
    stats = read_statistics(table)
    assert stats["snapshotId"] == snap.id - 1 and stats["mergedRecordCount"] == 3
    name = stats["colStats"]["name"]
    assert name == {"colId": 1, "nullCount": 0, "distinctCount": 3, "min": "a", "max": "cc", "avgLen": 2,
                    "maxLen": 3}
    assert stats["colStats"]["x"]["nullCount"] == 1 and stats["colStats"]["x"]["min"] == "0.0"  # id 3 was updated from -2.0
    assert table.read().to_pylist() == before
    table.write(pa.table({"id": [9], "name": ["z"], "x": [9.0]}, schema=SCHEMA))
    assert read_statistics(table) == stats  # inherited while the schema stays
    with pytest.raises(SchemaError):
        table.analyze(["nope"])


def test_statistics_files_follow_expiry_and_orphan_rules(table):
    table.analyze()
    first = table.latest_snapshot().statistics
    table.write(pa.table({"id": [5], "name": ["e"], "x": [5.0]}, schema=SCHEMA))
    table.analyze()
    table.expire_snapshots(retain_min=1, older_than_millis=0)
    assert not table.file_io.exists(f"{table.path}/statistics/{first}")  # nothing retained needs it
    assert read_statistics(table) is not None
    assert table.remove_orphan_files(older_than_millis=0, dry_run=True).orphans == ()
