"""Manifests in (partition, bucket) order with a block index: every Avro reader reads them whole,
and paimonflow's readers decode only the blocks that may hold what they look for."""

from __future__ import annotations

import io
import json

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from paimonflow.core.fs import LocalFileIO
from paimonflow.core.meta import manifest_blocks as mb
from paimonflow.core.meta.manifest import (
    DataFileMeta,
    EntryFilter,
    FileKind,
    ManifestEntry,
    ManifestFile,
    SimpleStats,
    merge_entries,
)

EMPTY = b"\x00" * 8


def _entry(kind: FileKind, name: str, partition: bytes, bucket: int) -> ManifestEntry:
    stats = SimpleStats(EMPTY, EMPTY, ())
    return ManifestEntry(kind=kind, partition=partition, bucket=bucket, total_buckets=4, file=DataFileMeta(
        file_name=name, file_size=1, row_count=1, min_key=EMPTY, max_key=EMPTY, key_stats=stats, value_stats=stats,
        min_sequence_number=0, max_sequence_number=0, schema_id=0, level=0))


def _stats(partitions):
    return SimpleStats(EMPTY, EMPTY, ())


partitions = st.sampled_from([bytes([i]) * 8 for i in range(6)])
keys = st.lists(st.tuples(partitions, st.integers(0, 5)), min_size=0, max_size=400)


@settings(max_examples=100, deadline=None)
@given(keys)
def test_blocks_cover_every_record_and_split_only_large_groups(raw):
    ordered = sorted(raw)
    blocks = mb.group_blocks(ordered)
    assert [i for start, end in blocks for i in range(start, end)] == list(range(len(ordered)))
    for start, end in blocks:
        assert end - start <= mb.MAX_BLOCK_RECORDS
        # a block ends inside a group only when that group is larger than a block may be
        if end < len(ordered) and ordered[end - 1] == ordered[end]:
            group = ordered.count(ordered[end])
            assert group > mb.MAX_BLOCK_RECORDS or end - start == mb.MAX_BLOCK_RECORDS


@settings(max_examples=60, deadline=None)
@given(keys, st.sets(st.tuples(partitions, st.integers(0, 5)), max_size=4))
def test_selected_blocks_hold_every_wanted_record(tmp_path_factory, raw, wanted):
    names = [f"f{i}" for i in range(len(raw))]
    entries = [_entry(FileKind.ADD, n, p, b) for n, (p, b) in zip(names, raw, strict=True)]
    directory = str(tmp_path_factory.mktemp("m"))
    files = ManifestFile(LocalFileIO(), directory, partition_stats=_stats)
    metas = files.write(entries, schema_id=0)
    everything = [e for m in metas for e in files.read(m.file_name)]
    # any Avro reader (pypaimon, Java) reads them all, in (partition, bucket) order
    assert sorted(e.file.file_name for e in everything) == sorted(names)
    assert [(e.partition, e.bucket) for e in everything] == sorted((e.partition, e.bucket) for e in everything)
    by_partition: dict[bytes, set[int]] = {}
    for p, b in wanted:
        by_partition.setdefault(p, set()).add(b)
    entry_filter = EntryFilter(buckets={p: frozenset(b) for p, b in by_partition.items()})
    got = [e for m in metas for e in files.read(m.file_name, entry_filter)]
    assert [e.file.file_name for e in got] == [e.file.file_name for e in everything
                                              if (e.partition, e.bucket) in wanted]


