"""Vectorized Avro encoding of flat records, byte-identical to fastavro.

:func:`encode_records` turns Arrow columns into the Avro binary encoding of one record per row,
with numpy and no per-row Python: every field's byte length is computed for all rows at once,
the row offsets follow by a cumulative sum, and each field's bytes are scattered into one
preallocated buffer. :func:`container_file` cuts those bytes into blocks exactly where
``fastavro.writer`` would (a block ends with the first record that takes it to ``sync_interval``
bytes) and lets fastavro write the header and compress the blocks, so, given the same sync
marker, the file is byte for byte the one ``fastavro.writer`` writes for the same records.

Handled: a record (or Paimon's ``["null", record]``) whose fields are, each optionally in a union
with ``"null"``:

* ``int`` / ``long`` (any logical type) from Arrow int8/16/32 (``int``) or int8/16/32/64 (``long``);
* ``float`` from float32 (a signalling NaN is written quiet, as fastavro's C conversion does),
  ``double`` from float64, ``boolean`` from bool;
* ``string`` from string/large_string, ``bytes`` from binary/large_binary;
* ``bytes`` with logical type ``decimal`` from decimal128 of the same precision and scale, as
  fastavro encodes ``Decimal`` values (big-endian two's complement, one byte longer than the
  magnitude's bit length needs).

Anything else (nested types, enums, unions of two non-null types, other Arrow types) is reported
as not encodable by :func:`flat_record_plan` and left to the caller's general path. Temporal
columns are expected as their wire integers (the caller converts them, as for fastavro).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa

# fastavro's default block size: ``1000 * SYNC_SIZE`` bytes of encoded records.
DEFAULT_SYNC_INTERVAL = 16_000
# Arrow bytes encoded at a time (see encode_records).
CHUNK_BYTES = 4 << 20

_U64 = np.uint64


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldPlan:
    """How one record field is encoded.

    ``kind`` is one of ``int``, ``long``, ``float``, ``double``, ``boolean``, ``string``,
    ``bytes``, ``decimal``; ``null_index`` / ``value_index`` are the union branches when the
    field is a ``["null", T]`` (or ``[T, "null"]``) union, ``None`` for a bare type.
    """

    name: str
    kind: str
    null_index: int | None = None
    value_index: int | None = None
    precision: int = 0
    scale: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordPlan:
    """The fields of a flat record and, if the file schema is a union around it, its branch."""

    fields: tuple[FieldPlan, ...]
    record_index: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EncodedRecords:
    """The Avro binary encoding of ``len(row_ends)`` records: record ``i`` is
    ``payload[row_ends[i - 1]:row_ends[i]]`` (from 0 for the first)."""

    payload: np.ndarray
    row_ends: np.ndarray


def _field_kind(avro: Any) -> tuple[str, int, int] | None:
    """``(kind, precision, scale)`` of a non-null Avro field type, or None if not handled."""
    if isinstance(avro, str):
        return (avro, 0, 0) if avro in ("int", "long", "float", "double", "boolean", "string", "bytes") else None
    if not isinstance(avro, dict):
        return None
    kind, logical = avro.get("type"), avro.get("logicalType")
    if kind == "bytes" and logical == "decimal":
        return "decimal", int(avro["precision"]), int(avro.get("scale", 0))
    if kind in ("int", "long") or (kind in ("string", "bytes") and logical is None):
        return str(kind), 0, 0
    return None


def _arrow_fits(kind: str, t: pa.DataType, precision: int, scale: int) -> bool:
    T = pa.types
    if kind == "int":
        return T.is_int8(t) or T.is_int16(t) or T.is_int32(t)
    if kind == "long":
        return T.is_int8(t) or T.is_int16(t) or T.is_int32(t) or T.is_int64(t)
    if kind == "float":
        return T.is_float32(t)
    if kind == "double":
        return T.is_float64(t)
    if kind == "boolean":
        return T.is_boolean(t)
    if kind == "string":
        return T.is_string(t) or T.is_large_string(t)
    if kind == "bytes":
        return T.is_binary(t) or T.is_large_binary(t)
    return T.is_decimal128(t) and t.precision == precision and t.scale == scale


def flat_record_plan(schema: Any, types: Sequence[pa.DataType]) -> RecordPlan | None:
    """The plan to encode columns of ``types`` as records of the Avro ``schema`` (unparsed JSON
    form, a record or a union of ``"null"`` and a record), or None if this module cannot."""
    record_index = None
    if isinstance(schema, list):
        records = [i for i, branch in enumerate(schema) if branch != "null"]
        if len(records) != 1 or len(schema) > 2:
            return None
        record_index, schema = records[0], schema[records[0]]
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    fields = schema.get("fields", [])
    if len(fields) != len(types):
        return None
    plans = []
    for field, t in zip(fields, types, strict=True):
        avro, null_index, value_index = field["type"], None, None
        if isinstance(avro, list):
            if len(avro) != 2 or avro.count("null") != 1:
                return None
            null_index = avro.index("null")
            value_index = 1 - null_index
            avro = avro[value_index]
        kind = _field_kind(avro)
        if kind is None or not _arrow_fits(kind[0], t, kind[1], kind[2]):
            return None
        plans.append(FieldPlan(name=field["name"], kind=kind[0], null_index=null_index, value_index=value_index,
                               precision=kind[1], scale=kind[2]))
    return RecordPlan(fields=tuple(plans), record_index=record_index)


# -- per-field encoders: lengths first (for all rows), bytes second --------------------------------


def _zigzag(values: np.ndarray) -> np.ndarray:
    v = values.astype(np.int64, copy=False)
    return ((v << np.int64(1)) ^ (v >> np.int64(63))).view(_U64)


def _varint_lengths(zigzag: np.ndarray) -> np.ndarray:
    """Bytes of the base-128 varint of each unsigned value (1 to 10)."""
    lengths = np.ones(len(zigzag), np.int64)
    top = int(zigzag.max()) if len(zigzag) else 0
    for k in range(1, 10):
        if top < 1 << (7 * k):
            break
        lengths += zigzag >= _U64(1 << (7 * k))
    return lengths


def _put_varints(out: np.ndarray, starts: np.ndarray, zigzag: np.ndarray, lengths: np.ndarray) -> None:
    """Write the varint of ``zigzag[i]`` (``lengths[i]`` bytes) at ``out[starts[i]:]``."""
    if not len(zigzag):
        return
    for k in range(int(lengths.max())):
        group = ((zigzag >> _U64(7 * k)) & _U64(0x7F)).astype(np.uint8)
        group |= (lengths > k + 1).astype(np.uint8) << np.uint8(7)
        if k == 0:
            out[starts] = group
        else:
            rows = lengths > k
            out[starts[rows] + k] = group[rows]


class _Values:
    """One column's non-null values, ready to be sized and written."""

    def __init__(self, plan: FieldPlan, array: pa.Array, valid: np.ndarray | None) -> None:
        self.plan, self.valid = plan, valid
        kind = plan.kind
        if kind in ("string", "bytes"):
            self._init_variable(array, valid)
        elif kind == "decimal":
            self._init_decimal(array, valid)
        elif kind == "boolean":
            flags = array.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
            self.fixed = (flags if valid is None else flags[valid]).reshape(-1, 1)
            self.lengths = np.ones(len(self.fixed), np.int64)
        elif kind in ("float", "double"):
            values = array.fill_null(0).to_numpy(zero_copy_only=False)
            values = values if valid is None else values[valid]
            if kind == "float":  # fastavro goes through a C double: signalling NaNs come back quiet
                bits = values.view(np.uint32).copy()
                bits[np.isnan(values)] |= np.uint32(0x0040_0000)
                self.fixed = bits.astype("<u4").view(np.uint8).reshape(-1, 4)
            else:
                self.fixed = values.astype("<f8").view(np.uint8).reshape(-1, 8)
            self.lengths = np.full(len(self.fixed), self.fixed.shape[1], np.int64)
        else:  # int / long
            values = array.fill_null(0).to_numpy(zero_copy_only=False)
            self.zigzag = _zigzag(values if valid is None else values[valid])
            self.lengths = _varint_lengths(self.zigzag)

    def _init_variable(self, array: pa.Array, valid: np.ndarray | None) -> None:
        n = len(array)
        large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
        buffers = array.buffers()
        offsets = np.frombuffer(buffers[1], np.int64 if large else np.int32, n + 1, array.offset * (8 if large else 4))
        offsets = offsets.astype(np.int64)
        data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None and offsets[-1] > offsets[0] else \
            np.zeros(0, np.uint8)
        starts, sizes = offsets[:-1], np.diff(offsets)
        if valid is not None:
            starts, sizes = starts[valid], sizes[valid]
        self.source_starts, self.sizes, self.data = starts, sizes, data
        self.contiguous = int(sizes.sum()) == int(offsets[-1] - offsets[0])
        self.first = int(offsets[0])
        self.zigzag = _zigzag(sizes)
        self.prefix = _varint_lengths(self.zigzag)
        self.lengths = self.prefix + sizes

    def _init_decimal(self, array: pa.Array, valid: np.ndarray | None) -> None:
        words = np.frombuffer(array.buffers()[1], "<u8", 2 * len(array), array.offset * 16).reshape(-1, 2)
        if valid is not None:
            words = words[valid]
        low, high = words[:, 0].copy(), words[:, 1].copy()
        negative = high >= _U64(1 << 63)
        # magnitude = -value for negatives (128-bit two's complement negation)
        mag_low = np.where(negative, ~low + _U64(1), low)
        mag_high = np.where(negative, ~high + (mag_low == 0).astype(_U64), high)
        # fastavro: (bit_length(|unscaled|) + 8) // 8 bytes, i.e. 1 + #{j >= 1 : |v| >= 2**(8j - 1)}
        sizes = np.ones(len(words), np.int64)
        for j in range(1, 17):
            bit = 8 * j - 1
            if bit >= 64:
                sizes += mag_high >= _U64(1 << (bit - 64))
            else:
                sizes += (mag_high > 0) | (mag_low >= _U64(1 << bit))
        # little-endian bytes of the value, sign-extended to 17 bytes
        extension = np.where(negative, np.uint8(0xFF), np.uint8(0)).reshape(-1, 1)
        self.fixed = np.hstack([words.astype("<u8").view(np.uint8).reshape(-1, 16), extension])
        self.sizes = sizes
        self.zigzag = _zigzag(sizes)
        self.prefix = _varint_lengths(self.zigzag)
        self.lengths = self.prefix + sizes

    def write(self, out: np.ndarray, starts: np.ndarray) -> None:
        """Write the values at ``starts`` (one per non-null value)."""
        kind = self.plan.kind
        if kind in ("string", "bytes"):
            _put_varints(out, starts, self.zigzag, self.prefix)
            total = int(self.sizes.sum())
            if not total:
                return
            payload_starts = starts + self.prefix
            # position within the concatenated payloads -> position in out / in the Arrow data
            shift = np.repeat(payload_starts - (np.cumsum(self.sizes) - self.sizes), self.sizes)
            shift += np.arange(total, dtype=np.int64)
            if self.contiguous:
                out[shift] = self.data[self.first:self.first + total]
            else:
                source = np.repeat(self.source_starts - (np.cumsum(self.sizes) - self.sizes), self.sizes)
                source += np.arange(total, dtype=np.int64)
                out[shift] = self.data[source]
        elif kind == "decimal":
            _put_varints(out, starts, self.zigzag, self.prefix)
            payload_starts = starts + self.prefix
            rows = np.arange(len(self.sizes))
            for p in range(int(self.sizes.max()) if len(self.sizes) else 0):
                take = self.sizes > p  # byte p (big-endian) is little-endian byte sizes - 1 - p
                out[payload_starts[take] + p] = self.fixed[rows[take], self.sizes[take] - 1 - p]
        elif kind in ("float", "double", "boolean"):
            width = self.fixed.shape[1]
            out[starts.reshape(-1, 1) + np.arange(width)] = self.fixed
        else:
            _put_varints(out, starts, self.zigzag, self.lengths)


