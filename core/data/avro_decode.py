"""Vectorized Avro decoding of flat records, value for value what the fastavro row path reads.

The counterpart of :mod:`.avro_encode`. :func:`decode_blocks` turns the decompressed blocks of an
Avro container file into Arrow arrays with numpy and no per-value Python:

1. records are found first. Each block's first record starts at the block's start, each next one
   where the previous ends; a record's end is computed for many positions at once, one field
   after the other (varints end at the next byte below ``0x80``, strings and bytes after the
   length their varint holds, union fields after their branch byte and, for the value branch,
   the value). Blocks are decoded in chunks; in a chunk of many short blocks, the records of all
   blocks are followed in step (one numpy step per record of the longest block); in a chunk of
   few long blocks, the end of a record starting at *every* byte position is computed first (a
   window of positions at a time), then each block's chain is followed record by record;
2. every block's chain must land exactly on the block's end after its record count;
3. each field is decoded at its now known positions (varints, zigzag, little-endian floats,
   strings as Arrow offsets over gathered bytes, decimals as sign-extended two's complement).

Handled: a record (or Paimon's ``["null", record]``) whose fields are, each optionally in a union
with ``"null"``, ``int``, ``long``, ``float``, ``double``, ``boolean``, ``string``, ``bytes``,
``bytes``/``decimal``, ``int``/``date``, ``int``/``time-millis``, ``long``/``time-micros`` and
``long``/``[local-]timestamp-{millis,micros}``. :func:`flat_read_plan` returns None for anything
else. Whatever the row path would reject or read differently (a null row, a bad union branch,
a varint longer than its type, an ``int`` out of range, invalid UTF-8, a decimal beyond its
precision, a date or time Python cannot represent, a record running past its block, bytes left
over in a block) makes :func:`decode_blocks` return None, so that the caller reads the file
through the row path and raises exactly its errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

# Decompressed block bytes decoded at a time: at most CHUNK_BYTES of blocks followed in step,
# about TABLE_CHUNK_BYTES of blocks followed through a table (see _record_starts).
CHUNK_BYTES = 16 << 20
TABLE_CHUNK_BYTES = 2 << 20
# Blocks are followed in step if a chunk has this many bytes per record of its longest block:
# numpy calls per record against numpy work per byte.
_IN_STEP_BYTES_PER_RECORD = 1000
# Records of a table are followed all blocks in step unless the longest block has this many
# times more records than there are blocks (then record by record in Python).
_FOLLOW_IN_STEP_RATIO = 16
# Longest chunk followed through a table (four bytes per byte, filled a window of positions
# at a time): longer blocks with that many records are left to the row path.
_TABLE_MAX_BYTES = 256 << 20
_TABLE_WINDOW = 1 << 16
# Zero bytes after a chunk: reads at the "past the end" position stay inside the buffer.
_PAD = 32

_KINDS = ("int", "long", "float", "double", "boolean", "string", "bytes")
# Logical types the row path converts, with the base type and the range it can represent.
_LOGICAL: dict[str, tuple[str, int, int]] = {
    "date": ("int", -719_162, 2_932_896),  # date.fromordinal: years 1 to 9999
    "time-millis": ("int", 0, 86_399_999),  # datetime.time
    "time-micros": ("long", 0, 86_399_999_999),
    "timestamp-millis": ("long", -62_135_596_800_000, 253_402_300_799_999),  # datetime: years 1-9999
    "timestamp-micros": ("long", -62_135_596_800_000_000, 253_402_300_799_999_999),
    "local-timestamp-millis": ("long", -62_135_596_800_000, 253_402_300_799_999),
    "local-timestamp-micros": ("long", -62_135_596_800_000_000, 253_402_300_799_999_999),
}
_INT32 = (-(1 << 31), (1 << 31) - 1)
_U64 = np.uint64


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadField:
    """How one record field is decoded.

    ``kind`` is one of ``int``, ``long``, ``float``, ``double``, ``boolean``, ``string``,
    ``bytes``, ``decimal``; ``null_byte`` / ``value_byte`` are the encoded union branches when
    the field is a union with ``"null"``, None for a bare type; ``low`` / ``high`` bound the
    integers the row path accepts (inclusive), if bounded.
    """

    name: str
    kind: str
    null_byte: int | None = None
    value_byte: int | None = None
    low: int | None = None
    high: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadPlan:
    """The fields of a flat record and, if the file schema is a union around it, the encoded
    branch byte every record starts with."""

    fields: tuple[ReadField, ...]
    record_byte: int | None


def _read_kind(avro: Any) -> tuple[str, int | None, int | None] | None:
    """``(kind, low, high)`` of a non-null Avro field type, or None if not handled."""
    if isinstance(avro, str):
        if avro not in _KINDS:
            return None
        return (avro, *_INT32) if avro == "int" else (avro, None, None)
    if not isinstance(avro, dict):
        return None
    kind, logical = avro.get("type"), avro.get("logicalType")
    if not isinstance(kind, str) or kind not in _KINDS:
        return None
    if logical is None:
        return _read_kind(kind)
    if logical == "decimal" and kind == "bytes":
        if not isinstance(avro.get("precision"), int) or not isinstance(avro.get("scale", 0), int):
            return None
        return "decimal", None, None
    if logical in _LOGICAL and _LOGICAL[logical][0] == kind:
        _, low, high = _LOGICAL[logical]
        return kind, low, high
    return None  # logical types the row path converts in ways not mirrored here


def flat_read_plan(schema: Any) -> ReadPlan | None:
    """The plan to decode records of the Avro writer ``schema`` (a record or a union of
    ``"null"`` and a record, as fastavro reports it), or None if this module cannot."""
    record_byte = None
    if isinstance(schema, list):
        records = [i for i, branch in enumerate(schema) if branch != "null"]
        if len(records) != 1 or len(schema) > 2:
            return None
        record_byte, schema = 2 * records[0], schema[records[0]]
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    fields = schema.get("fields")
    if not isinstance(fields, list) or not fields:
        return None
    plans = []
    for field in fields:
        avro, null_byte, value_byte = field.get("type"), None, None
        if isinstance(avro, list):
            if len(avro) != 2 or avro.count("null") != 1:
                return None
            null_index = avro.index("null")
            null_byte, value_byte = 2 * null_index, 2 * (1 - null_index)
            avro = avro[1 - null_index]
        kind = _read_kind(avro)
        if kind is None:
            return None
        plans.append(ReadField(name=field["name"], kind=kind[0], null_byte=null_byte, value_byte=value_byte,
                               low=kind[1], high=kind[2]))
    return ReadPlan(fields=tuple(plans), record_byte=record_byte)


class _Inconsistent(Exception):
    """The bytes are not what the row path reads the same way; decode them through it."""


# -- one chunk: positions ---------------------------------------------------------------------------


class _Chunk:
    """The concatenated bytes of some blocks, read at arrays of positions."""

    def __init__(self, data: bytes) -> None:
        self.size = len(data)
        self.bad = self.size + 1  # "no record ends here": beyond every block end, absorbing
        self.buf = np.frombuffer(data + bytes(_PAD), np.uint8)

    def varints(self, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The raw (not zigzag-decoded) varints at ``at`` and their ends; the end is
        :attr:`bad` where a varint is longer than 64 bits (10 bytes, the last 0 or 1)."""
        buf = self.buf
        byte = buf[at]
        value = (byte & np.uint8(0x7F)).astype(_U64)
        ends = at + 1
        going = np.flatnonzero(byte >= 0x80)
        for k in range(1, 10):
            if not len(going):
                break
            byte = buf[at[going] + k]
            value[going] |= (byte & np.uint8(0x7F)).astype(_U64) << _U64(7 * k)
            ends[going] += 1
            if k == 9:
                ends[going[byte > 1]] = self.bad
            going = going[byte >= 0x80]
        ends[going] = self.bad  # an 11th byte
        return value, ends

    def variable(self, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(payload starts, payload ends)`` of the strings/bytes at ``at``; the end is
        :attr:`bad` where the length is negative, too long, or reaches past the chunk."""
        value, starts = self.varints(at)
        lengths = (value >> _U64(1)).view(np.int64)  # ends past the chunk if huge
        ends = np.where((value & _U64(1)) != 0, self.bad, starts + np.minimum(lengths, self.bad))
        ends[ends > self.size] = self.bad
        return starts, ends

    def skip(self, field: ReadField, at: np.ndarray) -> np.ndarray:
        """Where a value of ``field`` (union branch excluded) starting at each of ``at`` ends."""
        kind = field.kind
        if kind in ("float", "double", "boolean"):
            return at + (4 if kind == "float" else 8 if kind == "double" else 1)
        return self.varints(at)[1] if kind in ("int", "long") else self.variable(at)[1]

    def record_ends(self, plan: ReadPlan, at: np.ndarray) -> np.ndarray:
        """Where a record starting at each of ``at`` (positions up to :attr:`bad`) ends;
        :attr:`bad` if it cannot start there."""
        bad = self.bad
        if plan.record_byte is not None:
            at = np.where(self.buf[at] == plan.record_byte, at + 1, bad)
        for field in plan.fields:
            if field.null_byte is None:
                at = self.skip(field, at)
            else:
                branch = self.buf[at]
                value = self.skip(field, at + 1)
                at = np.where(branch == field.value_byte, value, np.where(branch == field.null_byte, at + 1, bad))
            np.minimum(at, bad, out=at)
        return at


def _follow(ends: np.ndarray, starts: np.ndarray, counts: np.ndarray, first: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Record starts from a table of every position's record end: all blocks in step, or
    record by record for a few long blocks. Returns where each block's last record ends."""
    if len(counts) * _FOLLOW_IN_STEP_RATIO >= int(counts.max()) and len(counts) > 1:
        return _in_step(lambda at: ends[at], starts, counts, first, out)
    view = ends.data  # a memoryview: its items are Python ints, read quickly
    last = np.empty_like(starts)
    for b in range(len(counts)):
        at, base = int(starts[b]), int(first[b])
        for i in range(int(counts[b])):
            out[base + i] = at
            at = view[at]
        last[b] = at
    return last


def _in_step(step: Any, starts: np.ndarray, counts: np.ndarray, first: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Record starts of all blocks, one record of every block at a time; ``step`` maps record
    starts to record ends. Returns where each block's last record ends."""
    order = np.argsort(-counts, kind="stable")
    by_count = counts[order]
    at, index = starts[order].copy(), first[order].copy()
    for i in range(int(by_count[0])):
        live = int(np.searchsorted(-by_count, -i, side="left"))  # blocks with more than i records
        out[index[:live] + i] = at[:live]
        at[:live] = step(at[:live])
    last = np.empty_like(at)
    last[order] = at
    return last


def _in_step_suits(most_records: int, size: int) -> bool:
    """Whether blocks of ``size`` bytes together, the longest of ``most_records`` records, are
    followed in step (rather than through a table)."""
    return most_records * _IN_STEP_BYTES_PER_RECORD <= size


def _record_starts(chunk: _Chunk, plan: ReadPlan, starts: np.ndarray, counts: np.ndarray,
                   block_ends: np.ndarray) -> np.ndarray:
    """The record starts of blocks ``[starts, block_ends)`` of ``counts`` records; raises
    :class:`_Inconsistent` unless each block's chain of records ends exactly at its end.

    Many short blocks are followed in step, a record of each block at a time (numpy calls per
    record of a block); few long ones through a table of where a record starting at any
    position would end (numpy work per byte)."""
    total = int(counts.sum())
    out = np.empty(total, np.int64)
    first = np.cumsum(counts) - counts  # index in out of each block's first record
    if not total:
        last = starts
    elif _in_step_suits(int(counts.max()), chunk.size):
        last = _in_step(lambda at: chunk.record_ends(plan, at), starts, counts, first, out)
    elif chunk.size <= _TABLE_MAX_BYTES:
        ends = np.empty(chunk.bad + 1, np.int32)
        for window in range(0, chunk.bad + 1, _TABLE_WINDOW):  # bounds the temporary arrays
            at = np.arange(window, min(window + _TABLE_WINDOW, chunk.bad + 1), dtype=np.int64)
            ends[window:window + len(at)] = chunk.record_ends(plan, at)
        last = _follow(ends, starts, counts, first, out)
    else:
        raise _Inconsistent("blocks too long to decode column-wise")
    if not np.array_equal(last, block_ends):
        raise _Inconsistent("a block's records do not end at its end")
    return out


# -- one chunk: values ------------------------------------------------------------------------------


def _varints(chunk: _Chunk, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The zigzag-decoded varints at ``at`` (int64) and their ends."""
    value, ends = chunk.varints(at)
    if len(ends) and int(ends.max()) > chunk.size:
        raise _Inconsistent("a varint longer than 64 bits or past its block")
    decoded = (value >> _U64(1)) ^ (_U64(0) - (value & _U64(1)))
    return decoded.view(np.int64), ends


def _validity(valid: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    if valid is None:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), int(len(valid) - np.count_nonzero(valid))


def _spread(values: np.ndarray, valid: np.ndarray | None, n: int) -> np.ndarray:
    """``values`` (one per valid row) at their rows of ``n``, zeros elsewhere."""
    if valid is None:
        return values
    out = np.zeros((n, *values.shape[1:]), values.dtype)
    out[valid] = values
    return out


def _variable(chunk: _Chunk, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(payload starts, lengths, ends)`` of the strings/bytes at ``at``."""
    starts, ends = chunk.variable(at)
    if len(ends) and int(ends.max()) > chunk.size:
        raise _Inconsistent("a negative or overlong length")
    return starts, ends - starts, ends


def _decode_field(chunk: _Chunk, field: ReadField, t: pa.DataType, at: np.ndarray,
                  valid: np.ndarray | None, n: int) -> tuple[pa.Array, np.ndarray]:
    """The Arrow array (type ``t``) of ``field``'s values at ``at`` (rows ``valid`` of ``n``;
    all if None) and where the values end."""
    kind, buf = field.kind, chunk.buf
    bitmap, nulls = _validity(valid)
    if kind in ("int", "long"):
        values, ends = _varints(chunk, at)
        if field.low is not None and field.high is not None and len(values) and \
                (int(values.min()) < field.low or int(values.max()) > field.high):
            raise _Inconsistent("an integer the row path cannot represent")
        dtype = np.int32 if kind == "int" else np.int64
        if t.bit_width != 8 * np.dtype(dtype).itemsize:
            raise _Inconsistent(f"unexpected Arrow type {t} for {kind}")
        data = _spread(values.astype(dtype), valid, n)
        return pa.Array.from_buffers(t, n, [bitmap, pa.py_buffer(data)], null_count=nulls), ends
    if kind in ("float", "double"):
        width = 4 if kind == "float" else 8
        raw = buf[at.reshape(-1, 1) + np.arange(width)]
        if kind == "float":  # the row path goes through a C double: signalling NaNs come back quiet
            bits = raw.view("<u4").reshape(-1)
            nan = (bits & np.uint32(0x7F80_0000)) == np.uint32(0x7F80_0000)
            nan &= (bits & np.uint32(0x007F_FFFF)) != 0
            bits[nan] |= np.uint32(0x0040_0000)
            data = _spread(bits.astype(np.uint32), valid, n)
        else:
            data = _spread(raw.view("<u8").reshape(-1).astype(np.uint64), valid, n)
        return pa.Array.from_buffers(t, n, [bitmap, pa.py_buffer(data)], null_count=nulls), at + width
    if kind == "boolean":
        flags = buf[at]
        if len(flags) and int(flags.max()) > 1:
            raise _Inconsistent("a boolean byte other than 0 or 1")
        data = np.packbits(_spread(flags.astype(bool), valid, n), bitorder="little")
        return pa.Array.from_buffers(t, n, [bitmap, pa.py_buffer(data)], null_count=nulls), at + 1
    starts, lengths, ends = _variable(chunk, at)
    if kind == "decimal":
        if len(lengths) and (int(lengths.min()) < 1 or int(lengths.max()) > 16):
            raise _Inconsistent("a decimal of more than 16 bytes")
        negative = buf[starts] >= 0x80
        words = np.zeros((len(at), 16), np.uint8)
        words[negative] = 0xFF
        rows = np.arange(len(at))
        for k in range(int(lengths.max()) if len(lengths) else 0):  # little-endian byte k
            take = lengths > k
            words[rows[take], k] = buf[starts[take] + lengths[take] - 1 - k]
        array = pa.Array.from_buffers(t, n, [bitmap, pa.py_buffer(_spread(words, valid, n))], null_count=nulls)
    else:
        total = int(lengths.sum())
        if total >= 1 << 31:
            raise _Inconsistent("more string bytes than 32-bit offsets hold")
        sizes = _spread(lengths, valid, n)
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(sizes, out=offsets[1:])
        # the payloads lie in the chunk in row order, apart: keep the bytes between each start
        # and end (+1 at a start, -1 at an end; a start never is another payload's end)
        edges = np.zeros(chunk.size + 1, np.int8)
        edges[starts] = 1
        edges[ends] -= 1
        inside = np.cumsum(edges[:chunk.size], dtype=np.int8).view(np.bool_)
        array = pa.Array.from_buffers(t, n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(buf[:chunk.size][inside])],
                                      null_count=nulls)
    if kind in ("string", "decimal"):
        try:
            array.validate(full=True)  # UTF-8 / decimal precision, which the row path checks
        except pa.ArrowInvalid as exc:
            raise _Inconsistent(str(exc)) from exc
    return array, ends


def _decode_chunk(plan: ReadPlan, types: Sequence[pa.DataType], blocks: Sequence[tuple[int, bytes]]) -> list[pa.Array]:
    counts = np.array([count for count, _ in blocks], np.int64)
    sizes = np.array([len(data) for _, data in blocks], np.int64)
    if len(counts) and (int(counts.min()) < 0 or bool((counts > sizes).any())):
        raise _Inconsistent("a negative record count, or more records than bytes")
    chunk = _Chunk(b"".join(data for _, data in blocks))
    block_ends = np.cumsum(sizes)
    starts = _record_starts(chunk, plan, block_ends - sizes, counts, block_ends)
    n = len(starts)
    at = starts
    if plan.record_byte is not None:
        at = at + 1  # the branch bytes were checked when following the records
    columns = []
    for field, t in zip(plan.fields, types, strict=True):
        valid = None
        if field.null_byte is not None:
            branch = chunk.buf[at]
            valid = branch == field.value_byte
            at = at + 1
            if valid.all():
                valid = None
        if valid is None:
            array, at = _decode_field(chunk, field, t, at, None, n)
        else:
            array, ends = _decode_field(chunk, field, t, at[valid], valid, n)
            at[valid] = ends
        columns.append(array)
    return columns


def decode_blocks(plan: ReadPlan, schema: pa.Schema, blocks: Iterable[tuple[int, bytes]], *,
                  chunk_bytes: int | None = None) -> pa.Table | None:
    """The records of ``blocks`` (``(record count, decompressed bytes)`` of each block of a
    container file whose writer schema gave ``plan``) as a table of ``schema`` (one field per
    field of the plan, with the Arrow types the row path reads), or None if the bytes hold
    anything the row path would reject or read differently (see the module docstring)."""
    if len(schema) != len(plan.fields):
        return None
    chunk_bytes = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
    types = schema.types
    chunks: list[list[pa.Array]] = []
    pending: list[tuple[int, bytes]] = []
    pending_bytes = most_records = 0
    try:
        for block in blocks:
            pending.append(block)
            pending_bytes += len(block[1])
            most_records = max(most_records, block[0])
            if pending_bytes >= chunk_bytes or (pending_bytes >= min(chunk_bytes, TABLE_CHUNK_BYTES)
                                                and not _in_step_suits(most_records, pending_bytes)):
                chunks.append(_decode_chunk(plan, types, pending))
                pending, pending_bytes, most_records = [], 0, 0
        if pending:
            chunks.append(_decode_chunk(plan, types, pending))
    except _Inconsistent:
        return None
    columns = [pa.chunked_array([chunk[i] for chunk in chunks], t) for i, t in enumerate(types)]
    return pa.Table.from_arrays(columns, schema=schema)
