"""Dynamic bucket mode (``bucket = -1`` on a primary-key table): which bucket each key goes to.

Pure and vectorized; reading and writing HASH index files is :mod:`paimonflow.core.hash_index`'s job.

* :func:`key_hashes` - the int32 Paimon stores per key in a HASH index: ``BinaryRow.hashCode()`` of
  the trimmed primary key, the same MurmurHash fixed buckets use (Java's assigner operator and
  ``DynamicBucketIndexMaintainer`` both hash ``trimmedPrimaryKey``).
* :class:`BucketAssigner` - one partition's assigner for a single writer (Java ``PartitionIndex``
  as driven by ``HashBucketAssigner``; from an empty index it also behaves as
  ``SimpleHashBucketAssigner``, which overwrite uses).
* :class:`GlobalKeyIndex` - cross-partition upsert (primary key lacks a partition field, Java
  ``GlobalIndexAssigner`` with the ``ExistingProcessor`` of the merge engine).

Deliberate differences from Java, all leaving states Java itself could produce: where Java picks a
random bucket (``max-buckets`` reached) a key's hash picks one, so reruns agree; the cross-partition
bucket counters take a batch's moves out of a bucket into account after the batch, not row by row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .binary_row import serialize_columns
from .bucket import hash_codes
from .errors import DataError, InvalidArgumentError, InvalidOptionError
from .options import MergeEngine

__all__ = ["BucketAssigner", "CrossPartitionRoute", "DynamicBucketSettings", "GlobalKeyIndex", "key_hashes"]

TARGET_ROW_NUM = "dynamic-bucket.target-row-num"
MAX_BUCKETS = "dynamic-bucket.max-buckets"
INITIAL_BUCKETS = "dynamic-bucket.initial-buckets"
_SHORT_MAX = 32767  # Java keeps bucket ids of dynamic buckets in shorts


def key_hashes(
    key_columns: Sequence[pa.Array | pa.ChunkedArray],
    *,
    precisions: Sequence[int | None] | None = None,
) -> np.ndarray:
    """The HASH-index hash (int32) of every row: ``BinaryRow.hashCode()`` of its trimmed primary key.

    ``key_columns`` are the primary-key columns without partition fields, in primary-key order;
    ``precisions`` as in :func:`paimonflow.core.binary_row.serialize_columns`.
    """
    return hash_codes(key_columns, precisions=precisions)


@dataclass(frozen=True, slots=True, kw_only=True)
class DynamicBucketSettings:
    """The dynamic-bucket options.

    ``target_row_num``: distinct keys a bucket takes before new keys open the next bucket
    (``dynamic-bucket.target-row-num``, 2,000,000). ``max_buckets``: most buckets per partition, -1
    unlimited (Java then stops at bucket id 32766); once reached, new keys spread over the existing
    buckets. ``initial_buckets`` (``dynamic-bucket.initial-buckets``) is the number of assigner
    tasks in Java (``bucket % n == task % n`` filters the bucket ids a task may open); with one
    assigner it changes nothing, so it is validated and kept but unused here.
    """

    target_row_num: int = 2_000_000
    max_buckets: int = -1
    initial_buckets: int | None = None

    def __post_init__(self) -> None:
        if self.target_row_num < 1:
            raise InvalidOptionError(TARGET_ROW_NUM, self.target_row_num, "must be positive")
        if self.max_buckets != -1 and not 1 <= self.max_buckets <= _SHORT_MAX + 1:
            raise InvalidOptionError(MAX_BUCKETS, self.max_buckets, f"must be -1 or in 1..{_SHORT_MAX + 1}")
        if self.initial_buckets is not None and self.initial_buckets < 1:
            raise InvalidOptionError(INITIAL_BUCKETS, self.initial_buckets, "must be positive")

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> DynamicBucketSettings:
        """Parse the table options; raises :class:`InvalidOptionError` for malformed values."""

        def number(key: str) -> int | None:
            text = options.get(key)
            if text is None:
                return None
            try:
                return int(text.strip())
            except ValueError:
                raise InvalidOptionError(key, text, "expected an integer") from None

        target, max_buckets = number(TARGET_ROW_NUM), number(MAX_BUCKETS)
        return cls(target_row_num=2_000_000 if target is None else target,
                   max_buckets=-1 if max_buckets is None else max_buckets,
                   initial_buckets=number(INITIAL_BUCKETS))


def _java_hash_map_order(buckets: Sequence[int]) -> list[int]:
    """Iteration order of a ``java.util.HashMap<Integer, _>`` after inserting ``buckets`` in order.

    Keys iterate by table slot, then insertion order; the table doubles past 3/4 load or when a
    slot's chain grows past 8 while the table is under 64 slots. (Chains Java turns into trees, nine
    or more ids in one slot of a table of 64+, keep insertion order here.)
    """
    capacity, size = 16, 0
    chains: dict[int, list[int]] = {}

    def rehash() -> None:
        nonlocal chains
        items = [b for slot in sorted(chains) for b in chains[slot]]
        chains = {}
        for b in items:
            chains.setdefault((b ^ (b >> 16)) & (capacity - 1), []).append(b)

    for bucket in buckets:
        chain = chains.setdefault((bucket ^ (bucket >> 16)) & (capacity - 1), [])
        if bucket in chain:
            continue
        chain.append(bucket)
        size += 1
        if len(chain) > 8 and capacity < 64:
            capacity *= 2
            rehash()
        if size > capacity * 3 // 4:
            capacity *= 2
            rehash()
    return [b for slot in sorted(chains) for b in chains[slot]]


def _fill(count: int, open_buckets: Sequence[int], rooms: Sequence[int], used: np.ndarray, target: int,
          max_id: int | None) -> np.ndarray:
    """Buckets for ``count`` new keys in arrival order: the open buckets in order, each up to its
    room, then the smallest ids absent from ``used`` (ascending, at most ``max_id``), ``target`` keys
    each. Returns fewer than ``count`` buckets when ``max_id`` runs out."""
    rooms_arr = np.maximum(np.asarray(rooms, dtype=np.int64), 0)
    ends = np.cumsum(rooms_arr)
    in_open = int(min(count, ends[-1])) if len(ends) else 0
    positions = np.arange(in_open, dtype=np.int64)
    placed = np.asarray(open_buckets, dtype=np.int32)[np.searchsorted(ends, positions, side="right")]
    rest = count - in_open
    if rest <= 0:
        return placed
    needed = -(-rest // target)
    limit = len(used) + needed if max_id is None else min(len(used) + needed, max_id + 1)
    fresh = np.setdiff1d(np.arange(limit, dtype=np.int32), used)[:needed]
    take = min(rest, len(fresh) * target)
    return np.concatenate([placed, fresh[np.arange(take, dtype=np.int64) // target]]).astype(np.int32)


class BucketAssigner:
    """The dynamic buckets of one partition, for one writer (Java ``PartitionIndex``).

    ``index`` is the partition's HASH index: bucket -> int32 key hashes, in index-manifest order.
    :meth:`assign` keeps every known hash in its bucket. New hashes fill the partition's buckets that
    hold fewer than ``target_row_num`` hashes, in the order Java's ``HashMap`` of loaded buckets
    iterates (ascending ids, unless ids are sparse), and then open the smallest unused ids
    (``0 <= id < max_buckets``, or 32767 when unlimited), each taking ``target_row_num`` hashes.
    With ``max_buckets`` reached, each further new hash goes to bucket ``buckets[hash mod n]`` of
    every bucket of the partition in that order (Java: a random bucket). Without an index this is
    Java's ``SimpleHashBucketAssigner`` (used by overwrite), up to the same random choice.

    Raises :class:`InvalidOptionError` (``dynamic-bucket.target-row-num`` too small) when an
    unlimited partition would need bucket id 32767; the assigner is then left unchanged.
    """

    def __init__(self, settings: DynamicBucketSettings | None = None,
                 index: Mapping[int, np.ndarray] | None = None) -> None:
        self.settings = settings or DynamicBucketSettings()
        self._hashes: dict[int, list[np.ndarray]] = {}
        self._counts: dict[int, int] = {}
        self._changed: set[int] = set()
        self._upper_bound_reached = False
        loaded_buckets: list[int] = []
        all_hashes: list[np.ndarray] = []
        all_buckets: list[np.ndarray] = []
        for bucket, hashes in (index or {}).items():
            bucket = int(bucket)
            if not 0 <= bucket <= _SHORT_MAX:
                raise InvalidArgumentError(f"dynamic bucket id {bucket} is outside 0..{_SHORT_MAX}")
            values = np.asarray(hashes, dtype=np.int32).ravel()
            self._hashes.setdefault(bucket, []).append(values)
            self._counts[bucket] = self._counts.get(bucket, 0) + len(values)  # Java counts index entries
            loaded_buckets.append(bucket)
            all_hashes.append(values)
            all_buckets.append(np.full(len(values), bucket, dtype=np.int32))
        self._order = _java_hash_map_order(loaded_buckets)  # Java's totalBucketArray
        self._open = list(self._order)  # Java's nonFullBucketInformation, full ones dropped lazily
        hashes_cat = np.concatenate(all_hashes) if all_hashes else np.zeros(0, np.int32)
        buckets_cat = np.concatenate(all_buckets) if all_buckets else np.zeros(0, np.int32)
        # a hash in several files: the last file read wins, as in Java's Int2ShortHashMap builder
        unique, last = np.unique(hashes_cat[::-1], return_index=True)
        self._known_hashes = unique.astype(np.int32)
        self._known_buckets = buckets_cat[::-1][last].astype(np.int32)

    def assign(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket (int32) of every key hash, in order; remembers the new hashes.

        Equal hashes, in one batch or across batches, always get the same bucket; new hashes are
        placed in order of first arrival.
        """
        hashes = np.asarray(hashes, dtype=np.int32).ravel()
        out = np.empty(len(hashes), dtype=np.int32)
        pos = np.searchsorted(self._known_hashes, hashes)
        clipped = np.minimum(pos, max(len(self._known_hashes) - 1, 0))
        found = (pos < len(self._known_hashes)) & (self._known_hashes[clipped] == hashes) if len(
            self._known_hashes) else np.zeros(len(hashes), dtype=bool)
        out[found] = self._known_buckets[clipped[found]]
        new = hashes[~found]
        if not len(new):
            return out
        unique, first = np.unique(new, return_index=True)
        arrival = np.argsort(first, kind="stable")
        by_unique = np.empty(len(unique), dtype=np.int32)
        by_unique[arrival] = self._place(unique[arrival])
        out[~found] = by_unique[np.searchsorted(unique, new)]
        at = np.searchsorted(self._known_hashes, unique)
        self._known_hashes = np.insert(self._known_hashes, at, unique)
        self._known_buckets = np.insert(self._known_buckets, at, by_unique)
        return out

    def _place(self, new: np.ndarray) -> np.ndarray:
        """Buckets for distinct new hashes in arrival order; updates counts and the bucket lists."""
        target, max_buckets = self.settings.target_row_num, self.settings.max_buckets
        open_buckets = [b for b in self._open if self._counts[b] < target]
        rooms = [target - self._counts[b] for b in open_buckets]
        if self._upper_bound_reached:  # Java skips opening buckets for good
            placed = _fill(len(new), open_buckets, rooms, np.zeros(0, np.int32), target, -1)
        else:
            max_id = (_SHORT_MAX if max_buckets == -1 else max_buckets) - 1
            placed = _fill(len(new), open_buckets, rooms, np.array(sorted(self._counts), dtype=np.int32),
                           target, max_id)
            if len(placed) < len(new) and max_buckets == -1:
                raise InvalidOptionError(TARGET_ROW_NUM, target, f"a partition would need more than "
                                         f"{_SHORT_MAX} buckets; increase it")
        filled, counts = np.unique(placed, return_counts=True)
        for bucket, n in zip(filled.tolist(), counts.tolist(), strict=True):
            if bucket not in self._counts:
                self._counts[bucket] = 0
                self._order.append(bucket)
            self._counts[bucket] += n
        self._open = [b for b in self._open + [b for b in filled.tolist() if b not in self._open]
                      if self._counts[b] < target]
        if len(placed) < len(new):
            self._upper_bound_reached = True
            rest = new[len(placed):]
            choices = np.asarray(self._order, dtype=np.int32)
            placed = np.concatenate([placed, choices[np.mod(rest.astype(np.int64), len(choices))]])
        for bucket in np.unique(placed).tolist():
            self._hashes.setdefault(bucket, []).append(new[placed == bucket])
            self._changed.add(bucket)
        return placed.astype(np.int32)

    def buckets(self) -> list[int]:
        """Every bucket of the partition (loaded or opened), ascending."""
        return sorted(self._hashes)

    def changed_buckets(self) -> list[int]:
        """Buckets that got new hashes since loading (or :meth:`reset_changes`), ascending."""
        return sorted(self._changed)

    def reset_changes(self) -> None:
        """Forget which buckets changed, e.g. after their HASH index files are committed."""
        self._changed.clear()

    def index_hashes(self, bucket: int) -> np.ndarray:
        """All key hashes of ``bucket`` (sorted, unique int32): the content of its new HASH index file."""
        parts = self._hashes.get(bucket)
        if not parts:
            return np.zeros(0, dtype=np.int32)
        return np.unique(np.concatenate(parts)).astype(np.int32)