def _union_byte(index: int) -> np.uint8:
    return np.uint8(2 * index)  # zigzag of a small branch index is a one-byte varint


def encode_records(plan: RecordPlan, columns: Sequence[pa.Array], *,
                   chunk_bytes: int = CHUNK_BYTES) -> EncodedRecords:
    """The records of ``columns`` (one Arrow array per field of ``plan``, equal lengths) in
    Avro's binary encoding. Raises ValueError if a field that is not a union holds a null.

    Rows are encoded in slices of about ``chunk_bytes`` of Arrow data, which bounds the
    temporary index arrays (eight bytes per string byte of a slice)."""
    n = len(columns[0]) if columns else 0
    if any(len(array) != n for array in columns):
        raise ValueError("columns of different lengths")
    row_bytes = sum(array.nbytes for array in columns) / n if n else 1
    step = max(1, min(n, int(chunk_bytes / max(row_bytes, 1))))
    if step >= n:
        return _encode_slice(plan, columns)
    payloads, ends, base = [], [], 0
    for start in range(0, n, step):
        part = _encode_slice(plan, [array.slice(start, step) for array in columns])
        payloads.append(part.payload)
        ends.append(part.row_ends + base)
        base += len(part.payload)
    return EncodedRecords(payload=np.concatenate(payloads), row_ends=np.concatenate(ends))


