"""Dynamic bucket mode (``bucket = -1`` on a primary-key table): which bucket a key lives in.

Paimon keeps, per partition and bucket, a HASH index file holding the int32 hash of every key
in the bucket (``BinaryRow.hashCode`` of the trimmed primary key, the same hash fixed buckets
use). A writer loads a partition's index, keeps known keys in their bucket, and fills buckets
with new keys up to ``dynamic-bucket.target-row-num`` (2,000,000) keys each, lowest bucket id
first, opening the smallest unused id when all are full (``HashBucketAssigner`` /
``PartitionIndex``). With ``dynamic-bucket.max-buckets`` reached, new keys spread over the
existing buckets (Paimon picks one at random; here ``hash mod count``, so reruns agree).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidOptionError


@dataclass(frozen=True, slots=True)
class DynamicBucketOptions:
    target_row_num: int = 2_000_000
    max_buckets: int = -1

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> DynamicBucketOptions:
        def number(key: str, default: int) -> int:
            text = options.get(key)
            if text is None:
                return default
            try:
                return int(text)
            except ValueError:
                raise InvalidOptionError(key, text, "expected an integer") from None

        target = number("dynamic-bucket.target-row-num", 2_000_000)
        max_buckets = number("dynamic-bucket.max-buckets", -1)
        if target < 1:
            raise InvalidOptionError("dynamic-bucket.target-row-num", str(target), "must be positive")
        if max_buckets == 0 or max_buckets < -1:
            raise InvalidOptionError("dynamic-bucket.max-buckets", str(max_buckets), "must be -1 or positive")
        return cls(target_row_num=target, max_buckets=max_buckets)


@dataclass(slots=True)
class PartitionBucketIndex:
    """The key hashes of every bucket of one partition, and what changed since loading."""

    options: DynamicBucketOptions
    hashes: dict[int, np.ndarray] = field(default_factory=dict)  # bucket -> sorted unique int32 hashes
    changed: set[int] = field(default_factory=set)

    def assign(self, key_hashes: np.ndarray) -> np.ndarray:
        """The bucket of every row (int32): known hashes keep their bucket, new ones fill buckets."""
        key_hashes = np.asarray(key_hashes, dtype=np.int32)
        out = np.full(len(key_hashes), -1, dtype=np.int32)
        for bucket, known in self.hashes.items():
            if len(known):
                out[np.isin(key_hashes, known, assume_unique=False)] = bucket
        fresh = out < 0
        if not fresh.any():
            return out
        new_hashes, first = np.unique(key_hashes[fresh], return_index=True)
        new_hashes = new_hashes[np.argsort(first, kind="stable")]  # in order of first arrival
        targets = self._place(new_hashes)
        lookup_order = np.argsort(new_hashes, kind="stable")
        sorted_new = new_hashes[lookup_order]
        where = np.searchsorted(sorted_new, key_hashes[fresh])
        out[fresh] = targets[lookup_order][where]
        return out

    def _place(self, new_hashes: np.ndarray) -> np.ndarray:
        """Buckets for new, distinct hashes (arrival order); records them in the index."""
        target = self.options.target_row_num
        placed = np.empty(len(new_hashes), dtype=np.int32)
        start = 0
        bucket = 0
        while start < len(new_hashes):
            if self.options.max_buckets != -1 and bucket >= self.options.max_buckets:
                rest = new_hashes[start:]
                existing = np.array(sorted(self.hashes), dtype=np.int32)
                chosen = existing[np.abs(rest.astype(np.int64)) % len(existing)]
                placed[start:] = chosen
                for b in np.unique(chosen):
                    self._add(int(b), rest[chosen == b])
                break
            room = target - len(self.hashes.get(bucket, ()))
            if room > 0:
                take = new_hashes[start:start + room]
                placed[start:start + len(take)] = bucket
                self._add(bucket, take)
                start += len(take)
            bucket += 1
        return placed

    def _add(self, bucket: int, hashes: np.ndarray) -> None:
        current = self.hashes.get(bucket)
        merged = hashes if current is None else np.concatenate([current, hashes])
        self.hashes[bucket] = np.unique(merged).astype(np.int32)
        self.changed.add(bucket)
