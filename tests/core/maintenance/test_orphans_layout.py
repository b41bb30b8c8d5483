"""Orphan removal deletes only where the layout is positively known: every live file of each
known layout survives, unreferenced files there go, and files in places the layout does not name
are reported and left alone (negative controls for data-file.path-directory, bucket-postpone,
partition and bucket directories, manifests, index, statistics and metadata folders)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.maintenance.orphans import RootKind, find_orphans, scan_roots

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
LATER = 3600.0  # a clock an hour ahead: every file is older than a zero window


def plant(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"planted")
    return str(path)


def live_files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


def states(t) -> dict:
    out = {sid: sorted(t.read(snapshot_id=sid).to_pylist(), key=str) for sid in t.snapshot_manager.list_ids()}
    out["tag"] = sorted(t.read(tag="t1").to_pylist(), key=str)
    return out


@pytest.fixture
def catalog(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


@pytest.mark.parametrize("directory", [None, "data", "deep/er"])
def test_live_files_of_every_layout_survive_and_unknown_places_are_left_alone(catalog, directory):
    options = {"bucket": "2", "changelog-producer": "input"}
    if directory:
        options["data-file.path-directory"] = directory
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=options)
    for i in range(4):
        t.write(pa.table({"id": [i, i + 1], "v": [f"v{i}"] * 2, "dt": ["d1", "d2"]}, schema=SCHEMA))
    t.tags.create("t1", snapshot_id=2)
    t.analyze()
    root = Path(t.path)
    data = root / directory if directory else root
    assert list(data.glob("dt=d1/bucket-*/data-*")), "data files live under the path directory"
    before, live = states(t), live_files(root)
    known = [plant(data / "dt=d1" / "bucket-0" / "data-stray.parquet"),
             plant(root / "manifest" / "manifest-stray-0"), plant(root / "index" / "index-stray-0"),
             plant(root / "statistics" / "stat-stray")]
    unknown = [plant(root / "somebody-elses" / "file.parquet"), plant(root / "notes.txt"),
               plant(data / "dt=d1" / "stray.txt"), plant(data / "dt=d1" / "bucket-0" / "sub" / "x.parquet"),
               plant(data / "dt=d1" / "bucket-x" / "data-1.parquet"), plant(data / "other=1" / "bucket-0" / "d")]
    if directory:
        unknown.append(plant(root / "dt=d1" / "bucket-0" / "data-outside-the-path-directory.parquet"))
    now = time.time()
    plan = t.remove_orphan_files(older_than_millis=0, clock=lambda: now + LATER)
    assert sorted(plan.orphans) == sorted(known)
    assert sorted(plan.unknown_files) == sorted(unknown)
    assert live_files(root) == live | set(unknown)  # every live file and every unknown one is still there
    assert states(t) == before


def test_a_path_directory_named_like_a_bucket_is_not_taken_for_one(catalog):
    """The layout says where buckets are, not a directory's name: with ``data-file.path-directory``
    set to ``bucket-0`` the buckets are ``bucket-0/bucket-<n>``; a file directly in ``bucket-0`` is
    in no known place."""
    t = catalog.create_table("db.b", SCHEMA, primary_keys=["id", "dt"],
                             options={"bucket": "1", "data-file.path-directory": "bucket-0"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": ["d1", "d2"]}, schema=SCHEMA))
    root = Path(t.path)
    assert list(root.glob("bucket-0/bucket-0/data-*"))
    live = live_files(root)
    stray = plant(root / "bucket-0" / "bucket-0" / "data-stray.parquet")
    beside = plant(root / "bucket-0" / "data-beside-the-buckets.parquet")
    now = time.time()
    plan = t.remove_orphan_files(older_than_millis=0, clock=lambda: now + LATER)
    assert list(plan.orphans) == [stray] and list(plan.unknown_files) == [beside]
    assert live_files(root) == live | {beside}


def test_the_postpone_bucket_directory_is_a_known_place(catalog):
    t = catalog.create_table("db.p", SCHEMA, partition_keys=["dt"], options={"bucket": "-1"})
    root = Path(t.path)
    live = plant(root / "dt=d1" / "bucket-postpone" / "data--u-writer-s-0-w-0-0.avro")
    stray = plant(root / "dt=d1" / "bucket-postpone" / "data-stray.avro")
    odd = plant(root / "dt=d1" / "bucket--2" / "data-1.avro")  # not Paimon's name for bucket -2
    roots = scan_roots(t)
    assert [r.kind for r in roots if r.path.endswith("dt=d1")] == [RootKind.DATA]
    found_orphans, found_unknown = [], []
    for r in roots:
        result = find_orphans(t.file_io, r, keep={live}, cutoff_millis=(time.time() + LATER) * 1000)
        found_orphans += [p for p, _ in result.orphans]
        found_unknown += result.unknown
    assert found_orphans == [stray] and found_unknown == [odd]


def test_a_tag_whose_changelog_expired_does_not_block_orphan_removal(catalog):
    """Java's expiry removes a tagged snapshot's changelog manifest list (tags keep no changelog)."""
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", "changelog-producer": "input"})
    for i in range(3):
        t.write(pa.table({"id": [i], "v": [f"v{i}"], "dt": ["d1"]}, schema=SCHEMA))
    tag = t.tags.create("t1", snapshot_id=2)
    assert tag.changelog_manifest_list
    os.remove(os.path.join(t.path, "manifest", tag.changelog_manifest_list))
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)
    before = states(t)
    now = time.time()
    t.remove_orphan_files(older_than_millis=0, clock=lambda: now + LATER)
    assert states(t) == before
    t.rollback(tag="t1")  # and rollback accepts the same tag, as before
    assert sorted(t.read().to_pylist(), key=str) == before["tag"]
