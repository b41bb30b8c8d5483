"""Paimon's file index bytes: the container, FastHash (XXH64 and Thomas Wang's hash), the bloom
filter and the bitmap, checked against reference values and Paimon's layouts, and with
hypothesis for the one property pruning relies on: no false negatives."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from paimonflow.core.data.types import DataType
from paimonflow.core.meta.fileindex.bitmap import BitmapIndexKeys, build_bitmap
from paimonflow.core.meta.fileindex.bloom import BloomFilter, bloom_size
from paimonflow.core.meta.fileindex.container import MAGIC, java_utf, read_container, write_container
from paimonflow.core.meta.fileindex.hashing import fast_hash, thomas_wang_hash, xxh64

STRING, BIGINT, INT = DataType(root="VARCHAR", length=100), DataType(root="BIGINT"), DataType(root="INT")

# XXH64 (seed 0) of bytes (i * 37 + 11) % 256 for i < n, from the reference implementation
XXH64_VECTORS = {0: 17241709254077376921, 1: 17695417848494312630, 3: 2504147801275715367,
                 4: 18095002551327804821, 5: 11322399976017425011, 8: 6326197883652792858,
                 12: 3410262867197533796, 31: 16474420504532985006, 32: 14730019472659778349,
                 33: 3885561414168193074, 63: 13807767780731499146, 64: 1539330455486250748,
                 100: 5199092852817043491}


def _signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


def _java_thomas_wang(key: int) -> int:
    """Java's long arithmetic, one value at a time (the reference the vectorized hash must match)."""
    mask = (1 << 64) - 1

    def shr(x: int, n: int) -> int:  # Java's signed >>
        return (_signed(x) >> n) & mask

    key &= mask
    key = (~key + (key << 21)) & mask
    key ^= shr(key, 24)
    key = (key + (key << 3) + (key << 8)) & mask
    key ^= shr(key, 14)
    key = (key + (key << 2) + (key << 4)) & mask
    key ^= shr(key, 28)
    key = (key + (key << 31)) & mask
    return _signed(key)


def test_xxh64_matches_the_reference_for_every_tail_length():
    values = [bytes((i * 37 + 11) % 256 for i in range(n)) for n in XXH64_VECTORS]
    got = xxh64(pa.array(values, pa.binary()))
    assert got.tolist() == [_signed(v) for v in XXH64_VECTORS.values()]
    assert fast_hash(pa.array(["héllo wörld"]), STRING).tolist() == [_signed(6918685708591841596)]


@given(st.lists(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), max_size=50))
def test_thomas_wang_hash_is_javas_long_arithmetic(keys):
    assert thomas_wang_hash(np.array(keys, dtype=np.int64)).tolist() == [_java_thomas_wang(k) for k in keys]


def test_bloom_sizing_is_paimons():
    assert bloom_size(1_000_000, 0.1) == (4792536, 3)  # (int)(-n ln p / ln2^2) = 4792529, +7 to a byte
    assert bloom_size(100, 0.01)[1] == 7


@settings(max_examples=60, deadline=None)
@given(present=st.lists(st.text(max_size=40), min_size=1, max_size=200),
       items=st.integers(min_value=1, max_value=500), fpp=st.floats(min_value=0.001, max_value=0.5))
def test_bloom_filter_has_no_false_negatives(present, items, fpp):
    hashes = fast_hash(pa.array(present), STRING)
    bloom = BloomFilter.from_bytes(BloomFilter.build(hashes, items=items, fpp=fpp).to_bytes())
    assert bloom is not None and bloom.might_contain(hashes).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), min_size=1, max_size=300))
def test_bloom_filter_of_integers_has_no_false_negatives(values):
    hashes = fast_hash(pa.array(values, pa.int64()), BIGINT)
    bloom = BloomFilter.build(hashes, items=len(values), fpp=0.05)
    assert bloom.might_contain(hashes).all()


def test_bloom_filter_rejects_most_absent_values():
    bloom = BloomFilter.build(fast_hash(pa.array(range(1000), pa.int64()), BIGINT), items=1000, fpp=0.01)
    absent = bloom.might_contain(fast_hash(pa.array(range(10_000, 20_000), pa.int64()), BIGINT))
    assert absent.mean() < 0.03


def test_bloom_body_is_hash_count_then_bits():
    body = BloomFilter.build(fast_hash(pa.array([7], pa.int64()), BIGINT), items=10, fpp=0.1).to_bytes()
    bits, functions = bloom_size(10, 0.1)
    assert struct.unpack(">i", body[:4])[0] == functions and len(body) == 4 + bits // 8
    assert sum(bin(b).count("1") for b in body[4:]) <= functions


