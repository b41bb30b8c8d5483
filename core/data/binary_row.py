"""Paimon's BinaryRow encoding, driven by pyarrow data types.

A BinaryRow is what Paimon stores for partitions, min/max keys and statistics, and what it hashes to
pick a bucket. Layout (all multi-byte numbers little-endian unless said otherwise):

* a header of ``((arity + 63 + 8) // 64) * 8`` bytes: byte 0 is the row kind (0 ``+I``, 1 ``-U``,
  2 ``+U``, 3 ``-D``), and the null bit of field ``i`` is bit ``(i + 8) % 8`` of byte ``(i + 8) // 8``;
* one 8-byte slot per field: BOOLEAN/TINYINT 1 byte, SMALLINT 2, INT/DATE (epoch days)/TIME (milli
  of day)/FLOAT 4, BIGINT/DOUBLE 8, DECIMAL(p <= 18) the unscaled long, TIMESTAMP(p <= 3) epoch
  millis; a null field's slot is zero;
* strings and binaries of at most 7 bytes live in the slot (byte 7 is ``0x80 | length``); longer
  ones go to the variable part, zero-padded to 8 bytes, and the slot holds ``offset << 32 | length``;
* DECIMAL(p > 18) takes 16 bytes of the variable part (minimal big-endian two's complement of the
  unscaled value, as Java's ``BigInteger.toByteArray``); TIMESTAMP(p > 3) takes 8 (epoch millis),
  with ``offset << 32 | nano_of_millisecond`` in the slot.

Where pypaimon 2.1.0 and Java Paimon differ, this module follows Java (DESIGN.md decision 1):

* A null DECIMAL(p > 18) or TIMESTAMP(p > 3) still reserves its 16 / 8 zeroed bytes of variable part
  and its slot holds ``offset << 32`` (Java's generated projections and ``RowHelper`` call
  ``writeDecimal(pos, null, p)`` / ``writeTimestamp(pos, null, p)``); pypaimon writes a zero slot and
  no variable bytes. Both decode to the same values, but the bytes (and so the bucket hash) differ.
* The unscaled bytes of a wide decimal equal to ``-2**(8k-1)`` (e.g. -128) take ``k`` bytes as in
  Java; pypaimon uses ``k + 1``.

Types: BOOLEAN ``bool_``, TINYINT ``int8``, SMALLINT ``int16``, INT ``int32``, BIGINT ``int64``, FLOAT
``float32``, DOUBLE ``float64``, DECIMAL ``decimal128``/``decimal256``, CHAR/VARCHAR/STRING
``string``/``large_string``/``string_view``, BINARY/VARBINARY/BYTES ``binary``/``large_binary``/
``binary_view``/``fixed_size_binary``, DATE ``date32``/``date64``, TIME ``time32``/``time64``,
TIMESTAMP ``timestamp`` (with a time zone: TIMESTAMP_LTZ, values are UTC). The Paimon precision of a
TIMESTAMP or TIME defaults from the unit (s 0, ms 3, us 6, ns 9) and of a DECIMAL from the arrow type;
pass ``precisions`` to override (e.g. TIMESTAMP(3) data held in a ``us`` column).
"""

from __future__ import annotations

import datetime as dt
import enum
import functools
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataError, SchemaError, UnsupportedError

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_UTC = dt.UTC
_WIDE = Context(prec=100, rounding=ROUND_HALF_UP)
_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}
_LE_U8 = np.dtype("<u8")
_LE_I8 = np.dtype("<i8")


class FieldKind(enum.Enum):
    """The Paimon type family of a field, as far as the BinaryRow layout cares."""

    BOOLEAN = "BOOLEAN"
    TINYINT = "TINYINT"
    SMALLINT = "SMALLINT"
    INT = "INT"
    BIGINT = "BIGINT"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    DECIMAL = "DECIMAL"
    STRING = "STRING"
    BINARY = "BINARY"
    DATE = "DATE"
    TIME = "TIME"
    TIMESTAMP = "TIMESTAMP"


@dataclass(frozen=True, slots=True)
class FieldEncoding:
    """How one field is laid out: its kind, Paimon precision/scale and arrow details."""

    kind: FieldKind
    arrow_type: pa.DataType
    precision: int = 0
    scale: int = 0
    local_time_zone: bool = False

    @property
    def compact(self) -> bool:
        """False for DECIMAL(p > 18) and TIMESTAMP(p > 3), whose values live in the variable part."""
        if self.kind is FieldKind.DECIMAL:
            return self.precision <= 18
        if self.kind is FieldKind.TIMESTAMP:
            return self.precision <= 3
        return True


