"""Paimon's fixed bucket as a Spark SQL expression, so the write job's rows need not travel
through Python to learn their bucket (the core's vectorized hash, ``core/data/bucket.py``, is the
reference and the fallback).

Paimon's bucket is ``abs(murmur3_32(bytes, seed 42) % buckets)`` over the bucket key's BinaryRow:
a header (row kind ``+I`` and the null bits, all zero for a non-null key; its size is the
core's ``binary_row.header_size``) and one 8-byte little-endian slot per field. Spark's ``hash`` of a BINARY value is the
same MurmurHash3 (seed 42, finalized with the length) over whole 4-byte words, and BinaryRow
lengths are multiples of 8, so ``abs(hash(<the BinaryRow bytes>) % buckets)`` in Spark is Paimon's
bucket. The bytes are built from integer arithmetic (a byte swap) and ``unhex``.

Only non-null integer keys (TINYINT, SMALLINT, INT, BIGINT) whose source column already has the
table's type are expressed: a key that may be null or needs a cast, and the other types (strings
are stored inline or out of line depending on their length), keep the Python path.
"""

from __future__ import annotations

import pyarrow as pa

from paimonflow.core.data.binary_row import header_size

# table type -> the mask keeping the bytes Paimon writes for it (a narrower int fills the low bytes)
_SLOTS: dict[pa.DataType, int | None] = {pa.int64(): None, pa.int32(): 0xFFFFFFFF, pa.int16(): 0xFFFF,
                                         pa.int8(): 0xFF}
_SPARK_TYPES = {pa.int64(): "bigint", pa.int32(): "int", pa.int16(): "smallint", pa.int8(): "tinyint"}


def bucket_expression(key_fields: list[pa.Field], source_types: dict[str, str], buckets: int) -> str | None:
    """The Spark SQL expression of Paimon's bucket for ``key_fields`` (the table's bucket-key
    fields) over a source whose columns have ``source_types`` (``DataFrame.dtypes``), or None
    when the key cannot be expressed (then compute it in Python)."""
    if not key_fields or buckets <= 0:
        return None
    slots = []
    for field in key_fields:
        if field.nullable or field.type not in _SLOTS or source_types.get(field.name) != _SPARK_TYPES[field.type]:
            return None
        mask = _SLOTS[field.type]
        value = f"`{field.name}`" if mask is None else f"(cast(`{field.name}` as bigint) & {mask})"
        slots.append(_little_endian(value))
    header = "X'" + "00" * header_size(len(key_fields)) + "'"
    return f"abs(hash(concat({header}, {', '.join(slots)})) % {buckets})"


def _little_endian(value: str) -> str:
    """The 8 little-endian bytes of a BIGINT expression: its bytes swapped, as 16 hex digits."""
    swapped = " | ".join(f"shiftleft(shiftright({value}, {8 * i}) & 255, {56 - 8 * i})" for i in range(8))
    return f"unhex(lpad(hex({swapped}), 16, '0'))"