def test_a_plain_avro_reader_reads_an_indexed_manifest_and_the_index_names_each_block(tmp_path):
    entries = [_entry(FileKind.ADD, f"f{i}", bytes([i % 3]) * 8, i % 4) for i in range(500)]
    files = ManifestFile(LocalFileIO(), str(tmp_path), partition_stats=_stats)
    (meta,) = files.write(entries, schema_id=0)
    data = (tmp_path / meta.file_name).read_bytes()
    reader = fastavro.reader(io.BytesIO(data))
    assert len(list(reader)) == 500
    index = json.loads(reader.metadata[mb.INDEX_KEY])
    assert sum(block[0] for block in index["blocks"]) == 500
    blocks = mb.parse_blocks(data)
    assert blocks is not None and len(blocks.infos) == len(index["blocks"]) > 1
    for info in blocks.infos:
        records = list(mb.read_selected(data, blocks, lambda i, info=info: i is info))
        assert len(records) == info.count
        assert {r["_PARTITION"] for r in records} == set(info.partitions)
        assert all(info.min_bucket <= r["_BUCKET"] <= info.max_bucket for r in records)


def test_a_manifest_without_a_usable_index_is_read_whole(tmp_path):
    entries = [_entry(FileKind.ADD, f"f{i}", bytes([i % 3]) * 8, i % 4) for i in range(200)]
    records = [{"_VERSION": 2, "_KIND": 0, "_PARTITION": e.partition, "_BUCKET": e.bucket, "_TOTAL_BUCKETS": 4,
                "_FILE": _file_record(e)} for e in entries]
    from paimonflow.core.meta.manifest import MANIFEST_ENTRY_SCHEMA

    plain = io.BytesIO()
    fastavro.writer(plain, MANIFEST_ENTRY_SCHEMA, records, codec="zstandard")  # as other writers do
    (tmp_path / "manifest-plain-0").write_bytes(plain.getvalue())
    # an index that does not match the blocks (wrong counts) is not trusted either
    lying = io.BytesIO()
    fastavro.writer(lying, MANIFEST_ENTRY_SCHEMA, records, codec="zstandard", metadata={
        mb.INDEX_KEY: json.dumps({"version": 1, "partitions": [EMPTY.hex()], "blocks": [[1, 0, 0, [0]]]})})
    (tmp_path / "manifest-lying-0").write_bytes(lying.getvalue())
    assert mb.parse_blocks(plain.getvalue()) is None and mb.parse_blocks(lying.getvalue()) is None
    files = ManifestFile(LocalFileIO(), str(tmp_path), partition_stats=_stats)
    wanted = EntryFilter(buckets={bytes([1]) * 8: frozenset({2})})
    for name in ("manifest-plain-0", "manifest-lying-0"):
        got = files.read(name, wanted)
        assert [e.file.file_name for e in got] == [e.file.file_name for e in entries
                                                  if (e.partition, e.bucket) == (bytes([1]) * 8, 2)]


def _file_record(e: ManifestEntry) -> dict:
    from paimonflow.core.meta.manifest import _entry_to

    return _entry_to(e)["_FILE"]


def _apply(operations, live: dict) -> list[ManifestEntry]:
    """The entries of ("add" | "delete", name, partition, bucket) operations on the live set
    ``live`` (updated): adds of live files and deletes of absent ones are skipped."""
    entries = []
    for op, *ident in operations:
        key = tuple(ident)
        if op == "add" and key not in live:
            live[key] = True
            entries.append(_entry(FileKind.ADD, *key))
        elif op == "delete" and key in live:
            del live[key]
            entries.append(_entry(FileKind.DELETE, *key))
    return entries


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "delete"]), st.integers(0, 30), partitions, st.integers(0, 3)),
                min_size=1, max_size=80))
def test_sorting_a_manifest_keeps_what_replaying_it_gives(tmp_path_factory, operations):
    """Entries of one file keep their relative order (the sort is stable and a file's identity
    includes its partition and bucket), so replaying a sorted manifest gives the same live set."""
    entries = _apply([(op, f"f{n}", p, b) for op, n, p, b in operations], {})
    files = ManifestFile(LocalFileIO(), str(tmp_path_factory.mktemp("m")), partition_stats=_stats)
    metas = files.write(entries, schema_id=0)
    replayed, orphans = merge_entries([e for m in metas for e in files.read(m.file_name)])
    expected, _ = merge_entries(entries)
    assert {e.identifier() for e in replayed} == {e.identifier() for e in expected}
    assert not orphans


