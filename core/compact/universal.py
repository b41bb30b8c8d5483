"""Which sorted runs of a bucket to compact, exactly as Paimon picks them.

Paimon's primary-key tables use RocksDB-style universal compaction
(``mergetree.compact.UniversalCompaction``), optionally wrapped by ``ForceUpLevel0Compaction``
(lookup tables, ``compaction.force-up-level-0``); a manual full compaction uses
``CompactStrategy.pickFullCompaction``. Every function here is pure: the input is the bucket's
sorted runs in :meth:`Levels.sorted_runs <paimonflow.core.compact.levels.Levels.sorted_runs>`
order (newest first, the last run is the oldest and largest), the output a :class:`CompactUnit`
or ``None``. A unit always covers a *contiguous prefix* of the runs, except the single-max-level-run
case of :func:`pick_full_compaction`.

Paimon keeps two pieces of state inside its strategy objects; here the caller keeps them and
passes them in: the time of the last full compaction (``EarlyFullCompaction``; Paimon sets it
whenever a picked unit covers all runs, see :func:`is_full_compaction`) and the gentle
lookup-compaction counter (:func:`pick_force_up_level0`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import InvalidArgumentError
from ..meta.manifest import DataFileMeta
from ..options.compaction import CompactionOptions, EarlyFullCompaction
from .levels import LevelSortedRun


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactUnit:
    """Files to compact together and the level the result goes to (Paimon ``compact.CompactUnit``).

    ``file_rewrite`` marks a unit whose files are each rewritten on their own
    (``FileRewriteCompactTask``) instead of being merged as a merge tree.
    """

    output_level: int
    files: tuple[DataFileMeta, ...]
    file_rewrite: bool = False

    @staticmethod
    def from_level_runs(output_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit:
        return CompactUnit(output_level=output_level, files=tuple(f for run in runs for f in run.files))

    @property
    def is_trivial(self) -> bool:
        """True when compacting would change nothing: no file, or one file already on the output level.

        ``MergeTreeCompactManager.triggerCompaction`` drops such units from a normal (non-full) pick.
        """
        return not self.files or (len(self.files) == 1 and self.files[0].level == self.output_level)


def pick(
    num_levels: int,
    runs: Sequence[LevelSortedRun],
    options: CompactionOptions,
    *,
    hour: int | None = None,
    now_millis: int | None = None,
    last_full_compaction_millis: int | None = None,
) -> CompactUnit | None:
    """Paimon's ``UniversalCompaction.pick``: the runs to compact now, or ``None``.

    With ``trigger = num-sorted-run.compaction-trigger`` and ``max_level = num_levels - 1``, in order:

    0. early full compaction, only if ``options.early_full_compaction`` is set
       (:func:`try_early_full_compaction`, which needs ``now_millis`` for an interval);
    1. size amplification: at least ``trigger`` runs and ``Σ size(all runs but the last) × 100 >
       max-size-amplification-percent × size(last run)`` → all runs, output ``max_level``;
    2. size ratio: at least ``trigger`` runs → start from the first run and add the next while
       ``candidate size × (100 + size-ratio + off-peak ratio) / 100 ≥ next size``; once two runs
       are in, runs on level ≤ 1 are added whatever their size; needs at least two runs;
    3. run count: more than ``trigger`` runs → the first ``runs - trigger + 1`` runs, extended by
       the size-ratio rule of step 2.

    The output level follows :func:`create_unit`. ``hour`` (0-23, local time) is required when
    off-peak hours are configured; Paimon reads the clock instead. When the result covers all runs
    (:func:`is_full_compaction`) the caller sets its last full compaction time to ``now_millis``.
    """
    max_level = num_levels - 1
    ratio = _size_ratio(options, hour)
    trigger = options.num_sorted_run_compaction_trigger
    if options.early_full_compaction is not None:
        early = try_early_full_compaction(
            num_levels, runs, options.early_full_compaction,
            now_millis=now_millis, last_full_compaction_millis=last_full_compaction_millis,
        )
        if early is not None:
            return early
    unit = pick_for_size_amplification(max_level, runs, options)
    if unit is not None:
        return unit
    if len(runs) >= trigger:
        unit = pick_for_size_ratio(max_level, runs, candidate_count=1, size_ratio=ratio)
        if unit is not None:
            return unit
    if len(runs) > trigger:
        return pick_for_size_ratio(max_level, runs, candidate_count=len(runs) - trigger + 1, size_ratio=ratio)
    return None


def try_early_full_compaction(
    num_levels: int,
    runs: Sequence[LevelSortedRun],
    early: EarlyFullCompaction,
    *,
    now_millis: int | None,
    last_full_compaction_millis: int | None,
) -> CompactUnit | None:
    """Step 0 of :func:`pick` (``EarlyFullCompaction.tryFullCompact``): all runs to the max level, or ``None``.

    Never with exactly one run. Fires, checked in this order, when the interval is set and no full
    compaction is known or more than ``interval_millis`` passed since it (``now - last > interval``);
    when the total size is below ``total_size_threshold``; when the size of the runs not on the max
    level exceeds ``incremental_size_threshold``. With no runs at all it returns an empty unit, as
    Paimon does (which :attr:`CompactUnit.is_trivial` then discards).
    """
    if len(runs) == 1:
        return None
    max_level = num_levels - 1
    if early.interval_millis is not None:
        if now_millis is None:
            raise InvalidArgumentError("compaction.optimization-interval is set: pass now_millis")
        if last_full_compaction_millis is None or now_millis - last_full_compaction_millis > early.interval_millis:
            return CompactUnit.from_level_runs(max_level, runs)
    if early.total_size_threshold is not None and sum(r.total_size for r in runs) < early.total_size_threshold:
        return CompactUnit.from_level_runs(max_level, runs)
    if early.incremental_size_threshold is not None:
        incremental = sum(r.total_size for r in runs if r.level != max_level)
        if incremental > early.incremental_size_threshold:
            return CompactUnit.from_level_runs(max_level, runs)
    return None


def is_full_compaction(unit: CompactUnit | None, runs: Sequence[LevelSortedRun]) -> bool:
    """Whether ``unit`` (picked from ``runs``) covers every run.

    Exactly then Paimon's universal strategy records a full compaction (``updateLastFullCompaction``
    in ``pickForSizeAmp``, ``createUnit`` and ``tryFullCompact``); callers keep that time for
    :func:`pick`'s ``last_full_compaction_millis``.
    """
    return unit is not None and len(unit.files) == sum(len(r.files) for r in runs)


def estimate_last_full_compaction_millis(files: Iterable[DataFileMeta], num_levels: int) -> int | None:
    """The newest creation time of a file on level ``num_levels - 1``, or ``None``.

    Paimon's ``MergeTreeCompactManagerFactory.estimateLastFullCompactionTime``, the initial state of
    a restored writer. Files without a creation time are ignored.
    """
    times = [f.creation_time_millis for f in files
             if f.level == num_levels - 1 and f.creation_time_millis is not None and f.creation_time_millis >= 0]
    return max(times) if times else None


def pick_for_size_amplification(
    max_level: int, runs: Sequence[LevelSortedRun], options: CompactionOptions
) -> CompactUnit | None:
    """Step 1 of :func:`pick` (``UniversalCompaction.pickForSizeAmp``): all runs to ``max_level``, or ``None``."""
    if len(runs) < options.num_sorted_run_compaction_trigger:
        return None
    candidate_size = sum(run.total_size for run in runs[:-1])
    earliest_size = runs[-1].total_size
    if candidate_size * 100 > options.max_size_amplification_percent * earliest_size:
        return CompactUnit.from_level_runs(max_level, runs)
    return None


def pick_for_size_ratio(
    max_level: int,
    runs: Sequence[LevelSortedRun],
    *,
    candidate_count: int,
    size_ratio: int,
    force: bool = False,
) -> CompactUnit | None:
    """Paimon's ``UniversalCompaction.pickForSizeRatio(maxLevel, runs, candidateCount, forcePick)``.

    Starts from the first ``candidate_count`` runs and adds the next run while ``candidate size ×
    (100 + size_ratio) / 100 ≥ its size`` (computed in floating point, as Java does). Once
    compaction is triggered (``force``, ``candidate_count > 1`` or one run added), a too-large next
    run on level 0 or 1 is still absorbed; a too-large run on a higher level stops the scan.
    Returns ``None`` if compaction was never triggered. ``size_ratio`` includes any off-peak ratio.
    """
    candidate_size = sum(run.total_size for run in runs[:candidate_count])
    triggered = force or candidate_count > 1
    for run in runs[candidate_count:]:
        if candidate_size * (100.0 + size_ratio) / 100.0 < run.total_size and (not triggered or run.level > 1):
            break
        candidate_size += run.total_size
        candidate_count += 1
        triggered = True
    return create_unit(runs, max_level, candidate_count) if triggered else None


def create_unit(runs: Sequence[LevelSortedRun], max_level: int, run_count: int) -> CompactUnit:
    """The unit of the first ``run_count`` runs with Paimon's output level (``UniversalCompaction.createUnit``).

    - all runs picked → ``max_level``;
    - else ``level of the next run - 1`` (at least 0);
    - the output never is level 0: if it would be, the following runs are absorbed up to and
      including the first run on a level > 0, whose level becomes the output level; if that
      absorbs every run, the output is ``max_level``.
    """
    output_level = max_level if run_count == len(runs) else max(0, runs[run_count].level - 1)
    if output_level == 0:
        for run in runs[run_count:]:
            run_count += 1
            if run.level != 0:
                output_level = run.level
                break
    if run_count == len(runs):
        output_level = max_level
    return CompactUnit.from_level_runs(output_level, runs[:run_count])


def force_pick_level0(
    num_levels: int, runs: Sequence[LevelSortedRun], options: CompactionOptions, *, hour: int | None = None
) -> CompactUnit | None:
    """All level-0 runs, extended by the size-ratio rule (``UniversalCompaction.forcePickL0``); ``None`` without level 0."""
    level0_count = 0
    for run in runs:
        if run.level > 0:
            break
        level0_count += 1
    if level0_count == 0:
        return None
    return pick_for_size_ratio(
        num_levels - 1, runs, candidate_count=level0_count, size_ratio=_size_ratio(options, hour), force=True
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ForceUpLevel0Pick:
    """Result of :func:`pick_force_up_level0`: the unit and the caller's new trigger counter."""

    unit: CompactUnit | None
    trigger_count: int


