"""One answer to "what is needed": ``meta.references`` against the independent oracle of the
reliability programme, on a table with branches, tags, a consumer and long-lived changelogs, after
each deletion that depends on it (snapshot and changelog expiry, tag deletion, rollback, branch
deletion, orphan removal)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from paimonflow.core import Catalog
from paimonflow.core.maintenance.branches import open_branch
from paimonflow.core.meta.changelogs import ChangelogManager
from paimonflow.core.meta.references import (
    entry_path_resolver,
    files_needed_by,
    files_of_other_branches,
    needed_by,
)
from paimonflow.core.meta.schema_manager import existing_branches
from tests.reliability.oracle import garbage, missing_needed_files, needed_files

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
OPTIONS = {"bucket": "2", "changelog-producer": "input", "write-only": "true",  # expiry only when asked
           "snapshot.num-retained.min": "1",
           "snapshot.num-retained.max": "2", "changelog.num-retained.min": "3", "changelog.num-retained.max": "6"}


def write(table, i: int) -> None:
    table.write(pa.table({"k": [i % 3, 10 + i], "v": [f"c{i}", f"n{i}"]}, schema=SCHEMA))


def branches_of(table) -> list:
    return [table, *(open_branch(table, name) for name in existing_branches(table.file_io, table.path))]


def check_agreement(table) -> None:
    """Every branch's needs by ``references`` equal the oracle's, nothing needed is missing, the
    other-branch view of each branch is what the others need, and orphan removal (window 0) would
    delete exactly the oracle's garbage."""
    views = branches_of(table)
    for view in views:
        assert missing_needed_files(view) == [], view.branch
        needed = files_needed_by(view, strict=True)
        assert needed == needed_files(view)[0], view.branch
        path_of = entry_path_resolver(view)
        manager = view.snapshot_manager
        for snapshot in [*map(manager.snapshot, manager.list_ids()), *view.tag_manager.list_tags().values()]:
            one = needed_by(view, snapshot)  # what each deletion plan keeps for a snapshot or tag that stays
            assert one.metadata <= needed
            live = view.manifest_io.live_entries(snapshot)
            assert {path_of(e) for e in live} <= needed and all(e in one for e in live)
    for view in views:
        others = files_of_other_branches(view)
        others_need = set().union(*(files_needed_by(v) for v in views if v.branch != view.branch))
        assert others.metadata <= others_need  # what protects the others' files is what they need
    orphans = set(table.remove_orphan_files(older_than_millis=0, dry_run=True, min_older_than_millis=0).orphans)
    assert orphans == garbage(table)


def test_every_deletion_keeps_exactly_what_references_says_is_needed(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options=OPTIONS)
    for i in range(4):
        write(table, i)
    table.tags.create("t2", snapshot_id=2)
    table.tags.create("t3", snapshot_id=3)
    table.branches.create("b", tag="t2")
    branch = open_branch(table, "b")
    write(branch, 100)
    write(branch, 101)
    table.consumer_manager.record("reader", 3)
    for i in range(4, 8):
        write(table, i)
    check_agreement(table)

    table.expire_snapshots(retain_min=1, retain_max=2, older_than_millis=0)  # the consumer holds 3..
    check_agreement(table)
    table.consumer_manager.delete("reader")
    table.expire_snapshots(retain_min=1, retain_max=2, older_than_millis=0)  # long-lived changelogs now
    assert ChangelogManager(table.file_io, table.path).list_ids()  # long-lived changelogs to keep
    check_agreement(table)

    table.expire_changelogs(retain_min=1, retain_max=2, older_than_millis=0)
    check_agreement(table)
    table.tags.delete("t3")
    check_agreement(table)
    write(table, 8)
    table.rollback(tag="t2")
    check_agreement(table)
    write(table, 9)
    table.branches.delete("b")
    check_agreement(table)
    assert garbage(table)  # the deleted branch's files, and those only the dropped snapshots needed
    table.remove_orphan_files(older_than_millis=0, min_older_than_millis=0)
    check_agreement(table)
    assert garbage(table) == set()
    assert sorted(r["k"] for r in table.read().to_pylist()) == sorted({0, 1, 10, 11, 9 % 3, 19})
