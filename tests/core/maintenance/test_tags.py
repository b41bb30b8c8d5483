"""Tags (create from an id, the latest snapshot or a time; replace, rename, delete freeing files,
TTL and expiry, Paimon's tag JSON) and rollback (to a snapshot, a tag, a time; ids reused)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import (
    InvalidArgumentError,
    InvalidNameError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def table(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    t = c.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    for i in range(5):
        t.write(pa.table({"id": [i, i + 1], "v": [f"c{i}"] * 2}, schema=SCHEMA))
    return t


def state(t, **kw) -> dict:
    return {r["id"]: r["v"] for r in t.read(**kw).to_pylist()}


def files(root) -> set[str]:
    return {os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns}


def test_create_replace_rename_list(table):
    assert table.tags.create("latest").id == 5
    assert table.tags.create("two", snapshot_id=2).id == 2
    at = table.snapshot_manager.snapshot(3).time_millis
    assert table.tags.create("by-time", timestamp_millis=at).id == 3
    with pytest.raises(TagAlreadyExistsError):
        table.tags.create("two")
    assert table.tags.create("two", ignore_if_exists=True).id == 2
    assert state(table, tag="two") == state(table, snapshot_id=2)
    table.tags.replace("two", snapshot_id=4)
    assert table.tags.get("two").id == 4
    table.tags.rename("two", "four")
    assert sorted(table.tags.list()) == ["by-time", "four", "latest"]
    with pytest.raises(TagNotFoundError):
        table.tags.get("two")
    for bad in ("../x", "", "a/b"):
        with pytest.raises(InvalidNameError):
            table.tags.create(bad)
    with pytest.raises(SnapshotNotFoundError):
        table.tags.create("nine", snapshot_id=9)


def test_tag_ttl_json_and_expiry(table):
    clock = [1_800_000_000.0]
    from paimonflow.core.maintenance.tags import Tags

    tags = Tags(table, clock=lambda: clock[0])
    tags.create("short", time_retained="1 h")
    tags.create("forever")
    doc = json.loads(Path(table.tag_manager.tag_path("short")).read_bytes())
    assert isinstance(doc["tagCreateTime"], list) and 5 <= len(doc["tagCreateTime"]) <= 7
    assert doc["tagTimeRetained"] == 3600.0  # a Java Duration in decimal seconds
    assert "tagCreateTime" not in json.loads(Path(table.tag_manager.tag_path("forever")).read_bytes())
    assert tags.expire() == []
    clock[0] += 7200
    assert tags.expire(dry_run=True) == ["short"] and "short" in tags.list()
    assert tags.expire() == ["short"] and sorted(tags.list()) == ["forever"]


def test_deleting_a_tag_of_an_expired_snapshot_frees_only_its_own_files(table):
    table.tags.create("old", snapshot_id=2)
    expected = state(table, tag="old")
    table.expire_snapshots(retain_min=1, older_than_millis=0)
    assert not table.snapshot_manager.exists(2) and state(table, tag="old") == expected
    before = files(table.path)
    plan = table.tags.delete("old", dry_run=True)
    assert plan.freed_files and files(table.path) == before
    table.tags.delete("old")
    assert before - files(table.path) == {*plan.freed_files, table.tag_manager.tag_path("old")}
    assert state(table) == {i: f"c{min(i, 4)}" if i else "c0" for i in range(6)}


def test_rollback_to_a_snapshot_reuses_ids(table):
    table.tags.create("four", snapshot_id=4)
    before = files(table.path)
    expected = state(table, snapshot_id=3)
    result = table.rollback(snapshot_id=3)
    assert result.removed_snapshots == (4, 5) and result.removed_tags == ("four",)
    assert table.snapshot_manager.list_ids() == [1, 2, 3] and state(table) == expected
    assert result.deleted_files > 0 and len(files(table.path)) < len(before)
    table.write(pa.table({"id": [99], "v": ["after"]}, schema=SCHEMA))
    assert table.latest_snapshot().id == 4  # the id is reused
    assert state(table) == {**expected, 99: "after"}
    with pytest.raises(InvalidArgumentError):
        table.rollback()


def test_rollback_to_a_tag_whose_snapshot_expired(table):
    table.tags.create("two", snapshot_id=2)
    expected = state(table, tag="two")
    table.expire_snapshots(retain_min=1, older_than_millis=0)
    table.rollback(tag="two")
    assert table.snapshot_manager.list_ids() == [2] and state(table) == expected
    assert table.snapshot_manager.earliest_id() == 2
    at = table.snapshot_manager.snapshot(2).time_millis
    table.write(pa.table({"id": [7], "v": ["x"]}, schema=SCHEMA))
    table.rollback(timestamp_millis=at)
    assert state(table) == expected


def test_rollback_to_an_expired_tag_leaves_no_orphans(table):
    table.tags.create("two", snapshot_id=2)
    for i in range(3):
        table.write(pa.table({"id": [50 + i], "v": ["more"]}, schema=SCHEMA))
    table.compact(full=True)
    table.expire_snapshots(retain_min=2, older_than_millis=0)
    table.rollback(tag="two")
    assert table.remove_orphan_files(older_than_millis=0, dry_run=True).orphans == ()
    assert state(table) == state(table, tag="two")


def test_ttl_expiry_reads_a_replaced_tag_again_before_deleting_it(table):
    """The time-to-live expiry keeps what it read of unchanged tag files (``TagManager.retention``).
    A tag replaced behind that cache's back (same size, its file's and the directory's times put
    back) is read again before it is deleted: a longer time-to-live keeps it; and a replacement
    that changes the file's time is seen by the next expiry."""
    clock = [1_800_000_000.0]
    from paimonflow.core.maintenance.tags import Tags

    tags = Tags(table, clock=lambda: clock[0])
    tags.create("short", time_retained="1 h")
    path = table.tag_manager.tag_path("short")
    directory = os.path.dirname(path)
    assert tags.expire() == []  # read once: now cached as "1 h"
    stamps = os.stat(path), os.stat(directory)
    tags.replace("short", time_retained="2 h")  # the same JSON length: 3600.0 -> 7200.0
    os.utime(path, ns=(stamps[0].st_atime_ns, stamps[0].st_mtime_ns))
    os.utime(directory, ns=(stamps[1].st_atime_ns, stamps[1].st_mtime_ns))
    assert os.stat(path).st_size == stamps[0].st_size
    clock[0] += 5400  # past the old 1 h, within the new 2 h
    assert tags.expire() == [] and "short" in tags.list()
    tags.replace("short", time_retained="1 h")
    later = stamps[0].st_mtime_ns + 5_000_000_000
    os.utime(path, ns=(later, later))
    clock[0] += 3700  # past the replacement's 1 h
    assert tags.expire() == ["short"] and "short" not in tags.list()
