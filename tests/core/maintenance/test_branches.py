"""Branches: create (empty or from a tag), read and write, delete, rename, fast-forward, and
maintenance on any branch never deleting a file another branch still needs."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import (
    BranchAlreadyExistsError,
    BranchNotFoundError,
    InvalidNameError,
    SnapshotNotFoundError,
)
from paimonflow.core.meta.references import files_of_other_branches
from paimonflow.core.meta.schema_changes import AddColumn

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def rows(table, **kw) -> list[tuple]:
    return sorted((r["id"], r["v"]) for r in table.read(**kw).to_pylist())


def batch(ids, v) -> pa.Table:
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write(batch(range(4), "a"))
    t.write(batch(range(2, 6), "b"))
    t.tags.create("t2")
    t.write(batch([0, 9], "c"))
    return t


def all_files_exist(table) -> None:
    """Every file any snapshot or tag of any branch references is on disk."""
    from paimonflow.core.maintenance.orphans import referenced_files

    missing = [p for p in referenced_files(table) if not table.file_io.exists(p)]
    assert missing == []


def test_branch_from_tag_reads_the_tag_and_writes_apart_from_main(catalog, table):
    at_tag = rows(table, tag="t2")
    main_before = rows(table)
    b = table.branches.create("dev", tag="t2")
    assert b.branch == "dev" and b.identifier == "db.t$branch_dev"
    assert rows(b) == at_tag
    assert b.snapshot_manager.list_ids() == [2] and "t2" in b.tags.list()
    b.write(batch([1, 7], "dev"))
    assert b.snapshot_manager.list_ids() == [2, 3]  # ids continue from the tag's snapshot
    assert rows(b) == sorted({**dict(at_tag), 1: "dev", 7: "dev"}.items())
    assert rows(table.refresh()) == main_before  # main did not move
    table.write(batch([8], "main"))
    assert rows(catalog.get_table("db.t$branch_dev")) == rows(b)
    assert (8, "main") not in rows(b)
    # files of both branches live in the table's own directories
    assert not any("branch" in p for p in b.manifest_io.manifest_dir.split(os.sep)[-2:])


def test_empty_branch_has_main_schema_and_no_snapshot(catalog, table):
    table = table.alter([AddColumn("extra", pa.int32())])
    e = table.branches.create("empty")
    assert e.snapshot_manager.latest_id() is None and e.read().num_rows == 0
    assert e.schema.id == table.schema.id and "extra" in e.arrow_schema.names
    e.write(pa.table({"id": [1], "v": ["x"], "extra": [5]}, schema=e.arrow_schema))
    assert e.snapshot_manager.list_ids() == [1]
    assert e.read().to_pylist() == [{"id": 1, "v": "x", "extra": 5}]


def test_branch_schema_evolves_on_its_own(catalog, table):
    b = table.branches.create("dev", tag="t2")
    b = b.alter([AddColumn("note", pa.string())])
    b.write(pa.table({"id": [50], "v": ["n"], "note": ["hi"]}, schema=b.arrow_schema))
    assert "note" not in catalog.get_table("db.t").arrow_schema.names
    got = {r["id"]: r["note"] for r in catalog.get_table("db.t$branch_dev").read().to_pylist()}
    assert got[50] == "hi" and got[0] is None


def test_names_and_existence_are_checked(catalog, table):
    for bad in ("main", "123", "../x", "a/b", ""):
        with pytest.raises(InvalidNameError):
            table.branches.create(bad)
    with pytest.raises(BranchNotFoundError, match="nope"):
        catalog.get_table("db.t$branch_nope")
    with pytest.raises(BranchNotFoundError):
        table.branches.delete("nope")
    with pytest.raises(SnapshotNotFoundError):
        table.branches.create("x", tag="no-such-tag")
    assert table.branches.list() == []  # nothing half-made


def test_create_is_idempotent_for_the_same_source(catalog, table):
    table.branches.create("dev", tag="t2")
    again = table.branches.create("dev", tag="t2")  # a retried task: no error, same branch
    assert again.snapshot_manager.list_ids() == [2]
    with pytest.raises(BranchAlreadyExistsError):
        table.branches.create("dev")  # from another source
    assert table.branches.create("dev", ignore_if_exists=True).branch == "dev"
    again.write(batch([1], "x"))
    with pytest.raises(BranchAlreadyExistsError):
        table.branches.create("dev", tag="t2")  # it moved on: no longer a fresh creation


def test_interrupted_creation_is_completed_by_a_rerun(catalog, table):
    b = table.branches.create("dev", tag="t2")
    # what a crash after the newest schema file leaves: older schemas missing
    table = table.alter([AddColumn("extra", pa.int32())])
    table.write(pa.table({"id": [60], "v": ["e"], "extra": [1]}, schema=table.arrow_schema))
    table.tags.create("t4")  # on a snapshot of schema 1: the branch gets schemas 0 and 1
    b2 = table.branches.create("dev2", tag="t4")
    table.file_io.delete(b2.schema_manager.path(0))
    table.branches.create("dev2", tag="t4")
    assert b2.schema_manager.list_ids() == [0, 1]
    assert rows(b) == rows(table, tag="t2")


def test_list_delete_rename_and_system_table(catalog, table):
    table.branches.create("b1", tag="t2")
    table.branches.create("b2")
    assert table.branches.list() == ["b1", "b2"]
    info = catalog.load_system_table("db.t$branches").to_pylist()
    assert [(r["branch_name"], r["from_tag"], r["earliest_snapshot_id"]) for r in info] == [
        ("b1", "t2", 2), ("b2", None, None)]
    snaps = catalog.load_system_table("db.t$branch_b1$snapshots")
    assert snaps.column("snapshot_id").to_pylist() == [2]
    table.branches.rename("b1", "renamed")
    assert table.branches.list() == ["b2", "renamed"]
    assert rows(catalog.get_table("db.t$branch_renamed")) == rows(table, tag="t2")
    table.branches.delete("b2")
    assert table.branches.list() == ["renamed"]
    assert not table.file_io.exists(os.path.join(table.path, "branch", "branch-b2"))


def test_fast_forward_makes_main_the_branch(catalog, table):
    main_tags_before = set(table.tags.list())
    b = table.branches.create("dev", tag="t2")
    b.write(batch([1, 7], "dev"))
    b.tags.create("dev-tag")
    expected = rows(b)
    result = table.branches.fast_forward("dev")
    assert result.from_snapshot == 2 and result.removed_snapshots == (2, 3) and result.copied_snapshots == (2, 3)
    main = catalog.get_table("db.t")
    assert rows(main) == expected
    assert main.snapshot_manager.list_ids() == [1, 2, 3]
    assert set(main.tags.list()) == main_tags_before | {"dev-tag"}
    main.write(batch([42], "after"))  # main goes on from the branch's head
    assert (42, "after") in rows(main) and main.snapshot_manager.latest_id() == 4
    # main's replaced snapshot left orphans; removing them keeps everything any branch reads
    removed = main.remove_orphan_files(older_than_millis=0)
    assert removed.orphans
    all_files_exist(main)
    assert rows(catalog.get_table("db.t$branch_dev")) == expected


def test_fast_forward_refuses_what_cannot_work(catalog, table):
    table.branches.create("empty")
    with pytest.raises(SnapshotNotFoundError, match="no snapshot"):
        table.branches.fast_forward("empty")
    with pytest.raises(InvalidNameError):
        table.branches.fast_forward("main")
    with pytest.raises(BranchNotFoundError):
        table.branches.fast_forward("ghost")


def test_main_maintenance_keeps_files_a_branch_needs(catalog, table):
    b = table.branches.create("dev", tag="t2")
    expected = rows(b)
    table.compact(full=True)  # main's compaction deletes the files the branch shares
    for i in range(3):
        table.write(batch([100 + i], "m"))
    table.expire_snapshots(retain_min=1, older_than_millis=0)
    table.tags.delete("t2")  # main's last reference to the branch's files
    assert table.snapshot_manager.list_ids() == [table.snapshot_manager.latest_id()]
    assert rows(catalog.get_table("db.t$branch_dev")) == expected
    all_files_exist(table)
    # with the branch gone, the same files are garbage: orphan removal takes them
    table.branches.delete("dev")
    assert table.remove_orphan_files(older_than_millis=0).orphans
    all_files_exist(table)
    assert rows(table) == sorted({**dict(rows(table, snapshot_id=table.snapshot_manager.latest_id()))}.items())


def test_branch_maintenance_keeps_files_main_needs(catalog, table):
    main_rows = rows(table)
    at_tag = rows(table, tag="t2")
    b = table.branches.create("dev", tag="t2")
    b.tags.delete("t2")  # the branch keeps no tag of the fork: only main's files protect them
    b.compact(full=True)
    for i in range(3):
        b.write(batch([200 + i], "b"))
    b.expire_snapshots(retain_min=1, older_than_millis=0)
    assert rows(catalog.get_table("db.t")) == main_rows
    assert rows(table, tag="t2") == at_tag
    all_files_exist(table)


def test_rollback_of_main_keeps_a_branch_made_from_a_later_tag(catalog, table):
    table.tags.create("t3")
    b = table.branches.create("dev", tag="t3")
    expected = rows(b)
    table.rollback(snapshot_id=1)  # removes tags t2, t3 and snapshots 2..3 from main
    assert rows(catalog.get_table("db.t$branch_dev")) == expected
    all_files_exist(table)


def test_other_branch_files_are_free_without_branches(table):
    assert not files_of_other_branches(table)


def test_orphans_abort_on_a_branch_without_schema(catalog, table):
    from paimonflow.core.maintenance.orphans import OrphanCleanAbortedError

    b = table.branches.create("dev", tag="t2")
    table.file_io.delete(os.path.join(table.path, "branch", "branch-dev", "schema"), recursive=True)
    assert table.branches.list() == []
    with pytest.raises(OrphanCleanAbortedError, match="no schema"):
        table.remove_orphan_files(older_than_millis=0, dry_run=True)
    assert b.snapshot_manager.list_ids() == [2]