def field_encoding(arrow_type: pa.DataType | pa.Field, precision: int | None = None) -> FieldEncoding:
    """Resolve the BinaryRow encoding of an arrow type; ``precision`` overrides the Paimon precision.

    Raises :class:`UnsupportedError` for types a BinaryRow cannot hold (lists, maps, structs,
    unsigned integers, ...).
    """
    t = arrow_type.type if isinstance(arrow_type, pa.Field) else arrow_type
    return _field_encoding(t, precision)


_SIMPLE_KINDS = {
    pa.bool_(): FieldKind.BOOLEAN,
    pa.int8(): FieldKind.TINYINT,
    pa.int16(): FieldKind.SMALLINT,
    pa.int32(): FieldKind.INT,
    pa.int64(): FieldKind.BIGINT,
    pa.float32(): FieldKind.FLOAT,
    pa.float64(): FieldKind.DOUBLE,
    pa.date32(): FieldKind.DATE,
    pa.date64(): FieldKind.DATE,
}


@functools.lru_cache(maxsize=1024)  # statistics serialize a few rows per written file: resolve each type once
def _field_encoding(t: pa.DataType, precision: int | None) -> FieldEncoding:
    if pa.types.is_dictionary(t):
        t = t.value_type
    kind = _SIMPLE_KINDS.get(t)
    if kind is not None:
        return FieldEncoding(kind, t)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return FieldEncoding(FieldKind.STRING, t)
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return FieldEncoding(FieldKind.BINARY, t)
    if pa.types.is_decimal(t) and not pa.types.is_decimal32(t) and not pa.types.is_decimal64(t):
        p = t.precision if precision is None else precision
        if not 1 <= p <= 38:
            raise UnsupportedError(f"DECIMAL precision must be 1..38 in a BinaryRow, got {p}")
        return FieldEncoding(FieldKind.DECIMAL, t, p, t.scale)
    if pa.types.is_decimal(t):
        return field_encoding(pa.decimal128(t.precision, t.scale), precision)
    if pa.types.is_time(t):
        p = _UNIT_PRECISION[t.unit] if precision is None else precision
        return FieldEncoding(FieldKind.TIME, t, p)
    if pa.types.is_timestamp(t):
        p = _UNIT_PRECISION[t.unit] if precision is None else precision
        if not 0 <= p <= 9:
            raise UnsupportedError(f"TIMESTAMP precision must be 0..9, got {p}")
        return FieldEncoding(FieldKind.TIMESTAMP, t, p, local_time_zone=t.tz is not None)
    raise UnsupportedError(f"BinaryRow only supports atomic types, not {t}")


