"""The LSM levels of one bucket and their sorted runs (Paimon ``mergetree.Levels``, ``SortedRun``, ``LevelSortedRun``).

Level 0 holds one sorted run per file, newest first; every level ≥ 1 is one sorted run whose
files have disjoint key ranges, ordered by min key. All values are immutable; :meth:`Levels.update`
returns a new :class:`Levels`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgumentError
from ..meta.manifest import DataFileMeta

KeyRange = tuple[Any, Any]
"""``(min_key, max_key)`` of a data file, each comparable with ``<`` (e.g. a tuple of key field values)."""

KeyOf = Callable[[DataFileMeta], KeyRange]
"""Decodes a file's key range; must order keys as Paimon's key comparator does."""


@dataclass(frozen=True, slots=True)
class SortedRun:
    """Files ordered by key whose ``[min_key, max_key]`` intervals do not overlap (Paimon ``SortedRun``)."""

    files: tuple[DataFileMeta, ...]

    @property
    def total_size(self) -> int:
        """Sum of the files' sizes in bytes."""
        return sum(f.file_size for f in self.files)

    @staticmethod
    def from_unsorted(files: Iterable[DataFileMeta], key_of: KeyOf) -> SortedRun:
        """Sort ``files`` by min key and check they do not overlap (``SortedRun.fromUnsorted``).

        Raises :class:`InvalidArgumentError` if two files' key ranges overlap.
        """
        keyed = sorted(((key_of(f), f) for f in files), key=lambda kf: kf[0][0])
        for (prev_range, prev), (cur_range, cur) in itertools.pairwise(keyed):
            if not cur_range[0] > prev_range[1]:
                raise InvalidArgumentError(
                    f"files {prev.file_name} and {cur.file_name} of level {cur.level} have overlapping key ranges"
                )
        return SortedRun(tuple(f for _, f in keyed))


@dataclass(frozen=True, slots=True)
class LevelSortedRun:
    """A sorted run and the level it lives on (Paimon ``LevelSortedRun``)."""

    level: int
    run: SortedRun

    @property
    def total_size(self) -> int:
        return self.run.total_size

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        return self.run.files


def level0_order(file: DataFileMeta) -> tuple[int, int, int, str]:
    """Sort key of level-0 files, newest first, as the ``TreeSet`` comparator of Paimon's ``Levels``.

    Larger max sequence number first; ties by smaller min sequence number, then older creation
    time, then file name. A missing creation time sorts first (Java would fail on it).
    """
    creation = file.creation_time_millis if file.creation_time_millis is not None else -(1 << 63)
    return (-file.max_sequence_number, file.min_sequence_number, creation, file.file_name)


@dataclass(frozen=True, slots=True)
class Levels:
    """All data files of one bucket, by level (Paimon ``Levels``).

    ``level0`` is newest first (:func:`level0_order`); ``higher[i]`` is the sorted run of level
    ``i + 1`` (possibly empty). Build with :meth:`from_files`.
    """

    level0: tuple[DataFileMeta, ...]
    higher: tuple[SortedRun, ...]

    @staticmethod
    def from_files(files: Iterable[DataFileMeta], *, num_levels: int, key_of: KeyOf) -> Levels:
        """Place ``files`` on their levels.

        The number of levels is ``max(num_levels, highest file level + 1)`` (files restored from a
        table may sit above the configured ``num-levels``) and must be at least 2. Raises
        :class:`InvalidArgumentError` for fewer than 2 levels, a negative level, the same level-0
        file twice, or overlapping key ranges within a level ≥ 1.
        """
        files = list(files)
        restored = max([num_levels, *(f.level + 1 for f in files)])
        if restored < 2:
            raise InvalidArgumentError("number of levels must be at least 2")
        if any(f.level < 0 for f in files):
            raise InvalidArgumentError("a data file has a negative level")
        empty = Levels(level0=(), higher=tuple(SortedRun(()) for _ in range(restored - 1)))
        return empty.update((), files, key_of=key_of)

    @property
    def num_levels(self) -> int:
        """Number of levels, level 0 included (``Levels.numberOfLevels``)."""
        return len(self.higher) + 1

    @property
    def max_level(self) -> int:
        """The highest level, ``num_levels - 1`` (``Levels.maxLevel``)."""
        return len(self.higher)

    def run_of_level(self, level: int) -> SortedRun:
        """The sorted run of ``level`` ≥ 1 (level 0 has one run per file)."""
        if not 1 <= level <= self.max_level:
            raise InvalidArgumentError(f"level {level} has no single sorted run (levels 1..{self.max_level})")
        return self.higher[level - 1]

    def sorted_runs(self) -> tuple[LevelSortedRun, ...]:
        """Paimon's ``levelSortedRuns()``: each level-0 file newest first, then each non-empty level upwards."""
        runs = [LevelSortedRun(0, SortedRun((f,))) for f in self.level0]
        runs += [LevelSortedRun(i + 1, run) for i, run in enumerate(self.higher) if run.files]
        return tuple(runs)

    @property
    def number_of_sorted_runs(self) -> int:
        return len(self.level0) + sum(1 for run in self.higher if run.files)

    def non_empty_highest_level(self) -> int:
        """The highest level holding a file; 0 if only level 0 does; -1 if the bucket is empty."""
        for i in range(len(self.higher) - 1, -1, -1):
            if self.higher[i].files:
                return i + 1
        return 0 if self.level0 else -1

    @property
    def total_file_size(self) -> int:
        return sum(f.file_size for f in self.level0) + sum(run.total_size for run in self.higher)

    def all_files(self) -> tuple[DataFileMeta, ...]:
        """Every file, in sorted-run order."""
        return tuple(f for run in self.sorted_runs() for f in run.files)

    def update(
        self, before: Iterable[DataFileMeta], after: Iterable[DataFileMeta], *, key_of: KeyOf
    ) -> Levels:
        """A new :class:`Levels` with ``before`` removed and ``after`` added, each at its own level (``Levels.update``).

        Files are matched by value (an upgraded file is removed at its old level and added at the
        new). Raises :class:`InvalidArgumentError` if a file's level is beyond :attr:`max_level`,
        a level-0 file is added twice, or a level ≥ 1 would hold overlapping files.
        """
        before, after = list(before), list(after)
        for f in after:
            if not 0 <= f.level <= self.max_level:
                raise InvalidArgumentError(f"file {f.file_name} has level {f.level}, levels are 0..{self.max_level}")
        level0 = [f for f in self.level0 if f not in before]
        seen = {level0_order(f) for f in level0}
        for f in after:
            if f.level == 0:
                if level0_order(f) in seen:
                    raise InvalidArgumentError(f"level-0 file {f.file_name} is present twice")
                seen.add(level0_order(f))
                level0.append(f)
        higher = list(self.higher)
        for level in {f.level for f in (*before, *after) if f.level > 0}:
            kept = [f for f in higher[level - 1].files if f not in before]
            kept += [f for f in after if f.level == level]
            higher[level - 1] = SortedRun.from_unsorted(kept, key_of)
        return Levels(level0=tuple(sorted(level0, key=level0_order)), higher=tuple(higher))
