"""Index files of a table: deletion vectors and the dynamic-bucket hash index, and the index
manifest that lists them (Apache Paimon's layout).

* ``index/index-<uuid>-<n>`` of type ``DELETION_VECTORS``: a version byte (1), then one
  deletion vector per data file: a big-endian int length, the magic number ``1581511376``, the
  32-bit Roaring bitmap of deleted row positions in the portable format, and a CRC32 of magic
  and bitmap. The :class:`IndexFileMeta` records each vector's (offset, length, cardinality).
  With ``deletion-vectors.bitmap64`` the vectors are 64-bit ones (:mod:`.deletion_vector64`);
  a reader tells them apart by the magic number.
* ``index/index-<uuid>-<n>`` of type ``HASH``: big-endian int32 key hashes of one bucket.
* ``manifest/index-manifest-<uuid>-0``: Avro entries (ADD/DELETE, partition, bucket, file meta);
  a snapshot's ``indexManifest`` lists every live index file of the table.
"""

from __future__ import annotations

import io
import struct
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import fastavro
import numpy as np
from pyroaring import BitMap

from ..errors import CorruptMetadataError
from ..fs import FileIO, join
from .deletion_vector64 import is_dv64_magic, parse_dv64, serialize_dv64
from .manifest import FileKind, plain_file_name, read_records, write_avro

DELETION_VECTORS = "DELETION_VECTORS"
HASH = "HASH"
#: the index types paimonflow maintains (global indexes, btree, bitmap..., are refused by the gate)
KNOWN_INDEX_TYPES = frozenset({DELETION_VECTORS, HASH})
DV_VERSION = 1
DV_MAGIC = 1581511376

_DV_META_SCHEMA = {"type": "record", "name": "DeletionVectorMeta", "fields": [
    {"name": "f0", "type": "string"},
    {"name": "f1", "type": "int"},
    {"name": "f2", "type": "int"},
    {"name": "_CARDINALITY", "type": ["null", "long"], "default": None},
]}
_GLOBAL_INDEX_SCHEMA = {"type": "record", "name": "GlobalIndexMeta", "fields": [
    {"name": "_ROW_RANGE_START", "type": "long"},
    {"name": "_ROW_RANGE_END", "type": "long"},
    {"name": "_INDEX_FIELD_ID", "type": "int"},
    {"name": "_EXTRA_FIELD_IDS", "type": ["null", {"type": "array", "items": "int"}], "default": None},
    {"name": "_INDEX_META", "type": ["null", "bytes"], "default": None},
    {"name": "_SOURCE_META", "type": ["null", "bytes"], "default": None},
]}
INDEX_MANIFEST_ENTRY_SCHEMA = fastavro.parse_schema({"type": "record", "name": "IndexManifestEntry", "fields": [
    {"name": "_VERSION", "type": "int"},
    {"name": "_KIND", "type": "int"},
    {"name": "_PARTITION", "type": "bytes"},
    {"name": "_BUCKET", "type": "int"},
    {"name": "_INDEX_TYPE", "type": "string"},
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"},
    {"name": "_DELETIONS_VECTORS_RANGES", "type": ["null", {"type": "array", "items": _DV_META_SCHEMA}],
     "default": None},
    {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": None},
    {"name": "_GLOBAL_INDEX", "type": ["null", _GLOBAL_INDEX_SCHEMA], "default": None},
]})


@dataclass(frozen=True, slots=True)
class DeletionVectorMeta:
    """Where one data file's deletion vector sits in a DV index file."""

    data_file: str
    offset: int
    length: int
    cardinality: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexFileMeta:
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None
    external_path: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexManifestEntry:
    kind: FileKind
    partition: bytes
    bucket: int
    file: IndexFileMeta

    @property
    def identifier(self) -> tuple:
        return (self.partition, self.bucket, self.file.index_type, self.file.file_name)


# -- deletion vectors ------------------------------------------------------------------------


def serialize_dv(bitmap: BitMap) -> bytes:
    """One deletion vector as stored: length, magic + portable bitmap, CRC32."""
    bitmap = BitMap(bitmap)
    bitmap.run_optimize()
    data = struct.pack(">i", DV_MAGIC) + bitmap.serialize()
    return struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)


