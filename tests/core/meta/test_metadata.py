"""Snapshot JSON, the LATEST/EARLIEST hints, manifests and manifest lists, manifest merging."""

from __future__ import annotations

import io
import json

import fastavro
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from paimonflow.core.data.binary_row import serialize_row
from paimonflow.core.errors import CorruptMetadataError
from paimonflow.core.fs import LocalFileIO
from paimonflow.core.meta.manifest import (
    DataFileMeta,
    FileKind,
    ManifestEntry,
    ManifestFile,
    ManifestList,
    SimpleStats,
    merge_entries,
    merge_manifests,
)
from paimonflow.core.meta.snapshots import CommitKind, Snapshot, SnapshotManager

EMPTY = serialize_row([], [])


def snapshot(i: int, **kw) -> Snapshot:
    return Snapshot(id=i, schema_id=0, base_manifest_list=f"manifest-list-b{i}", delta_manifest_list=f"manifest-list-d{i}",
                    commit_user="u", commit_identifier=i, commit_kind=CommitKind.APPEND, time_millis=1000 * i,
                    total_record_count=i, delta_record_count=1, **kw)


def test_snapshot_json_is_javas_layout():
    doc = json.loads(snapshot(3, uuid="x", base_manifest_list_size=10).to_json())
    assert list(doc) == ["version", "uuid", "id", "schemaId", "baseManifestList", "baseManifestListSize",
                         "deltaManifestList", "commitUser", "commitIdentifier", "commitKind", "timeMillis",
                         "totalRecordCount", "deltaRecordCount"]
    assert doc["version"] == 3 and doc["commitKind"] == "APPEND"


def test_snapshot_reads_java_extras_and_tolerates_missing_optionals():
    doc = json.loads(snapshot(1).to_json())
    doc.update({"logOffsets": {}, "someFutureField": [1, 2], "watermark": -9223372036854775808})
    del doc["version"], doc["totalRecordCount"]
    parsed = Snapshot.from_json(json.dumps(doc).encode())
    assert parsed.id == 1 and parsed.watermark == -9223372036854775808 and parsed.total_record_count is None


@pytest.mark.parametrize("data", [b"", b"{", b"[]", b'"x"', b"{}", b'{"id": "1"}', b"\xff\xfe"])
def test_corrupt_snapshots_are_typed_errors(data):
    with pytest.raises(CorruptMetadataError, match="snapshot-7"):
        Snapshot.from_json(data, "t/snapshot/snapshot-7")


def test_bit_flips_never_pass_silently():
    good = snapshot(5).to_json()
    for i in range(0, len(good), 7):
        flipped = bytearray(good)
        flipped[i] ^= 0x40
        try:
            parsed = Snapshot.from_json(bytes(flipped), "s")
        except CorruptMetadataError:
            continue
        # a flip inside a string value may still parse: then the id and kind must still be sane
        assert isinstance(parsed.id, int) and parsed.commit_kind in CommitKind


def test_hints_are_only_hints(tmp_path):
    fio = LocalFileIO()
    m = SnapshotManager(fio, str(tmp_path))
    assert m.latest() is None and m.earliest() is None
    for i in (1, 2, 3):
        assert m.try_publish(snapshot(i))
    assert (tmp_path / "snapshot/LATEST").read_bytes() == b"3"
    (tmp_path / "snapshot/LATEST").write_bytes(b"1")  # stale
    assert m.latest_id() == 3
    (tmp_path / "snapshot/LATEST").write_bytes(b"garbage")  # corrupt
    assert m.latest_id() == 3
    (tmp_path / "snapshot/LATEST").unlink()
    assert m.latest_id() == 3
    (tmp_path / "snapshot/snapshot-1").unlink()  # expired
    m.write_earliest_hint(1)  # points at an expired snapshot
    assert m.earliest_id() == 2
    (tmp_path / "snapshot/.snapshot-4.abc.tmp").write_bytes(b"{}")  # leftovers never count
    assert m.list_ids() == [2, 3]
    assert not m.try_publish(snapshot(3))  # the id is taken
    assert m.snapshot_at_or_before_time(2500).id == 2
    assert m.snapshot_at_or_before_time(10) is None
    assert m.latest_of_user("u").id == 3 and m.latest_of_user("other") is None


def _file(name: str, level: int = 0) -> DataFileMeta:
    stats = SimpleStats(EMPTY, EMPTY, ())
    return DataFileMeta(file_name=name, file_size=100, row_count=1, min_key=EMPTY, max_key=EMPTY, key_stats=stats,
                        value_stats=stats, min_sequence_number=0, max_sequence_number=0, schema_id=0, level=level,
                        creation_time_millis=1795000000000, delete_row_count=0, file_source=0)


def _entry(kind: FileKind, name: str) -> ManifestEntry:
    return ManifestEntry(kind=kind, partition=EMPTY, bucket=0, total_buckets=1, file=_file(name))


def _stats(partitions):
    return SimpleStats(EMPTY, EMPTY, ())


