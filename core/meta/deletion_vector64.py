"""Apache Paimon's 64-bit deletion vectors (``deletion-vectors.bitmap64 = true``).

Paimon's ``Bitmap64DeletionVector`` stores one data file's deleted row positions as:

* a big-endian int: the length of what follows up to the checksum (magic number + bitmap);
* the magic number ``1681511377`` as a *little-endian* int (the 32-bit vector's magic is
  big-endian, so a reader tells the two apart by the first four bytes after the length);
* the bitmap in the portable 64-bit Roaring form, little-endian: the number of 32-bit buckets
  (8 bytes), then per bucket, keys ascending, the key (the positions' high 32 bits, 4 bytes) and
  a portable 32-bit Roaring bitmap of the low 32 bits. Java writes every bucket from key 0 to the
  largest (empty ones included); CRoaring (pyroaring's ``BitMap64``) writes only non-empty ones,
  and both read either;
* a big-endian CRC32 of magic number and bitmap.

Unlike the 32-bit vector, whose recorded length is that of magic number and bitmap, the length an
index file's ``DeletionVectorMeta`` records for a 64-bit vector covers all of it (length field
and checksum included). paimonflow keeps deleted positions as 32-bit bitmaps in memory (a data
file it reads has fewer than 2^32 rows), so every vector it writes has the single bucket 0.
"""

from __future__ import annotations

import struct
import zlib

from pyroaring import BitMap, BitMap64

from ..errors import CorruptMetadataError

DV64_MAGIC = 1681511377
_MAGIC_BYTES = struct.pack("<i", DV64_MAGIC)
_POSITION_LIMIT = 1 << 32


def is_dv64_magic(magic_bytes: bytes) -> bool:
    """Whether the four bytes after a vector's length field are the 64-bit vector's magic number."""
    return bytes(magic_bytes) == _MAGIC_BYTES


def serialize_dv64(bitmap: BitMap) -> bytes:
    """One 64-bit deletion vector as stored: length, magic + portable 64-bit bitmap, CRC32.
    Run-optimized, as Paimon writes it; an empty bitmap has no bucket."""
    bitmap = BitMap(bitmap)
    bitmap.run_optimize()
    buckets = struct.pack("<qi", 1, 0) + bitmap.serialize() if bitmap else struct.pack("<q", 0)
    data = _MAGIC_BYTES + buckets
    return struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)


def parse_dv64(vector: bytes, *, path: str, data_file: str) -> BitMap:
    """The deleted positions of one stored 64-bit vector (``vector``: from its length field to its
    checksum, both included). Raises :class:`CorruptMetadataError` for a wrong length, magic
    number or checksum, a malformed bitmap, or positions beyond 2^32 - 1 (no data file paimonflow
    could read has that many rows)."""
    where = f"deletion vector of {data_file}"
    if len(vector) < 12:
        raise CorruptMetadataError(path, f"{where}: {len(vector)} bytes, too short for a 64-bit vector")
    (length,) = struct.unpack_from(">i", vector, 0)
    if length != len(vector) - 8:
        raise CorruptMetadataError(path, f"{where}: length {length}, expected {len(vector) - 8}")
    data = vector[4:4 + length]
    if not is_dv64_magic(data[:4]):
        raise CorruptMetadataError(path, f"{where}: bad magic number {int.from_bytes(data[:4], 'little')}")
    (crc,) = struct.unpack_from(">I", vector, 4 + length)
    if zlib.crc32(data) & 0xFFFFFFFF != crc:
        raise CorruptMetadataError(path, f"{where}: checksum mismatch")
    try:
        positions = BitMap64.deserialize(data[4:])
    except (ValueError, IndexError) as exc:  # pyroaring's errors for malformed input
        raise CorruptMetadataError(path, f"{where}: not a portable 64-bit Roaring bitmap ({exc})") from None
    if not positions:
        return BitMap()
    if positions.max() >= _POSITION_LIMIT:
        raise CorruptMetadataError(path, f"{where}: row position {positions.max()} beyond 2^32 - 1")
    # re-serialized by CRoaring, the positions are one bucket (key 0): its 32-bit bitmap follows
    # the bucket count (8 bytes) and the key (4 bytes)
    return BitMap.deserialize(positions.serialize()[12:])