# ------------------------------------------------------------------------------------------------
# cross-partition upsert


@dataclass(frozen=True, slots=True, kw_only=True)
class CrossPartitionRoute:
    """Where each input row of :meth:`GlobalKeyIndex.route` goes (arrays aligned with the input).

    ``partition`` / ``bucket``: where to write the row, its partition fields set to ``partition``
    (-1/-1: drop the row). ``retract``: first write a copy of the row with row kind -D and its
    partition fields set to ``retract_partition``, into ``retract_bucket`` (-1 where not retracted).
    ``previous_partition`` / ``previous_bucket``: where the key lived before this row (-1: new key).
    """

    partition: np.ndarray
    bucket: np.ndarray
    retract: np.ndarray
    retract_partition: np.ndarray
    retract_bucket: np.ndarray
    previous_partition: np.ndarray
    previous_bucket: np.ndarray

    @property
    def kept(self) -> np.ndarray:
        return self.partition >= 0


def _key_bytes(key_columns: Sequence[pa.Array | pa.ChunkedArray]) -> pa.Array:
    """The BinaryRow bytes of every key, as one large_binary array (Java compares keys by bytes)."""
    rows = serialize_columns(key_columns)
    offsets = (rows.offsets - rows.offsets[0]).astype(np.int64)
    data = rows.buffer[int(rows.offsets[0]):int(rows.offsets[-1])]
    return pa.Array.from_buffers(pa.large_binary(), len(rows), [None, pa.py_buffer(offsets),
                                                                  pa.py_buffer(data.tobytes())])


