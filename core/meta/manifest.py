"""Manifests and manifest lists: Avro files with Apache Paimon's schemas.

Writers use exactly the Avro schemas pypaimon 2.1.0 writes (no namespaces, zstd by default);
readers resolve fields by name, so Java's and pypaimon-rust's variants (namespaced record
names, nullable top-level unions) read the same. Partition, key and statistics values stay
serialized BinaryRows (``bytes``) here.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import IntEnum
from typing import Any, cast

import fastavro

from ..errors import CorruptMetadataError, FileNotFoundStorageError
from ..fs import join
from .manifest_blocks import (
    MIN_BLOCK_RECORDS,
    BlockInfo,
    Blocks,
    RawBlock,
    assemble,
    parse_blocks,
    raw_blocks,
    read_selected,
    write_indexed,
)

MANIFEST_VERSION = 2
_CODECS = {"zstd": "zstandard", "snappy": "snappy", "deflate": "deflate", "null": "null", "none": "null"}


class FileKind(IntEnum):
    ADD = 0
    DELETE = 1


@dataclass(frozen=True, slots=True)
class SimpleStats:
    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time_millis: int | None = None
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestEntry:
    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    def identifier(self) -> tuple:
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files, f.embedded_index, f.external_path)


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestFileMeta:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None
    total_buckets: int | None = None


@dataclass(frozen=True, slots=True)
class EntryFilter:
    """The manifest entries a reader wants: those of the given buckets of given partitions
    (``buckets``: serialized partition -> bucket ids), or of partitions ``partition`` accepts
    (serialized partition -> may it match), or both (an entry must satisfy each given one).
    Entries of other partitions and buckets are skipped before they are decoded where the file
    has a block index (:mod:`paimonflow.core.meta.manifest_blocks`), and before they become objects
    everywhere."""

    buckets: Mapping[bytes, frozenset[int] | None] | None = None  # a partition's None: every bucket
    partition: Callable[[bytes], bool] | None = None

    def holds(self, partition: bytes, low: int | None, high: int | None) -> bool:
        """Whether a wanted bucket of ``partition`` may lie in ``[low, high]`` (None: unknown)."""
        if self.buckets is None:
            return True
        if partition not in self.buckets:
            return False
        wanted = self.buckets[partition]
        return wanted is None or low is None or high is None or any(low <= b <= high for b in wanted)

    def accepts(self, partition: bytes, bucket: int) -> bool:
        return self.holds(partition, bucket, bucket) and (self.partition is None or self.partition(partition))

    def accepts_block(self, info: BlockInfo) -> bool:
        return any(self.holds(p, info.min_bucket, info.max_bucket) and (self.partition is None or self.partition(p))
                   for p in info.partitions)


def merge_entries(entries: Iterable[ManifestEntry]) -> tuple[list[ManifestEntry], list[ManifestEntry]]:
    """Replay entries in order: an ADD and a later DELETE of the same file cancel.

    Returns ``(live ADD entries, DELETE entries with no earlier ADD)``; the second list is what
    conflict detection reports as "already deleted".
    """
    live: dict[tuple, ManifestEntry] = {}
    orphan_deletes: dict[tuple, ManifestEntry] = {}
    for e in entries:
        ident = e.identifier()
        if e.kind is FileKind.ADD:
            live[ident] = e
        elif ident in live:
            del live[ident]
        else:
            orphan_deletes[ident] = e
    return list(live.values()), list(orphan_deletes.values())


# -- Avro schemas (as pypaimon 2.1.0 writes them) ---------------------------------------------

def _stats_schema(name: str) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"},
        {"name": "_MAX_VALUES", "type": "bytes"},
        {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": None},
    ]}


def _opt(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", t], "default": None}


DATA_FILE_SCHEMA = {"type": "record", "name": "DataFileMeta", "fields": [
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"},
    {"name": "_MIN_KEY", "type": "bytes"},
    {"name": "_MAX_KEY", "type": "bytes"},
    {"name": "_KEY_STATS", "type": _stats_schema("record_KEY_STATS")},
    {"name": "_VALUE_STATS", "type": _stats_schema("record_VALUE_STATS")},
    {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_SCHEMA_ID", "type": "long"},
    {"name": "_LEVEL", "type": "int"},
    {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
    _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
    _opt("_DELETE_ROW_COUNT", "long"),
    _opt("_EMBEDDED_FILE_INDEX", "bytes"),
    _opt("_FILE_SOURCE", "int"),
    _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
    _opt("_EXTERNAL_PATH", "string"),
    _opt("_FIRST_ROW_ID", "long"),
    _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
    _opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
]}
MANIFEST_ENTRY_SCHEMA = fastavro.parse_schema({"type": "record", "name": "ManifestEntry", "fields": [
    {"name": "_VERSION", "type": "int"},
    {"name": "_KIND", "type": "int"},
    {"name": "_PARTITION", "type": "bytes"},
    {"name": "_BUCKET", "type": "int"},
    {"name": "_TOTAL_BUCKETS", "type": "int"},
    {"name": "_FILE", "type": DATA_FILE_SCHEMA},
]})
MANIFEST_FILE_META_SCHEMA = fastavro.parse_schema({"type": "record", "name": "ManifestFileMeta", "fields": [
    {"name": "_VERSION", "type": "int"},
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_NUM_ADDED_FILES", "type": "long"},
    {"name": "_NUM_DELETED_FILES", "type": "long"},
    {"name": "_PARTITION_STATS", "type": _stats_schema("record_PARTITION_STATS")},
    {"name": "_SCHEMA_ID", "type": "long"},
    _opt("_MIN_BUCKET", "int"), _opt("_MAX_BUCKET", "int"),
    _opt("_MIN_LEVEL", "int"), _opt("_MAX_LEVEL", "int"),
    _opt("_MIN_ROW_ID", "long"), _opt("_MAX_ROW_ID", "long"),
    _opt("_TOTAL_BUCKETS", "int"),
    _opt("_EXTRA_FILES", {"type": "array", "items": "string"}),
]})


# -- record <-> dataclass ---------------------------------------------------------------------

def _stats_to(s: SimpleStats) -> dict[str, Any]:
    return {"_MIN_VALUES": s.min_values, "_MAX_VALUES": s.max_values,
            "_NULL_COUNTS": list(s.null_counts) if s.null_counts is not None else None}


def _stats_from(r: dict[str, Any] | None) -> SimpleStats:
    if r is None:
        return SimpleStats(b"", b"", None)
    counts = r.get("_NULL_COUNTS")
    return SimpleStats(r["_MIN_VALUES"], r["_MAX_VALUES"], tuple(counts) if counts is not None else None)


def _millis(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return int(value.timestamp() * 1000)
    return int(value)


def _file_to(f: DataFileMeta) -> dict[str, Any]:
    return {
        "_FILE_NAME": f.file_name, "_FILE_SIZE": f.file_size, "_ROW_COUNT": f.row_count,
        "_MIN_KEY": f.min_key, "_MAX_KEY": f.max_key,
        "_KEY_STATS": _stats_to(f.key_stats), "_VALUE_STATS": _stats_to(f.value_stats),
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number, "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id, "_LEVEL": f.level, "_EXTRA_FILES": list(f.extra_files),
        "_CREATION_TIME": f.creation_time_millis, "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": f.embedded_index, "_FILE_SOURCE": f.file_source,
        "_VALUE_STATS_COLS": list(f.value_stats_cols) if f.value_stats_cols is not None else None,
        "_EXTERNAL_PATH": f.external_path, "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": list(f.write_cols) if f.write_cols is not None else None, "_WRITE_COLS_SEQUENCES": None,
    }


def plain_file_name(value: Any) -> str:
    """A file name a manifest refers to: one path segment, so it never leads outside its directory."""
    if not isinstance(value, str) or not value or value.startswith(".") or any(c in value for c in "/\\\x00"):
        raise ValueError(f"file name {value!r} is not a plain file name")
    return value


def _file_from(r: dict[str, Any]) -> DataFileMeta:
    cols = r.get("_VALUE_STATS_COLS")
    write_cols = r.get("_WRITE_COLS")
    return DataFileMeta(
        file_name=plain_file_name(r["_FILE_NAME"]), file_size=r["_FILE_SIZE"], row_count=r["_ROW_COUNT"],
        min_key=r["_MIN_KEY"], max_key=r["_MAX_KEY"],
        key_stats=_stats_from(r.get("_KEY_STATS")), value_stats=_stats_from(r.get("_VALUE_STATS")),
        min_sequence_number=r["_MIN_SEQUENCE_NUMBER"], max_sequence_number=r["_MAX_SEQUENCE_NUMBER"],
        schema_id=r["_SCHEMA_ID"], level=r["_LEVEL"], extra_files=tuple(r.get("_EXTRA_FILES") or ()),
        creation_time_millis=_millis(r.get("_CREATION_TIME")), delete_row_count=r.get("_DELETE_ROW_COUNT"),
        embedded_index=r.get("_EMBEDDED_FILE_INDEX"), file_source=r.get("_FILE_SOURCE"),
        value_stats_cols=tuple(cols) if cols is not None else None, external_path=r.get("_EXTERNAL_PATH"),
        first_row_id=r.get("_FIRST_ROW_ID"), write_cols=tuple(write_cols) if write_cols is not None else None,
    )


def _partition_bucket(e: ManifestEntry) -> tuple[bytes, int]:
    return e.partition, e.bucket


def _entry_to(e: ManifestEntry) -> dict[str, Any]:
    return {"_VERSION": MANIFEST_VERSION, "_KIND": int(e.kind), "_PARTITION": e.partition, "_BUCKET": e.bucket,
            "_TOTAL_BUCKETS": e.total_buckets, "_FILE": _file_to(e.file)}


def _entry_from(r: dict[str, Any]) -> ManifestEntry:
    return ManifestEntry(kind=FileKind(r["_KIND"]), partition=r["_PARTITION"], bucket=r["_BUCKET"],
                         total_buckets=r["_TOTAL_BUCKETS"], file=_file_from(r["_FILE"]))


def _meta_to(m: ManifestFileMeta) -> dict[str, Any]:
    return {"_VERSION": MANIFEST_VERSION, "_FILE_NAME": m.file_name, "_FILE_SIZE": m.file_size,
            "_NUM_ADDED_FILES": m.num_added_files, "_NUM_DELETED_FILES": m.num_deleted_files,
            "_PARTITION_STATS": _stats_to(m.partition_stats), "_SCHEMA_ID": m.schema_id,
            "_MIN_BUCKET": m.min_bucket, "_MAX_BUCKET": m.max_bucket, "_MIN_LEVEL": m.min_level,
            "_MAX_LEVEL": m.max_level, "_MIN_ROW_ID": m.min_row_id, "_MAX_ROW_ID": m.max_row_id,
            "_TOTAL_BUCKETS": m.total_buckets, "_EXTRA_FILES": None}


def _meta_from(r: dict[str, Any]) -> ManifestFileMeta:
    return ManifestFileMeta(
        file_name=plain_file_name(r["_FILE_NAME"]), file_size=r["_FILE_SIZE"], num_added_files=r["_NUM_ADDED_FILES"],
        num_deleted_files=r["_NUM_DELETED_FILES"], partition_stats=_stats_from(r.get("_PARTITION_STATS")),
        schema_id=r["_SCHEMA_ID"], min_bucket=r.get("_MIN_BUCKET"), max_bucket=r.get("_MAX_BUCKET"),
        min_level=r.get("_MIN_LEVEL"), max_level=r.get("_MAX_LEVEL"), min_row_id=r.get("_MIN_ROW_ID"),
        max_row_id=r.get("_MAX_ROW_ID"), total_buckets=r.get("_TOTAL_BUCKETS"),
    )


def read_records(file_io, path: str, wanted: EntryFilter | None = None) -> list[dict[str, Any]]:
    """The records of an Avro metadata file; with ``wanted``, only the records of blocks that may
    hold wanted entries, where the file has a block index (other records may still be returned)."""
    data = file_io.read_bytes(path)
    try:
        blocks = parse_blocks(data) if wanted is not None else None
        # every metadata schema is a record, so every datum is a dict (fastavro types any datum)
        if blocks is not None and wanted is not None:
            return cast(list[dict[str, Any]], list(read_selected(data, blocks, wanted.accepts_block)))
        return cast(list[dict[str, Any]], list(fastavro.reader(io.BytesIO(data))))
    except Exception as exc:
        raise CorruptMetadataError(path, f"unreadable Avro ({type(exc).__name__}: {exc})") from None


def _decode(path: str, records: list[dict[str, Any]], convert: Callable[[dict[str, Any]], Any]) -> list[Any]:
    try:
        return [convert(r) for r in records]
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptMetadataError(path, f"unexpected record layout ({type(exc).__name__}: {exc})") from None


def write_avro(file_io, path: str, schema: Any, records: list[dict[str, Any]], compression: str) -> int:
    sink = io.BytesIO()
    fastavro.writer(sink, schema, records, codec=_CODECS.get(compression, "zstandard"))
    data = sink.getvalue()
    file_io.write_bytes(path, data)
    return len(data)


class ManifestFile:
    """Writes and reads ``manifest/manifest-<uuid>-<n>`` files."""

    def __init__(self, file_io, directory: str, *, compression: str = "zstd", target_file_size: int = 8 << 20,
                 partition_stats: Callable[[Sequence[bytes]], SimpleStats]) -> None:
        self.file_io, self.directory = file_io, directory
        self.compression, self.target_file_size = compression, target_file_size
        self.partition_stats = partition_stats

    def read(self, file_name: str, wanted: EntryFilter | None = None) -> list[ManifestEntry]:
        """The entries of one manifest, in file order; with ``wanted``, only the entries it accepts."""
        path = join(self.directory, file_name)
        records = read_records(self.file_io, path, wanted)
        if wanted is not None:
            try:
                records = [r for r in records if wanted.accepts(r["_PARTITION"], r["_BUCKET"])]
            except (KeyError, TypeError) as exc:
                raise CorruptMetadataError(path, f"unexpected record layout ({type(exc).__name__}: {exc})") from None
        return _decode(path, records, _entry_from)

    def write(self, entries: Sequence[ManifestEntry], *, schema_id: int) -> list[ManifestFileMeta]:
        """Write ``entries`` into one or more manifests of about ``target_file_size`` each, in
        (partition, bucket) order (a stable sort: entries of one file keep their order, which is
        all that replaying them needs), each with a block index."""
        entries = sorted(entries, key=_partition_bucket)
        prefix = f"manifest-{uuid.uuid4()}-"
        # Roll by an estimate of the encoded entry size (fixed overhead plus the variable bytes).
        metas: list[ManifestFileMeta] = []
        chunk: list[ManifestEntry] = []
        chunk_bytes = 0
        for e in entries:
            chunk.append(e)
            f = e.file
            chunk_bytes += 120 + len(f.file_name) + len(f.min_key) + len(f.max_key) + len(e.partition) + \
                len(f.key_stats.min_values) * 2 + len(f.value_stats.min_values) * 2
            if chunk_bytes >= self.target_file_size:
                metas.append(self._write_one(f"{prefix}{len(metas)}", chunk, schema_id))
                chunk, chunk_bytes = [], 0
        if chunk:
            metas.append(self._write_one(f"{prefix}{len(metas)}", chunk, schema_id))
        return metas

    def _encode(self, entries: list[ManifestEntry]) -> bytes:
        return write_indexed(MANIFEST_ENTRY_SCHEMA, [_entry_to(e) for e in entries],
                             [(e.partition, e.bucket) for e in entries], _CODECS.get(self.compression, "zstandard"))

    def _write_one(self, name: str, entries: list[ManifestEntry], schema_id: int) -> ManifestFileMeta:
        data = self._encode(entries)
        self.file_io.write_bytes(join(self.directory, name), data)
        return self._meta(name, len(data), entries, schema_id)

    def _meta(self, name: str, size: int, entries: Sequence[ManifestEntry], schema_id: int,
              copied: Sequence[tuple[ManifestFileMeta, BlockInfo]] = ()) -> ManifestFileMeta:
        """The metadata of a manifest holding ``entries`` and the ADD entries of the ``copied``
        blocks (each with the manifest it came from, whose levels and bucket count bound its own)."""
        buckets = [e.bucket for e in entries] + [b for _, i in copied for b in (i.min_bucket, i.max_bucket)]
        sources = {m.file_name: m for m, _ in copied}.values()
        levels = [e.file.level for e in entries] + [v for m in sources for v in (m.min_level, m.max_level)]
        totals = {e.total_buckets for e in entries} | {m.total_buckets or -1 for m in sources}
        total = totals.pop() if len(totals) == 1 else None
        return ManifestFileMeta(
            file_name=name, file_size=size,
            num_added_files=sum(1 for e in entries if e.kind is FileKind.ADD) + sum(i.count for _, i in copied),
            num_deleted_files=sum(1 for e in entries if e.kind is FileKind.DELETE),
            partition_stats=self.partition_stats([e.partition for e in entries]
                                                 + [p for _, i in copied for p in i.partitions]),
            schema_id=max([schema_id, *(e.file.schema_id for e in entries), *(m.schema_id for m in sources)]),
            min_bucket=min(buckets), max_bucket=max(buckets),
            min_level=min(v for v in levels if v is not None), max_level=max(v for v in levels if v is not None),
            total_buckets=total if total is not None and total > 0 else None,
        )

    def merge_run(self, run: Sequence[ManifestFileMeta], *, schema_id: int) -> list[ManifestFileMeta]:
        """Merge consecutive manifests into new ones: ADD/DELETE pairs of one file cancel.

        Blocks that no DELETE of the run can touch (another partition, or a bucket range without
        a deleted file) are copied into the new manifest as they are, without being decoded,
        when they are big enough and were written with this schema and codec by paimonflow; the
        rest is decoded, replayed and written as new blocks. So merging a large manifest with a
        few new small ones costs about the new entries, not the large one's."""
        names = [m.file_name for m in run]
        datas = [self.file_io.read_bytes(join(self.directory, n)) for n in names]
        reference = self._encode([])  # an empty manifest: the header this writer writes
        ours = parse_blocks(reference)
        assert ours is not None
        parsed: list[Blocks | None] = []
        for m, data in zip(run, datas, strict=True):
            try:
                blocks = parse_blocks(data) if m.num_deleted_files == 0 else None
            except (IndexError, ValueError):
                blocks = None  # decoded below, where a damaged file is reported
            same = blocks is not None and all(blocks.metadata.get(k) == ours.metadata.get(k)
                                               for k in ("avro.schema", "avro.codec"))
            parsed.append(blocks if same else None)
        whole = {i: self._decode_all(names[i], datas[i]) for i, b in enumerate(parsed) if b is None}
        touched = {(e.partition, e.bucket) for entries in whole.values() for e in entries if e.kind is FileKind.DELETE}
        copied: list[tuple[ManifestFileMeta, BlockInfo]] = []
        raw: list[RawBlock] = []
        loose: list[ManifestEntry] = []
        for i, blocks in enumerate(parsed):
            if blocks is None:
                loose.extend(whole[i])
                continue
            for j, info in enumerate(blocks.infos):
                if info.count >= MIN_BLOCK_RECORDS and not _block_touches(info, touched):
                    raw.append(RawBlock(info, blocks.body(datas[i], j)))
                    copied.append((run[i], info))
                else:
                    records = list(read_selected(datas[i], blocks, _this_block(info)))
                    loose.extend(_decode(join(self.directory, names[i]), records, _entry_from))
        live, orphan_deletes = merge_entries(loose)
        rest = orphan_deletes + live  # deletes first: they cancel earlier adds, never later ones
        if not raw:
            return self.write(rest, schema_id=schema_id) if rest else []
        rest = sorted(rest, key=_partition_bucket)
        encoded = self._encode(rest)
        blocks = parse_blocks(encoded)
        assert blocks is not None
        data = assemble(blocks.metadata, [*raw, *raw_blocks(encoded, blocks)])
        name = f"manifest-{uuid.uuid4()}-0"
        self.file_io.write_bytes(join(self.directory, name), data)
        return [self._meta(name, len(data), rest, schema_id, copied)]

    def _decode_all(self, file_name: str, data: bytes) -> list[ManifestEntry]:
        path = join(self.directory, file_name)
        try:
            records = cast(list[dict[str, Any]], list(fastavro.reader(io.BytesIO(data))))
        except Exception as exc:
            raise CorruptMetadataError(path, f"unreadable Avro ({type(exc).__name__}: {exc})") from None
        return _decode(path, records, _entry_from)


