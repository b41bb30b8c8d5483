"""Changelog moves and changelog expiry killed with SIGKILL at named points: the table and its
changelogs stay readable and a rerun finishes the job."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.meta.changelogs import ChangelogManager

from .test_crash_points import SCHEMA, killed


def build(path) -> Catalog:
    catalog = Catalog(str(path))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "changelog-producer": "input", "write-only": "true",
                                      "snapshot.num-retained.min": "2", "changelog.num-retained.min": "40"})
    for i in range(10):
        t.write(pa.table({"id": list(range(i, i + 4)), "v": [f"c{i}"] * 4}, schema=SCHEMA))
    return catalog


def all_changes(t):
    got = t.read_changes(0, t.snapshot_manager.latest_id(), mode="changelog")
    return sorted(zip(got.column("rowkind").to_pylist(), got.column("id").to_pylist(), got.column("v").to_pylist(),
                      strict=True))


@pytest.mark.slow
def test_moving_snapshots_to_changelogs_killed_mid_way(tmp_path, reliability):
    reliability.record(kills=1)
    build(tmp_path / "wh")
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    before, latest_rows = all_changes(t), t.read().to_pylist()
    killed(tmp_path / "wh", "expire:changelog-files", "t.expire_snapshots(older_than_millis=0)")
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert t.read().to_pylist() == latest_rows and all_changes(t) == before  # nothing lost mid-way
    t.expire_snapshots(older_than_millis=0)  # the rerun finishes
    assert t.snapshot_manager.list_ids() == [9, 10]
    assert ChangelogManager(t.file_io, t.path).list_ids() == list(range(1, 9))
    assert all_changes(t) == before


@pytest.mark.slow
@pytest.mark.parametrize("point", ["expire-changelog:data-files", "expire-changelog:metadata-files",
                                   "expire-changelog:changelog-files"])
def test_changelog_expiry_killed_mid_way(tmp_path, point, reliability):
    reliability.record(kills=1)
    build(tmp_path / "wh")
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    t.expire_snapshots(older_than_millis=0)
    killed(tmp_path / "wh", point, "t.expire_changelogs(retain_min=1, retain_max=4, older_than_millis=0)")
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    t.read()
    t.expire_changelogs(retain_min=1, retain_max=4, older_than_millis=0)  # the rerun finishes
    manager = ChangelogManager(t.file_io, t.path)
    assert manager.list_ids() == [8] and manager.earliest_id() == 8
    t.read_changes(7, t.snapshot_manager.latest_id(), mode="changelog")
    from paimonflow.core.maintenance.orphans import referenced_files

    assert [p for p in referenced_files(t) if not t.file_io.exists(p)] == []
