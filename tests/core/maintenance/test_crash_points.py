"""Maintenance jobs killed with SIGKILL at named points (``core/faults.py``): afterwards the table
reads correctly at every retained snapshot and tag, and a rerun finishes the job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def build(path) -> Catalog:
    catalog = Catalog(str(path))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    for i in range(8):
        t.write(pa.table({"id": list(range(i, i + 6)), "v": [f"c{i}"] * 6}, schema=SCHEMA))
        if i == 2:
            t.tags.create("early")
    t.compact(full=True)
    return catalog


def killed(warehouse, point: str, job: str) -> None:
    script = textwrap.dedent(f"""
        from paimonflow.core import Catalog
        t = Catalog({str(warehouse)!r}).get_table("db.t")
        {job}
    """)
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PAIMONFLOW_CRASH_AT": point},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]


def readable(t) -> dict:
    out = {sid: t.read(snapshot_id=sid).to_pylist() for sid in t.snapshot_manager.list_ids()}
    for name in t.tags.list():
        out[name] = t.read(tag=name).to_pylist()
    return out


EXPIRE = "t.expire_snapshots(retain_min=2, older_than_millis=0)"


@pytest.mark.slow
@pytest.mark.parametrize("point", ["expire:data-files", "expire:metadata-files", "expire:snapshot-files"])
def test_expiry_killed_mid_way(tmp_path, point, reliability):
    reliability.record(kills=1)
    build(tmp_path / "wh")
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    latest_state = t.read().to_pylist()
    early = t.read(tag="early").to_pylist()
    killed(tmp_path / "wh", point, EXPIRE)
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert t.read().to_pylist() == latest_state and t.read(tag="early").to_pylist() == early
    t.expire_snapshots(retain_min=2, older_than_millis=0)  # the rerun finishes the job
    assert len(t.snapshot_manager.list_ids()) == 2
    assert t.snapshot_manager.earliest_id() == t.snapshot_manager.list_ids()[0]
    readable(t)
    assert t.remove_orphan_files(older_than_millis=0, dry_run=True).orphans == ()


@pytest.mark.slow
@pytest.mark.parametrize("point", ["delete-tag:after-tag-file", "delete-tag:files"])
def test_tag_deletion_killed_mid_way(tmp_path, point, reliability):
    reliability.record(kills=1)
    build(tmp_path / "wh")
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    t.expire_snapshots(retain_min=2, older_than_millis=0)  # the tag's snapshot expires: deleting it frees files
    before = readable(t)
    killed(tmp_path / "wh", point, 't.tags.delete("early")')
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert "early" not in t.tags.list()
    after = readable(t)
    assert after == {k: v for k, v in before.items() if k != "early"}
    # files the dead job did not get to are orphans now; the orphan job removes them
    t.remove_orphan_files(older_than_millis=0)
    assert readable(t) == after


@pytest.mark.slow
def test_orphan_removal_killed_mid_way(tmp_path, reliability):
    reliability.record(kills=1)
    build(tmp_path / "wh")
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    for i in range(6):
        path = f"{t.path}/bucket-0/data-orphan-{i}.parquet"
        with open(path, "wb") as f:
            f.write(b"x")
        old = time.time() - 3 * 86400
        os.utime(path, (old, old))
    before = readable(t)
    killed(tmp_path / "wh", "orphans:files", "t.remove_orphan_files()")
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert readable(t) == before
    assert len(t.remove_orphan_files().orphans) == 2  # the rerun finishes: 6 orphans, 4 went before the kill
    assert readable(t) == before
