"""Paimon's bloom-filter file index (``bloom-filter``): ``BloomFilter64`` over ``FastHash``.

Body: the number of hash functions (int32, big-endian), then the bit set (bit ``i`` is bit
``i % 8`` of byte ``i // 8``). A value's 64-bit hash gives ``h1`` (low 32 bits) and ``h2``
(high 32 bits); probe ``i`` (1..k) sets bit ``c % bits`` with ``c = h1 + i * h2`` (int32,
wrapping; a negative ``c`` is bit-flipped). Sizing: ``bits = int(-items * ln(fpp) / ln(2)^2)``
rounded up to the next multiple of 8 (always adding), ``k = max(1, round(bits / items * ln 2))``.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1


def bloom_size(items: int, fpp: float) -> tuple[int, int]:
    """``(bits, hash functions)`` of a filter for ``items`` values at false-positive rate ``fpp``."""
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    bits = nb + (8 - nb % 8)
    return bits, max(1, math.floor(bits / items * math.log(2) + 0.5))


def _positions(hashes: np.ndarray, functions: int, bits: int) -> np.ndarray:
    """Every probed bit position of every hash: shape ``(functions, len(hashes))``."""
    h = np.asarray(hashes, dtype=np.int64)
    h1 = h.astype(np.int32)  # low 32 bits, wrapping like Java's (int) cast
    h2 = (h.view(np.uint64) >> np.uint64(32)).astype(np.uint32).view(np.int32)
    i = np.arange(1, functions + 1, dtype=np.int32)[:, None]
    with np.errstate(over="ignore"):
        combined = h1[None, :] + i * h2[None, :]
    combined = np.where(combined < 0, ~combined, combined)
    return combined.astype(np.int64) % bits


@dataclass(frozen=True, slots=True, kw_only=True)
class BloomFilter:
    """A built or read bloom filter: ``functions`` hash functions over ``bitmap`` (bytes)."""

    functions: int
    bitmap: bytes

    @classmethod
    def build(cls, hashes: np.ndarray, *, items: int = DEFAULT_ITEMS, fpp: float = DEFAULT_FPP) -> BloomFilter:
        bits = BloomBits(items=items, fpp=fpp)
        bits.add(hashes)
        return bits.finish()

    def to_bytes(self) -> bytes:
        return struct.pack(">i", self.functions) + self.bitmap

    @classmethod
    def from_bytes(cls, body: bytes) -> BloomFilter | None:
        """The filter in ``body``; None when it cannot be one (too short, no hash function)."""
        if len(body) < 5:
            return None
        (functions,) = struct.unpack_from(">i", body, 0)
        if functions < 1:
            return None
        return cls(functions=functions, bitmap=bytes(body[4:]))

    def might_contain(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash: False only when the value was certainly never added."""
        data = np.frombuffer(self.bitmap, dtype=np.uint8)
        positions = _positions(np.asarray(hashes, dtype=np.int64), self.functions, len(data) * 8)
        return ((data[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1).astype(bool).all(axis=0)


class BloomBits:
    """A bloom filter being built: hashes are added chunk by chunk (one bit array, no copies)."""

    def __init__(self, *, items: int = DEFAULT_ITEMS, fpp: float = DEFAULT_FPP) -> None:
        self._bits, self._functions = bloom_size(items, fpp)
        self._flags = np.zeros(self._bits, dtype=bool)

    def add(self, hashes: np.ndarray) -> None:
        if len(hashes):
            self._flags[_positions(hashes, self._functions, self._bits).ravel()] = True

    def finish(self) -> BloomFilter:
        return BloomFilter(functions=self._functions, bitmap=np.packbits(self._flags, bitorder="little").tobytes())