def test_container_layout_is_paimons():
    data = write_container({"a": {"bloom-filter": b"xyz", "bitmap": b"12"}, "b": {"bitmap": b"Q"}})
    magic, version, head_length, columns = struct.unpack_from(">qiii", data)
    assert (magic, version, columns) == (MAGIC, 1, 2)
    assert data[head_length:] == b"xyz12Q" and data[head_length - 4:head_length] == b"\0\0\0\0"
    assert data[20:20 + 3] == java_utf("a")
    container = read_container(data)
    assert container is not None
    assert container.bodies == {"a": {"bloom-filter": b"xyz", "bitmap": b"12"}, "b": {"bitmap": b"Q"}}


def test_java_utf_is_modified_utf8():
    assert java_utf("a\0é") == b"\x00\x05a\xc0\x80\xc3\xa9"
    assert java_utf("\U0001F600") == b"\x00\x06\xed\xa0\xbd\xed\xb8\x80"


@pytest.mark.parametrize("data", [b"", b"garbage", struct.pack(">qiii", MAGIC, 2, 20, 0),
                                  struct.pack(">qiii", MAGIC + 1, 1, 20, 0)])
def test_unreadable_container_is_none(data):
    assert read_container(data) is None


def test_truncated_container_is_none():
    data = write_container({"a": {"bloom-filter": b"x" * 50}})
    assert read_container(data[:-10]) is None
    assert read_container(data[:25]) is None


def test_bitmap_v1_layout_and_keys():
    column = pa.array(["x", "y", "x", None, "z", "x", None], pa.string())
    body = build_bitmap(column, STRING)
    assert body[0] == 1
    rows, distinct, has_null = struct.unpack_from(">ii?", body, 1)
    assert (rows, distinct, has_null) == (7, 3, True)
    keys = BitmapIndexKeys.from_bytes(body, STRING)
    assert keys is not None and keys.keys == {b"x", b"y", b"z"} and keys.has_null
    # x is on rows 0, 2, 5: its body is a portable Roaring bitmap; the null bitmap comes first
    nulls = BitMap([3, 6]).serialize()
    assert BitMap([0, 2, 5]).serialize() in body and body.index(nulls) < body.index(BitMap([0, 2, 5]).serialize())


def test_bitmap_single_rows_store_negative_offsets():
    body = build_bitmap(pa.array([5, 6], pa.int32()), INT)
    # version, rows, distinct, no null, then (5, -1 - 0) and (6, -1 - 1)
    assert body == struct.pack(">Bii?iiii", 1, 2, 2, False, 5, -1, 6, -2)


def test_bitmap_v2_keys_are_read():
    # a version-2 body as Paimon 2.x writes it: one block holding keys 3 and 9
    entries = struct.pack(">i", 2) + struct.pack(">iii", 3, -1, -1) + struct.pack(">iii", 9, -2, -1)
    body = struct.pack(">Bii?", 2, 2, 2, False) + struct.pack(">i", 1) + struct.pack(">ii", 3, 0) \
        + struct.pack(">i", len(entries)) + entries
    keys = BitmapIndexKeys.from_bytes(body, INT)
    assert keys is not None and keys.keys == {3, 9} and not keys.has_null


def test_corrupt_bitmap_is_none():
    body = build_bitmap(pa.array(["a", "b"], pa.string()), STRING)
    assert BitmapIndexKeys.from_bytes(body[:-3], STRING) is None
    assert BitmapIndexKeys.from_bytes(b"\x07" + body[1:], STRING) is None


def test_timestamps_hash_as_millis_or_micros_by_precision():
    from datetime import datetime

    at = datetime(2026, 11, 20, 8, 30, 15, 123456)
    micros = int((at - datetime(1970, 1, 1)).total_seconds() * 1_000_000)
    low = fast_hash(pa.array([at], pa.timestamp("ms")), DataType(root="TIMESTAMP", precision=3))
    high = fast_hash(pa.array([at], pa.timestamp("us")), DataType(root="TIMESTAMP", precision=6))
    assert low.tolist() == [_java_thomas_wang(micros // 1000)]
    assert high.tolist() == [_java_thomas_wang(micros)]


def test_floats_hash_their_ieee_bits_with_javas_nan():
    got = fast_hash(pa.array([1.5, float("nan")], pa.float64()), DataType(root="DOUBLE"))
    assert got.tolist() == [_java_thomas_wang(struct.unpack(">q", struct.pack(">d", 1.5))[0]),
                            _java_thomas_wang(0x7FF8000000000000)]
    dates = fast_hash(pa.array([19000], pa.int32()).cast(pa.date32()), DataType(root="DATE"))
    assert dates.tolist() == [_java_thomas_wang(19000)]
