"""Deterministic regressions for what the maintenance-race harness found (issue 15, part 1):
each test failed before its fix. A running operation is represented by what it leaves on
storage (its marker), so every interleaving here is exact."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import (
    BranchNotFoundError,
    InvalidArgumentError,
    MaintenanceConflictError,
    TagTargetExpiringError,
)
from paimonflow.core.meta.changelogs import ChangelogManager
from tests.reliability.oracle import missing_needed_files, snapshot_ids_on_storage

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
DECOUPLED = {"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
             "snapshot.num-retained.max": "2", "changelog.num-retained.min": "5", "changelog.num-retained.max": "10"}


def make(root: Path, options=None, commits: int = 4):
    catalog = Catalog(str(root))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options=options or {"bucket": "1"})
    for i in range(commits):
        write(table, i)
    return table


def write(table, i: int) -> None:
    table.write(pa.table({"k": [0, 1], "v": [f"c{i}"] * 2}, schema=SCHEMA))


def rows(table, **at):
    return sorted((r["k"], r["v"]) for r in table.read(**at).to_pylist())


def contiguous(table) -> bool:
    ids = snapshot_ids_on_storage(table)
    return ids == list(range(ids[0], ids[-1] + 1))


def test_a_tag_on_a_snapshot_a_running_rollback_removes_is_refused(tmp_path: Path) -> None:
    table = make(tmp_path)
    marker = table.snapshot_manager.begin_rollback(2)  # a rollback to 2 has started, not yet listed tags
    with pytest.raises(TagTargetExpiringError, match="rolled back"):
        table.tags.create("late")  # on 4: the rollback may not see it
    assert table.tags.list() == {}
    table.tags.create("below", snapshot_id=2)  # at or below the target: kept by the rollback
    table.file_io.delete(marker)


def test_expiry_and_rollback_refuse_each_other(tmp_path: Path) -> None:
    table = make(tmp_path)
    marker = table.snapshot_manager.begin_rollback(2)
    with pytest.raises(MaintenanceConflictError, match="rollback to snapshot 2 is running"):
        table.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)
    assert snapshot_ids_on_storage(table) == [1, 2, 3, 4]  # nothing deleted
    assert table.snapshot_manager.expiring_markers() == {}  # and its marker withdrawn
    table.file_io.delete(marker)
    expiring = table.snapshot_manager.begin_expiry(4)
    with pytest.raises(MaintenanceConflictError, match="expiry of the snapshots below 4"):
        table.rollback(snapshot_id=2)
    assert snapshot_ids_on_storage(table) == [1, 2, 3, 4]
    assert table.snapshot_manager.rollback_markers() == {}
    table.file_io.delete(expiring)
    assert table.rollback(snapshot_id=2).target == 2
    assert table.snapshot_manager.rollback_markers() == {}  # released when done


def test_a_rerun_of_an_interrupted_rollback_completes_it(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.snapshot_manager.begin_rollback(2)  # a rollback to 2 that crashed
    with pytest.raises(MaintenanceConflictError, match="rollback to snapshot 2"):
        table.rollback(snapshot_id=3)  # another target waits
    assert table.rollback(snapshot_id=2).target == 2  # the same target completes it
    assert table.snapshot_manager.rollback_markers() == {}
    table.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)  # expiry runs again


def test_an_expiry_with_nothing_left_to_do_clears_a_crashed_runs_marker(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)
    table.snapshot_manager.begin_expiry(4)  # the run that deleted 1..3 was killed before its cleanup
    assert table.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0).expired_snapshots == 0
    assert table.snapshot_manager.expiring_markers() == {}
    table.rollback(snapshot_id=4)  # no longer refused


class Killed(BaseException):
    """Stands in for SIGKILL: the run stops where it is, nothing of its own cleanup runs."""


def test_a_rerun_with_a_shorter_range_finishes_an_interrupted_expiry(tmp_path: Path) -> None:
    table = make(tmp_path, commits=6)
    io = table.file_io
    real_delete = io.delete

    def killed_after_first_snapshot(path: str, *args, **kwargs):
        if path.endswith("/snapshot/snapshot-2"):
            raise Killed
        return real_delete(path, *args, **kwargs)

    latest = table.snapshot_manager.latest_id()
    kept = rows(table, snapshot_id=latest - 1)
    io.delete = killed_after_first_snapshot
    try:
        with pytest.raises(Killed):  # planned 1..latest-2, deleted their files and snapshot-1
            table.expire_snapshots(retain_min=2, retain_max=2, older_than_millis=0)
    finally:
        io.delete = real_delete
    assert snapshot_ids_on_storage(table) == list(range(2, latest + 1))
    with pytest.raises(TagTargetExpiringError):
        table.tags.create("condemned", snapshot_id=3)
    # the rerun alone would keep 3.. ; it finishes the interrupted run's range instead
    result = table.expire_snapshots(retain_min=latest - 2, retain_max=latest - 2, older_than_millis=0)
    assert result.plan.end == latest - 1
    assert snapshot_ids_on_storage(table) == [latest - 1, latest]
    assert table.snapshot_manager.expiring_markers() == {}
    assert missing_needed_files(table) == []
    table.tags.create("t", snapshot_id=latest - 1)  # allowed again, and so is a rollback
    assert table.rollback(snapshot_id=latest - 1).target == latest - 1
    assert rows(table) == kept


def test_rollback_to_a_tag_below_earliest_moves_earliest_so_expiry_leaves_no_gap(tmp_path: Path) -> None:
    table = make(tmp_path, commits=3)
    table.tags.create("first", snapshot_id=1)
    write(table, 3)
    write(table, 4)
    table.expire_snapshots(retain_min=2, retain_max=2, older_than_millis=0)  # keeps 4, 5; EARLIEST = 4
    table.rollback(tag="first")  # snapshot 1 comes back from the tag; 4 and 5 go
    for i in range(5, 9):
        write(table, i)  # 2..5: EARLIEST's old value 4 exists again
    table.expire_snapshots(retain_min=2, retain_max=2, older_than_millis=0)
    assert contiguous(table)
    assert table.snapshot_manager.earliest_id() == snapshot_ids_on_storage(table)[0]
    assert missing_needed_files(table) == []


def test_a_snapshot_brought_back_from_a_tag_does_not_name_a_lost_changelog(tmp_path: Path) -> None:
    table = make(tmp_path, {"bucket": "1", "changelog-producer": "input"}, commits=2)
    table.tags.create("t1", snapshot_id=1)
    write(table, 2)
    table.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)  # 1's changelog files go
    table.rollback(tag="t1")
    assert table.snapshot_manager.snapshot(1).changelog_manifest_list is None
    assert missing_needed_files(table) == []
    assert rows(table) == [(0, "c0"), (1, "c0")]


def test_tag_deletion_keeps_what_a_long_lived_changelog_references(tmp_path: Path) -> None:
    table = make(tmp_path, DECOUPLED, commits=3)
    table.tags.create("t2", snapshot_id=2)
    write(table, 3)
    table.expire_snapshots()  # 1, 2 become long-lived changelogs
    assert 2 in ChangelogManager(table.file_io, table.path).list_ids()
    table.tags.delete("t2")
    assert missing_needed_files(table) == []
    assert table.read_changes(1, 2).num_rows > 0  # the long-lived changelog still reads


def test_rollback_keeps_the_changelog_files_a_branch_shares(tmp_path: Path) -> None:
    table = make(tmp_path, {"bucket": "1", "changelog-producer": "input"}, commits=3)
    table.tags.create("t3", snapshot_id=3)
    branch = table.branches.create("b", tag="t3")
    table.rollback(snapshot_id=2)  # main drops 3; the branch's snapshot 3 keeps its changelog
    assert missing_needed_files(branch) == []
    assert missing_needed_files(table) == []


def test_drop_partitions_is_one_snapshot(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False)])
    table = catalog.create_table("db.t", schema, primary_keys=["p", "k"], partition_keys=["p"],
                                 options={"bucket": "1"})
    table.write(pa.table({"p": ["a", "b", "c"], "k": [1, 2, 3]}, schema=schema))
    result = table.drop_partitions([{"p": "a"}, {"p": "b"}])
    assert snapshot_ids_on_storage(table) == [1, 2] and result.snapshot_id == 2
    assert table.read().to_pylist() == [{"p": "c", "k": 3}]


def test_fast_forward_refuses_a_gap_and_survives_the_branch_vanishing(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.tags.create("t4", snapshot_id=4)
    table.branches.create("b", tag="t4")
    write(table.switch_to_branch("b"), 9)
    table.rollback(snapshot_id=2)
    with pytest.raises(InvalidArgumentError, match="would have a gap"):
        table.branches.fast_forward("b")
    assert snapshot_ids_on_storage(table) == [1, 2] and table.snapshot_manager.rollback_markers() == {}

    other = make(tmp_path / "o")
    other.tags.create("t3", snapshot_id=3)
    other.branches.create("c", tag="t3")
    write(other.switch_to_branch("c"), 9)
    io = other.file_io
    real_write = io.write_bytes

    def vanishing(path: str, data: bytes, *args, **kwargs):  # deleted just after the marker is out
        real_write(path, data, *args, **kwargs)
        if "/snapshot/ROLLBACK-" in path:
            other.branches.delete("c")

    io.write_bytes = vanishing
    try:
        with pytest.raises(BranchNotFoundError, match="deleted or changed during the fast-forward; main is unchanged"):
            other.branches.fast_forward("c")
    finally:
        io.write_bytes = real_write
    assert snapshot_ids_on_storage(other) == [1, 2, 3, 4]  # main untouched
    assert rows(other) == [(0, "c3"), (1, "c3")]


def test_a_branch_whose_tag_is_deleted_meanwhile_is_not_created(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.tags.create("t2", snapshot_id=2)
    io = table.file_io
    real_create = io.create_if_absent

    def delete_tag_after_schema(path: str, data: bytes) -> bool:  # the tag goes as the branch appears
        done = real_create(path, data)
        if "/branch/branch-b/schema/" in path:
            io.create_if_absent = real_create
            table.tags.delete("t2")
        return done

    io.create_if_absent = delete_tag_after_schema
    try:
        with pytest.raises(MaintenanceConflictError, match="was not created"):
            table.branches.create("b", tag="t2")
    finally:
        io.create_if_absent = real_create
    assert table.branches.list() == []


def test_a_commit_to_a_branch_deleted_meanwhile_is_taken_back(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.tags.create("t4", snapshot_id=4)
    table.branches.create("b", tag="t4")
    branch = table.switch_to_branch("b")
    io = branch.file_io
    real_create = io.create_if_absent

    def delete_branch_after_publish(path: str, data: bytes) -> bool:
        created = real_create(path, data)
        if "/branch/branch-b/snapshot/snapshot-" in path:  # the deletion removes the schemas now
            io.delete(path.split("/snapshot/")[0] + "/schema", recursive=True)
        return created

    io.create_if_absent = delete_branch_after_publish
    try:
        with pytest.raises(BranchNotFoundError, match="deleted while this commit was published"):
            write(branch, 9)
    finally:
        io.create_if_absent = real_create
    table.branches.delete("b")  # the deletion finishes
    assert table.branches.list() == [] and not io.exists(str(tmp_path / "db.db/t/branch/branch-b"))
    table.remove_orphan_files(older_than_millis=0)  # no half branch stops orphan removal
    assert rows(table) == [(0, "c3"), (1, "c3")]


def test_rollback_removes_long_lived_changelogs_after_the_target(tmp_path: Path) -> None:
    table = make(tmp_path, DECOUPLED, commits=2)
    table.tags.create("t1", snapshot_id=1)
    for i in range(2, 5):
        write(table, i)
    table.expire_snapshots()  # 1..4 become long-lived changelogs (5 and 6 stay)
    changelogs = ChangelogManager(table.file_io, table.path)
    assert changelogs.list_ids() == [1, 2, 3, 4]
    table.rollback(tag="t1")  # ids 2.. are reused by the next commits: their changelogs go (Paimon)
    assert changelogs.list_ids() == [1]
    write(table, 9)
    write(table, 10)
    table.expire_snapshots()
    table.expire_changelogs()
    assert missing_needed_files(table) == []
    assert rows(table) == [(0, "c10"), (1, "c10")]


def test_a_rollback_refused_before_deleting_releases_its_marker(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.tags.create("t", snapshot_id=2)
    io = table.file_io
    real_write = io.write_bytes

    def move_tag_after_marker(path: str, data: bytes, *args, **kwargs):
        real_write(path, data, *args, **kwargs)
        if "/snapshot/ROLLBACK-" in path:
            io.write_bytes = real_write
            table.tags.replace("t", snapshot_id=1)  # the tag moves (below: allowed) as the rollback starts

    io.write_bytes = move_tag_after_marker
    try:
        with pytest.raises(MaintenanceConflictError, match="was changed meanwhile"):
            table.rollback(tag="t")
    finally:
        io.write_bytes = real_write
    assert table.snapshot_manager.rollback_markers() == {}  # expiries and tags are not held up
    table.tags.create("later", snapshot_id=4)  # above the refused target: allowed again
    assert snapshot_ids_on_storage(table) == [1, 2, 3, 4]


def test_an_expiry_whose_plan_a_finished_rollback_overtook_is_refused(tmp_path: Path) -> None:
    table = make(tmp_path, commits=6)
    manager, io = table.snapshot_manager, table.file_io
    real_write, real_rolling = io.write_bytes, manager.rolling_back_to
    rollback = {}

    def rollback_claims_first(path: str, data: bytes, *args, **kwargs):
        if "/snapshot/EXPIRING-" in path and not rollback:
            rollback["marker"] = manager.begin_rollback(2)  # it saw no expiry marker: it goes on
        return real_write(path, data, *args, **kwargs)

    def rollback_finishes_before_the_check():
        if "marker" in rollback and "done" not in rollback:
            for sid in manager.list_ids():  # what the rollback does: everything after 2 goes, then its marker
                if sid > 2:
                    io.delete(manager.path(sid))
            io.delete(rollback["marker"])
            rollback["done"] = True
        return real_rolling()

    io.write_bytes, manager.rolling_back_to = rollback_claims_first, rollback_finishes_before_the_check
    try:
        with pytest.raises(MaintenanceConflictError, match="rolled back while it planned"):
            table.expire_snapshots(retain_min=2, retain_max=2, older_than_millis=0)
    finally:
        io.write_bytes, manager.rolling_back_to = real_write, real_rolling
    assert rollback.get("done")
    assert snapshot_ids_on_storage(table) == [1, 2]  # the rolled-back table keeps its latest snapshot
    assert manager.expiring_markers() == {}
    assert missing_needed_files(table) == []


def test_an_expiry_marker_a_rollback_overtook_holds_nothing_back(tmp_path: Path) -> None:
    table = make(tmp_path, commits=6)
    manager, io = table.snapshot_manager, table.file_io
    marker = manager.begin_expiry(5, keeps=manager.snapshot(5))  # its run was killed before its check
    with pytest.raises(TagTargetExpiringError):
        table.tags.create("below", snapshot_id=3)  # while snapshot 5 is the one it keeps, it condemns 1..4
    for sid in manager.list_ids():  # a rollback to 2 that claimed before that marker finished
        if sid > 2:
            io.delete(manager.path(sid))
    for i in range(3):  # new commits reuse ids 3, 4, 5: the marker's snapshot 5 is another one now
        write(table, 10 + i)
    assert 5 in manager.list_ids()
    assert manager.expiring_markers() == {}  # stale: ignored
    table.tags.create("t", snapshot_id=3)
    assert table.rollback(snapshot_id=4).target == 4
    table.expire_snapshots(retain_min=3, retain_max=3, older_than_millis=0)  # its own range only
    assert not io.exists(marker)  # and the stale marker is gone
    assert snapshot_ids_on_storage(table) == [2, 3, 4]
    assert missing_needed_files(table) == []
