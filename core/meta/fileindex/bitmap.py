"""Paimon's bitmap file index (``bitmap``): one 32-bit Roaring bitmap of row positions per
distinct value.

Written in version 1 (the layout every Paimon release reads, Java 0.9 included; Paimon 2.x
defaults to version 2 and reads both): a version byte, row count (int32), distinct non-null
values (int32), whether nulls occur (bool) and then the null entry's offset (int32), then per
value its key and an offset (int32) into the bodies that follow; a value (or null) on a single
row stores ``-1 - row`` instead and has no body. Bodies are portable Roaring bitmaps. Keys:
strings as an int32 length and UTF-8 bytes, integers and dates by their width, floats and
doubles as IEEE bits, booleans as one byte, timestamps as epoch millis (precision <= 3) or
micros (int64). Version 2 (sorted keys in blocks) is read too.

Pruning needs only the keys: a value with no entry is on no row of the file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from ...data.types import DataType, TypeRoot
from .hashing import integer_keys

VERSION_1, VERSION_2 = 1, 2
_STRING_ROOTS = frozenset({TypeRoot.CHAR, TypeRoot.VARCHAR})
_WIDTH = {TypeRoot.TINYINT: "b", TypeRoot.SMALLINT: "h", TypeRoot.INT: "i", TypeRoot.DATE: "i",
          TypeRoot.TIME: "i", TypeRoot.BIGINT: "q", TypeRoot.TIMESTAMP: "q", TypeRoot.TIMESTAMP_LTZ: "q",
          TypeRoot.FLOAT: "i", TypeRoot.DOUBLE: "q", TypeRoot.BOOLEAN: "?"}
#: The column types Paimon's bitmap index keys (binary, decimal and nested types are refused by Java too).
BITMAP_ROOTS = frozenset(_WIDTH) | _STRING_ROOTS


def bitmap_keys(values: pa.Array, data_type: DataType) -> list:
    """The key of every non-null value, as this module compares them: bytes for strings, ints
    (IEEE bits for floating point), bools."""
    values = pc.drop_null(values) if values.null_count else values
    root = data_type.root
    if root in _STRING_ROOTS:
        return values.cast(pa.binary()).to_pylist()
    if root is TypeRoot.BOOLEAN:
        return values.to_pylist()
    if root is TypeRoot.FLOAT:
        floats = values.to_numpy(zero_copy_only=False).astype(np.float32)
        bits = floats.view(np.int32).copy()
        bits[np.isnan(floats)] = 0x7FC00000
        return bits.tolist()
    if root is TypeRoot.DOUBLE:
        doubles = values.to_numpy(zero_copy_only=False).astype(np.float64)
        bits64 = doubles.view(np.int64).copy()
        bits64[np.isnan(doubles)] = 0x7FF8000000000000
        return bits64.tolist()
    return integer_keys(values, data_type).tolist()


def _key_codes(column: pa.Array, data_type: DataType) -> tuple[list, np.ndarray]:
    """Distinct keys of the non-null values and, per non-null value, its key's index."""
    root = data_type.root
    values = pc.drop_null(column) if column.null_count else column
    if root in _STRING_ROOTS or root is TypeRoot.BOOLEAN:
        encoded = pc.dictionary_encode(values).combine_chunks() if isinstance(values, pa.ChunkedArray) \
            else pc.dictionary_encode(values)
        return bitmap_keys(encoded.dictionary, data_type), encoded.indices.to_numpy(zero_copy_only=False)
    keys = np.asarray(bitmap_keys(values, data_type), dtype=np.int64)
    distinct, codes = np.unique(keys, return_inverse=True)
    return distinct.tolist(), codes


def _write_key(root: TypeRoot, key) -> bytes:
    if root in _STRING_ROOTS:
        return struct.pack(">i", len(key)) + key
    return struct.pack(">" + _WIDTH[root], key)


def build_bitmap(column: pa.Array, data_type: DataType) -> bytes:
    """The version-1 bitmap index body of ``column`` (every row of one data file, in order)."""
    rows = len(column)
    valid = np.ones(rows, dtype=bool) if not column.null_count else \
        column.is_valid().to_numpy(zero_copy_only=False)
    null_rows = np.flatnonzero(~valid).astype(np.uint32)
    keys, codes = _key_codes(column, data_type)
    positions = np.flatnonzero(valid).astype(np.uint32)
    order = np.argsort(codes, kind="stable")
    groups = np.split(positions[order], np.cumsum(np.bincount(codes, minlength=len(keys)))[:-1]) if keys else []
    root = data_type.root
    head = [struct.pack(">Bii?", VERSION_1, rows, len(keys), bool(len(null_rows)))]
    bodies: list[bytes] = []
    offset = 0
    if len(null_rows) == 1:
        head.append(struct.pack(">i", -1 - int(null_rows[0])))
    elif len(null_rows) > 1:
        head.append(struct.pack(">i", 0))
        bodies.append(BitMap(null_rows).serialize())
        offset = len(bodies[0])
    for key, group in zip(keys, groups, strict=True):
        if len(group) == 1:
            head.append(_write_key(root, key) + struct.pack(">i", -1 - int(group[0])))
        else:
            body = BitMap(group).serialize()
            head.append(_write_key(root, key) + struct.pack(">i", offset))
            bodies.append(body)
            offset += len(body)
    return b"".join(head + bodies)


@dataclass(frozen=True, slots=True, kw_only=True)
class BitmapIndexKeys:
    """What a bitmap index says without reading its bitmaps: the values it has rows for."""

    keys: frozenset
    has_null: bool

    @classmethod
    def from_bytes(cls, body: bytes, data_type: DataType) -> BitmapIndexKeys | None:
        """The keys of a version-1 or version-2 body; None when it cannot be read."""
        root = data_type.root
        if root not in BITMAP_ROOTS:
            return None
        pos = 0

        def take(fmt: str):
            nonlocal pos
            out = struct.unpack_from(fmt, body, pos)
            pos += struct.calcsize(fmt)
            return out[0]

        def key():
            nonlocal pos
            if root in _STRING_ROOTS:
                length = take(">i")
                if length < 0 or pos + length > len(body):
                    raise ValueError("key outside the index")
                pos += length
                return bytes(body[pos - length:pos])
            return take(">" + _WIDTH[root])

        try:
            version = take(">B")
            if version not in (VERSION_1, VERSION_2):
                return None
            take(">i")  # row count
            distinct = take(">i")
            has_null = take(">?")
            keys = set()
            if version == VERSION_1:
                if has_null:
                    take(">i")
                for _ in range(distinct):
                    keys.add(key())
                    take(">i")
            else:
                if has_null:
                    take(">ii")
                blocks = take(">i")
                for _ in range(blocks):
                    key()
                    take(">i")
                take(">i")  # bytes of the blocks
                for _ in range(blocks):
                    for _ in range(take(">i")):
                        keys.add(key())
                        take(">ii")
            if len(keys) != distinct:
                return None
        except (struct.error, ValueError):
            return None
        return cls(keys=frozenset(keys), has_null=bool(has_null))
