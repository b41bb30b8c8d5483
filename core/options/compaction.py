"""Typed settings of primary-key (merge-tree) compaction, parsed once from Paimon's option keys.

Keys and defaults are Paimon's (``CoreOptions``): ``num-sorted-run.compaction-trigger`` 5,
``num-levels`` trigger + 1, ``compaction.max-size-amplification-percent`` 200,
``compaction.size-ratio`` 1, ``compaction.offpeak.start.hour`` / ``end.hour`` / ``compaction.offpeak-ratio``
-1 / -1 / 0, ``compaction.optimization-interval`` / ``compaction.total-size-threshold`` /
``compaction.incremental-size-threshold`` unset, ``target-file-size`` 128 MB (primary-key tables), ``compaction.small-file-ratio`` 0.7,
``compaction.force-up-level-0`` false, ``compaction.force-rewrite-all-files`` false.

Append-table compaction (:class:`AppendCompactionOptions`) reads ``target-file-size`` (256 MB for
append tables), ``compaction.small-file-ratio`` 0.7, ``compaction.min.file-num`` 5,
``source.split.open-file-cost`` 4 MB and ``compaction.force-rewrite-all-files`` false.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from ..errors import InvalidOptionError
from .parse import parse_bool, parse_duration_millis, parse_int, parse_memory_size

PRIMARY_KEY_TARGET_FILE_SIZE = 128 << 20
APPEND_TARGET_FILE_SIZE = 256 << 20
SPLIT_OPEN_FILE_COST = 4 << 20

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class OffPeakHours:
    """Hours of the day during which ``ratio`` is added to the size ratio (Paimon ``OffPeakHours``).

    The window is ``[start_hour, end_hour)``; when ``start_hour > end_hour`` it wraps midnight.
    """

    start_hour: int
    end_hour: int
    ratio: int

    def current_ratio(self, hour: int) -> int:
        """The extra size-ratio percentage at ``hour`` (0-23): ``ratio`` inside the window, else 0."""
        if self.start_hour <= self.end_hour:
            off_peak = self.start_hour <= hour < self.end_hour
        else:
            off_peak = hour < self.end_hour or self.start_hour <= hour
        return self.ratio if off_peak else 0

    @staticmethod
    def create(start_hour: int, end_hour: int, ratio: int) -> OffPeakHours | None:
        """None when disabled, as Paimon's ``OffPeakHours.create``: an hour of -1 or an empty window."""
        if start_hour == -1 or end_hour == -1 or start_hour == end_hour:
            return None
        return OffPeakHours(start_hour=start_hour, end_hour=end_hour, ratio=ratio)