def header_size(arity: int) -> int:
    """Bytes of row kind + null bits in front of the fixed slots of a row of ``arity`` fields."""
    return ((arity + 63 + 8) // 64) * 8


def _encodings(
    types: Sequence[pa.DataType | pa.Field], precisions: Sequence[int | None] | None
) -> list[FieldEncoding | None]:
    """Encodings per field; None for a type a BinaryRow cannot hold, whose values must all be null
    (Java writes any null as just its null bit, e.g. statistics of ARRAY columns)."""
    if precisions is None:
        precisions = [None] * len(types)
    elif len(precisions) != len(types):
        raise SchemaError(f"{len(precisions)} precisions given for {len(types)} fields")
    encodings: list[FieldEncoding | None] = []
    for t, p in zip(types, precisions, strict=True):
        try:
            encodings.append(field_encoding(t, p))
        except UnsupportedError:
            encodings.append(None)
    return encodings


def _require(encoding: FieldEncoding | None, arrow_type: pa.DataType | pa.Field) -> FieldEncoding:
    """The encoding of a field holding a non-null value; raises UnsupportedError if there is none."""
    return encoding if encoding is not None else field_encoding(arrow_type)


# ------------------------------------------------------------------------------------------------
# One row at a time (partitions, min/max keys, statistics)
# ------------------------------------------------------------------------------------------------


def serialize_row(
    values: Sequence[object],
    types: Sequence[pa.DataType | pa.Field],
    *,
    precisions: Sequence[int | None] | None = None,
    row_kind: int = 0,
) -> bytes:
    """Encode one row as Paimon stores it in manifests: big-endian int32 arity, then the BinaryRow.

    Values are Python objects: ``bool``, ``int``, ``float``, ``str``, ``bytes``, ``Decimal`` (rounded
    HALF_UP to the type's scale), ``datetime.date``, ``datetime.time``, ``datetime.datetime``
    (naive for TIMESTAMP; for TIMESTAMP_LTZ aware values are converted to UTC and naive ones are
    taken as UTC; a ``nanosecond`` attribute, as on pandas timestamps, is honoured) or ``None``.
    Raises :class:`DataError` if a value does not fit its type.
    """
    return struct.pack(">i", len(types)) + serialize_row_no_prefix(
        values, types, precisions=precisions, row_kind=row_kind
    )


def serialize_row_no_prefix(
    values: Sequence[object],
    types: Sequence[pa.DataType | pa.Field],
    *,
    precisions: Sequence[int | None] | None = None,
    row_kind: int = 0,
) -> bytes:
    """The BinaryRow bytes of one row without the arity prefix (the bytes Paimon hashes)."""
    encodings = _encodings(types, precisions)
    if len(values) != len(encodings):
        raise SchemaError(f"row has {len(values)} values for {len(encodings)} fields")
    if not 0 <= row_kind <= 3:
        raise DataError(f"row kind must be 0..3, got {row_kind}")
    arity = len(encodings)
    head = header_size(arity)
    fixed = bytearray(head + 8 * arity)
    fixed[0] = row_kind
    var = bytearray()
    for i, (value, maybe_enc) in enumerate(zip(values, encodings, strict=True)):
        slot = head + 8 * i
        cursor = len(fixed) + len(var)
        if value is None:
            fixed[(i + 8) // 8] |= 1 << ((i + 8) % 8)
            # Java keeps the variable bytes of a null wide decimal/timestamp.
            if maybe_enc is not None and not maybe_enc.compact:
                var += bytes(16 if maybe_enc.kind is FieldKind.DECIMAL else 8)
                struct.pack_into("<Q", fixed, slot, cursor << 32)
            continue
        enc = _require(maybe_enc, types[i])
        try:
            _write_value(fixed, var, slot, cursor, value, enc)
        except (struct.error, OverflowError, TypeError, AttributeError, InvalidOperation) as exc:
            raise DataError(f"value {value!r} does not fit field {i} of type {enc.arrow_type}") from exc
    return bytes(fixed) + bytes(var)


def _write_value(
    fixed: bytearray, var: bytearray, slot: int, cursor: int, value: object, enc: FieldEncoding
) -> None:
    kind = enc.kind
    if kind is FieldKind.BOOLEAN:
        fixed[slot] = 1 if value else 0
    elif kind is FieldKind.TINYINT:
        struct.pack_into("<b", fixed, slot, value)
    elif kind is FieldKind.SMALLINT:
        struct.pack_into("<h", fixed, slot, value)
    elif kind is FieldKind.INT:
        struct.pack_into("<i", fixed, slot, value)
    elif kind is FieldKind.BIGINT:
        struct.pack_into("<q", fixed, slot, value)
    elif kind is FieldKind.FLOAT:
        struct.pack_into("<f", fixed, slot, value)
    elif kind is FieldKind.DOUBLE:
        struct.pack_into("<d", fixed, slot, value)
    elif kind is FieldKind.DATE:
        struct.pack_into("<i", fixed, slot, _epoch_days(value))
    elif kind is FieldKind.TIME:
        struct.pack_into("<i", fixed, slot, _millis_of_day(value))
    elif kind in (FieldKind.STRING, FieldKind.BINARY):
        if kind is FieldKind.STRING:
            if not isinstance(value, str):
                raise TypeError(f"expected str, got {type(value).__name__}")
            data = value.encode("utf-8")
        else:
            if not isinstance(value, bytes | bytearray | memoryview):
                raise TypeError(f"expected bytes, got {type(value).__name__}")
            data = bytes(value)
        if len(data) <= 7:
            fixed[slot : slot + len(data)] = data
            fixed[slot + 7] = 0x80 | len(data)
        else:
            var += data + bytes(-len(data) % 8)
            struct.pack_into("<Q", fixed, slot, (cursor << 32) | len(data))
    elif kind is FieldKind.DECIMAL:
        unscaled = unscaled_decimal(value, enc.precision, enc.scale)
        if enc.compact:
            struct.pack_into("<q", fixed, slot, unscaled)
        else:
            size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
            var += unscaled.to_bytes(size, "big", signed=True) + bytes(16 - size)
            struct.pack_into("<Q", fixed, slot, (cursor << 32) | size)
    elif kind is FieldKind.TIMESTAMP:
        millis, nanos = epoch_millis_nanos(value, enc.local_time_zone)
        if enc.compact:
            struct.pack_into("<q", fixed, slot, millis)
        else:
            var += struct.pack("<q", millis)
            struct.pack_into("<Q", fixed, slot, (cursor << 32) | nanos)
    else:  # pragma: no cover - FieldKind is exhaustive
        raise UnsupportedError(f"cannot encode {kind}")


def unscaled_decimal(value: object, precision: int, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` (rounded HALF_UP, as Java's ``Decimal``).

    Raises :class:`DataError` if it has more than ``precision`` digits.
    """
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        raise DataError(f"expected Decimal or int for DECIMAL({precision}, {scale}), got {value!r}")
    d = Decimal(value) if isinstance(value, int) else value
    if not d.is_finite():
        raise DataError(f"{value!r} is not a finite decimal")
    unscaled = int(d.scaleb(scale, context=_WIDE).to_integral_value(rounding=ROUND_HALF_UP, context=_WIDE))
    if len(str(abs(unscaled))) > precision and unscaled != 0:
        raise DataError(f"{value!r} does not fit DECIMAL({precision}, {scale})")
    return unscaled


def _epoch_days(value: object) -> int:
    if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
        raise TypeError(f"expected datetime.date, got {type(value).__name__}")
    return (value - _EPOCH_DATE).days


def _millis_of_day(value: object) -> int:
    if not isinstance(value, dt.time):
        raise TypeError(f"expected datetime.time, got {type(value).__name__}")
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def epoch_millis_nanos(value: object, local_time_zone: bool) -> tuple[int, int]:
    """(floor epoch millis, nano of millisecond) of a datetime, the way Java's ``Timestamp`` holds it.

    Naive datetimes are taken as they are; aware ones are converted to UTC, which only a
    TIMESTAMP_LTZ (``local_time_zone``) accepts. Raises ``TypeError`` for a non-datetime and
    :class:`DataError` for an aware datetime of a TIMESTAMP without time zone.
    """
    if not isinstance(value, dt.datetime):
        raise TypeError(f"expected datetime.datetime, got {type(value).__name__}")
    if value.tzinfo is not None:
        if not local_time_zone:
            raise DataError(f"TIMESTAMP without time zone got an aware datetime {value!r}")
        value = value.astimezone(_UTC).replace(tzinfo=None)
    delta = value - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    millis, micro_of_milli = divmod(micros, 1000)
    extra_nanos = int(getattr(value, "nanosecond", 0) or 0)
    return millis, micro_of_milli * 1000 + extra_nanos


def deserialize_row(
    data: bytes,
    types: Sequence[pa.DataType | pa.Field],
    *,
    precisions: Sequence[int | None] | None = None,
) -> tuple[object, ...]:
    """Decode bytes made by :func:`serialize_row` (arity prefix + BinaryRow) into Python values.

    The inverse of :func:`serialize_row`, except that TIMESTAMP_LTZ values come back as aware UTC
    datetimes and sub-microsecond nanoseconds are dropped. ``b""`` is accepted for an empty row.
    Raises :class:`DataError` if the bytes do not hold a row of these types.
    """
    encodings = _encodings(types, precisions)
    if not data and not encodings:
        return ()
    if len(data) < 4:
        raise DataError(f"BinaryRow of {len(data)} bytes has no arity prefix")
    arity = int.from_bytes(data[:4], "big", signed=True)
    if arity != len(encodings):
        raise DataError(f"BinaryRow has arity {arity}, expected {len(encodings)}")
    body = bytes(data[4:])
    head = header_size(arity)
    if len(body) < head + 8 * arity:
        raise DataError(f"BinaryRow of arity {arity} is truncated ({len(body)} bytes)")
    values: list[object] = []
    for i, maybe_enc in enumerate(encodings):
        if body[(i + 8) // 8] & (1 << ((i + 8) % 8)):
            values.append(None)
            continue
        enc = _require(maybe_enc, types[i])
        try:
            values.append(_read_value(body, head + 8 * i, enc))
        except (struct.error, ValueError, OverflowError, IndexError) as exc:
            raise DataError(f"cannot decode field {i} ({enc.arrow_type}) of a BinaryRow: {exc}") from exc
    return tuple(values)


def _read_value(body: bytes, slot: int, enc: FieldEncoding) -> object:
    kind = enc.kind
    word = int.from_bytes(body[slot : slot + 8], "little")
    if kind is FieldKind.BOOLEAN:
        return body[slot] != 0
    if kind is FieldKind.TINYINT:
        return struct.unpack_from("<b", body, slot)[0]
    if kind is FieldKind.SMALLINT:
        return struct.unpack_from("<h", body, slot)[0]
    if kind is FieldKind.INT:
        return struct.unpack_from("<i", body, slot)[0]
    if kind is FieldKind.BIGINT:
        return struct.unpack_from("<q", body, slot)[0]
    if kind is FieldKind.FLOAT:
        return struct.unpack_from("<f", body, slot)[0]
    if kind is FieldKind.DOUBLE:
        return struct.unpack_from("<d", body, slot)[0]
    if kind is FieldKind.DATE:
        return _EPOCH_DATE + dt.timedelta(days=struct.unpack_from("<i", body, slot)[0])
    if kind is FieldKind.TIME:
        millis = struct.unpack_from("<i", body, slot)[0] % 86_400_000
        seconds, milli = divmod(millis, 1000)
        return dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, milli * 1000)
    if kind in (FieldKind.STRING, FieldKind.BINARY):
        if word >> 63:
            raw = body[slot : slot + ((word >> 56) & 0x7F)]
        else:
            raw = _var_slice(body, word >> 32, word & 0xFFFFFFFF)
        return raw.decode("utf-8") if kind is FieldKind.STRING else raw
    if kind is FieldKind.DECIMAL:
        if enc.compact:
            unscaled = struct.unpack_from("<q", body, slot)[0]
        else:
            unscaled = int.from_bytes(_var_slice(body, word >> 32, word & 0xFFFFFFFF), "big", signed=True)
        return Decimal(f"{unscaled}E-{enc.scale}")
    if kind is FieldKind.TIMESTAMP:
        if enc.compact:
            millis, nanos = struct.unpack_from("<q", body, slot)[0], 0
        else:
            millis = struct.unpack("<q", _var_slice(body, word >> 32, 8))[0]
            nanos = word & 0xFFFFFFFF
        value = _EPOCH + dt.timedelta(milliseconds=millis, microseconds=nanos // 1000)
        return value.replace(tzinfo=_UTC) if enc.local_time_zone else value
    raise UnsupportedError(f"cannot decode {kind}")  # pragma: no cover


def _var_slice(body: bytes, offset: int, length: int) -> bytes:
    if offset + length > len(body):
        raise ValueError(f"variable part [{offset}, {offset + length}) beyond {len(body)} bytes")
    return body[offset : offset + length]


# ------------------------------------------------------------------------------------------------
# Many rows at once (bucket hashing)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EncodedRows:
    """BinaryRows (without arity prefix) of many rows: row ``i`` is ``buffer[offsets[i]:offsets[i+1]]``.

    Every row length is a multiple of 8. ``row_width`` is set when all rows have the same length.
    """

    buffer: np.ndarray  # uint8, 1-D
    offsets: np.ndarray  # int64, n + 1
    row_width: int | None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, i: int) -> bytes:
        """The bytes of row ``i``."""
        return self.buffer[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def to_list(self) -> list[bytes]:
        """The bytes of every row (a Python loop: for tests and small inputs)."""
        return [self.row(i) for i in range(len(self))]


@dataclass(slots=True)
class _Column:
    """One encoded column: slot words, null mask, and variable-part bytes per row (if any)."""

    slots: np.ndarray  # uint64 (n,)
    nulls: np.ndarray | None  # bool (n,)
    var_sizes: np.ndarray | None = None  # int64 (n,): bytes reserved in the variable part (8-aligned)
    var_low: np.ndarray | None = None  # uint64 (n,): low 32 bits of the slot of a row with var bytes
    writer: Callable[[np.ndarray, np.ndarray], None] | None = None  # writes the variable bytes


def serialize_columns(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    *,
    precisions: Sequence[int | None] | None = None,
) -> EncodedRows:
    """The BinaryRow bytes (no arity prefix, row kind ``+I``) of every row of ``columns``.

    Byte-identical to :func:`serialize_row_no_prefix` applied row by row, but computed with numpy
    over whole columns. Raises :class:`UnsupportedError` for non-atomic types.
    """
    encoded = _encode_columns(columns, precisions, "serialize_columns")
    return _serialize(encoded, len(columns[0]))


def hashable_rows(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    *,
    precisions: Sequence[int | None] | None = None,
) -> list[np.ndarray | int] | EncodedRows:
    """The BinaryRows of :func:`serialize_columns`, in the cheapest form to hash: when no field
    has a variable part, their 32-bit words column by column (uint32 arrays; a word equal in every
    row, such as the header of rows without nulls, as an int), with no rows x width buffer;
    otherwise the serialized rows. The columns are encoded once either way."""
    encoded = _encode_columns(columns, precisions, "hashable_rows")
    if any(col.var_sizes is not None for col in encoded):
        return _serialize(encoded, len(columns[0]))
    header: list[np.ndarray | int] = [0] * (header_size(len(encoded)) // 8)  # row kind +I is 0
    for i, col in enumerate(encoded):
        if col.nulls is not None:
            bit = i + 8
            header[bit // 64] = header[bit // 64] | (col.nulls.astype(_LE_U8) << np.uint64(bit % 64))
    words: list[np.ndarray | int] = []
    for word in [*header, *(col.slots for col in encoded)]:
        if isinstance(word, int):
            words += [word & 0xFFFFFFFF, word >> 32]
        else:
            words += [word.astype(np.uint32), (word >> np.uint64(32)).astype(np.uint32)]
    return words


def _encode_columns(columns: Sequence[pa.Array | pa.ChunkedArray], precisions: Sequence[int | None] | None,
                    caller: str) -> list[_Column]:
    arrays = [_plain_array(c) for c in columns]
    if not arrays:
        raise SchemaError(f"{caller} needs at least one column")
    if any(len(a) != len(arrays[0]) for a in arrays):
        raise SchemaError("columns have different lengths")
    encodings = _encodings([a.type for a in arrays], precisions)
    return [_encode_column(a, e) for a, e in zip(arrays, encodings, strict=True)]


def _serialize(encoded: list[_Column], n: int) -> EncodedRows:
    arity = len(encoded)
    head_words = header_size(arity) // 8
    fixed_words = head_words + arity
    fixed_bytes = 8 * fixed_words
    fixed = np.zeros((n, fixed_words), dtype=_LE_U8)

    var_total = np.zeros(n, dtype=np.int64)
    var_starts: list[np.ndarray | None] = []
    for i, col in enumerate(encoded):
        if col.nulls is not None:
            bit = i + 8
            fixed[:, bit // 64] |= col.nulls.astype(_LE_U8) << np.uint64(bit % 64)
        if col.var_sizes is None:
            fixed[:, head_words + i] = col.slots
            var_starts.append(None)
            continue
        relative = var_total + fixed_bytes
        uses_var = col.var_sizes > 0
        assert col.var_low is not None
        pointer = (relative.astype(_LE_U8) << np.uint64(32)) | col.var_low
        fixed[:, head_words + i] = np.where(uses_var, pointer, col.slots)
        var_starts.append(relative)
        var_total += col.var_sizes

    if not any(s is not None for s in var_starts):
        buffer = fixed.reshape(-1).view(np.uint8)
        return EncodedRows(buffer, np.arange(n + 1, dtype=np.int64) * fixed_bytes, fixed_bytes)

    lengths = var_total + fixed_bytes
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    buffer = np.zeros(int(offsets[-1]), dtype=np.uint8)
    width = int(lengths[0]) if n and bool((lengths == lengths[0]).all()) else None
    if width is not None:
        buffer.view(_LE_U8).reshape(n, width // 8)[:, :fixed_words] = fixed
    else:
        words = buffer.view(_LE_U8)
        words[(offsets[:-1] // 8)[:, None] + np.arange(fixed_words)] = fixed
    for col, start in zip(encoded, var_starts, strict=True):
        if start is not None:
            assert col.writer is not None
            col.writer(buffer, offsets[:-1] + start)
    return EncodedRows(buffer, offsets, width)


def _plain_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if pa.types.is_string_view(column.type):
        column = column.cast(pa.large_string())
    elif pa.types.is_binary_view(column.type):
        column = column.cast(pa.large_binary())
    return column


def _fixed_values(arr: pa.Array, dtype: str) -> np.ndarray:
    """The value buffer of a fixed-width array as numpy (zero copy, slice offset applied)."""
    data = np.frombuffer(arr.buffers()[1], dtype=np.dtype(dtype))
    return data[arr.offset : arr.offset + len(arr)]


def _null_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return arr.is_null().to_numpy(zero_copy_only=False)


def _zero_nulls(slots: np.ndarray, nulls: np.ndarray | None) -> np.ndarray:
    if nulls is not None:
        slots = np.where(nulls, np.uint64(0), slots)
    return slots


def _encode_column(arr: pa.Array, maybe_enc: FieldEncoding | None) -> _Column:
    n = len(arr)
    if n == 0:
        return _Column(np.zeros(0, dtype=_LE_U8), None)
    if maybe_enc is None and arr.null_count == n:
        return _Column(np.zeros(n, dtype=_LE_U8), np.ones(n, dtype=bool))
    enc = _require(maybe_enc, arr.type)
    nulls = _null_mask(arr)
    kind = enc.kind
    if kind is FieldKind.BOOLEAN:
        values = pc.fill_null(arr, False).to_numpy(zero_copy_only=False)
        return _Column(values.astype(_LE_U8), nulls)
    if kind in (FieldKind.TINYINT, FieldKind.SMALLINT, FieldKind.INT, FieldKind.FLOAT):
        unsigned = {FieldKind.TINYINT: "<u1", FieldKind.SMALLINT: "<u2"}.get(kind, "<u4")
        return _Column(_zero_nulls(_fixed_values(arr, unsigned).astype(_LE_U8), nulls), nulls)
    if kind in (FieldKind.BIGINT, FieldKind.DOUBLE):
        return _Column(_zero_nulls(_fixed_values(arr, "<u8"), nulls), nulls)
    if kind is FieldKind.DATE:
        if pa.types.is_date64(arr.type):
            days = np.floor_divide(_fixed_values(arr, "<i8"), 86_400_000).astype(np.int32)
        else:
            days = _fixed_values(arr, "<i4")
        return _Column(_zero_nulls(days.view(np.uint32).astype(_LE_U8), nulls), nulls)
    if kind is FieldKind.TIME:
        return _Column(_zero_nulls(_time_millis(arr).view(np.uint32).astype(_LE_U8), nulls), nulls)
    if kind is FieldKind.TIMESTAMP:
        return _encode_timestamp(arr, enc, nulls)
    if kind is FieldKind.DECIMAL:
        return _encode_decimal(arr, enc, nulls)
    return _encode_bytes(arr, nulls)


def _time_millis(arr: pa.Array) -> np.ndarray:
    unit = arr.type.unit
    if pa.types.is_time32(arr.type):
        values = _fixed_values(arr, "<i4")
        return values * np.int32(1000) if unit == "s" else values
    values = _fixed_values(arr, "<i8")
    return np.floor_divide(values, 1_000 if unit == "us" else 1_000_000).astype(np.int32)


def _timestamp_millis_nanos(arr: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """(epoch millis, nano of millisecond or None if always 0) of a timestamp array."""
    values = _fixed_values(arr, "<i8")
    unit = arr.type.unit
    if unit == "s":
        return values * np.int64(1000), None
    if unit == "ms":
        return values, None
    per_milli = 1_000 if unit == "us" else 1_000_000
    millis, rest = np.divmod(values, per_milli)
    return millis, rest * (1_000_000 // per_milli)


def _encode_timestamp(arr: pa.Array, enc: FieldEncoding, nulls: np.ndarray | None) -> _Column:
    millis, nanos = _timestamp_millis_nanos(arr)
    if enc.compact:
        return _Column(_zero_nulls(millis.view(_LE_U8), nulls), nulls)
    n = len(arr)
    low = np.zeros(n, dtype=_LE_U8) if nanos is None else _zero_nulls(nanos.astype(_LE_U8), nulls)
    stored = _zero_nulls(millis.view(_LE_U8), nulls)

    def write(buffer: np.ndarray, dest: np.ndarray) -> None:
        buffer.view(_LE_U8)[dest // 8] = stored

    return _Column(low, nulls, np.full(n, 8, dtype=np.int64), low, write)


def _decimal_words(arr: pa.Array) -> np.ndarray:
    """(n, 2) little-endian uint64 words of the 128-bit two's complement unscaled values."""
    width = arr.type.byte_width // 8
    words = np.frombuffer(arr.buffers()[1], dtype=_LE_U8).reshape(-1, width)
    return words[arr.offset : arr.offset + len(arr), :2]


def _encode_decimal(arr: pa.Array, enc: FieldEncoding, nulls: np.ndarray | None) -> _Column:
    words = _decimal_words(arr)
    if enc.compact:
        return _Column(_zero_nulls(np.ascontiguousarray(words[:, 0]), nulls), nulls)
    n = len(arr)
    big_endian = np.ascontiguousarray(words).view(np.uint8).reshape(n, 16)[:, ::-1]
    fill = np.where(big_endian[:, 0] >= 0x80, np.uint8(0xFF), np.uint8(0))
    # A leading byte is redundant when it is pure sign and the next byte carries the same sign bit.
    redundant = (big_endian[:, :15] == fill[:, None]) & ((big_endian[:, 1:] & 0x80) == (fill & 0x80)[:, None])
    skip = np.logical_and.accumulate(redundant, axis=1).sum(axis=1)
    index = np.arange(16) + skip[:, None]
    minimal = np.take_along_axis(big_endian, np.minimum(index, 15), axis=1)
    minimal[index > 15] = 0
    if nulls is not None:
        minimal[nulls] = 0
    sizes = _zero_nulls((16 - skip).astype(_LE_U8), nulls)

    def write(buffer: np.ndarray, dest: np.ndarray) -> None:
        buffer[dest[:, None] + np.arange(16)] = minimal

    return _Column(sizes, nulls, np.full(n, 16, dtype=np.int64), sizes, write)


# _PREFIX_MASKS[k] keeps the first k bytes of a little-endian word (k = 0..8).
_PREFIX_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=_LE_U8)


def _encode_bytes(arr: pa.Array, nulls: np.ndarray | None) -> _Column:
    n = len(arr)
    if pa.types.is_fixed_size_binary(arr.type):
        w = arr.type.byte_width
        starts = (np.arange(n, dtype=np.int64) + arr.offset) * w
        lengths = np.full(n, w, dtype=np.int64)
        data_buffer = arr.buffers()[1]
    else:
        offset_type = "<i8" if arr.type in (pa.large_string(), pa.large_binary()) else "<i4"
        all_offsets = np.frombuffer(arr.buffers()[1], dtype=np.dtype(offset_type))
        value_offsets = all_offsets[arr.offset : arr.offset + n + 1].astype(np.int64)
        starts = value_offsets[:-1]
        lengths = np.diff(value_offsets)
        data_buffer = arr.buffers()[2]
    if nulls is not None:
        lengths = np.where(nulls, 0, lengths)
    data = np.zeros(8, dtype=np.uint8)
    if data_buffer is not None and data_buffer.size:
        data = np.concatenate([np.frombuffer(data_buffer, dtype=np.uint8), data])
    # Read 8 bytes at every start (the data is padded with 8 zeros), then keep the first `len`.
    windows = np.lib.stride_tricks.as_strided(data, shape=(len(data) - 7, 8), strides=(1, 1))
    inline = lengths <= 7
    all_inline = bool(inline.all())
    raw = windows[starts if all_inline else np.where(inline, starts, 0)].view(_LE_U8).reshape(n)
    short = np.minimum(lengths, 7)
    slots = (raw & _PREFIX_MASKS[short]) | ((short.astype(_LE_U8) | np.uint64(0x80)) << np.uint64(56))
    if nulls is not None:
        slots[nulls] = 0
    if all_inline:
        return _Column(slots, nulls)
    long_rows = ~inline
    var_sizes = np.where(long_rows, (lengths + 7) // 8 * 8, 0)
    var_low = lengths.astype(_LE_U8)

    def write(buffer: np.ndarray, dest: np.ndarray) -> None:
        # Copy 8 bytes at a time: word w of every value still longer than 8 * w bytes, with the
        # bytes past its end masked to zero (Java zero-pads the variable part).
        words = buffer.view(_LE_U8)
        rows = np.flatnonzero(long_rows)
        word = 0
        while len(rows):
            remaining = lengths[rows] - 8 * word
            chunk = windows[starts[rows] + 8 * word].view(_LE_U8).reshape(len(rows))
            chunk &= _PREFIX_MASKS[np.minimum(remaining, 8)]
            words[dest[rows] // 8 + word] = chunk
            word += 1
            rows = rows[remaining > 8]

    return _Column(slots, nulls, var_sizes, var_low, write)
