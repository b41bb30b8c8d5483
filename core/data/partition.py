"""Partition directories as Paimon names them: ``k1=v1/k2=v2`` with Java's escaping.

A partition value becomes a string the way Java's ``InternalRowPartitionComputer`` does it, then
``PartitionPathUtils.escapePathName`` escapes both key and value. Two renderings exist, chosen by the
table option ``partition.legacy-name`` (default ``true`` in Paimon and pypaimon):

* legacy (``toString()`` of Paimon's internal value): DATE as epoch days (``19723``), TIME as milli
  of day, TIMESTAMP as Java ``LocalDateTime.toString()`` (``2024-01-02T03:04:05.123``), TIMESTAMP_LTZ
  with UTC fields; BINARY has no stable legacy string and is rejected;
* non-legacy (cast to STRING): DATE ``yyyy-MM-dd``, TIME ``HH:mm:ss[.f]`` and TIMESTAMP
  ``yyyy-MM-dd HH:mm:ss[.f]`` by precision, TIMESTAMP_LTZ in ``time_zone`` (Java uses the JVM's
  default zone; we default to UTC), BINARY decoded as UTF-8.

Both render BOOLEAN ``true``/``false``, integers in decimal, DECIMAL as a plain string at the type's
scale, FLOAT/DOUBLE as Java's ``Float/Double.toString`` (JDK 19+ shortest form), strings as is. A
null value or one whose string is empty or whitespace (Java's ``Character.isWhitespace``) becomes
the default partition name (``partition.default-name``, ``__DEFAULT_PARTITION__``).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
import struct
import unicodedata
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataError, SchemaError, UnsupportedError
from ..predicate import Predicate, col
from .binary_row import FieldEncoding, FieldKind, epoch_millis_nanos, field_encoding, unscaled_decimal
from .keys import stable_integer_order

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"

_ESCAPED = frozenset(chr(c) for c in range(0x20)) | frozenset("\x7f\"#%'*/:=?\\{}[]^")
_JAVA_NON_BREAKING = frozenset("\u00a0\u2007\u202f")
_JAVA_SPACE_CONTROLS = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")
_UTC = dt.UTC
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)


# ------------------------------------------------------------------------------------------------
# Escaping
# ------------------------------------------------------------------------------------------------


def escape_path_name(name: str) -> str:
    """Java ``PartitionPathUtils.escapePathName``: ``%XX`` (upper-case hex) for control characters,
    DEL and ``" # % ' * / : = ? \\ { } [ ] ^``; everything else (spaces, non-ASCII) is kept.

    Raises ``ValueError`` for an empty name, as Java does.
    """
    if not name:
        raise ValueError("a path name must not be empty")
    if not any(c in _ESCAPED for c in name):
        return name
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in name)


def _java_hex_digit(c: str) -> int:
    """Java ``Character.digit(c, 16)``: Unicode decimal digits, ASCII and full-width a-f."""
    value = unicodedata.decimal(c, -1)
    if value >= 0:
        return value
    lower = c.lower()
    if "a" <= lower <= "f":
        return ord(lower) - ord("a") + 10
    if "\uff41" <= lower <= "\uff46":
        return ord(lower) - 0xFF41 + 10
    return -1


def _java_parse_hex(text: str) -> int | None:
    """Java ``Integer.parseInt(text, 16)`` of a two-character string, or None where Java throws."""
    sign = 1
    digits = text
    if text[0] in "+-":
        sign, digits = (-1 if text[0] == "-" else 1), text[1:]
    if not digits:
        return None
    value = 0
    for c in digits:
        d = _java_hex_digit(c)
        if d < 0:
            return None
        value = value * 16 + d
    return sign * value


def unescape_path_name(name: str) -> str:
    """Java ``PartitionPathUtils.unescapePathName``: the inverse of :func:`escape_path_name`.

    Like Java, a ``%`` not followed by two characters that parse as a non-negative hex number is
    kept as is.
    """
    out: list[str] = []
    i = 0
    while i < len(name):
        c = name[i]
        if c == "%" and i + 2 < len(name):
            code = _java_parse_hex(name[i + 1 : i + 3])
            if code is not None and code >= 0:
                out.append(chr(code))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _is_java_whitespace(c: str) -> bool:
    if c in _JAVA_SPACE_CONTROLS:
        return True
    return unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in _JAVA_NON_BREAKING


def _is_blank(text: str) -> bool:
    """Java ``StringUtils.isNullOrWhitespaceOnly`` (for a non-null string)."""
    return all(_is_java_whitespace(c) for c in text)


# ------------------------------------------------------------------------------------------------
# Java's string forms
# ------------------------------------------------------------------------------------------------


def _shortest_decimal(value: float, single: bool) -> Decimal:
    """JDK 19+ ``Double/Float.toString`` digit choice: the shortest decimal that rounds to
    ``value`` (at least 2 digits considered), the closest one if several, even digit on a tie."""
    fmt = "<f" if single else "<d"
    bits = struct.pack(fmt, value)
    exact = Decimal(struct.unpack(fmt, bits)[0])

    def candidates(digits: int) -> list[Decimal]:
        quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
        found = []
        for rounding in (ROUND_FLOOR, ROUND_CEILING):
            candidate = exact.quantize(quantum, rounding=rounding)
            try:
                if struct.pack(fmt, float(candidate)) == bits:
                    found.append(candidate)
            except OverflowError:  # rounds beyond the largest float
                continue
        return found

    for digits in range(1, 18):
        found = candidates(digits)
        if found:
            if digits == 1:
                found = candidates(2) or found
            found.sort(key=lambda d: (abs(d - exact), int(d.as_tuple().digits[-1]) % 2))
            return found[0].normalize()
    raise AssertionError(f"no decimal round-trips {value!r}")  # pragma: no cover


def _java_floating_to_string(value: float, single: bool) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if single:
        magnitude = struct.unpack("<f", struct.pack("<f", magnitude))[0]
    chosen = _shortest_decimal(magnitude, single)
    if Decimal("0.001") <= Decimal(magnitude) < Decimal(10_000_000):
        text = format(chosen, "f")
        return sign + (text if "." in text else text + ".0")
    digits = "".join(map(str, chosen.as_tuple().digits))
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{chosen.adjusted()}"


def java_double_to_string(value: float) -> str:
    """Java's ``Double.toString`` (JDK 19 and later; older JDKs sometimes print more digits)."""
    return _java_floating_to_string(value, single=False)