@dataclass(frozen=True, slots=True, kw_only=True)
class EarlyFullCompaction:
    """Triggers that make universal compaction compact everything early (Paimon ``EarlyFullCompaction``).

    ``interval_millis`` (``compaction.optimization-interval``): when that long has passed since the
    last full compaction, or none is known; ``total_size_threshold`` (``compaction.total-size-threshold``):
    when all runs together are smaller; ``incremental_size_threshold``
    (``compaction.incremental-size-threshold``): when the runs below the max level are larger.
    """

    interval_millis: int | None = None
    total_size_threshold: int | None = None
    incremental_size_threshold: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionOptions:
    """What universal compaction picking and compaction tasks read from the table options.

    ``num_levels`` is the configured number of LSM levels (Paimon ``CoreOptions.numLevels``); a
    bucket whose files sit higher has more (see :class:`~paimonflow.core.compact.levels.Levels`).
    """

    num_sorted_run_compaction_trigger: int = 5
    num_levels: int = 6
    max_size_amplification_percent: int = 200
    size_ratio: int = 1
    off_peak: OffPeakHours | None = None
    early_full_compaction: EarlyFullCompaction | None = None
    target_file_size: int = PRIMARY_KEY_TARGET_FILE_SIZE
    small_file_ratio: float = 0.7
    force_up_level_0: bool = False
    force_rewrite_all_files: bool = False

    def __post_init__(self) -> None:
        if self.num_sorted_run_compaction_trigger < 1:
            raise InvalidOptionError("num-sorted-run.compaction-trigger", self.num_sorted_run_compaction_trigger,
                                     "must be >= 1")
        if self.num_levels < 2:
            raise InvalidOptionError("num-levels", self.num_levels, "must be >= 2")
        if self.max_size_amplification_percent < 0:
            raise InvalidOptionError("compaction.max-size-amplification-percent",
                                     self.max_size_amplification_percent, "must be >= 0")
        if self.size_ratio < 0:
            raise InvalidOptionError("compaction.size-ratio", self.size_ratio, "must be >= 0")
        if self.target_file_size <= 0:
            raise InvalidOptionError("target-file-size", self.target_file_size, "must be positive")
        if not self.small_file_ratio > 0:
            raise InvalidOptionError("compaction.small-file-ratio", self.small_file_ratio, "must be > 0")

    @property
    def compaction_file_size(self) -> int:
        """Files smaller than this are rewritten rather than upgraded (``CoreOptions.compactionFileSize``).

        ``target-file-size × compaction.small-file-ratio``, truncated to whole bytes as Java's ``(long)`` cast.
        """
        return int(self.target_file_size * self.small_file_ratio)

    @classmethod
    def from_options(cls, options: Mapping[str, str], *, primary_key: bool = True) -> CompactionOptions:
        """Parse Paimon's option keys with Paimon's defaults; raises :class:`InvalidOptionError` naming the key.

        ``primary_key`` selects the ``target-file-size`` default (128 MB with a primary key, else 256 MB).
        """

        def get(key: str, parse: Callable[[str], T], default: T) -> T:
            if key not in options:
                return default
            try:
                return parse(options[key])
            except ValueError as exc:
                raise InvalidOptionError(key, options[key], str(exc)) from exc

        trigger = get("num-sorted-run.compaction-trigger", parse_int, 5)
        off_peak = OffPeakHours.create(
            get("compaction.offpeak.start.hour", parse_int, -1),
            get("compaction.offpeak.end.hour", parse_int, -1),
            get("compaction.offpeak-ratio", parse_int, 0),
        )
        early = EarlyFullCompaction(
            interval_millis=get("compaction.optimization-interval", parse_duration_millis, None),
            total_size_threshold=get("compaction.total-size-threshold", parse_memory_size, None),
            incremental_size_threshold=get("compaction.incremental-size-threshold", parse_memory_size, None),
        )
        return cls(
            num_sorted_run_compaction_trigger=trigger,
            num_levels=get("num-levels", parse_int, trigger + 1),
            max_size_amplification_percent=get("compaction.max-size-amplification-percent", parse_int, 200),
            size_ratio=get("compaction.size-ratio", parse_int, 1),
            off_peak=off_peak,
            early_full_compaction=None if early == EarlyFullCompaction() else early,
            target_file_size=get("target-file-size", parse_memory_size,
                                 PRIMARY_KEY_TARGET_FILE_SIZE if primary_key else APPEND_TARGET_FILE_SIZE),
            small_file_ratio=get("compaction.small-file-ratio", _parse_float, 0.7),
            force_up_level_0=get("compaction.force-up-level-0", parse_bool, False),
            force_rewrite_all_files=get("compaction.force-rewrite-all-files", parse_bool, False),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendCompactionOptions:
    """What append-table compaction planning reads from the table options (:mod:`.append`).

    ``min_file_num`` (``compaction.min.file-num``) is the number of files a bucketed minor
    compaction waits for, and the fewest files an unaware-bucket leftover bin is compacted with;
    ``open_file_cost`` (``source.split.open-file-cost``) is added to every file's size when
    unaware-bucket bins are filled; ``force_rewrite_all_files``
    (``compaction.force-rewrite-all-files``) makes a bucketed full compaction rewrite every file.
    """

    target_file_size: int = APPEND_TARGET_FILE_SIZE
    small_file_ratio: float = 0.7
    min_file_num: int = 5
    open_file_cost: int = SPLIT_OPEN_FILE_COST
    force_rewrite_all_files: bool = False

    def __post_init__(self) -> None:
        if self.target_file_size <= 0:
            raise InvalidOptionError("target-file-size", self.target_file_size, "must be positive")
        if not self.small_file_ratio > 0:
            raise InvalidOptionError("compaction.small-file-ratio", self.small_file_ratio, "must be > 0")
        if self.min_file_num < 1:
            raise InvalidOptionError("compaction.min.file-num", self.min_file_num, "must be >= 1")
        if self.open_file_cost < 0:
            raise InvalidOptionError("source.split.open-file-cost", self.open_file_cost, "must be >= 0")

    @property
    def compaction_file_size(self) -> int:
        """Files smaller than this are compaction candidates (``CoreOptions.compactionFileSize(false)``).

        ``target-file-size × compaction.small-file-ratio``, truncated to whole bytes as Java's ``(long)`` cast.
        """
        return int(self.target_file_size * self.small_file_ratio)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> AppendCompactionOptions:
        """Parse Paimon's option keys with Paimon's append-table defaults.

        Raises :class:`InvalidOptionError` naming the key when a value is malformed or out of range.
        """
        return cls(
            target_file_size=_get(options, "target-file-size", parse_memory_size, APPEND_TARGET_FILE_SIZE),
            small_file_ratio=_get(options, "compaction.small-file-ratio", _parse_float, 0.7),
            min_file_num=_get(options, "compaction.min.file-num", parse_int, 5),
            open_file_cost=_get(options, "source.split.open-file-cost", parse_memory_size, SPLIT_OPEN_FILE_COST),
            force_rewrite_all_files=_get(options, "compaction.force-rewrite-all-files", parse_bool, False),
        )


def _get(options: Mapping[str, str], key: str, parse: Callable[[str], T], default: T) -> T:
    if key not in options:
        return default
    try:
        return parse(options[key])
    except ValueError as exc:
        raise InvalidOptionError(key, options[key], str(exc)) from exc


def _parse_float(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ValueError("expected a number") from None