def _this_block(info: BlockInfo) -> Callable[[BlockInfo], bool]:
    return lambda candidate: candidate is info


def _block_touches(info: BlockInfo, touched: set[tuple[bytes, int]]) -> bool:
    """Whether a block may hold an entry of one of the ``touched`` (partition, bucket)s."""
    return any(p in info.partitions and info.min_bucket <= b <= info.max_bucket for p, b in touched)


class ManifestList:
    """Writes and reads ``manifest/manifest-list-<uuid>-<n>`` files."""

    def __init__(self, file_io, directory: str, *, compression: str = "zstd") -> None:
        self.file_io, self.directory, self.compression = file_io, directory, compression

    def read(self, file_name: str) -> list[ManifestFileMeta]:
        path = join(self.directory, file_name)
        try:
            records = read_records(self.file_io, path)
        except FileNotFoundStorageError:
            raise
        return _decode(path, records, _meta_from)

    def write(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        name = f"manifest-list-{uuid.uuid4()}-0"
        size = write_avro(self.file_io, join(self.directory, name), MANIFEST_FILE_META_SCHEMA,
                           [_meta_to(m) for m in metas], self.compression)
        return name, size


def merge_manifests(metas: list[ManifestFileMeta], manifest_file: ManifestFile, *, schema_id: int,
                    target_file_size: int, merge_min_count: int,
                    full_compaction_size: int) -> tuple[list[ManifestFileMeta], list[str]]:
    """Paimon's manifest merging. Returns ``(new base manifests, names of files written)``.

    *Full compaction* when the manifests holding deletes, plus small ones, add up to more than
    ``full_compaction_size``: every entry is read, ADD/DELETE pairs cancel, and the live entries
    are rewritten into target-sized files (large manifests without deletes are kept as they are).
    Otherwise *minor* merging: runs of consecutive small manifests (< ``target_file_size``) are
    merged once a run holds ``merge_min_count`` manifests or reaches the target size.
    """
    written: list[str] = []
    deleting = [m for m in metas if m.num_deleted_files > 0]
    small = [m for m in metas if m.file_size < target_file_size and m.num_deleted_files == 0]
    if deleting and sum(m.file_size for m in deleting) + sum(m.file_size for m in small) >= full_compaction_size:
        contents = {m.file_name: manifest_file.read(m.file_name) for m in metas}
        deleted = {e.identifier() for m in deleting for e in contents[m.file_name] if e.kind is FileKind.DELETE}
        # A large manifest is kept only if none of its files was deleted since; every other
        # manifest is replayed, in order, and its live entries rewritten.
        keep = {m.file_name for m in metas if m.file_size >= target_file_size and m.num_deleted_files == 0
                and not any(e.identifier() in deleted for e in contents[m.file_name])}
        replay = [e for m in metas if m.file_name not in keep for e in contents[m.file_name]]
        live, orphan_deletes = merge_entries(replay)
        rewritten = orphan_deletes + live  # deletes first: they cancel earlier adds, never later ones
        new = manifest_file.write(rewritten, schema_id=schema_id) if rewritten else []
        written.extend(m.file_name for m in new)
        return [m for m in metas if m.file_name in keep] + new, written

    result: list[ManifestFileMeta] = []
    run: list[ManifestFileMeta] = []
    run_size = 0

    def flush_run(force: bool) -> None:
        nonlocal run, run_size
        if len(run) >= merge_min_count or (force is False and run_size >= target_file_size and len(run) > 1):
            new = manifest_file.merge_run(run, schema_id=schema_id)
            written.extend(m.file_name for m in new)
            result.extend(new)
        else:
            result.extend(run)
        run, run_size = [], 0

    for m in metas:
        if m.file_size >= target_file_size:
            flush_run(force=True)
            result.append(m)
            continue
        run.append(m)
        run_size += m.file_size
        if run_size >= target_file_size:
            flush_run(force=False)
    flush_run(force=True)
    return result, written
