"""The streaming scan: start modes, following new commits, consumer progress and expiry."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError, SnapshotNotFoundError
from paimonflow.core.read.stream import StreamingScan

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def table(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    t = c.create_table("db.t", SCHEMA, primary_keys=["id"],
                       options={"bucket": "1", "changelog-producer": "lookup"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    t.write(pa.table({"id": [1], "v": ["a2"]}, schema=SCHEMA))
    return t


def rows(batch) -> list[tuple]:
    return sorted((r["rowkind"], r["id"], r["v"]) for r in batch.rows.to_pylist())


def test_latest_full_then_follows_the_changelog(table):
    scan = StreamingScan(table)
    assert rows(scan.poll()) == [("+I", 1, "a2"), ("+I", 2, "b")]
    assert scan.poll() is None  # nothing new
    table.write(pa.table({"id": [2, 3], "v": ["b2", "c"]}, schema=SCHEMA))
    assert rows(scan.poll()) == [("+I", 3, "c"), ("+U", 2, "b2"), ("-U", 2, "b")]


def test_start_modes(table):
    assert StreamingScan(table, mode="latest").poll() is None
    everything = rows(StreamingScan(table, mode="from-snapshot", snapshot_id=1).poll())
    assert everything == [("+I", 1, "a"), ("+I", 2, "b"), ("+U", 1, "a2"), ("-U", 1, "a")]
    full = StreamingScan(table, mode="from-snapshot-full", snapshot_id=2)
    assert rows(full.poll()) == [("+I", 1, "a"), ("+I", 2, "b")]
    assert rows(full.poll()) == [("+U", 1, "a2"), ("-U", 1, "a")]
    third = table.snapshot_manager.snapshot(3)
    assert rows(StreamingScan(table, mode="from-timestamp", timestamp_millis=third.time_millis).poll()) == [
        ("+U", 1, "a2"), ("-U", 1, "a")]
    compacted = StreamingScan(table, mode="compacted-full")
    assert rows(compacted.poll()) == [("+I", 1, "a2"), ("+I", 2, "b")]
    with pytest.raises(InvalidArgumentError):
        StreamingScan(table, mode="from-snapshot")
    with pytest.raises(InvalidArgumentError):
        StreamingScan(table, mode="earliest-ish")


def test_consumer_progress_resumes_and_protects_from_expiry(table):
    scan = StreamingScan(table, mode="latest", consumer_id="job")
    table.write(pa.table({"id": [5], "v": ["e"]}, schema=SCHEMA))
    assert rows(scan.poll()) == [("+I", 5, "e")]
    scan.checkpoint()
    table.write(pa.table({"id": [6], "v": ["f"]}, schema=SCHEMA))
    table.expire_snapshots(retain_min=1, older_than_millis=0)  # the consumer keeps what it has not read
    resumed = StreamingScan(table, mode="latest", consumer_id="job")
    assert rows(resumed.poll()) == [("+I", 6, "f")]
    unprotected = StreamingScan(table, mode="from-snapshot", snapshot_id=1)
    with pytest.raises(SnapshotNotFoundError, match="expired"):
        unprotected.poll()
