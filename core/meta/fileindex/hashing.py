"""Paimon's ``FastHash`` of the bloom-filter file index, vectorized over Arrow arrays.

Integers, dates, times and timestamps (as epoch millis for precision <= 3, micros above) are
hashed with Thomas Wang's 64-bit integer hash; floats and doubles with it over their IEEE bits
(NaN canonical, as Java's ``floatToIntBits``); strings and binaries with XXH64 (seed 0) of their
bytes (UTF-8 for strings). Every function takes the non-null values of one column and returns one
signed 64-bit hash per value, computed with numpy (loops only over byte positions, never rows).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...data.types import DataType, TypeRoot

_INTEGER_ROOTS = frozenset({TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT,
                            TypeRoot.DATE, TypeRoot.TIME})
_TIMESTAMP_ROOTS = frozenset({TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ})
_BYTES_ROOTS = frozenset({TypeRoot.CHAR, TypeRoot.VARCHAR, TypeRoot.BINARY, TypeRoot.VARBINARY})
#: The column types Paimon's bloom-filter index hashes (others are refused by Java too).
BLOOM_ROOTS = _INTEGER_ROOTS | _TIMESTAMP_ROOTS | _BYTES_ROOTS | {TypeRoot.FLOAT, TypeRoot.DOUBLE}

_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)


def thomas_wang_hash(keys: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash (Java ``long`` arithmetic: wrapping, ``>>`` signed)."""
    key = np.asarray(keys, dtype=np.int64).copy()
    with np.errstate(over="ignore"):
        key = (~key) + (key << 21)
        key = key ^ (key >> 24)
        key = (key + (key << 3)) + (key << 8)
        key = key ^ (key >> 14)
        key = (key + (key << 2)) + (key << 4)
        key = key ^ (key >> 28)
        key = key + (key << 31)
    return key


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * _P2, 31) * _P1


def _words(data: np.ndarray, positions: np.ndarray, width: int) -> np.ndarray:
    """Little-endian unsigned words of ``width`` bytes starting at each position."""
    gathered = data[positions[:, None] + np.arange(width)]
    return np.ascontiguousarray(gathered).view("<u8" if width == 8 else "<u4").ravel().astype(np.uint64)


def xxh64(values: pa.Array) -> np.ndarray:
    """XXH64 (seed 0) of each value's bytes, as signed 64-bit integers (Java's ``long``)."""
    values = values.cast(pa.large_binary()) if not pa.types.is_large_binary(values.type) else values
    n = len(values)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    values = pc.drop_null(values) if values.null_count else values
    offsets_buf, data_buf = values.buffers()[1], values.buffers()[2]
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[values.offset:values.offset + len(values) + 1]
    raw = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    data = np.concatenate([raw[:offsets[-1]], np.zeros(32, dtype=np.uint8)])
    starts, lengths = offsets[:-1].astype(np.int64), np.diff(offsets).astype(np.int64)
    stripes = lengths // 32
    with np.errstate(over="ignore"):
        h = np.full(len(lengths), _P5, dtype=np.uint64)
        long = np.flatnonzero(stripes > 0)
        if len(long):
            acc = [np.full(len(long), v, dtype=np.uint64)
                   for v in (_P1 + _P2, _P2, np.uint64(0), np.uint64(0) - _P1)]
            for s in range(int(stripes[long].max())):
                active = np.flatnonzero(stripes[long] > s)
                base = starts[long[active]] + 32 * s
                for j in range(4):
                    acc[j][active] = _round(acc[j][active], _words(data, base + 8 * j, 8))
            merged = _rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)
            for j in range(4):
                merged = (merged ^ _round(np.zeros_like(acc[j]), acc[j])) * _P1 + _P4
            h[long] = merged
        h = h + lengths.astype(np.uint64)
        cursor = starts + 32 * stripes
        remaining = lengths - 32 * stripes
        for _ in range(3):  # 8-byte words of the tail
            active = np.flatnonzero(remaining >= 8)
            if not len(active):
                break
            k1 = _round(np.zeros(len(active), dtype=np.uint64), _words(data, cursor[active], 8))
            h[active] = _rotl(h[active] ^ k1, 27) * _P1 + _P4
            cursor[active] += 8
            remaining[active] -= 8
        active = np.flatnonzero(remaining >= 4)
        if len(active):
            h[active] = _rotl(h[active] ^ (_words(data, cursor[active], 4) * _P1), 23) * _P2 + _P3
            cursor[active] += 4
            remaining[active] -= 4
        for _ in range(3):  # single bytes
            active = np.flatnonzero(remaining >= 1)
            if not len(active):
                break
            h[active] = _rotl(h[active] ^ (data[cursor[active]].astype(np.uint64) * _P5), 11) * _P1
            cursor[active] += 1
            remaining[active] -= 1
        h ^= h >> np.uint64(33)
        h *= _P2
        h ^= h >> np.uint64(29)
        h *= _P3
        h ^= h >> np.uint64(32)
    return h.view(np.int64)


def integer_keys(values: pa.Array, data_type: DataType) -> np.ndarray:
    """The Java ``long`` (or int) each non-null value of an integer-like or timestamp column stands
    for: the integer itself, days for DATE, millis of the day for TIME, epoch millis (precision
    <= 3) or micros for timestamps."""
    values = pc.drop_null(values) if values.null_count else values
    root = data_type.root
    if root in _TIMESTAMP_ROOTS:
        unit = values.type.unit
        raw = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
        target = 1_000 if (data_type.precision or 0) <= 3 else 1_000_000
        if per_second >= target:
            return np.floor_divide(raw, per_second // target)
        return raw * (target // per_second)
    if root is TypeRoot.DATE:
        return values.cast(pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64)
    if root is TypeRoot.TIME:
        unit = values.type.unit
        raw = values.cast(pa.int64() if pa.types.is_time64(values.type) else pa.int32())
        ints = raw.to_numpy(zero_copy_only=False).astype(np.int64)
        return ints * 1000 if unit == "s" else ints // {"ms": 1, "us": 1_000, "ns": 1_000_000}[unit]
    return values.to_numpy(zero_copy_only=False).astype(np.int64)


def fast_hash(values: pa.Array, data_type: DataType) -> np.ndarray:
    """Paimon's ``FastHash`` of every non-null value of ``values`` (a column of ``data_type``)."""
    root = data_type.root
    if root in _BYTES_ROOTS:
        return xxh64(values)
    values = pc.drop_null(values) if values.null_count else values
    if root is TypeRoot.FLOAT:
        floats = values.to_numpy(zero_copy_only=False).astype(np.float32)
        bits = floats.view(np.int32).astype(np.int64)
        bits[np.isnan(floats)] = 0x7FC00000
        return thomas_wang_hash(bits)
    if root is TypeRoot.DOUBLE:
        doubles = values.to_numpy(zero_copy_only=False).astype(np.float64)
        bits = doubles.view(np.int64).copy()
        bits[np.isnan(doubles)] = 0x7FF8000000000000
        return thomas_wang_hash(bits)
    return thomas_wang_hash(integer_keys(values, data_type))
