"""Branch operations killed with SIGKILL at named points: the table and its branches stay
readable and a rerun finishes the job."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.maintenance.orphans import OrphanCleanAbortedError

from .test_crash_points import SCHEMA, build, killed, readable


def with_branch(path) -> Catalog:
    catalog = build(path)
    dev = catalog.get_table("db.t").branches.create("dev", tag="early")
    dev.write(pa.table({"id": [100, 101], "v": ["dev", "dev"]}, schema=SCHEMA))
    dev.write(pa.table({"id": [102], "v": ["dev"]}, schema=SCHEMA))
    return catalog


@pytest.mark.slow
@pytest.mark.parametrize("point", ["fast-forward:removing-snapshots", "fast-forward:copying-snapshots"])
def test_fast_forward_killed_mid_way(tmp_path, point, reliability):
    reliability.record(kills=1)
    catalog = with_branch(tmp_path / "wh")
    expected = catalog.get_table("db.t$branch_dev").read().to_pylist()
    killed(tmp_path / "wh", point, 't.branches.fast_forward("dev")')
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    readable(t)  # every snapshot and tag main still has reads
    ids = t.snapshot_manager.list_ids()
    assert ids == list(range(ids[0], ids[-1] + 1))  # a prefix of main's history, no gaps
    t.branches.fast_forward("dev")  # the rerun finishes
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert t.read().to_pylist() == expected
    readable(t)


@pytest.mark.slow
def test_branch_deletion_killed_mid_way(tmp_path, reliability):
    reliability.record(kills=1)
    with_branch(tmp_path / "wh")
    killed(tmp_path / "wh", "delete-branch:after-schemas", 't.branches.delete("dev")')
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert t.branches.list() == []  # gone as soon as its schemas went
    readable(t)
    t.branches.delete("dev")  # the rerun removes the leftovers
    assert not t.file_io.exists(t.path + "/branch/branch-dev")
    t.remove_orphan_files(older_than_millis=0)
    readable(t)


@pytest.mark.slow
def test_branch_creation_killed_mid_way(tmp_path, reliability):
    reliability.record(kills=1)
    build(tmp_path / "wh")
    killed(tmp_path / "wh", "create-branch:before-schemas", 't.branches.create("dev", tag="early")')
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert t.branches.list() == []  # not visible without its schemas
    with pytest.raises(OrphanCleanAbortedError, match="no schema"):  # never delete on uncertainty
        t.remove_orphan_files(older_than_millis=0)
    dev = t.branches.create("dev", tag="early")  # the rerun completes it
    assert dev.read().to_pylist() == t.read(tag="early").to_pylist()
    t.remove_orphan_files(older_than_millis=0)
    readable(t)
    assert dev.read().to_pylist() == t.read(tag="early").to_pylist()