def write_dv_file(file_io: FileIO, index_dir: str, vectors: Mapping[str, BitMap], *,
                  bitmap64: bool = False) -> IndexFileMeta:
    """Write the deletion vectors of several data files as one index file: 32-bit vectors, or
    64-bit ones with ``bitmap64`` (``deletion-vectors.bitmap64``; see :mod:`.deletion_vector64`,
    whose recorded length covers length field and checksum too)."""
    out = io.BytesIO()
    out.write(bytes([DV_VERSION]))
    ranges = []
    for data_file, bitmap in sorted(vectors.items()):
        offset = out.tell()
        blob = serialize_dv64(bitmap) if bitmap64 else serialize_dv(bitmap)
        out.write(blob)
        ranges.append(DeletionVectorMeta(data_file, offset, len(blob) if bitmap64 else len(blob) - 8, len(bitmap)))
    name = f"index-{uuid.uuid4()}-0"
    payload = out.getvalue()
    file_io.write_bytes(join(index_dir, name), payload)
    return IndexFileMeta(index_type=DELETION_VECTORS, file_name=name, file_size=len(payload),
                         row_count=len(ranges), dv_ranges=tuple(ranges))


def read_dv_file(file_io: FileIO, index_dir: str, meta: IndexFileMeta) -> dict[str, BitMap]:
    """Every deletion vector of a DV index file, by data file name."""
    path = meta.external_path or join(index_dir, meta.file_name)
    payload = file_io.read_bytes(path)
    if not payload or payload[0] != DV_VERSION:
        raise CorruptMetadataError(path, f"deletion vector file version {payload[:1]!r}, expected {DV_VERSION}")
    out = {}
    for r in meta.dv_ranges or ():
        out[r.data_file] = _parse_dv(payload, r, path)
    return out


def _parse_dv(payload: bytes, r: DeletionVectorMeta, path: str) -> BitMap:
    if r.offset < 1 or r.length < 0 or r.offset + 8 > len(payload):
        raise CorruptMetadataError(path, f"deletion vector of {r.data_file} lies outside the file")
    if is_dv64_magic(payload[r.offset + 4:r.offset + 8]):  # a 64-bit vector: the range covers all of it
        if r.offset + r.length > len(payload):
            raise CorruptMetadataError(path, f"deletion vector of {r.data_file} lies outside the file")
        return parse_dv64(payload[r.offset:r.offset + r.length], path=path, data_file=r.data_file)
    if r.offset + 8 + r.length > len(payload):
        raise CorruptMetadataError(path, f"deletion vector of {r.data_file} lies outside the file")
    (length,) = struct.unpack_from(">i", payload, r.offset)
    (magic,) = struct.unpack_from(">i", payload, r.offset + 4)
    if length != r.length:
        raise CorruptMetadataError(path, f"deletion vector of {r.data_file}: length {length}, expected {r.length}")
    if magic != DV_MAGIC:
        raise CorruptMetadataError(path, f"deletion vector of {r.data_file}: bad magic number {magic}")
    data = payload[r.offset + 4:r.offset + 4 + length]
    (crc,) = struct.unpack_from(">I", payload, r.offset + 4 + length)
    if zlib.crc32(data) & 0xFFFFFFFF != crc:
        raise CorruptMetadataError(path, f"deletion vector of {r.data_file}: checksum mismatch")
    try:
        return BitMap.deserialize(data[4:])
    except Exception as exc:  # pyroaring raises ValueError for malformed input
        raise CorruptMetadataError(path, f"deletion vector of {r.data_file}: {exc}") from None


def deleted_mask(bitmap: BitMap | None, rows: int) -> np.ndarray | None:
    """A boolean keep-mask for a file of ``rows`` rows (None when nothing is deleted)."""
    if bitmap is None or not bitmap:
        return None
    keep = np.ones(rows, dtype=bool)
    deleted = np.frombuffer(bitmap.to_array(), dtype=np.uint32).astype(np.int64)
    keep[deleted[deleted < rows]] = False
    return keep


# -- the hash index of dynamic buckets -------------------------------------------------------


