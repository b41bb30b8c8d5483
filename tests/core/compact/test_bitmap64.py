"""64-bit deletion vectors (``deletion-vectors.bitmap64``): Paimon's ``Bitmap64DeletionVector``
byte for byte, read beside 32-bit vectors, and written by writes and compactions of a table that
sets the option (no longer refused by the capability gate)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pytest
from pyroaring import BitMap, BitMap64

from paimonflow.core import Catalog
from paimonflow.core.errors import CorruptMetadataError
from paimonflow.core.fs import LocalFileIO
from paimonflow.core.meta.capabilities import REFUSED, Feature, Operation, TableCapabilities
from paimonflow.core.meta.deletion_vector64 import DV64_MAGIC, parse_dv64, serialize_dv64
from paimonflow.core.meta.index_files import (
    DELETION_VECTORS,
    DeletionVectorMeta,
    IndexFileMeta,
    read_dv_file,
    write_dv_file,
)
from paimonflow.core.meta.schema_changes import SchemaChange

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
DV32_MAGIC = 1581511376


def portable32(positions) -> bytes:
    """A 32-bit bitmap in the portable Roaring format, run-optimized as Java writes it."""
    b = BitMap(positions)
    b.run_optimize()
    return b.serialize()


def java_vector(buckets: list[tuple[int, bytes]]) -> bytes:
    """A stored 64-bit vector built from the format's description (Paimon's
    ``Bitmap64DeletionVector.serializeTo``): big-endian length, little-endian magic, little-endian
    bucket count and per bucket a little-endian key and a portable 32-bit bitmap, big-endian CRC32."""
    data = struct.pack("<i", DV64_MAGIC) + struct.pack("<q", len(buckets))
    data += b"".join(struct.pack("<i", key) + bitmap for key, bitmap in buckets)
    return struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))


def test_a_vector_is_paimons_bitmap64_form_byte_for_byte():
    positions = [0, 5, 70_000, *range(100, 300)]
    blob = serialize_dv64(BitMap(positions))
    assert blob == java_vector([(0, portable32(positions))])
    assert blob[4:8] == (1681511377).to_bytes(4, "little")
    # the bitmap part is the portable 64-bit Roaring form, as CRoaring writes it too
    reference = BitMap64(positions)
    reference.run_optimize()
    assert blob[8:-4] == reference.serialize()
    assert serialize_dv64(BitMap()) == java_vector([])
    assert parse_dv64(blob, path="p", data_file="f") == BitMap(positions)


def test_java_dense_buckets_are_read():
    """Java writes every bucket up to the largest key; empty buckets carry no position."""
    vector = java_vector([(0, portable32([3, 9]))])
    assert parse_dv64(vector, path="p", data_file="f") == BitMap([3, 9])
    assert parse_dv64(java_vector([]), path="p", data_file="f") == BitMap()
    beyond = java_vector([(0, portable32([1])), (1, portable32([2]))])  # position 2^32 + 2
    with pytest.raises(CorruptMetadataError, match="beyond"):
        parse_dv64(beyond, path="p", data_file="f")


@pytest.mark.parametrize(("damage", "message"), [
    (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "checksum"),
    (lambda b: struct.pack(">i", 3) + b[4:], "length"),
    (lambda b: b[:4] + struct.pack("<i", 7) + b[8:], "magic"),
    (lambda b: b[:8], "too short"),
    (lambda b: java_vector([(1, portable32([1])), (0, portable32([2]))]), "64-bit Roaring"),  # keys unsorted
    (lambda b: java_vector([(0, b"\x3a\x30\x00")]), "64-bit Roaring"),  # truncated bitmap
])
def test_a_damaged_vector_is_a_typed_error(damage, message):
    blob = serialize_dv64(BitMap([1, 2, 3]))
    with pytest.raises(CorruptMetadataError, match=message):
        parse_dv64(damage(blob), path="p", data_file="f")


def test_index_file_records_the_whole_vector_and_reads_beside_32_bit_vectors(tmp_path):
    io = LocalFileIO()
    vectors = {"data-a.parquet": BitMap([0, 5, 70_000]), "data-b.parquet": BitMap(range(100, 200))}
    meta = write_dv_file(io, str(tmp_path), vectors, bitmap64=True)
    raw = (tmp_path / meta.file_name).read_bytes()
    assert raw[0] == 1 and meta.file_size == len(raw)
    for r in meta.dv_ranges:
        assert raw[r.offset + 4:r.offset + 8] == DV64_MAGIC.to_bytes(4, "little")
        # Paimon's DeletionFileWriter records what serializeTo returns: length field and CRC included
        assert r.length == struct.unpack_from(">i", raw, r.offset)[0] + 8
        assert r.cardinality == len(vectors[r.data_file])
    assert meta.dv_ranges[-1].offset + meta.dv_ranges[-1].length == len(raw)
    assert read_dv_file(io, str(tmp_path), meta) == vectors
    # a file with both kinds (Java keeps a vector's own kind when it rewrites an index file)
    old = write_dv_file(io, str(tmp_path), {"data-c.parquet": BitMap([7])})
    old_raw = (tmp_path / old.file_name).read_bytes()
    assert old_raw[5:9] == DV32_MAGIC.to_bytes(4, "big")
    mixed = raw + old_raw[1:]
    (tmp_path / "mixed").write_bytes(mixed)
    moved = DeletionVectorMeta("data-c.parquet", len(raw), old.dv_ranges[0].length, 1)
    both = IndexFileMeta(index_type=DELETION_VECTORS, file_name="mixed", file_size=len(mixed), row_count=3,
                         dv_ranges=(*meta.dv_ranges, moved))
    assert read_dv_file(io, str(tmp_path), both) == {**vectors, "data-c.parquet": BitMap([7])}
    outside = IndexFileMeta(index_type=DELETION_VECTORS, file_name=meta.file_name, file_size=len(raw), row_count=1,
                            dv_ranges=(DeletionVectorMeta("x", meta.dv_ranges[0].offset, len(raw), 3),))
    with pytest.raises(CorruptMetadataError, match="outside"):
        read_dv_file(io, str(tmp_path), outside)


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def rows(*items) -> pa.Table:
    return pa.table({"id": [i[0] for i in items], "v": [i[1] for i in items]}, schema=SCHEMA)


def state(table) -> dict:
    return {r["id"]: r["v"] for r in table.read().to_pylist()}


def vector_magics(table) -> set[bytes]:
    out = set()
    for entry in table.index_entries(table.latest_snapshot()):
        raw = Path(table.index_dir, entry.file.file_name).read_bytes()
        out |= {raw[r.offset + 4:r.offset + 8] for r in entry.file.dv_ranges or ()}
    return out


def test_the_option_is_no_longer_refused():
    options = {"deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true"}
    caps = TableCapabilities.of("db.t", options)
    assert set(caps.features) == {Feature.BITMAP64} and not REFUSED[Feature.BITMAP64]
    for operation in Operation:
        caps.require(operation)


def test_writes_and_compactions_of_a_bitmap64_table_write_64_bit_vectors(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true"})
    t.write(rows((1, "a"), (2, "b"), (3, "c")))
    t.write(rows((2, "B"), (4, "d")))
    t.write(rows((3, None)), row_kinds="-D")
    assert state(t) == {1: "a", 2: "B", 4: "d"}
    assert vector_magics(t) == {DV64_MAGIC.to_bytes(4, "little")}
    t.compact(full=False)
    assert state(t) == {1: "a", 2: "B", 4: "d"}
    t.compact(full=True)
    assert state(t) == {1: "a", 2: "B", 4: "d"}
    assert vector_magics(t) <= {DV64_MAGIC.to_bytes(4, "little")}


def test_a_dedicated_compaction_writes_64_bit_vectors(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true",
        "write-only": "true"})
    t.write(rows((1, "a"), (2, "b"), (3, "c")))
    t.compact(full=True)
    t.write(rows((2, "B")))
    assert vector_magics(t) == set()
    t.compact(full=False)  # level 0 goes below the full file, whose row of key 2 is marked deleted
    assert vector_magics(t) == {DV64_MAGIC.to_bytes(4, "little")}
    assert state(t) == {1: "a", 2: "B", 3: "c"}


def test_turning_the_option_on_keeps_old_32_bit_vectors_readable(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(rows((1, "a"), (2, "b"), (3, "c")))
    t.write(rows((2, "B")))
    assert vector_magics(t) == {DV32_MAGIC.to_bytes(4, "big")}
    t = t.alter([SchemaChange.set_option("deletion-vectors.bitmap64", "true")])
    assert state(t) == {1: "a", 2: "B", 3: "c"}
    seen = set()
    for step, key in enumerate((3, 1, 2, 3)):  # each update marks an old row deleted, unless compaction merged
        t.write(rows((key, f"s{step}")))
        seen |= vector_magics(t)
    assert state(t) == {1: "s1", 2: "s2", 3: "s3"}
    assert seen == {DV64_MAGIC.to_bytes(4, "little")}
