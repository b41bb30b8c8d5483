"""The slice-at-a-time paths of routing (bucket hashing, rows by code, partition codes, one-digit
key order) agree with the whole-array computation they replace for long inputs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pytest

from paimonflow.core.data import bucket as bucket_module
from paimonflow.core.data import partition as partition_module
from paimonflow.core.data.bucket import bucket_ids, buckets_of_hashes, hash_codes
from paimonflow.core.data.keys import stable_integer_order
from paimonflow.core.data.partition import partition_codes, rows_by_code


def test_bucket_ids_by_slices_match_the_whole_column(monkeypatch):
    rng = np.random.default_rng(5)
    ids = pa.array(rng.integers(-(2**62), 2**62, 10_007))
    names = pa.array([f"n{i % 97}" for i in range(10_007)])
    whole = buckets_of_hashes(hash_codes([ids, names]), 7)
    monkeypatch.setattr(bucket_module, "_HASH_SLICE_ROWS", 1_000)
    assert np.array_equal(bucket_ids([ids, names], 7), whole)
    chunked = pa.chunked_array([ids.slice(0, 3_333), ids.slice(3_333)])
    assert np.array_equal(bucket_ids([chunked], 7), buckets_of_hashes(hash_codes([ids]), 7))


@pytest.mark.parametrize("count", [2, 7, 80, 1 << 16])
def test_rows_by_code_in_slices_is_the_stable_sort(monkeypatch, count):
    monkeypatch.setattr(partition_module, "_SLICE_ROWS", 997)
    rng = np.random.default_rng(count)
    codes = rng.integers(0, count, 20_011)
    codes[-5:] = count - 1
    present, rows = rows_by_code(codes, count)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=count)
    expected = np.flatnonzero(counts)
    assert present == expected.tolist()
    for got, want in zip(rows, np.split(order, np.cumsum(counts[expected])[:-1]), strict=True):
        assert np.array_equal(got, want)


def test_rows_by_code_with_a_pool_joins_the_halves_in_order(monkeypatch):
    rng = np.random.default_rng(2)
    count = (1 << 16) + 5  # beyond one 16-bit digit: the halves are sorted by the pool
    codes = rng.integers(0, count, 140_000)
    with ThreadPoolExecutor(2) as pool:
        present, rows = rows_by_code(codes, count, pool=pool)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=count)
    expected = np.flatnonzero(counts)
    assert present == expected.tolist()
    assert np.array_equal(np.concatenate(rows), order)


def test_partition_codes_with_a_pool_match_one_thread():
    values = [f"2026-11-{1 + (i * 7919) % 23:02d}" if i % 101 else None for i in range(150_000)]
    table = pa.table({"dt": pa.array(values, pa.string())})
    with ThreadPoolExecutor(2) as pool:
        codes, partitions = partition_codes(table, ["dt"], pool=pool)
    alone, alone_partitions = partition_codes(table, ["dt"])
    assert codes.dtype == np.int64
    assert np.array_equal(codes, alone) and partitions == alone_partitions
    assert [partitions[c][0] for c in codes[:1000].tolist()] == values[:1000]


@pytest.mark.parametrize(("dtype", "low"), [(np.int64, -(2**63)), (np.int64, 2**62 + 12_345), (np.int32, -70_000),
                                            (np.uint64, 2**64 - 60_001), (np.int8, -128)])
def test_one_digit_key_order_is_stable_with_any_base(dtype, low):
    """Spans below 2**16 take the one-digit path (the values' low 16 bits, wrapped)."""
    rng = np.random.default_rng(9)
    span = min(60_000, int(np.iinfo(dtype).max) - low)
    offsets = rng.integers(0, span + 1, 50_000).astype(np.uint64)
    values = (np.uint64(low % 2**64) + offsets).astype(dtype) if dtype == np.uint64 else \
        (np.array(low, dtype=dtype) + offsets.astype(dtype))
    assert int(values.max()) - int(values.min()) < 1 << 16
    assert np.array_equal(stable_integer_order(values), np.argsort(values, kind="stable"))