def _merge(files, metas, min_count=3):
    from paimonflow.core.meta.manifest import merge_manifests

    merged, _ = merge_manifests(metas, files, schema_id=0, target_file_size=8 << 20, merge_min_count=min_count,
                                full_compaction_size=16 << 20)
    return merged


def test_merging_copies_the_blocks_no_delete_touches_without_decoding_them(tmp_path):
    files = ManifestFile(LocalFileIO(), str(tmp_path), partition_stats=_stats)
    p0, p1 = b"\x00" * 8, b"\x01" * 8
    big = files.write([_entry(FileKind.ADD, f"big{i}", p, i % 2) for i in range(300) for p in (p0, p1)],
                      schema_id=0)
    small = [files.write([_entry(FileKind.ADD, f"new{i}", p1, 3)], schema_id=0)[0] for i in range(2)]
    small.append(files.write([_entry(FileKind.DELETE, "big1", p1, 1)], schema_id=0)[0])
    source = (tmp_path / big[0].file_name).read_bytes()
    source_blocks = mb.parse_blocks(source)
    (merged,) = _merge(files, [*big, *small])
    data = (tmp_path / merged.file_name).read_bytes()
    blocks = mb.parse_blocks(data)
    bodies = {blocks.body(data, i) for i in range(len(blocks.infos))}
    kept = [source_blocks.body(source, i) for i, info in enumerate(source_blocks.infos)]
    # p0's blocks are copied byte for byte; the block of p1 bucket 1 (where big1 was deleted) is rewritten
    assert all(body in bodies for body, info in zip(kept, source_blocks.infos, strict=True)
               if info.partitions == (p0,))
    assert not any(body in bodies for body, info in zip(kept, source_blocks.infos, strict=True)
                   if p1 in info.partitions and info.min_bucket <= 1 <= info.max_bucket)
    live, orphans = merge_entries(files.read(merged.file_name))
    assert not orphans
    expected = {(f"big{i}", p) for i in range(300) for p in (p0, p1)} - {("big1", p1)} | {("new0", p1), ("new1", p1)}
    assert {(e.file.file_name, e.partition) for e in live} == expected and len(live) == 601
    assert merged.num_added_files == 601 and merged.num_deleted_files == 0
    assert (merged.min_bucket, merged.max_bucket, merged.min_level, merged.max_level) == (0, 3, 0, 0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["add", "delete"]), st.integers(0, 400), st.integers(0, 2),
                                   st.integers(0, 3)), min_size=1, max_size=150), min_size=1, max_size=12),
       st.integers(2, 4))
def test_merging_with_copied_blocks_keeps_the_live_set(tmp_path_factory, commits, min_count):
    files = ManifestFile(LocalFileIO(), str(tmp_path_factory.mktemp("m")), partition_stats=_stats)
    base: list = []
    live: dict[tuple, bool] = {}
    for ops in commits:
        delta = _apply([(op, f"f{n}", bytes([p]) * 8, b) for op, n, p, b in ops], live)
        if not delta:
            continue
        base = _merge(files, base + files.write(delta, schema_id=0), min_count)
        got, _ = merge_entries([e for m in base for e in files.read(m.file_name)])
        assert {(e.file.file_name, e.partition, e.bucket) for e in got} == set(live)
        for m in base:  # what each manifest's metadata says matches what it holds
            entries = files.read(m.file_name)
            assert m.num_added_files == sum(e.kind is FileKind.ADD for e in entries)
            assert m.num_deleted_files == sum(e.kind is FileKind.DELETE for e in entries)
            assert m.min_bucket <= min(e.bucket for e in entries) and m.max_bucket >= max(e.bucket for e in entries)