def test_manifest_round_trip_and_pypaimon_schema(tmp_path):
    fio = LocalFileIO()
    files = ManifestFile(fio, str(tmp_path), partition_stats=_stats)
    metas = files.write([_entry(FileKind.ADD, "data-a-0.parquet"), _entry(FileKind.DELETE, "data-b-0.parquet")],
                        schema_id=0)
    assert len(metas) == 1 and metas[0].num_added_files == 1 and metas[0].num_deleted_files == 1
    back = files.read(metas[0].file_name)
    assert [(e.kind, e.file.file_name) for e in back] == [(FileKind.ADD, "data-a-0.parquet"),
                                                          (FileKind.DELETE, "data-b-0.parquet")]
    assert back[0].file == _file("data-a-0.parquet")
    reader = fastavro.reader(io.BytesIO((tmp_path / metas[0].file_name).read_bytes()))
    assert reader.metadata["avro.codec"] == "zstandard"
    assert reader.writer_schema["name"] == "ManifestEntry"
    lists = ManifestList(fio, str(tmp_path))
    name, size = lists.write(metas)
    assert name.startswith("manifest-list-") and size == (tmp_path / name).stat().st_size
    assert lists.read(name) == metas
    (tmp_path / name).write_bytes(b"Obj\x01garbage")
    with pytest.raises(CorruptMetadataError, match=name):
        lists.read(name)


def test_readers_resolve_fields_by_name_javas_namespaced_schema(tmp_path):
    """Java / pypaimon-rust write a namespaced record wrapped in a nullable union; we read it too."""
    fio = LocalFileIO()
    files = ManifestFile(fio, str(tmp_path), partition_stats=_stats)
    meta = files.write([_entry(FileKind.ADD, "data-x-0.parquet")], schema_id=0)[0]
    records = list(fastavro.reader(io.BytesIO((tmp_path / meta.file_name).read_bytes())))
    java_schema = {"type": "record", "name": "record", "namespace": "org.apache.paimon.avro.generated", "fields": [
        {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"}, {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"}, {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": {"type": "record", "name": "record__FILE", "fields": [
            {"name": k, "type": ["null", "bytes"] if k in ("_MIN_KEY", "_MAX_KEY") else _java_type(k)}
            for k in ("_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS", "_VALUE_STATS",
                      "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL", "_EXTRA_FILES")]}}]}
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(["null", java_schema]),
                    [{**r, "_FILE": {k: v for k, v in r["_FILE"].items() if k in _JAVA_FILE_KEYS}} for r in records])
    (tmp_path / "manifest-java-0").write_bytes(sink.getvalue())
    (entry,) = files.read("manifest-java-0")
    assert entry.file.file_name == "data-x-0.parquet" and entry.file.delete_row_count is None


_JAVA_FILE_KEYS = {"_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS", "_VALUE_STATS",
                   "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL", "_EXTRA_FILES"}


def _java_type(key: str):
    if key in ("_KEY_STATS", "_VALUE_STATS"):
        return ["null", {"type": "record", "name": f"record__FILE_{key}", "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"}, {"name": "_MAX_VALUES", "type": "bytes"},
            {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": None}]}]
    return {"_FILE_NAME": "string", "_EXTRA_FILES": {"type": "array", "items": "string"}, "_LEVEL": "int"}.get(key, "long")


def test_merge_entries_cancels_add_then_delete():
    live, orphans = merge_entries([_entry(FileKind.ADD, "a"), _entry(FileKind.ADD, "b"), _entry(FileKind.DELETE, "a"),
                                   _entry(FileKind.DELETE, "zz")])
    assert [e.file.file_name for e in live] == ["b"]
    assert [e.file.file_name for e in orphans] == ["zz"]


ops = st.lists(st.tuples(st.sampled_from(["add", "delete"]), st.integers(0, 15)), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(ops, st.integers(1, 5), st.integers(1, 4))
@example([("add", 0), ("add", 1), ("delete", 1), ("add", 1), ("delete", 0)], 1, 1)  # found by hypothesis
def test_manifest_merging_keeps_the_live_set(tmp_path_factory, operations, per_commit, min_count):
    """Whatever merging does, the live files after it are exactly the live files before it."""
    fio = LocalFileIO()
    directory = str(tmp_path_factory.mktemp("m"))
    files = ManifestFile(fio, directory, target_file_size=2048, partition_stats=_stats)
    base: list = []
    live: set[str] = set()
    for start in range(0, len(operations), per_commit):
        delta = []
        for op, n in operations[start:start + per_commit]:
            name = f"f{n}"
            if op == "add" and name not in live:
                delta.append(_entry(FileKind.ADD, name))
                live.add(name)
            elif op == "delete" and name in live:
                delta.append(_entry(FileKind.DELETE, name))
                live.discard(name)
        if not delta:
            continue
        new = files.write(delta, schema_id=0)
        merged, _ = merge_manifests(base + new, files, schema_id=0, target_file_size=2048, merge_min_count=min_count,
                                    full_compaction_size=4096)
        entries = [e for m in merged for e in files.read(m.file_name)]
        got, _ = merge_entries(entries)
        assert {e.file.file_name for e in got} == live
        base = merged
