"""Orphan file removal: only unreferenced files older than the cutoff go; everything a snapshot
or tag needs stays; an unreadable snapshot stops the run before anything is deleted."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError
from paimonflow.core.maintenance.orphans import OrphanCleanAbortedError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def table(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    t = c.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    for i in range(6):
        t.write(pa.table({"id": [i, i + 1, i + 2], "v": [f"c{i}"] * 3}, schema=SCHEMA))
    t.tags.create("three", snapshot_id=3)
    t.compact(full=True)
    return t


def stray(path: str, age_seconds: float) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"orphan")
    when = time.time() - age_seconds
    os.utime(path, (when, when))
    return path


def states(t) -> dict:
    out = {sid: t.read(snapshot_id=sid).to_pylist() for sid in t.snapshot_manager.list_ids()}
    out["tag"] = t.read(tag="three").to_pylist()
    return out


def test_old_unreferenced_files_go_and_everything_needed_stays(table):
    before = states(table)
    old_data = stray(f"{table.path}/bucket-0/data-orphan-1.parquet", 3 * 86400)
    old_manifest = stray(f"{table.path}/manifest/manifest-orphan-0", 3 * 86400)
    young = stray(f"{table.path}/bucket-1/data-uncommitted.parquet", 60)
    plan = table.remove_orphan_files(dry_run=True)
    assert sorted(plan.orphans) == sorted([old_data, old_manifest]) and os.path.exists(old_data)
    result = table.remove_orphan_files()
    assert result.orphan_bytes == 12 and not os.path.exists(old_data) and not os.path.exists(old_manifest)
    assert os.path.exists(young)  # younger than a day: perhaps a writer that has not committed yet
    assert states(table) == before  # every snapshot and the tag still read the same
    assert table.remove_orphan_files().orphans == ()


def test_expired_snapshot_files_left_behind_are_orphans_after_a_crash(table):
    table.expire_snapshots(retain_min=2, older_than_millis=0)
    assert table.remove_orphan_files(older_than_millis=0).orphans == ()  # expiry left nothing behind
    with pytest.raises(InvalidArgumentError):
        table.remove_orphan_files(older_than_millis=-1)


def test_an_unreadable_snapshot_aborts_before_deleting(table):
    old = stray(f"{table.path}/bucket-0/data-orphan-2.parquet", 3 * 86400)
    snap = table.snapshot_manager.snapshot(2)
    os.remove(f"{table.path}/manifest/{snap.delta_manifest_list}")
    with pytest.raises(OrphanCleanAbortedError, match="snapshot 2"):
        table.remove_orphan_files()
    assert os.path.exists(old)


def test_temp_files_of_interrupted_writes_go_once_older_than_the_cutoff(table):
    """A crash mid-write leaves ``.<name>.<id>.tmp`` files, in data and metadata directories alike."""
    before = states(table)
    old_data_tmp = stray(f"{table.path}/bucket-0/.data-x-0.parquet.0123abcd.tmp", 3 * 86400)
    old_snapshot_tmp = stray(f"{table.path}/snapshot/.snapshot-99.0123abcd.tmp", 3 * 86400)
    young_tmp = stray(f"{table.path}/snapshot/.snapshot-100.4567cdef.tmp", 60)  # a publish in progress
    other_hidden = stray(f"{table.path}/bucket-0/.keep", 3 * 86400)  # not ours: never touched
    plan = table.remove_orphan_files()
    assert set(plan.orphans) == {old_data_tmp, old_snapshot_tmp}
    assert not os.path.exists(old_data_tmp) and not os.path.exists(old_snapshot_tmp)
    assert os.path.exists(young_tmp) and os.path.exists(other_hidden)
    assert states(table) == before
