"""Paimon's fixed-bucket function, vectorized: MurmurHash3 over the bucket key's BinaryRow.

Java computes ``Math.abs(bucketKey.hashCode() % numBuckets)`` where ``hashCode`` is
``MurmurHashUtils.hashBytesByWords`` (MurmurHash3 x86_32, seed 42) over the BinaryRow bytes of the
bucket key, row kind ``+I``, without the arity prefix. A BinaryRow's length is always a multiple of
8, so the hash reads whole little-endian 4-byte words and has no tail; the finalizer mixes in the
length in bytes. Everything here runs over whole numpy columns; rows of different lengths (long
strings) are hashed in groups of equal length.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from .binary_row import EncodedRows, hashable_rows

SEED = 42
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_WORD = np.dtype("<u4")
_MASK = 0xFFFFFFFF


def _mix_words(words: np.ndarray) -> np.ndarray:
    """Murmur body over the columns of ``words`` (rows x words, uint32), returning h1 per row."""
    return _mix_word_columns(list(words.T), len(words))


def _scalar_k(word: int) -> int:
    """Murmur's scrambled ``k`` of one 32-bit word (Python ints, mod 2**32)."""
    k = (word * _C1) & _MASK
    k = ((k << 15) | (k >> 17)) & _MASK
    return (k * _C2) & _MASK


def _mix_word_columns(words: Sequence[np.ndarray | int], rows: int) -> np.ndarray:
    """Murmur body over words given column by column (uint32 arrays, or ints equal in every
    row): rounds over leading constant words run once, on Python ints."""
    h = SEED
    vector: np.ndarray | None = None
    t = np.empty(rows, dtype=np.uint32)
    for word in words:
        if vector is None:
            if isinstance(word, int):
                h ^= _scalar_k(word)
                h = ((((h << 13) | (h >> 19)) & _MASK) * 5 + 0xE6546B64) & _MASK
                continue
            vector = np.full(rows, h, dtype=np.uint32)
        if isinstance(word, int):
            np.bitwise_xor(vector, np.uint32(_scalar_k(word)), out=vector)
        else:
            k = np.multiply(word, _C1, dtype=np.uint32)
            np.left_shift(k, 15, out=t)
            np.right_shift(k, 17, out=k)
            np.bitwise_or(k, t, out=k)
            np.multiply(k, _C2, out=k)
            np.bitwise_xor(vector, k, out=vector)
        np.left_shift(vector, 13, out=t)
        np.right_shift(vector, 19, out=vector)
        np.bitwise_or(vector, t, out=vector)
        np.multiply(vector, 5, out=vector)
        np.add(vector, 0xE6546B64, out=vector)
    return vector if vector is not None else np.full(rows, h, dtype=np.uint32)


def _finish(h: np.ndarray, lengths: int | np.ndarray) -> np.ndarray:
    """Murmur3 ``fmix(h ^ length)``, in place; returns the hashes as signed int32 (Java ints)."""
    np.bitwise_xor(h, np.asarray(lengths).astype(np.uint32), out=h)
    t = np.empty_like(h)
    np.right_shift(h, 16, out=t)
    np.bitwise_xor(h, t, out=h)
    np.multiply(h, 0x85EBCA6B, out=h)
    np.right_shift(h, 13, out=t)
    np.bitwise_xor(h, t, out=h)
    np.multiply(h, 0xC2B2AE35, out=h)
    np.right_shift(h, 16, out=t)
    np.bitwise_xor(h, t, out=h)
    return h.view(np.int32)