def pick_force_up_level0(
    num_levels: int,
    runs: Sequence[LevelSortedRun],
    options: CompactionOptions,
    *,
    max_interval: int | None = None,
    trigger_count: int = 0,
    hour: int | None = None,
    now_millis: int | None = None,
    last_full_compaction_millis: int | None = None,
) -> ForceUpLevel0Pick:
    """Paimon's ``ForceUpLevel0Compaction.pick``: universal first; if it picks nothing, push level 0 up.

    Paimon uses this strategy when lookups need level 0 empty (``changelog-producer=lookup``,
    deletion vectors, ``first-row`` merge engine, ``force-lookup``) or with
    ``compaction.force-up-level-0``. With ``max_interval=None`` (``lookup-compact=radical``, and
    always for ``compaction.force-up-level-0``) :func:`force_pick_level0` runs whenever universal
    picks nothing. With an interval (``lookup-compact=gentle``, ``lookup-compact.max-interval``,
    default ``2 × trigger``, never below ``trigger``) each such call increments ``trigger_count`` and only the
    call reaching ``max_interval`` force-picks and resets it to 0. The counter is the caller's
    state: pass back the returned one. A universal pick leaves it unchanged.
    """
    unit = pick(num_levels, runs, options, hour=hour, now_millis=now_millis,
                last_full_compaction_millis=last_full_compaction_millis)
    if unit is not None:
        return ForceUpLevel0Pick(unit=unit, trigger_count=trigger_count)
    if max_interval is None:
        unit = force_pick_level0(num_levels, runs, options, hour=hour)
        return ForceUpLevel0Pick(unit=unit, trigger_count=trigger_count)
    trigger_count += 1
    if trigger_count == max_interval:
        return ForceUpLevel0Pick(unit=force_pick_level0(num_levels, runs, options, hour=hour), trigger_count=0)
    return ForceUpLevel0Pick(unit=None, trigger_count=trigger_count)


