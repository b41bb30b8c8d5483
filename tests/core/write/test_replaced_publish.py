"""A publish replaced by another writer's rename (Apache Paimon's Java ``LocalFileIO``: write
``.snapshot-N.<uuid>.tmp``, check that ``snapshot-N`` is absent, rename over it) is detected and
retried: a commit never reports, tags or builds on a snapshot that is not in the history.

The other writer is emulated in a thread with Java's exact steps, its check made before our
publish and its rename after; the negative control shows that without the confirmation the
commit would report the replaced snapshot as its own."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.meta.snapshots import SnapshotManager

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
FOREIGN_USER = "java-writer"


class JavaLikeRename(threading.Thread):
    """Writes its temp file, finds ``snapshot-<id>`` absent, then (after ours landed) renames over it."""

    def __init__(self, snapshot_dir: str, snapshot_id: int, doc: dict) -> None:
        super().__init__(daemon=True)
        self.target = os.path.join(snapshot_dir, f"snapshot-{snapshot_id}")
        self.temp = os.path.join(snapshot_dir, f".snapshot-{snapshot_id}.{uuid.uuid4()}.tmp")
        with open(self.temp, "w") as f:
            json.dump(doc, f)
        assert not os.path.exists(self.target)  # Java's check: absent
        self.renamed = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + 10
        while not os.path.exists(self.target) and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(0.02)  # the rename comes a little after our publish
        os.replace(self.temp, self.target)
        self.renamed.set()


def _foreign_snapshot(t, snapshot_id: int) -> dict:
    """Another writer's snapshot ``snapshot_id``: the previous one's content under its own identity."""
    with open(t.snapshot_manager.path(snapshot_id - 1)) as f:
        doc = json.load(f)
    doc.update(id=snapshot_id, commitUser=FOREIGN_USER, commitIdentifier=snapshot_id, commitKind="APPEND")
    doc.pop("uuid", None)
    return doc


@pytest.fixture
def table(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    return t


def _ours_in_history(t, result) -> bool:
    snapshot = t.snapshot_manager.try_snapshot(result.snapshot_id)
    return snapshot is not None and (snapshot.commit_user, snapshot.commit_identifier) == (
        result.commit_user, result.commit_identifier)


def test_a_replaced_publish_is_retried_and_never_reported(table):
    rival = JavaLikeRename(table.snapshot_manager.directory, 2, _foreign_snapshot(table, 2))
    rival.start()
    result = table.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA), commit_user="ours", commit_identifier=7)
    rival.join()
    assert rival.renamed.is_set()
    assert result.replaced_publishes == 1 and result.snapshot_id == 3
    assert _ours_in_history(table, result)
    assert table.snapshot_manager.snapshot(2).commit_user == FOREIGN_USER  # the rival's commit kept its place
    assert sorted(table.read().column("id").to_pylist()) == [1, 2, 3]
    tag = table.tags.create("mine", snapshot_id=result.snapshot_id)
    assert (tag.commit_user, tag.commit_identifier) == ("ours", 7)


def test_a_compaction_whose_publish_is_replaced_reports_only_its_own_snapshot(table):
    table.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    latest = table.snapshot_manager.latest_id()
    rival = JavaLikeRename(table.snapshot_manager.directory, latest + 1, _foreign_snapshot(table, latest + 1))
    rival.start()
    result = table.compact(full=True)
    rival.join()
    snapshot = table.snapshot_manager.snapshot(result.snapshot_id)
    assert result.snapshot_id == latest + 2 and snapshot.commit_kind.value == "COMPACT"
    assert snapshot.commit_user != FOREIGN_USER


def test_negative_control_without_the_confirmation_the_replaced_snapshot_is_reported(table, monkeypatch):
    monkeypatch.setattr(SnapshotManager, "_still_ours", lambda self, snapshot: True)
    rival = JavaLikeRename(table.snapshot_manager.directory, 2, _foreign_snapshot(table, 2))
    rival.start()
    result = table.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA), commit_user="ours", commit_identifier=7)
    rival.join()
    assert result.snapshot_id == 2 and not _ours_in_history(table, result)  # what the check above catches


def test_a_stale_temp_file_of_a_crashed_writer_does_not_hold_a_publish(table):
    directory = table.snapshot_manager.directory
    stale = os.path.join(directory, f".snapshot-2.{uuid.uuid4()}.tmp")
    with open(stale, "w") as f:
        f.write("{}")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    started = time.monotonic()
    result = table.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    assert time.monotonic() - started < 2 and result.snapshot_id == 2 and result.replaced_publishes == 0


def test_a_commit_that_lost_a_race_reports_its_attempts_and_the_time_it_waited(tmp_path, monkeypatch):
    """Another writer publishes the snapshot id this commit prepared: it waits (a random back-off
    between commit.min-retry-wait and its doubling cap), tries again, and says so in its result."""
    import pyarrow as pa

    from paimonflow.core import Catalog
    from paimonflow.core.write.commit import TableCommit

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    catalog.create_table("db.t", schema, options={"commit.min-retry-wait": "20 ms"})
    real = TableCommit._prepare_snapshot
    raced = []

    def prepare_then_lose(self, *args, **kwargs):
        snapshot = real(self, *args, **kwargs)
        if not raced:
            raced.append(True)
            catalog.get_table("db.t").write(pa.table({"id": [2]}, schema=schema))  # takes this snapshot id
        return snapshot

    monkeypatch.setattr(TableCommit, "_prepare_snapshot", prepare_then_lose)
    result = catalog.get_table("db.t").write(pa.table({"id": [1]}, schema=schema))
    assert result.attempts == 2 and result.snapshot_id == 2
    assert 0.02 <= result.retry_wait_seconds < 0.1
    assert result.to_dict()["retry_wait_seconds"] == round(result.retry_wait_seconds, 3)
    quiet = catalog.get_table("db.t").write(pa.table({"id": [3]}, schema=schema))
    assert quiet.attempts == 1 and quiet.retry_wait_seconds == 0