def _as_ids(values: np.ndarray | Sequence[int], name: str) -> np.ndarray:
    ids = np.asarray(values, dtype=np.int64).ravel()
    if len(ids) and int(ids.min()) < 0:
        raise InvalidArgumentError(f"{name} must be non-negative")
    return ids


class GlobalKeyIndex:
    """Key -> (partition, bucket) of a table whose primary key lacks a partition field (Java
    ``GlobalIndexAssigner``), bootstrapped from the table's current rows.

    Partitions are caller-chosen non-negative integer ids (one per distinct partition value, stable
    for the index's life). ``keys`` are the primary-key columns (all of them, as Java's key index).
    Raises :class:`DataError` if a key occurs twice in the bootstrap rows (Java: "your data contains
    duplicates"). New keys of a partition go to its lowest bucket holding fewer than
    ``target_row_num`` keys, else its smallest unused bucket id (``dynamic-bucket.max-buckets`` does
    not apply, as in Java's cross-partition ``BucketAssigner``).
    ``cross-partition-upsert.index-ttl`` is the caller's: leave old files' keys out of the bootstrap.
    """

    def __init__(self, *, keys: Sequence[pa.Array | pa.ChunkedArray], partitions: np.ndarray | Sequence[int],
                 buckets: np.ndarray | Sequence[int], merge_engine: MergeEngine,
                 target_row_num: int = 2_000_000) -> None:
        if target_row_num < 1:
            raise InvalidOptionError(TARGET_ROW_NUM, target_row_num, "must be positive")
        self.merge_engine = MergeEngine(merge_engine)
        self.target_row_num = target_row_num
        self._keys = _key_bytes(keys) if keys else pa.array([], pa.large_binary())
        self._partition = _as_ids(partitions, "partitions")
        self._bucket = _as_ids(buckets, "buckets")
        if not len(self._keys) == len(self._partition) == len(self._bucket):
            raise InvalidArgumentError("keys, partitions and buckets differ in length")
        if len(pc.unique(self._keys)) != len(self._keys):
            raise DataError("a primary key occurs in more than one row of the bootstrap data")
        self._counts: dict[int, dict[int, int]] = {}
        self._add_counts(self._partition, self._bucket, 1)

    def __len__(self) -> int:
        return len(self._keys)

    def location(self, keys: Sequence[pa.Array | pa.ChunkedArray]) -> tuple[np.ndarray, np.ndarray]:
        """(partition, bucket) of every key, -1/-1 for keys the index does not hold."""
        at = self._lookup(_key_bytes(keys))
        hit = at >= 0
        return (np.where(hit, self._partition[np.maximum(at, 0)], -1) if len(self._keys) else at.copy(),
                np.where(hit, self._bucket[np.maximum(at, 0)], -1) if len(self._keys) else at.copy())

    def bucket_counts(self, partition: int) -> dict[int, int]:
        """Keys per bucket of ``partition`` as the assigner counts them."""
        return dict(sorted(self._counts.get(partition, {}).items()))

    def _lookup(self, key_bytes: pa.Array) -> np.ndarray:
        if not len(self._keys):
            return np.full(len(key_bytes), -1, dtype=np.int64)
        found = pc.index_in(key_bytes, value_set=self._keys)
        return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)

    def _add_counts(self, partitions: np.ndarray, buckets: np.ndarray, sign: int) -> None:
        if not len(partitions):
            return
        pairs, counts = np.unique(np.stack([partitions, buckets], axis=1), axis=0, return_counts=True)
        for (p, b), n in zip(pairs.tolist(), counts.tolist(), strict=True):
            per = self._counts.setdefault(p, {})
            per[b] = per.get(b, 0) + sign * n

    def _request(self, partitions: np.ndarray) -> np.ndarray:
        """Buckets for new locations, one per entry, in arrival order (Java ``assignBucket``)."""
        out = np.empty(len(partitions), dtype=np.int64)
        target = self.target_row_num
        for p in np.unique(partitions).tolist():
            rows = np.flatnonzero(partitions == p)
            per = self._counts.setdefault(p, {})
            open_buckets = [b for b in sorted(per) if per[b] < target]  # Java: TreeMap, ascending
            placed = _fill(len(rows), open_buckets, [target - per[b] for b in open_buckets],
                           np.array(sorted(per), dtype=np.int32), target, None)
            out[rows] = placed
            filled, counts = np.unique(placed, return_counts=True)
            for b, n in zip(filled.tolist(), counts.tolist(), strict=True):
                per[b] = per.get(b, 0) + n
        return out

    def route(self, keys: Sequence[pa.Array | pa.ChunkedArray],
              partitions: np.ndarray | Sequence[int]) -> CrossPartitionRoute:
        """Route a batch of rows (in arrival order) by the merge engine, and update the index.

        Per row, with the key's current location (the index, or an earlier row of the batch):

        * new key: a new bucket in the row's own partition, which becomes the key's location;
        * key already in the row's partition: its bucket;
        * key in another partition: ``deduplicate`` retracts the key there (-D) and moves it to a
          new bucket of the row's partition; ``partial-update`` / ``aggregation`` write the row into
          the old partition and bucket; ``first-row`` drops the row.

        Row kinds do not matter, as in Java: a -D row moves its key too, and keys never leave the
        index. Idempotent only in the sense that routing the same batch again sees the moved keys.
        """
        key_bytes = _key_bytes(keys)
        own = _as_ids(partitions, "partitions")
        n = len(own)
        if len(key_bytes) != n:
            raise InvalidArgumentError("keys and partitions differ in length")
        at = self._lookup(key_bytes)
        hit = at >= 0
        existing_p = np.where(hit, self._partition[np.maximum(at, 0)] if len(self._keys) else -1, -1)
        existing_b = np.where(hit, self._bucket[np.maximum(at, 0)] if len(self._keys) else -1, -1)
        group = np.asarray(pc.dictionary_encode(key_bytes).indices.to_numpy(zero_copy_only=False), np.int64)
        order = np.argsort(group, kind="stable")  # by key, then arrival
        g_s, p_s = group[order], own[order]
        first = np.ones(n, dtype=bool)
        first[1:] = g_s[1:] != g_s[:-1]
        starts = np.flatnonzero(first)
        group_of = np.cumsum(first) - 1
        ex_p_s, ex_b_s = existing_p[order], existing_b[order]
        retract_s = np.zeros(n, dtype=bool)
        if self.merge_engine is MergeEngine.DEDUPLICATE:
            prev_p_s = np.where(first, ex_p_s, np.concatenate([[-1], p_s[:-1]]))
            request_s = prev_p_s != p_s
            req_rows = order[request_s]
            arrival = np.argsort(req_rows, kind="stable")
            req_buckets = np.empty(len(req_rows), dtype=np.int64)
            req_buckets[arrival] = self._request(own[req_rows[arrival]])
            value_s = np.where(first, ex_b_s, -1)
            value_s[request_s] = req_buckets
            run_start = np.where(request_s | first, np.arange(n), 0)
            np.maximum.accumulate(run_start, out=run_start)
            bucket_s = value_s[run_start]
            part_s = p_s.copy()
            prev_b_s = np.where(first, ex_b_s, np.concatenate([[-1], bucket_s[:-1]]))
            retract_s = request_s & (prev_p_s >= 0)
            last = np.append(starts[1:], n) - 1
            final_p, final_b = part_s[last], bucket_s[last]
            self._add_counts(prev_p_s[retract_s], prev_b_s[retract_s], -1)  # Java: decrement(old)
        else:
            new_key = ex_p_s[starts] < 0
            est_p, est_b = ex_p_s[starts].copy(), ex_b_s[starts].copy()
            est_p[new_key] = p_s[starts][new_key]
            est_b[new_key] = self._request(est_p[new_key]) if new_key.any() else np.zeros(0, np.int64)
            part_s, bucket_s = est_p[group_of], est_b[group_of]
            prev_p_s = np.where(first, ex_p_s, part_s)
            prev_b_s = np.where(first, ex_b_s, bucket_s)
            if self.merge_engine is MergeEngine.FIRST_ROW:
                drop = p_s != part_s
                part_s, bucket_s = np.where(drop, -1, part_s), np.where(drop, -1, bucket_s)
            final_p, final_b = est_p, est_b
        self._remember(key_bytes.take(pa.array(order[starts])), at[order[starts]], final_p, final_b)

        def unsort(values: np.ndarray) -> np.ndarray:
            out = np.empty(n, dtype=np.int64)
            out[order] = values
            return out

        retract = np.zeros(n, dtype=bool)
        retract[order] = retract_s
        return CrossPartitionRoute(
            partition=unsort(part_s), bucket=unsort(bucket_s), retract=retract,
            retract_partition=np.where(retract, unsort(prev_p_s), -1),
            retract_bucket=np.where(retract, unsort(prev_b_s), -1),
            previous_partition=unsort(prev_p_s), previous_bucket=unsort(prev_b_s))

    def _remember(self, keys: pa.Array, at: np.ndarray, partitions: np.ndarray, buckets: np.ndarray) -> None:
        known = at >= 0
        self._partition[at[known]] = partitions[known]
        self._bucket[at[known]] = buckets[known]
        if (~known).any():
            self._keys = pa.concat_arrays([self._keys, keys.filter(pa.array(~known))])
            self._partition = np.concatenate([self._partition, partitions[~known]])
            self._bucket = np.concatenate([self._bucket, buckets[~known]])