def pick_full_compaction(
    num_levels: int,
    runs: Sequence[LevelSortedRun],
    *,
    force_rewrite_all_files: bool = False,
    needs_rewrite: Callable[[DataFileMeta], bool] | None = None,
) -> CompactUnit | None:
    """A manual full compaction (``CompactStrategy.pickFullCompaction``).

    - no runs → ``None``;
    - only one run, on the max level → a ``file_rewrite`` unit of the files to rewrite one by one:
      all of them with ``force_rewrite_all_files``, else those for which ``needs_rewrite`` is true
      (Paimon: files holding records expired by record-level TTL, or having a deletion vector);
      ``None`` if there are none;
    - otherwise all runs, output ``num_levels - 1``.
    """
    max_level = num_levels - 1
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        files = tuple(
            f for f in runs[0].files if force_rewrite_all_files or (needs_rewrite is not None and needs_rewrite(f))
        )
        return CompactUnit(output_level=max_level, files=files, file_rewrite=True) if files else None
    return CompactUnit.from_level_runs(max_level, runs)


def _size_ratio(options: CompactionOptions, hour: int | None) -> int:
    if options.off_peak is None:
        return options.size_ratio
    if hour is None or not 0 <= hour <= 23:
        raise InvalidArgumentError("off-peak compaction hours are configured: pass the current hour (0-23)")
    return options.size_ratio + options.off_peak.current_ratio(hour)
