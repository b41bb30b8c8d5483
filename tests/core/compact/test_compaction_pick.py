"""Merge-tree compaction: levels, Paimon's universal picking and task planning.

Expected results of the Paimon-derived cases were worked out by hand from the algorithm
(``UniversalCompaction``, ``ForceUpLevel0Compaction``, ``IntervalPartition``,
``MergeTreeCompactTask``) and agree with the scenarios of Paimon's own tests.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimonflow.core.compact import (
    CompactionOptions,
    CompactUnit,
    EarlyFullCompaction,
    Levels,
    LevelSortedRun,
    OffPeakHours,
    RewriteStep,
    SortedRun,
    UpgradeStep,
    create_unit,
    estimate_last_full_compaction_millis,
    force_pick_level0,
    interval_partition,
    is_full_compaction,
    may_drop_delete,
    pick,
    pick_for_size_amplification,
    pick_for_size_ratio,
    pick_force_up_level0,
    pick_full_compaction,
    plan_compact_task,
)
from paimonflow.core.data.binary_row import deserialize_row, serialize_row
from paimonflow.core.errors import InvalidArgumentError, InvalidOptionError
from paimonflow.core.meta.manifest import DataFileMeta, SimpleStats

KEY_TYPES = [pa.int32()]
_EMPTY_STATS = SimpleStats(b"", b"", None)
_names = itertools.count()


def meta(
    size: int,
    *,
    level: int = 0,
    keys: tuple[int, int] = (0, 0),
    seq: tuple[int, int] = (0, 0),
    deletes: int | None = 0,
    name: str | None = None,
    created: int | None = 0,
) -> DataFileMeta:
    return DataFileMeta(
        file_name=name or f"data-{next(_names)}.parquet",
        file_size=size,
        row_count=1,
        min_key=serialize_row([keys[0]], KEY_TYPES),
        max_key=serialize_row([keys[1]], KEY_TYPES),
        key_stats=_EMPTY_STATS,
        value_stats=_EMPTY_STATS,
        min_sequence_number=seq[0],
        max_sequence_number=seq[1],
        schema_id=0,
        level=level,
        delete_row_count=deletes,
        creation_time_millis=created,
    )


def key_of(file: DataFileMeta) -> tuple[tuple[object, ...], tuple[object, ...]]:
    return deserialize_row(file.min_key, KEY_TYPES), deserialize_row(file.max_key, KEY_TYPES)


def run(level: int, size: int) -> LevelSortedRun:
    return LevelSortedRun(level, SortedRun((meta(size, level=level),)))


def level0(*sizes: int) -> list[LevelSortedRun]:
    return [run(0, s) for s in sizes]


def opts(max_amp: int, ratio: int, trigger: int, **kw: object) -> CompactionOptions:
    return CompactionOptions(max_size_amplification_percent=max_amp, size_ratio=ratio,
                             num_sorted_run_compaction_trigger=trigger, **kw)  # type: ignore[arg-type]


def sizes_of(unit: CompactUnit | None) -> list[int] | None:
    return None if unit is None else [f.file_size for f in unit.files]


def ranges(section_or_run: object) -> object:
    """Key ranges as plain ints, for readable assertions."""
    if isinstance(section_or_run, SortedRun):
        return [(key_of(f)[0][0], key_of(f)[1][0]) for f in section_or_run.files]
    return sorted(ranges(r) for r in section_or_run)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------- options


def test_options_defaults_are_paimons() -> None:
    o = CompactionOptions.from_options({})
    assert (o.num_sorted_run_compaction_trigger, o.num_levels, o.max_size_amplification_percent, o.size_ratio) == (
        5, 6, 200, 1)
    assert o.off_peak is None and not o.force_up_level_0 and not o.force_rewrite_all_files
    assert o.compaction_file_size == int(128 * 1024 * 1024 * 0.7)
    assert CompactionOptions.from_options({}, primary_key=False).target_file_size == 256 << 20


def test_options_parse_keys_and_derive_num_levels_from_trigger() -> None:
    o = CompactionOptions.from_options({
        "num-sorted-run.compaction-trigger": "3", "compaction.size-ratio": "10",
        "compaction.max-size-amplification-percent": "50", "target-file-size": "10 mb",
        "compaction.small-file-ratio": "0.5", "compaction.offpeak.start.hour": "22",
        "compaction.offpeak.end.hour": "6", "compaction.offpeak-ratio": "20",
        "compaction.force-up-level-0": "true",
    })
    assert o.num_levels == 4 and o.size_ratio == 10 and o.max_size_amplification_percent == 50
    assert o.compaction_file_size == 5 << 20 and o.force_up_level_0
    assert o.off_peak == OffPeakHours(start_hour=22, end_hour=6, ratio=20)
    assert CompactionOptions.from_options({"num-levels": "9"}).num_levels == 9


@pytest.mark.parametrize(("key", "value"), [
    ("num-sorted-run.compaction-trigger", "0"), ("num-levels", "1"), ("compaction.size-ratio", "x"),
    ("compaction.max-size-amplification-percent", "-1"), ("compaction.small-file-ratio", "0"),
    ("compaction.force-up-level-0", "yes"), ("target-file-size", "-5"),
])
def test_options_reject_bad_values_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(InvalidOptionError) as info:
        CompactionOptions.from_options({key: value})
    assert info.value.key == key


def test_off_peak_window_and_disabled_forms() -> None:
    night = OffPeakHours(start_hour=22, end_hour=6, ratio=20)
    assert [night.current_ratio(h) for h in (21, 22, 23, 0, 5, 6)] == [0, 20, 20, 20, 20, 0]
    day = OffPeakHours(start_hour=9, end_hour=17, ratio=5)
    assert [day.current_ratio(h) for h in (8, 9, 16, 17)] == [0, 5, 5, 0]
    assert OffPeakHours.create(-1, 6, 20) is None and OffPeakHours.create(3, 3, 20) is None


# ----------------------------------------------------------------------------------------------- levels


def test_levels_order_level0_newest_first_then_levels_upwards() -> None:
    a = meta(1, seq=(0, 5), name="a")
    b = meta(1, seq=(6, 9), name="b")
    c = meta(1, seq=(3, 9), name="c")  # same max sequence as b, smaller min: first
    d = meta(1, seq=(6, 9), name="d", created=-1)  # same as b but older creation time
    high = meta(5, level=3, keys=(10, 20))
    low2 = meta(4, level=1, keys=(30, 40))
    low1 = meta(3, level=1, keys=(0, 9))
    levels = Levels.from_files([a, b, high, c, low2, d, low1], num_levels=4, key_of=key_of)
    assert levels.level0 == (c, d, b, a)
    runs = levels.sorted_runs()
    assert [r.level for r in runs] == [0, 0, 0, 0, 1, 3]
    assert runs[4].files == (low1, low2) and runs[4].total_size == 7
    assert (levels.num_levels, levels.max_level, levels.number_of_sorted_runs) == (4, 3, 6)
    assert levels.non_empty_highest_level() == 3 and levels.total_file_size == 16
    assert levels.run_of_level(2).files == ()


def test_levels_restore_more_levels_than_configured_and_reject_bad_input() -> None:
    levels = Levels.from_files([meta(1, level=7)], num_levels=3, key_of=key_of)
    assert levels.num_levels == 8 and levels.max_level == 7
    assert Levels.from_files([], num_levels=3, key_of=key_of).non_empty_highest_level() == -1
    assert Levels.from_files([meta(1)], num_levels=3, key_of=key_of).non_empty_highest_level() == 0
    with pytest.raises(InvalidArgumentError):
        Levels.from_files([], num_levels=1, key_of=key_of)
    with pytest.raises(InvalidArgumentError, match="overlapping"):
        Levels.from_files([meta(1, level=1, keys=(0, 5)), meta(1, level=1, keys=(5, 9))], num_levels=3,
                          key_of=key_of)
    twin = meta(1, name="x")
    with pytest.raises(InvalidArgumentError, match="twice"):
        Levels.from_files([twin, twin], num_levels=3, key_of=key_of)
    with pytest.raises(InvalidArgumentError):
        Levels.from_files([], num_levels=3, key_of=key_of).update([], [meta(1, level=3)], key_of=key_of)


def test_levels_update_moves_an_upgraded_file_and_is_immutable() -> None:
    f0, f1 = meta(1, keys=(0, 4), seq=(1, 1)), meta(2, keys=(5, 9), seq=(2, 2))
    levels = Levels.from_files([f0, f1], num_levels=3, key_of=key_of)
    up = DataFileMeta(**{**{s: getattr(f0, s) for s in DataFileMeta.__slots__}, "level": 2})
    after = levels.update([f0], [up], key_of=key_of)
    assert levels.level0 == (f1, f0)
    assert after.level0 == (f1,) and after.run_of_level(2).files == (up,)
    with pytest.raises(AttributeError):
        after.level0 = ()  # type: ignore[misc]


# -------------------------------------------------------------------------------- universal: Paimon's cases


def test_output_level_follows_the_next_run_and_never_is_level0() -> None:
    runs = [run(level, 1) for level in (0, 0, 1, 3, 4)]
    # 1 or 2 runs: next run is level 0 / 1 -> output 0 -> absorb up to the level-1 run -> output 1
    assert [(create_unit(runs, 5, n).output_level, len(create_unit(runs, 5, n).files)) for n in range(1, 6)] == [
        (1, 3), (1, 3), (2, 3), (3, 4), (5, 5)]


def test_pick_by_size_amplification() -> None:
    unit = pick(3, level0(1, 2, 3, 3), opts(25, 1, 3))  # 6 * 100 > 25 * 3
    assert sizes_of(unit) == [1, 2, 3, 3] and unit is not None and unit.output_level == 2


def test_pick_by_size_ratio_stops_at_a_large_run_above_level1() -> None:
    unit = pick(4, [run(0, 1), run(1, 1), run(2, 1), run(3, 50)], opts(25, 1, 3))
    assert sizes_of(unit) == [1, 1, 1] and unit is not None and unit.output_level == 2


def test_pick_by_run_count_then_extends_by_size_ratio() -> None:
    # size ratio alone: 1 * 1.01 < 2 never triggers; 4 runs > 3 force the first 2, then 3 <= 3.03 joins.
    unit = pick(4, [run(0, 1), run(1, 2), run(2, 3), run(3, 50)], opts(25, 1, 3))
    assert sizes_of(unit) == [1, 2, 3] and unit is not None and unit.output_level == 2


def test_no_output_to_level0() -> None:
    unit = pick(3, [run(0, 1), run(0, 1), run(1, 1), run(2, 50)], opts(25, 1, 3))
    assert sizes_of(unit) == [1, 1, 1] and unit is not None and unit.output_level == 1
    unit = pick(3, [run(0, 1), run(0, 2), run(1, 3), run(2, 50)], opts(25, 1, 3))
    assert sizes_of(unit) == [1, 2, 3] and unit is not None and unit.output_level == 1


def test_once_triggered_a_large_level1_run_is_absorbed() -> None:
    # run count picks 10 + 20; level 1 (97) is too large by ratio but on level 1, so it joins;
    # then 100 <= 127 * 1.01 joins as well: everything goes to the max level.
    unit = pick(3, [run(0, 10), run(0, 20), run(1, 97), run(2, 100)], opts(200, 1, 3))
    assert sizes_of(unit) == [10, 20, 97, 100] and unit is not None and unit.output_level == 2


def test_extreme_sizes_on_level0_all_go_to_the_max_level() -> None:
    unit = pick(6, level0(1, 1, 1, 1024, 1024 * 1024), opts(200, 1, 5))
    assert sizes_of(unit) == [1, 1, 1, 1024, 1024 * 1024] and unit is not None and unit.output_level == 5


def _amp_step(options: CompactionOptions, sizes: list[int]) -> list[int]:
    sizes = [1, *sizes]
    unit = pick_for_size_amplification(3, level0(*sizes), options)
    return sizes if unit is None else [sum(f.file_size for f in unit.files)]


def test_size_amplification_sequence() -> None:
    options, sizes, seen = opts(25, 0, 1), [1], []
    for _ in range(17):
        sizes = _amp_step(options, sizes)
        seen.append(sizes)
    assert seen == [[2], [3], [4], [1, 4], [6], [1, 6], [8], [1, 8], [1, 1, 8], [11], [1, 11], [1, 1, 11], [14],
                    [1, 14], [1, 1, 14], [1, 1, 1, 14], [18]]


def _ratio_step(options: CompactionOptions, sizes: list[int]) -> list[int]:
    runs = [run(i, s) for i, s in enumerate(sizes)]  # level i, as the levels of a bucket grow
    unit = None
    if len(runs) >= options.num_sorted_run_compaction_trigger:
        unit = pick_for_size_ratio(len(sizes), runs, candidate_count=1, size_ratio=options.size_ratio)
    if unit is None:
        return sizes
    return [sum(f.file_size for f in unit.files), *sizes[len(unit.files):]]


def test_size_ratio_sequence() -> None:
    options, sizes, seen = opts(25, 1, 5), [1, 1, 1, 1], []
    for _ in range(23):
        sizes = _ratio_step(options, [1, *sizes])
        seen.append(sizes)
    assert seen == [
        [5], [1, 5], [1, 1, 5], [1, 1, 1, 5], [4, 5], [1, 4, 5], [1, 1, 4, 5], [3, 4, 5], [1, 3, 4, 5],
        [2, 3, 4, 5], [1, 2, 3, 4, 5], [16], [1, 16], [1, 1, 16], [1, 1, 1, 16], [4, 16], [1, 4, 16],
        [1, 1, 4, 16], [3, 4, 16], [1, 3, 4, 16], [2, 3, 4, 16], [1, 2, 3, 4, 16], [11, 16]]


def test_size_ratio_threshold() -> None:
    assert _ratio_step(opts(25, 10, 2), [8, 9, 10]) == [8, 9, 10]  # 8 * 1.10 < 9
    assert _ratio_step(opts(25, 20, 2), [8, 9, 10]) == [27]  # 8 * 1.20 >= 9, 17 * 1.20 >= 10


def test_below_trigger_nothing_is_picked() -> None:
    assert pick(3, level0(1, 100), opts(25, 1, 3)) is None
    assert pick(3, [], opts(25, 1, 3)) is None
    assert pick(3, [run(2, 5)], opts(25, 1, 1)) is None


def test_off_peak_ratio_widens_the_size_ratio_and_needs_the_hour() -> None:
    runs = [run(0, 10), run(1, 11), run(2, 12), run(3, 10_000)]
    night = opts(200, 1, 4, off_peak=OffPeakHours(start_hour=22, end_hour=6, ratio=20))
    assert pick(4, runs, night, hour=12) is None  # 10 * 1.01 < 11
    assert sizes_of(pick(4, runs, night, hour=23)) == [10, 11, 12]  # 10 * 1.21 >= 11, 21 * 1.21 >= 12
    with pytest.raises(InvalidArgumentError):
        pick(4, runs, night)


# ---------------------------------------------------------------------------------- early full compaction


def test_early_full_compaction_by_interval_with_caller_kept_state() -> None:
    options = opts(100, 1, 3, early_full_compaction=EarlyFullCompaction(interval_millis=1000))
    last: int | None = None

    def step(now: int, sizes: tuple[int, int, int]) -> list[int] | None:
        nonlocal last
        runs = [run(level, size) for level, size in enumerate(sizes)]
        unit = pick(3, runs, options, now_millis=now, last_full_compaction_millis=last)
        if is_full_compaction(unit, runs):
            last = now
        return sizes_of(unit)

    assert step(0, (1, 3, 5)) == [1, 3, 5]  # no full compaction known yet
    assert step(1001, (1, 3, 5)) == [1, 3, 5]  # 1001 - 0 > 1000
    assert step(1001, (1, 3, 5)) is None  # just done; 4 * 100 <= 100 * 5 and 1 * 1.01 < 3
    assert step(1500, (3, 3, 5)) == [3, 3, 5]  # size amplification 600 > 500 also counts as full
    assert step(2001, (1, 3, 5)) is None  # 2001 - 1500 <= 1000
    with pytest.raises(InvalidArgumentError):
        pick(3, level0(1, 2), options)


def test_early_full_compaction_by_size_thresholds() -> None:
    total = opts(100, 1, 3, early_full_compaction=EarlyFullCompaction(total_size_threshold=10))
    assert sizes_of(pick(3, [run(0, 1), run(1, 3), run(2, 5)], total)) == [1, 3, 5]  # 9 < 10
    assert pick(3, [run(0, 2), run(1, 6), run(2, 10)], total) is None
    assert pick(3, [run(2, 5)], total) is None  # one run: nothing to merge
    incremental = opts(100, 1, 3, early_full_compaction=EarlyFullCompaction(incremental_size_threshold=8))
    assert sizes_of(pick(3, [run(0, 4), run(1, 5), run(2, 100)], incremental)) == [4, 5, 100]  # 9 > 8
    not_over = opts(100, 1, 3, early_full_compaction=EarlyFullCompaction(incremental_size_threshold=9))
    assert pick(3, [run(0, 4), run(1, 5), run(2, 100)], not_over) is None  # 9 is not > 9; 4 * 1.01 < 5
    parsed = CompactionOptions.from_options({"compaction.optimization-interval": "1 h",
                                             "compaction.total-size-threshold": "1 mb"})
    assert parsed.early_full_compaction == EarlyFullCompaction(interval_millis=3_600_000,
                                                               total_size_threshold=1 << 20)
    assert CompactionOptions.from_options({}).early_full_compaction is None


def test_estimate_last_full_compaction_from_max_level_files() -> None:
    files = [meta(1, level=2, created=50), meta(1, level=2, created=70), meta(1, level=1, created=99)]
    assert estimate_last_full_compaction_millis(files, 3) == 70
    assert estimate_last_full_compaction_millis(files, 4) is None


# ------------------------------------------------------------------------------------- force up level 0


def test_force_up_level0_radical() -> None:
    options = opts(25, 1, 3)
    result = pick_force_up_level0(3, level0(1, 2, 2, 2), options)  # universal: size amplification
    assert sizes_of(result.unit) == [1, 2, 2, 2] and result.unit is not None and result.unit.output_level == 2
    result = pick_force_up_level0(3, [run(0, 1), run(1, 2), run(2, 2)], options)
    assert sizes_of(result.unit) == [1, 2, 2] and result.unit is not None and result.unit.output_level == 2
    result = pick_force_up_level0(3, [run(0, 1), run(2, 2)], options)  # universal: too few runs
    assert sizes_of(result.unit) == [1] and result.unit is not None and result.unit.output_level == 1
    assert pick_force_up_level0(3, [run(1, 1), run(2, 2)], options).unit is None


def test_force_up_level0_gentle_fires_every_max_interval_calls() -> None:
    options, count = opts(25, 1, 5), 0
    cases = [
        (level0(1, 2, 2, 2), [1, 2, 2, 2], 2),
        ([run(0, 2), run(1, 2), run(2, 2)], [2, 2, 2], 2),
        ([run(0, 1), run(2, 2)], [1], 1),
    ]
    for runs, expected, level in cases:
        for call in range(1, 6):
            result = pick_force_up_level0(3, runs, options, max_interval=5, trigger_count=count)
            count = result.trigger_count
            if call < 5:
                assert result.unit is None and count == call
            else:
                assert sizes_of(result.unit) == expected and result.unit is not None
                assert result.unit.output_level == level and count == 0


def test_force_pick_level0_without_level0_is_none() -> None:
    assert force_pick_level0(3, [run(1, 1)], opts(25, 1, 3)) is None


# ----------------------------------------------------------------------------------------- full compaction


def test_full_compaction() -> None:
    assert pick_full_compaction(3, []) is None
    unit = pick_full_compaction(3, [run(0, 1), run(2, 5)])
    assert unit is not None and unit.output_level == 2 and sizes_of(unit) == [1, 5] and not unit.file_rewrite
    top = [run(2, 5)]
    assert pick_full_compaction(3, top) is None
    unit = pick_full_compaction(3, top, force_rewrite_all_files=True)
    assert unit is not None and unit.file_rewrite and unit.files == top[0].files
    unit = pick_full_compaction(3, top, needs_rewrite=lambda f: f.file_size == 5)
    assert unit is not None and unit.file_rewrite
    unit = pick_full_compaction(3, [run(1, 5)])  # one run below the max level: moved up
    assert unit is not None and unit.output_level == 2 and not unit.file_rewrite


def test_trivial_units() -> None:
    f = meta(1, level=2)
    assert CompactUnit(output_level=2, files=()).is_trivial
    assert CompactUnit(output_level=2, files=(f,)).is_trivial
    assert not CompactUnit(output_level=3, files=(f,)).is_trivial
    assert not CompactUnit(output_level=2, files=(f, meta(1))).is_trivial


# ---------------------------------------------------------------------------------------------- tasks


def intervals(*pairs: tuple[int, int]) -> list[DataFileMeta]:
    return [meta(1, keys=p) for p in pairs]


def test_interval_partition_cases() -> None:
    same_min = interval_partition(intervals((100, 200), (100, 400), (100, 300), (100, 500)), key_of)
    assert [ranges(s) for s in same_min] == [[[(100, 200)], [(100, 300)], [(100, 400)], [(100, 500)]]]
    same_max = interval_partition(intervals((100, 500), (300, 500), (200, 500), (400, 500)), key_of)
    assert [ranges(s) for s in same_max] == [[[(100, 500)], [(200, 500)], [(300, 500)], [(400, 500)]]]
    files = intervals((0, 9), (5, 7), (9, 15), (16, 22), (16, 28), (24, 32))
    assert [ranges(s) for s in interval_partition(files, key_of)] == [
        [[(0, 9)], [(5, 7), (9, 15)]],  # 9 touches 9: same section
        [[(16, 22), (24, 32)], [(16, 28)]],
    ]


def test_task_upgrades_large_disjoint_files_and_rewrites_small_ones() -> None:
    big_a = meta(100, level=1, keys=(0, 9))
    small_b = meta(10, level=1, keys=(10, 19))
    small_c = meta(10, level=0, keys=(20, 29))
    big_d = meta(100, level=0, keys=(30, 39))
    unit = CompactUnit(output_level=2, files=(small_c, big_d, big_a, small_b))
    plan = plan_compact_task(unit, key_of=key_of, compaction_file_size=50, max_level=3, drop_delete=False)
    assert plan.steps == (
        UpgradeStep(file=big_a),
        RewriteStep(sections=((SortedRun((small_b,)),), (SortedRun((small_c,)),))),
        UpgradeStep(file=big_d),
    )
    assert plan.output_level == 2 and plan.unchanged == ()


def test_task_rewrites_overlapping_sections_together_with_small_neighbours() -> None:
    x = meta(100, keys=(0, 10))
    y = meta(100, level=1, keys=(5, 15))
    small = meta(10, level=1, keys=(20, 25))
    big = meta(100, level=1, keys=(30, 35))
    plan = plan_compact_task(CompactUnit(output_level=2, files=(x, y, small, big)), key_of=key_of,
                             compaction_file_size=50, max_level=3, drop_delete=True)
    assert len(plan.steps) == 2 and plan.drop_delete
    first, second = plan.steps
    assert isinstance(first, RewriteStep) and first.files == (x, y, small)
    assert second == UpgradeStep(file=big)


def test_task_lone_small_file_is_upgraded_not_rewritten() -> None:
    small = meta(10, level=0, keys=(0, 5))
    plan = plan_compact_task(CompactUnit(output_level=1, files=(small,)), key_of=key_of,
                             compaction_file_size=50, max_level=3, drop_delete=False)
    assert plan.steps == (UpgradeStep(file=small),)


def test_task_upgrade_to_max_level_rewrites_files_that_may_hold_deletes() -> None:
    clean = meta(100, level=1, keys=(0, 5), deletes=0)
    unknown = meta(100, level=1, keys=(6, 9), deletes=None)
    with_deletes = meta(100, level=1, keys=(10, 15), deletes=3)
    unit = CompactUnit(output_level=3, files=(clean, unknown, with_deletes))
    plan = plan_compact_task(unit, key_of=key_of, compaction_file_size=50, max_level=3, drop_delete=True)
    assert plan.upgraded_files == (clean,) and plan.rewritten_files == (unknown, with_deletes)
    below_max = plan_compact_task(CompactUnit(output_level=2, files=unit.files), key_of=key_of,
                                  compaction_file_size=50, max_level=3, drop_delete=True)
    assert below_max.upgraded_files == unit.files
    already_there = meta(100, level=3, keys=(20, 25), deletes=None)  # rewritten even though on level 3
    plan = plan_compact_task(CompactUnit(output_level=3, files=(clean, already_there)), key_of=key_of,
                             compaction_file_size=50, max_level=3, drop_delete=True)
    assert plan.upgraded_files == (clean,) and plan.rewritten_files == (already_there,) and plan.unchanged == ()


def test_task_force_rewrite_expired_and_unchanged() -> None:
    a = meta(100, level=2, keys=(0, 5))
    b = meta(100, level=1, keys=(6, 9))
    unit = CompactUnit(output_level=2, files=(a, b))
    plan = plan_compact_task(unit, key_of=key_of, compaction_file_size=50, max_level=3, drop_delete=False)
    assert plan.unchanged == (a,) and plan.steps == (UpgradeStep(file=b),)
    forced = plan_compact_task(unit, key_of=key_of, compaction_file_size=50, max_level=3, drop_delete=False,
                               force_rewrite_all_files=True)
    assert forced.rewritten_files == (a, b) and forced.unchanged == ()
    expired = plan_compact_task(unit, key_of=key_of, compaction_file_size=50, max_level=3, drop_delete=False,
                                has_expired_records=lambda f: f is b)
    assert expired.unchanged == (a,) and expired.rewritten_files == (b,)


def test_file_rewrite_unit_rewrites_each_file_alone() -> None:
    a, b = meta(100, level=2, keys=(0, 5)), meta(100, level=2, keys=(6, 9))
    plan = plan_compact_task(CompactUnit(output_level=2, files=(a, b), file_rewrite=True), key_of=key_of,
                             compaction_file_size=50, max_level=2, drop_delete=True)
    assert plan.steps == (RewriteStep(sections=((SortedRun((a,)),),)), RewriteStep(sections=((SortedRun((b,)),),)))


def test_drop_delete_only_when_nothing_older_remains() -> None:
    levels = Levels.from_files([meta(1), meta(1, level=1), meta(1, level=3)], num_levels=4, key_of=key_of)
    assert not may_drop_delete(0, levels)
    assert not may_drop_delete(2, levels)  # level 3 holds older data
    assert may_drop_delete(3, levels)
    assert may_drop_delete(2, levels, deletion_vectors=True)
    assert not may_drop_delete(3, levels, force_keep_delete=True)
    assert not may_drop_delete(0, levels, deletion_vectors=True)


# ---------------------------------------------------------------------------------------------- properties


@st.composite
def bucket_runs(draw: st.DrawFn) -> tuple[int, list[LevelSortedRun]]:
    num_levels = draw(st.integers(2, 8))
    sizes = st.integers(1, 1 << 20)
    runs = [run(0, s) for s in draw(st.lists(sizes, max_size=8))]
    higher = draw(st.lists(st.integers(1, num_levels - 1), unique=True, max_size=num_levels - 1))
    runs += [run(level, draw(sizes)) for level in sorted(higher)]
    return num_levels, runs


options_strategy = st.builds(
    CompactionOptions,
    num_sorted_run_compaction_trigger=st.integers(1, 8),
    max_size_amplification_percent=st.integers(0, 400),
    size_ratio=st.integers(0, 50),
)


def _check_unit(unit: CompactUnit, runs: Sequence[LevelSortedRun], num_levels: int) -> int:
    """Asserts Paimon's invariants of a picked unit; returns how many runs it covers."""
    count = next(k for k in range(1, len(runs) + 1) if unit.files == tuple(f for r in runs[:k] for f in r.files))
    assert 1 <= unit.output_level <= num_levels - 1
    assert all(f.level <= unit.output_level for f in unit.files)
    if count == len(runs):
        assert unit.output_level == num_levels - 1
    else:
        assert runs[count].level > 0 and unit.output_level < runs[count].level
    return count


