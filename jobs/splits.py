"""How a batch read's splits become Spark partitions.

One Spark partition per split costs a Python task of fixed overhead each (35-40 ms measured), so a
table of many small buckets reads slower than its bytes warrant. Splits are therefore packed into
``k = min(splits, max(parallelism, ceil(total / target)))`` partitions, each split (largest
first) into the partition with the fewest bytes so far, every file weighing its size plus
``open_cost``: Paimon's ``source.split.target-size`` (128 MB) and ``source.split.open-file-cost``
(4 MB), from the read's options over the table's, and the session's default parallelism. A small
table then spreads over every core, a large one gets partitions of about the target size, and the
partitions differ by at most one split's weight (no straggler partition).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from paimonflow.core.errors import InvalidOptionError
from paimonflow.core.options.parse import parse_memory_size

TARGET_SIZE = 128 << 20
OPEN_FILE_COST = 4 << 20
DEFAULT_PARALLELISM = 8  # a session whose parallelism cannot be asked (a Connect client without the setting)

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class SplitPacking:
    target_size: int = TARGET_SIZE
    open_file_cost: int = OPEN_FILE_COST
    parallelism: int = DEFAULT_PARALLELISM

    @classmethod
    def from_options(cls, options: Mapping[str, str], parallelism: int) -> SplitPacking:
        """``options``: the table's options updated with the read's (keys lower-cased or not)."""
        lowered = {k.lower(): v for k, v in options.items()}

        def size(key: str, default: int) -> int:
            if key not in lowered:
                return default
            try:
                value = parse_memory_size(lowered[key])
            except ValueError as exc:
                raise InvalidOptionError(key, lowered[key], str(exc)) from None
            if value <= 0:
                raise InvalidOptionError(key, lowered[key], "must be positive")
            return value

        return cls(size("source.split.target-size", TARGET_SIZE), size("source.split.open-file-cost", OPEN_FILE_COST),
                   max(1, parallelism))

    def pack(self, splits: Sequence[S], sizes: Sequence[int], files: Sequence[int]) -> list[list[S]]:
        """``splits`` (with their byte ``sizes`` and file counts) in groups, one per Spark partition."""
        if not splits:
            return []
        costs = [size + count * self.open_file_cost for size, count in zip(sizes, files, strict=True)]
        wanted = max(self.parallelism, -(-sum(costs) // self.target_size))
        groups: list[list[S]] = [[] for _ in range(min(len(splits), wanted))]
        lightest = [(0, g) for g in range(len(groups))]  # (bytes so far, group), a heap
        for i in sorted(range(len(splits)), key=lambda i: -costs[i]):
            filled, g = heapq.heappop(lightest)
            groups[g].append(splits[i])
            heapq.heappush(lightest, (filled + costs[i], g))
        return groups