def write_hash_file(file_io: FileIO, index_dir: str, hashes: np.ndarray) -> IndexFileMeta:
    name = f"index-{uuid.uuid4()}-0"
    payload = np.asarray(hashes, dtype=">i4").tobytes()
    file_io.write_bytes(join(index_dir, name), payload)
    return IndexFileMeta(index_type=HASH, file_name=name, file_size=len(payload), row_count=len(hashes))


def read_hash_file(file_io: FileIO, index_dir: str, meta: IndexFileMeta) -> np.ndarray:
    path = meta.external_path or join(index_dir, meta.file_name)
    payload = file_io.read_bytes(path)
    if len(payload) % 4:
        raise CorruptMetadataError(path, f"hash index of {len(payload)} bytes is not a sequence of int32")
    return np.frombuffer(payload, dtype=">i4").astype(np.int32)


# -- the index manifest ----------------------------------------------------------------------


def _entry_to(e: IndexManifestEntry) -> dict:
    f = e.file
    ranges = None if f.dv_ranges is None else [
        {"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality} for r in f.dv_ranges]
    return {"_VERSION": 1, "_KIND": int(e.kind), "_PARTITION": e.partition, "_BUCKET": e.bucket,
            "_INDEX_TYPE": f.index_type, "_FILE_NAME": f.file_name, "_FILE_SIZE": f.file_size,
            "_ROW_COUNT": f.row_count, "_DELETIONS_VECTORS_RANGES": ranges, "_EXTERNAL_PATH": f.external_path,
            "_GLOBAL_INDEX": None}


def _entry_from(r: dict) -> IndexManifestEntry:
    ranges = r.get("_DELETIONS_VECTORS_RANGES")
    dv = None if ranges is None else tuple(
        DeletionVectorMeta(x["f0"], x["f1"], x["f2"], x.get("_CARDINALITY")) for x in ranges)
    return IndexManifestEntry(
        kind=FileKind(r["_KIND"]), partition=r["_PARTITION"], bucket=r["_BUCKET"],
        file=IndexFileMeta(index_type=r["_INDEX_TYPE"], file_name=plain_file_name(r["_FILE_NAME"]),
                           file_size=r["_FILE_SIZE"], row_count=r["_ROW_COUNT"], dv_ranges=dv,
                           external_path=_external_path(r.get("_EXTERNAL_PATH"))))


def _external_path(value: object) -> str | None:
    """An index file's external path: a path or URI (Paimon's external paths), never with a NUL."""
    if value is not None and (not isinstance(value, str) or not value or "\x00" in value):
        raise ValueError(f"external path {value!r} is not a path")
    return value


class IndexManifest:
    """Reads and writes ``manifest/index-manifest-<uuid>-0`` files."""

    def __init__(self, file_io: FileIO, manifest_dir: str, *, compression: str = "zstd") -> None:
        self.file_io, self.directory, self.compression = file_io, manifest_dir, compression

    def read(self, name: str | None) -> list[IndexManifestEntry]:
        if not name:
            return []
        path = join(self.directory, name)
        records = read_records(self.file_io, path)
        try:
            return [_entry_from(r) for r in records]
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptMetadataError(path, f"unexpected index manifest layout ({type(exc).__name__}: {exc})") from None

    def write(self, entries: Sequence[IndexManifestEntry]) -> str:
        name = f"index-manifest-{uuid.uuid4()}-0"
        write_avro(self.file_io, join(self.directory, name), INDEX_MANIFEST_ENTRY_SCHEMA,
                    [_entry_to(e) for e in entries], self.compression)
        return name


def apply_index_changes(live: Iterable[IndexManifestEntry], adds: Iterable[IndexManifestEntry],
                        deletes: Iterable[IndexManifestEntry]) -> tuple[list[IndexManifestEntry], list[IndexManifestEntry]]:
    """The live index files after ``deletes`` and ``adds``; also the deletes that matched nothing
    (a conflict: another commit removed that index file)."""
    current = {e.identifier: e for e in live}
    missing = []
    for d in deletes:
        if current.pop(d.identifier, None) is None:
            missing.append(d)
    for a in adds:
        current[a.identifier] = IndexManifestEntry(kind=FileKind.ADD, partition=a.partition, bucket=a.bucket,
                                                   file=a.file)
    return list(current.values()), missing
