"""Corruption of the metadata kinds test_bad_input.py does not cover: consumer files, long-lived
changelogs and their hints, deletion-vector index files and index manifests. A corrupt file is a
CorruptMetadataError naming it (or, for hints, recovered from); never wrong rows, never a
deletion based on it."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import CorruptMetadataError
from paimonflow.core.meta.changelogs import ChangelogManager

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def flip(data: bytes) -> bytes:
    out = bytearray(data)
    out[len(out) // 2] ^= 0xFF
    return bytes(out)


def odd_json(data: bytes) -> bytes:
    return b'{"nextSnapshot": "soon", "id": null, "fields": 3}'


MODES = {"truncated": truncate, "bit-flipped": flip, "odd JSON": odd_json, "empty": lambda d: b""}


def files(root: str) -> dict[str, bytes]:
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                out[path] = f.read()
    return out


@pytest.fixture
def decoupled(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    t = c.create_table("db.t", SCHEMA, primary_keys=["id"],
                       options={"bucket": "1", "changelog-producer": "input", "write-only": "true",
                                "snapshot.num-retained.min": "2", "changelog.num-retained.min": "20"})
    for i in range(5):
        t.write(pa.table({"id": [i, 9], "v": [f"c{i}"] * 2}, schema=SCHEMA))
    t.consumer_manager.record("reader", 3)
    t.expire_snapshots(older_than_millis=0)
    return c, t


@pytest.mark.parametrize("mode", list(MODES))
def test_a_corrupt_consumer_stops_expiry_before_anything_is_deleted(decoupled, mode, reliability):
    reliability.record(corruptions=1)
    catalog, t = decoupled
    t.write(pa.table({"id": [7], "v": ["x"]}, schema=SCHEMA))
    path = os.path.join(t.path, "consumer", "consumer-reader")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(MODES[mode](data))
    before = files(t.path)
    with pytest.raises(CorruptMetadataError, match="consumer-reader"):
        catalog.get_table("db.t").expire_snapshots(older_than_millis=0)
    with pytest.raises(CorruptMetadataError, match="consumer-reader"):
        catalog.get_table("db.t").expire_changelogs(retain_min=1, older_than_millis=0)
    assert files(t.path) == before  # nothing deleted on the strength of an unreadable consumer


@pytest.mark.parametrize("mode", list(MODES))
def test_a_corrupt_changelog_is_a_typed_error_for_the_reads_that_need_it(decoupled, mode, reliability):
    reliability.record(corruptions=1)
    catalog, t = decoupled
    manager = ChangelogManager(t.file_io, t.path)
    path = manager.path(2)
    with open(path, "rb") as f:
        data = f.read()
    expected_latest = t.read().to_pylist()
    later = t.read_changes(2, t.snapshot_manager.latest_id(), mode="changelog").to_pylist()
    with open(path, "wb") as f:
        f.write(MODES[mode](data))
    fresh = catalog.get_table("db.t")
    with pytest.raises(CorruptMetadataError, match="changelog-2"):
        fresh.read_changes(0, fresh.snapshot_manager.latest_id(), mode="changelog")
    # what does not need it still reads, and reads right
    assert fresh.read().to_pylist() == expected_latest
    assert fresh.read_changes(2, fresh.snapshot_manager.latest_id(), mode="changelog").to_pylist() == later


@pytest.mark.parametrize("value", [b"", b"abc", b"-1", b"0", b"999", b"\xff\xfe", b"{}"], ids=repr)
@pytest.mark.parametrize("hint", ["EARLIEST", "LATEST"])
def test_corrupt_changelog_hints_are_recovered_from(decoupled, hint, value, reliability):
    reliability.record(corruptions=1)
    catalog, t = decoupled
    manager = ChangelogManager(t.file_io, t.path)
    ids = manager.list_ids()
    with open(os.path.join(manager.directory, hint), "wb") as f:
        f.write(value)
    assert (manager.earliest_id(), manager.latest_id()) == (ids[0], ids[-1])
    fresh = catalog.get_table("db.t")
    assert fresh.read_changes(0, fresh.snapshot_manager.latest_id(), mode="changelog").num_rows == 10


@pytest.fixture
def with_vectors(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    t = c.create_table("db.dv", SCHEMA, primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": list(range(50)), "v": ["a"] * 50}, schema=SCHEMA))
    t.compact(full=True)
    for i in range(3):
        t.write(pa.table({"id": [i, 10 + i], "v": [f"c{i}"] * 2}, schema=SCHEMA))
    t.compact(full=False)
    return c, t


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("kind", ["index file", "index manifest"])
def test_corrupt_deletion_vector_metadata_is_a_typed_error_never_wrong_rows(with_vectors, kind, mode, reliability):
    reliability.record(corruptions=1)
    catalog, t = with_vectors
    snapshot = t.latest_snapshot()
    if kind == "index manifest":
        path = os.path.join(t.manifest_io.manifest_dir, snapshot.index_manifest)
    else:
        live = [e.file for e in t.index_entries(snapshot)]
        assert live
        path = os.path.join(t.index_dir, live[0].file_name)
    expected = sorted(t.read().to_pylist(), key=lambda r: r["id"])
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(MODES[mode](data))
    try:
        got = sorted(catalog.get_table("db.dv").read().to_pylist(), key=lambda r: r["id"])
    except CorruptMetadataError as exc:
        assert os.path.basename(path) in str(exc)
    else:
        assert got == expected, f"{kind} {mode} gave wrong rows"
        pytest.fail(f"{kind} {mode} was read without error")