@settings(max_examples=300, deadline=None)
@given(bucket_runs(), options_strategy)
def test_pick_is_a_valid_contiguous_prefix(bucket: tuple[int, list[LevelSortedRun]],
                                           options: CompactionOptions) -> None:
    num_levels, runs = bucket
    unit = pick(num_levels, runs, options)
    trigger = options.num_sorted_run_compaction_trigger
    if len(runs) < trigger:
        assert unit is None
    if len(runs) > trigger:
        assert unit is not None  # the run-count rule always fires
    if unit is not None:
        assert _check_unit(unit, runs, num_levels) >= 2  # universal never picks a lone run
    forced = force_pick_level0(num_levels, runs, options)
    level0_runs = sum(1 for r in runs if r.level == 0)
    assert (forced is None) == (level0_runs == 0)
    if forced is not None:
        assert _check_unit(forced, runs, num_levels) >= level0_runs


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 1000), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=60),
    options_strategy,
)
def test_write_then_compact_loop_keeps_runs_bounded(writes: list[tuple[int, int, int]],
                                                   options: CompactionOptions) -> None:
    """Flush one L0 file per write, pick and apply compactions like Paimon's writer; check the LSM."""
    levels = Levels.from_files([], num_levels=options.num_levels, key_of=key_of)
    trigger = options.num_sorted_run_compaction_trigger
    for seq, (size, lo, width) in enumerate(writes):
        levels = levels.update([], [meta(size, keys=(lo, lo + width), seq=(seq, seq))], key_of=key_of)
        before = levels.sorted_runs()
        unit = pick(levels.num_levels, before, options)
        if unit is None or unit.is_trivial:
            assert levels.number_of_sorted_runs <= trigger
            continue
        _check_unit(unit, before, levels.num_levels)
        plan = plan_compact_task(unit, key_of=key_of, compaction_file_size=300, max_level=levels.max_level,
                                 drop_delete=may_drop_delete(unit.output_level, levels))
        # every input file is handled exactly once
        handled = [*plan.rewritten_files, *plan.upgraded_files, *plan.unchanged]
        assert sorted(f.file_name for f in handled) == sorted(f.file_name for f in unit.files)
        # an upgraded file overlaps no other file of the unit
        for up in plan.upgraded_files:
            lo_up, hi_up = key_of(up)
            assert all(key_of(f)[1] < lo_up or key_of(f)[0] > hi_up for f in unit.files if f is not up)
        # apply: each rewrite becomes one file spanning its inputs, upgrades change level only
        after: list[DataFileMeta] = list(plan.unchanged)
        for step in plan.steps:
            if isinstance(step, UpgradeStep):
                after.append(meta(step.file.file_size, level=unit.output_level,
                                  keys=(key_of(step.file)[0][0], key_of(step.file)[1][0])))  # type: ignore[arg-type]
            else:
                lows = [key_of(f)[0][0] for f in step.files]
                highs = [key_of(f)[1][0] for f in step.files]
                after.append(meta(sum(f.file_size for f in step.files), level=unit.output_level,
                                  keys=(min(lows), max(highs))))  # type: ignore[type-var]
        levels = levels.update(unit.files, after, key_of=key_of)
        if len(before) > trigger:
            assert levels.number_of_sorted_runs <= trigger
        assert sum(f.file_size for f in levels.all_files()) == sum(w[0] for w in writes[: seq + 1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), min_size=1, max_size=30))
def test_interval_partition_uses_the_fewest_runs(pairs: list[tuple[int, int]]) -> None:
    files = intervals(*[(lo, lo + width) for lo, width in pairs])
    sections = interval_partition(files, key_of)
    flat = [f for section in sections for r in section for f in r.files]
    assert sorted(f.file_name for f in flat) == sorted(f.file_name for f in files)
    previous_max = None
    for section in sections:
        spans = [key_of(f) for r in section for f in r.files]
        if previous_max is not None:
            assert min(s[0] for s in spans) > previous_max
        previous_max = max(s[1] for s in spans)
        for r in section:
            assert all(key_of(b)[0] > key_of(a)[1] for a, b in itertools.pairwise(r.files))
        # the fewest sorted runs = the most files covering one key
        points = {s[0] for s in spans}
        depth = max(sum(1 for s in spans if s[0] <= p <= s[1]) for p in points)
        assert len(section) == depth