def _hash_uniform(buffer: np.ndarray, start: int, rows: int, width: int) -> np.ndarray:
    words = buffer[start : start + rows * width].view(_WORD).reshape(rows, width // 4)
    return _finish(_mix_words(words), width)


def murmur_hash_words(buffer: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Java's ``MurmurHashUtils.hashBytesByWords`` of every row ``buffer[offsets[i]:offsets[i+1]]``.

    ``buffer`` is a 1-D uint8 array and ``offsets`` an int array of ``n + 1`` non-decreasing
    positions; every row length must be a multiple of 4 (BinaryRows are multiples of 8). Returns
    int32 hashes, one per row. Raises ``ValueError`` for a row length that is not a multiple of 4.
    """
    buffer = np.ascontiguousarray(buffer, dtype=np.uint8)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    if n <= 0:
        return np.zeros(0, dtype=np.int32)
    lengths = np.diff(offsets)
    if bool((lengths % 4).any()) or bool((lengths < 0).any()):
        raise ValueError("every row length must be a non-negative multiple of 4 bytes")
    first = int(lengths[0])
    if bool((lengths == first).all()):
        return _hash_uniform(buffer, int(offsets[0]), n, first)
    out = np.empty(n, dtype=np.int32)
    for length in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == length)
        byte_index = offsets[rows][:, None] + np.arange(length, dtype=np.int64)
        words = buffer[byte_index].view(_WORD)
        out[rows] = _finish(_mix_words(words), length)
    return out


def _hash_encoded(rows: EncodedRows) -> np.ndarray:
    if rows.row_width is not None:
        return _hash_uniform(rows.buffer, int(rows.offsets[0]), len(rows), rows.row_width)
    return murmur_hash_words(rows.buffer, rows.offsets)


def murmur_hash_bytes(data: bytes) -> int:
    """The Java ``hashBytesByWords`` of one byte string (length a multiple of 4), as a signed int."""
    buffer = np.frombuffer(data, dtype=np.uint8)
    return int(murmur_hash_words(buffer, np.array([0, len(data)]))[0])


def hash_codes(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    *,
    precisions: Sequence[int | None] | None = None,
) -> np.ndarray:
    """Java's ``BinaryRow.hashCode()`` of the bucket-key row of every row of ``columns`` (int32).

    ``columns`` are the bucket-key columns in bucket-key order; ``precisions`` as in
    :func:`paimonflow.core.data.binary_row.serialize_columns`.
    """
    rows = hashable_rows(columns, precisions=precisions)
    if isinstance(rows, EncodedRows):
        return _hash_encoded(rows)
    return _finish(_mix_word_columns(rows, len(columns[0])), 4 * len(rows))  # fixed width: word by word


def buckets_of_hashes(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """Java ``Math.abs(hash % numBuckets)`` of int32 hashes (remainder truncated toward zero)."""
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    remainder = np.fmod(np.asarray(hashes, dtype=np.int64), num_buckets)
    return np.abs(remainder).astype(np.int32)


def bucket_ids(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    num_buckets: int,
    *,
    precisions: Sequence[int | None] | None = None,
) -> np.ndarray:
    """The fixed bucket (``0 <= b < num_buckets``, int32) of every row, exactly as Paimon assigns it.

    ``columns`` are the bucket-key columns (option ``bucket-key``, else the primary key without
    partition fields), in that order. Raises ``ValueError`` if ``num_buckets`` is not positive and
    :class:`~paimonflow.core.errors.UnsupportedError` for key types a BinaryRow cannot hold.
    """
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    rows = len(columns[0]) if columns else 0
    if rows <= _HASH_SLICE_ROWS:
        return buckets_of_hashes(hash_codes(columns, precisions=precisions), num_buckets)
    # a slice at a time: the hash's temporaries stay a few MB, in cache and in pages the allocator
    # reuses (whole-column temporaries of 10M rows are fresh, zeroed pages each: 2-3x slower)
    out = np.empty(rows, dtype=np.int32)
    for start in range(0, rows, _HASH_SLICE_ROWS):
        part = [c.slice(start, _HASH_SLICE_ROWS) for c in columns]
        out[start : start + len(part[0])] = buckets_of_hashes(hash_codes(part, precisions=precisions), num_buckets)
    return out


_HASH_SLICE_ROWS = 1 << 20