def _encode_slice(plan: RecordPlan, columns: Sequence[pa.Array]) -> EncodedRecords:
    n = len(columns[0]) if columns else 0
    values: list[_Values] = []
    row_lengths = np.full(n, 0 if plan.record_index is None else 1, np.int64)
    for field, array in zip(plan.fields, columns, strict=True):
        valid = None
        if array.null_count:
            if field.null_index is None:
                raise ValueError(f"field {field.name!r} is not nullable but holds nulls")
            valid = array.is_valid().to_numpy(zero_copy_only=False)
        encoded = _Values(field, array, valid)
        values.append(encoded)
        if valid is None:
            row_lengths += encoded.lengths
        else:
            row_lengths[valid] += encoded.lengths
        if field.null_index is not None:
            row_lengths += 1
    row_ends = np.cumsum(row_lengths)
    out = np.zeros(int(row_ends[-1]) if n else 0, np.uint8)
    cursor = row_ends - row_lengths
    if plan.record_index is not None:
        out[cursor] = _union_byte(plan.record_index)
        cursor += 1
    for field, encoded in zip(plan.fields, values, strict=True):
        valid = encoded.valid
        if field.null_index is not None:
            assert field.value_index is not None
            if valid is None:
                out[cursor] = _union_byte(field.value_index)
            else:
                out[cursor] = np.where(valid, _union_byte(field.value_index), _union_byte(field.null_index))
            cursor += 1
        if valid is None:
            encoded.write(out, cursor)
            cursor += encoded.lengths
        else:
            encoded.write(out, cursor[valid])
            cursor[valid] += encoded.lengths
    return EncodedRecords(payload=out, row_ends=row_ends)