def java_float_to_string(value: float) -> str:
    """Java's ``Float.toString`` of ``value`` rounded to float32 (JDK 19 and later)."""
    return _java_floating_to_string(value, single=True)


def _local_date_time(millis: int, nanos: int, zone: dt.tzinfo | None) -> tuple[dt.datetime, int]:
    """(wall-clock datetime to the second, nano of second) of an epoch instant, in ``zone`` or UTC."""
    seconds, milli = divmod(millis, 1000)
    try:
        wall = _EPOCH + dt.timedelta(seconds=seconds)
        if zone is not None:
            wall = wall.replace(tzinfo=_UTC).astimezone(zone).replace(tzinfo=None)
    except OverflowError as exc:
        raise DataError(f"timestamp {millis} ms is outside the years 1..9999") from exc
    return wall, milli * 1_000_000 + nanos


def _java_local_date_time_string(wall: dt.datetime, nano: int) -> str:
    """Java ``LocalDateTime.toString()``: ``yyyy-MM-ddTHH:mm[:ss[.SSS|.SSSSSS|.SSSSSSSSS]]``."""
    text = f"{wall.year:04d}-{wall.month:02d}-{wall.day:02d}T{wall.hour:02d}:{wall.minute:02d}"
    if wall.second or nano:
        text += f":{wall.second:02d}"
    if nano:
        if nano % 1_000_000 == 0:
            text += f".{nano // 1_000_000:03d}"
        elif nano % 1000 == 0:
            text += f".{nano // 1000:06d}"
        else:
            text += f".{nano:09d}"
    return text


def _java_format_timestamp(wall: dt.datetime, nano: int, precision: int) -> str:
    """Paimon ``DateTimeUtils.formatTimestamp``: nine fraction digits stripped of trailing zeros
    down to ``precision`` digits."""
    text = (
        f"{wall.year:04d}-{wall.month:02d}-{wall.day:02d} {wall.hour:02d}:{wall.minute:02d}:{wall.second:02d}"
    )
    fraction = f"{nano:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    return f"{text}.{fraction}" if fraction else text


def _java_format_time(millis_of_day: int, precision: int) -> str:
    """Paimon ``DateTimeUtils`` TIME to string: digits of the millis, stopping at the first all-zero
    rest (so 0 ms at precision 3 prints ``.0``)."""
    millis_of_day %= 86_400_000
    seconds, milli = divmod(millis_of_day, 1000)
    text = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if precision > 0:
        digits = []
        while precision > 0:
            digits.append(str(milli // 100))
            milli = milli % 100 * 10
            if milli == 0:
                break
            precision -= 1
        text += "." + "".join(digits)
    return text


def partition_value_to_string(
    value: object,
    encoding: FieldEncoding,
    *,
    legacy: bool = True,
    time_zone: dt.tzinfo = _UTC,
) -> str | None:
    """The string Paimon makes of one partition value before the default-name rule (None for null).

    Raises :class:`DataError` for a value that does not fit the type and
    :class:`UnsupportedError` for a BINARY value with legacy names.
    """
    if value is None:
        return None
    kind = encoding.kind
    try:
        if kind is FieldKind.BOOLEAN:
            return "true" if value else "false"
        if kind in (FieldKind.TINYINT, FieldKind.SMALLINT, FieldKind.INT, FieldKind.BIGINT):
            return str(int(value))  # type: ignore[call-overload]
        if kind is FieldKind.FLOAT:
            return java_float_to_string(float(value))  # type: ignore[arg-type]
        if kind is FieldKind.DOUBLE:
            return java_double_to_string(float(value))  # type: ignore[arg-type]
        if kind is FieldKind.DECIMAL:
            unscaled = unscaled_decimal(value, encoding.precision, encoding.scale)
            return format(Decimal(f"{unscaled}E-{encoding.scale}"), "f")
        if kind is FieldKind.STRING:
            if not isinstance(value, str):
                raise DataError(f"expected str for a STRING partition, got {value!r}")
            return value
        if kind is FieldKind.BINARY:
            if legacy:
                raise UnsupportedError(
                    "a BINARY partition has no legacy name; set partition.legacy-name=false"
                )
            return bytes(value).decode("utf-8", errors="replace")  # type: ignore[call-overload]
        if kind is FieldKind.DATE:
            if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
                raise DataError(f"expected datetime.date for a DATE partition, got {value!r}")
            return str((value - _EPOCH_DATE).days) if legacy else value.isoformat()
        if kind is FieldKind.TIME:
            if not isinstance(value, dt.time):
                raise DataError(f"expected datetime.time for a TIME partition, got {value!r}")
            millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
            return str(millis) if legacy else _java_format_time(millis, encoding.precision)
        if kind is FieldKind.TIMESTAMP:
            millis, nanos = epoch_millis_nanos(value, encoding.local_time_zone)
            zone = time_zone if encoding.local_time_zone and not legacy else None
            wall, nano = _local_date_time(millis, nanos, zone)
            if legacy:
                return _java_local_date_time_string(wall, nano)
            return _java_format_timestamp(wall, nano, encoding.precision)
    except (TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"partition value {value!r} does not fit {encoding.arrow_type}") from exc
    raise UnsupportedError(f"cannot render {kind} as a partition value")  # pragma: no cover


def _encodings(types: Sequence[pa.DataType], precisions: Sequence[int | None] | None) -> list[FieldEncoding]:
    if precisions is None:
        return [field_encoding(t) for t in types]
    if len(precisions) != len(types):
        raise SchemaError(f"{len(precisions)} precisions given for {len(types)} partition keys")
    return [field_encoding(t, p) for t, p in zip(types, precisions, strict=True)]


def partition_spec(
    keys: Sequence[str],
    values: Sequence[object],
    types: Sequence[pa.DataType],
    default_name: str = DEFAULT_PARTITION_NAME,
    *,
    legacy: bool = True,
    precisions: Sequence[int | None] | None = None,
    time_zone: dt.tzinfo = _UTC,
) -> dict[str, str]:
    """Java ``generatePartValues``: partition key -> value string (unescaped), in key order.

    Null, empty and whitespace-only strings become ``default_name``.
    """
    if not len(keys) == len(values) == len(types):
        raise SchemaError(f"{len(keys)} keys, {len(values)} values and {len(types)} types do not match")
    spec: dict[str, str] = {}
    for key, value, encoding in zip(keys, values, _encodings(types, precisions), strict=True):
        text = partition_value_to_string(value, encoding, legacy=legacy, time_zone=time_zone)
        spec[key] = default_name if text is None or _is_blank(text) else text
    return spec


def partition_path(
    keys: Sequence[str],
    values: Sequence[object],
    types: Sequence[pa.DataType],
    default_name: str = DEFAULT_PARTITION_NAME,
    *,
    legacy: bool = True,
    precisions: Sequence[int | None] | None = None,
    time_zone: dt.tzinfo = _UTC,
) -> str:
    """The relative partition directory ``k1=v1/k2=v2`` (no trailing slash; ``""`` with no keys).

    Keys and values are escaped with :func:`escape_path_name`; see :func:`partition_spec` for how
    values become strings.
    """
    spec = partition_spec(
        keys, values, types, default_name, legacy=legacy, precisions=precisions, time_zone=time_zone
    )
    return "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in spec.items())


# ------------------------------------------------------------------------------------------------
# Parsing a partition directory back
# ------------------------------------------------------------------------------------------------

_TRUE = frozenset(["t", "true", "y", "yes", "1"])
_FALSE = frozenset(["f", "false", "n", "no", "0"])
_INT_RANGES = {
    FieldKind.TINYINT: 1 << 7,
    FieldKind.SMALLINT: 1 << 15,
    FieldKind.INT: 1 << 31,
    FieldKind.BIGINT: 1 << 63,
}
_INTEGER = re.compile(r"[+-]?\d+")
_DATE = re.compile(r"(\d{1,4})-(\d{1,2})-(\d{1,2})")
_TIME = re.compile(r"(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?")


def _parse_time_text(text: str) -> tuple[dt.time, int]:
    match = _TIME.fullmatch(text)
    if not match:
        raise ValueError(f"not a time: {text!r}")
    hour, minute, second, fraction = match.groups()
    nanos = int((fraction or "").ljust(9, "0"))
    return dt.time(int(hour), int(minute), int(second or 0), nanos // 1000), nanos


def _parse_value(text: str, enc: FieldEncoding, legacy: bool, time_zone: dt.tzinfo) -> object:
    kind = enc.kind
    if kind is FieldKind.BOOLEAN:
        lowered = text.strip().lower()
        if lowered in _TRUE or lowered in _FALSE:
            return lowered in _TRUE
        raise ValueError(f"not a boolean: {text!r}")
    if kind in _INT_RANGES:
        number = int(text.strip())
        if not -_INT_RANGES[kind] <= number < _INT_RANGES[kind]:
            raise ValueError(f"{number} out of range for {kind.value}")
        return number
    if kind is FieldKind.FLOAT:
        return struct.unpack("<f", struct.pack("<f", float(text.strip())))[0]
    if kind is FieldKind.DOUBLE:
        return float(text.strip())
    if kind is FieldKind.DECIMAL:
        unscaled = unscaled_decimal(Decimal(text.strip()), enc.precision, enc.scale)
        return Decimal(f"{unscaled}E-{enc.scale}")
    if kind is FieldKind.STRING:
        return text
    if kind is FieldKind.BINARY:
        return text.encode("utf-8")
    if kind is FieldKind.DATE:
        if _INTEGER.fullmatch(text):
            return _EPOCH_DATE + dt.timedelta(days=int(text))
        match = _DATE.fullmatch(text)
        if not match:
            raise ValueError(f"not a date: {text!r}")
        return dt.date(*map(int, match.groups()))
    if kind is FieldKind.TIME:
        if _INTEGER.fullmatch(text):
            seconds, milli = divmod(int(text) % 86_400_000, 1000)
            return dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, milli * 1000)
        return _parse_time_text(text)[0]
    if kind is FieldKind.TIMESTAMP:
        date_text, _, time_text = text.replace("T", " ", 1).partition(" ")
        day = _parse_value(date_text, field_encoding(pa.date32()), legacy, time_zone)
        clock = _parse_time_text(time_text)[0] if time_text else dt.time()
        value = dt.datetime.combine(day, clock)  # type: ignore[arg-type]
        if not enc.local_time_zone:
            return value
        zone = _UTC if legacy else time_zone
        return value.replace(tzinfo=zone).astimezone(_UTC)
    raise UnsupportedError(f"cannot parse {kind}")  # pragma: no cover


def parse_partition_value(text: str, arrow_type: pa.DataType, *, key: str = "partition",
                          default_name: str = DEFAULT_PARTITION_NAME) -> object:
    """One partition value from its text in a partition spec (``hh=10``, ``dt=2026-11-21``, as
    Paimon's procedures and the jobs' ``--partition`` take them), parsed as a partition directory
    is (:func:`parse_partition_path`); ``default_name`` is None. Raises :class:`DataError` naming
    ``key`` if the text is no value of ``arrow_type``."""
    if text == default_name:
        return None
    encoding = field_encoding(arrow_type)
    try:
        return _parse_value(text, encoding, True, _UTC)
    except (ValueError, InvalidOperation, OverflowError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"partition value {text!r} of {key} is not a {encoding.kind.value}") from exc


def parse_partition_path(
    path: str,
    keys: Sequence[str],
    types: Sequence[pa.DataType],
    default_name: str = DEFAULT_PARTITION_NAME,
    *,
    legacy: bool = True,
    precisions: Sequence[int | None] | None = None,
    time_zone: dt.tzinfo = _UTC,
) -> tuple[object, ...]:
    """Typed partition values from a directory path ending in ``k1=v1/.../kn=vn`` (extra leading
    directories and a trailing slash are ignored).

    ``default_name`` parses to None. DATE and TIME accept both the legacy numbers and the ISO forms;
    TIMESTAMP accepts ``T`` or a space between date and time (TIMESTAMP_LTZ comes back as an aware
    UTC datetime). Raises :class:`DataError` if the path does not name these keys or a value does
    not parse.
    """
    encodings = _encodings(types, precisions)
    if len(keys) != len(encodings):
        raise SchemaError(f"{len(keys)} keys for {len(encodings)} types")
    if not keys:
        return ()
    components = [c for c in path.split("/") if c][-len(keys) :]
    if len(components) != len(keys):
        raise DataError(f"path {path!r} has fewer than {len(keys)} partition directories")
    values: list[object] = []
    for component, key, enc in zip(components, keys, encodings, strict=True):
        raw_key, equals, raw_value = component.partition("=")
        if not equals or not raw_value or unescape_path_name(raw_key) != key:
            raise DataError(f"path component {component!r} is not {key}=<value>")
        text = unescape_path_name(raw_value)
        if text == default_name:
            values.append(None)
            continue
        try:
            values.append(_parse_value(text, enc, legacy, time_zone))
        except (ValueError, InvalidOperation, OverflowError) as exc:
            if isinstance(exc, DataError):
                raise
            raise DataError(f"partition value {text!r} of {key} is not a {enc.kind.value}") from exc
    return tuple(values)


# ------------------------------------------------------------------------------------------------
# Distinct partitions of a table
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionGroups:
    """The distinct partitions of a table and the rows of each.

    ``values[g]`` is the tuple of partition values (Python objects) of group ``g``, groups ordered
    by first appearance; ``group_ids[r]`` is the group of row ``r``; ``row_indices[g]`` holds the
    rows of group ``g`` in ascending order.
    """

    values: list[tuple[object, ...]]
    group_ids: np.ndarray  # int64 (rows,)
    row_indices: list[np.ndarray]  # int64 each

    def __len__(self) -> int:
        return len(self.values)


_SPLIT_ROWS = 1 << 16  # columns at least this long are dictionary-encoded in two halves with a pool


def _codes(column: pa.ChunkedArray | pa.Array, pool: Executor | None = None) -> tuple[np.ndarray, pa.Array]:
    """Dictionary codes (int64, first-appearance order, null its own code) and the dictionary.
    With a ``pool``, a long column's second half is encoded by the pool beside the first."""
    if pool is not None and len(column) >= _SPLIT_ROWS:
        half = len(column) // 2
        second = pool.submit(_indices, column.slice(half))
        codes, dictionary = _indices(column.slice(0, half))
        rest, rest_dictionary = second.result()
        # codes of the second half's values in the whole column's first-appearance order; written
        # straight into the result (no int64 copies of the halves: 10M rows' codes are 80 MB)
        remap, merged = _encode(pa.concat_arrays([dictionary, rest_dictionary]))
        out = np.empty(len(column), dtype=np.int64)
        out[:half] = codes
        tail = remap[len(dictionary):]
        for start in range(0, len(rest), _SPLIT_ROWS * 16):  # slices: take widens int32 indices to a copy
            piece = rest[start : start + _SPLIT_ROWS * 16]
            np.take(tail, piece, out=out[half + start : half + start + len(piece)])
        return out, merged
    return _encode(column)


def _encode(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    codes, dictionary = _indices(column)
    return codes.astype(np.int64, copy=False), dictionary


def _indices(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Dictionary indices (Arrow's own integer type, int32) and the dictionary."""
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    if isinstance(encoded, pa.ChunkedArray):
        chunks = encoded.chunks
        if not chunks:
            return np.zeros(0, dtype=np.int64), pa.array([], column.type)
        dictionary = chunks[0].dictionary
        indices = [c.indices.to_numpy(zero_copy_only=False) for c in chunks]
        return (np.concatenate(indices) if len(indices) > 1 else indices[0]), dictionary
    return encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary


def _dense(codes: np.ndarray) -> tuple[np.ndarray, int]:
    encoded = pc.dictionary_encode(pa.array(codes))
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), len(encoded.dictionary)


def partition_codes(table: pa.Table, keys: Sequence[str], *,
                    pool: Executor | None = None) -> tuple[np.ndarray, list[tuple[object, ...]]]:
    """The partition of every row as a code (int64; codes numbered in order of first appearance)
    and the partition values of each code, without grouping the rows. Nulls are a value of their
    own. With a ``pool`` (two threads), long key columns are hashed half by half in parallel.
    Raises :class:`SchemaError` for an unknown key."""
    rows = table.num_rows
    missing = [k for k in keys if k not in table.column_names]
    if missing:
        raise SchemaError(f"partition keys {missing} are not columns of the table")
    if rows == 0:
        return np.zeros(0, dtype=np.int64), []
    if not keys:
        return np.zeros(rows, dtype=np.int64), [()]
    if len(keys) == 1:  # one key's codes are dense and in first-appearance order already
        codes, dictionary = _codes(table.column(keys[0]), pool)
        return codes, [(v,) for v in dictionary.to_pylist()]
    group_ids, groups = np.zeros(rows, dtype=np.int64), 1
    for key in keys:
        codes, dictionary = _codes(table.column(key), pool)
        size = len(dictionary)
        if groups * size >= 1 << 62:
            group_ids, groups = _dense(group_ids)
        group_ids = group_ids * size + codes
        groups *= size
    group_ids, groups = _dense(group_ids)
    # codes count up in order of first appearance: each first row raises the running maximum
    firsts = np.flatnonzero(np.diff(np.maximum.accumulate(group_ids), prepend=-1))
    columns = [table.column(k).take(pa.array(firsts)).to_pylist() for k in keys]
    return group_ids, [tuple(col[g] for col in columns) for g in range(groups)]


def group_by_partition(table: pa.Table, keys: Sequence[str]) -> PartitionGroups:
    """Group the rows of ``table`` by the values of the partition ``keys`` (numpy/arrow, no per-row
    Python). With no keys every row is in one group with the empty tuple as values.

    Nulls are a value of their own; empty strings and nulls stay different groups even though
    both map to the default partition directory. Raises :class:`SchemaError` for an unknown key.
    """
    group_ids, values = partition_codes(table, keys)
    if not values:
        return PartitionGroups([], group_ids, [])
    return PartitionGroups(values, group_ids, rows_by_code(group_ids, len(values))[1])


def rows_by_code(codes: np.ndarray, count: int, *,
                 pool: Executor | None = None) -> tuple[list[int], list[np.ndarray]]:
    """The codes ``0 <= c < count`` that occur, ascending, and the rows of each, ascending (a
    stable radix sort of the codes). With a ``pool`` and more than 2**16 possible codes, a long
    array's halves are sorted in parallel and each code's rows joined (the first half's rows all
    come before the second's). Every row position is in one int64 array; the rows of a code are
    views of it."""
    if pool is None or len(codes) < _SPLIT_ROWS or count <= 1 << 16 or count > len(codes):
        # up to 2**16 codes the sort is one counting-sort pass over 16-bit digits: faster whole
        # (0.13 s for 10M rows) than in halves joined after, and one copy of the positions, not three
        return _rows_by_code(codes, count, 0)
    half = len(codes) // 2
    second = pool.submit(_order_and_counts, codes[half:], count)
    first_order, first_counts = _order_and_counts(codes[:half], count)
    second_order, second_counts = second.result()
    second_order += half
    # each code's rows of the first half, then of the second, placed into one array (the halves
    # joined code by code would be a second copy of every position: 80 MB for 10M rows)
    counts = first_counts + second_counts
    present = np.flatnonzero(counts)
    out = np.empty(len(codes), dtype=np.int64)
    ends = np.cumsum(counts[present])
    first_ends, second_ends = np.cumsum(first_counts), np.cumsum(second_counts)
    for code, end in zip(present.tolist(), ends.tolist(), strict=True):
        start = end - int(counts[code])
        middle = start + int(first_counts[code])
        out[start:middle] = first_order[first_ends[code] - first_counts[code]:first_ends[code]]
        out[middle:end] = second_order[second_ends[code] - second_counts[code]:second_ends[code]]
    del first_order, second_order
    return present.tolist(), np.split(out, ends[:-1])


def _order_and_counts(codes: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    return stable_integer_order(codes), np.bincount(codes, minlength=count)


def _rows_by_code(codes: np.ndarray, count: int, offset: int) -> tuple[list[int], list[np.ndarray]]:
    if count > max(len(codes), 1 << 16):  # few of many possible codes (partitions x buckets): number those
        present, dense = np.unique(codes, return_inverse=True)
        numbers, rows = _rows_by_code(dense.reshape(-1), len(present), offset)
        return present[numbers].tolist(), rows
    if 1 < count <= 1 << 16 and len(codes) > _SLICE_ROWS:
        return _rows_by_code_sliced(codes, count, offset)
    order = stable_integer_order(codes) if count > 1 else np.arange(len(codes), dtype=np.int64)
    if offset:
        order += offset
    counts = np.bincount(codes, minlength=count)
    present = np.flatnonzero(counts)
    return present.tolist(), np.split(order, np.cumsum(counts[present])[:-1])


_SLICE_ROWS = 1 << 20


def _rows_by_code_sliced(codes: np.ndarray, count: int, offset: int) -> tuple[list[int], list[np.ndarray]]:
    """``_rows_by_code`` of a long array, a slice of rows at a time: each slice is sorted alone and
    its rows of each code copied into their place in one array of positions. The sort's own
    temporaries stay a slice's (a whole 10M-row argsort takes twice the 80 MB result again)."""
    starts = range(0, len(codes), _SLICE_ROWS)
    slice_counts = np.stack([np.bincount(codes[s : s + _SLICE_ROWS], minlength=count) for s in starts])
    counts = slice_counts.sum(axis=0)
    present = np.flatnonzero(counts)
    # where each (slice, code) piece goes: after the code's pieces of the earlier slices
    code_starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    piece_starts = code_starts + np.cumsum(slice_counts, axis=0) - slice_counts
    out = np.empty(len(codes), dtype=np.int64)
    for i, start in enumerate(starts):
        order = stable_integer_order(codes[start : start + _SLICE_ROWS])
        order += start + offset
        within = np.concatenate([[0], np.cumsum(slice_counts[i])])
        for code in np.flatnonzero(slice_counts[i]).tolist():
            n = int(slice_counts[i, code])
            at = int(piece_starts[i, code])
            out[at : at + n] = order[within[code] : within[code] + n]
    return present.tolist(), np.split(out, np.cumsum(counts[present])[:-1])


def partition_predicate(specs: Sequence[Mapping[str, object]] | None, schema: pa.Schema, *,
                        default_name: str = DEFAULT_PARTITION_NAME) -> Predicate | None:
    """The partitions ``specs`` name (``[{"dt": "2026-11-21", "hh": "10"}, ...]``, or'ed), as a
    predicate on the partition columns; None for the whole table (no spec, or an empty one).

    A value given as text (``hh=10``, as the jobs' ``--partition`` and Paimon's procedures take
    it) is parsed as the column's type, as a partition directory is; ``default_name`` (the
    table's ``partition.default-name``) and None both select the null partition (``IS NULL``).
    Any other value is compared as given."""
    if not specs:
        return None
    chosen: Predicate | None = None
    for spec in specs:
        if not spec:
            return None
        terms: list[Predicate] = []
        for key, given in spec.items():
            value = (parse_partition_value(given, schema.field(key).type, key=key, default_name=default_name)
                     if isinstance(given, str) else given)
            terms.append(col(key).is_null() if value is None else col(key) == value)
        clause = functools.reduce(lambda a, b: a & b, terms)
        chosen = clause if chosen is None else chosen | clause
    return chosen