@dataclass(frozen=True, slots=True)
class _Block:
    """What ``fastavro``'s ``Writer.write_block`` reads from a block: its records and bytes."""

    num_records: int
    bytes_: io.BytesIO


def block_bounds(row_ends: np.ndarray, sync_interval: int = DEFAULT_SYNC_INTERVAL) -> list[tuple[int, int]]:
    """Row ranges ``[start, end)`` of the blocks ``fastavro.writer`` makes: a block ends after
    the first record that brings its encoded size to ``sync_interval`` bytes or more."""
    bounds, start, base, n = [], 0, 0, len(row_ends)
    while start < n:
        end = int(np.searchsorted(row_ends, base + sync_interval, side="left")) + 1
        end = min(end, n)
        bounds.append((start, end))
        start, base = end, int(row_ends[end - 1])
    return bounds


def container_file(parsed_schema: Any, records: EncodedRecords, *, codec: str, sync_marker: bytes = b"",
                   sync_interval: int = DEFAULT_SYNC_INTERVAL) -> bytes:
    """An Avro object container file of ``records``, written by fastavro's ``Writer`` (header,
    codec, sync marker; random unless given) with the blocks ``fastavro.writer`` would cut."""
    sink = io.BytesIO()
    writer = fastavro.write.Writer(sink, parsed_schema, codec=codec, sync_interval=sync_interval,
                                   sync_marker=sync_marker)
    payload, row_ends = records.payload, records.row_ends
    for start, end in block_bounds(row_ends, sync_interval):
        first = int(row_ends[start - 1]) if start else 0
        writer.write_block(_Block(end - start, io.BytesIO(payload[first:int(row_ends[end - 1])].tobytes())))
    writer.flush()
    return sink.getvalue()
