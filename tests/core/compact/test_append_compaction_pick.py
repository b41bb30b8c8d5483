"""Append-table compaction picking: bucketed minor/full picks and unaware-bucket bin packing.

Expected results were worked out by hand from Paimon's ``BucketedAppendCompactManager``
(``pickCompactBefore``, ``FullCompactTask``) and ``AppendCompactCoordinator`` (``FileBin``).
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimonflow.core.compact import (
    AppendCompactionOptions,
    AppendCompactTask,
    pick_bucketed_full,
    pick_bucketed_minor,
    plan_unaware,
    sequence_order,
)
from paimonflow.core.errors import InvalidArgumentError, InvalidOptionError
from paimonflow.core.meta.manifest import DataFileMeta, SimpleStats
from paimonflow.core.options.validate import validate_user_options

_EMPTY_STATS = SimpleStats(b"", b"", None)
_names = itertools.count()
MB = 1 << 20


def meta(size: int, *, seq: int = 0, name: str | None = None) -> DataFileMeta:
    return DataFileMeta(
        file_name=name or f"data-{next(_names)}.parquet",
        file_size=size,
        row_count=1,
        min_key=b"",
        max_key=b"",
        key_stats=_EMPTY_STATS,
        value_stats=_EMPTY_STATS,
        min_sequence_number=seq,
        max_sequence_number=seq,
        schema_id=0,
        level=0,
    )


def bucket(*sizes: int) -> list[DataFileMeta]:
    """Files with these sizes, oldest first, handed over shuffled."""
    files = [meta(size, seq=10 * i) for i, size in enumerate(sizes)]
    shuffled = files[:]
    random.Random(len(sizes)).shuffle(shuffled)
    return shuffled


def sizes(files: list[DataFileMeta] | tuple[DataFileMeta, ...] | None) -> list[int] | None:
    return None if files is None else [f.file_size for f in files]


# -- settings ------------------------------------------------------------------------------------


def test_settings_defaults_are_paimons_append_defaults():
    s = AppendCompactionOptions.from_options({})
    assert (s.target_file_size, s.small_file_ratio, s.min_file_num, s.open_file_cost) == (256 * MB, 0.7, 5, 4 * MB)
    assert s.force_rewrite_all_files is False
    assert s.compaction_file_size == int(256 * MB * 0.7)


def test_settings_parse_paimon_keys():
    s = AppendCompactionOptions.from_options({
        "target-file-size": "64 mb", "compaction.small-file-ratio": "0.5", "compaction.min.file-num": "3",
        "source.split.open-file-cost": "1mb", "compaction.force-rewrite-all-files": "true",
    })
    assert (s.target_file_size, s.min_file_num, s.open_file_cost, s.force_rewrite_all_files) == (64 * MB, 3, MB, True)
    assert s.compaction_file_size == 32 * MB


@pytest.mark.parametrize(("key", "value"), [
    ("compaction.min.file-num", "0"), ("compaction.min.file-num", "x"), ("compaction.small-file-ratio", "0"),
    ("target-file-size", "0"), ("source.split.open-file-cost", "lots"),
    ("compaction.force-rewrite-all-files", "maybe"),
])
def test_bad_settings_name_the_key(key, value):
    with pytest.raises(InvalidOptionError) as info:
        AppendCompactionOptions.from_options({key: value})
    assert info.value.key == key


def test_users_may_set_the_append_compaction_keys():
    keys = {"compaction.min.file-num": "3", "compaction.small-file-ratio": "0.5",
            "source.split.open-file-cost": "1 mb", "target-file-size": "64 mb",
            "compaction.force-rewrite-all-files": "true"}
    assert validate_user_options(keys) == keys


# -- bucketed minor (pickCompactBefore) ----------------------------------------------------------


def test_minor_waits_for_min_file_num():
    assert pick_bucketed_minor(bucket(1, 1, 1, 1), min_file_num=5, target_file_size=100) is None
    assert pick_bucketed_minor([], min_file_num=5, target_file_size=100) is None


def test_minor_picks_the_oldest_min_file_num_files_in_sequence_order():
    files = bucket(1, 2, 3, 4, 5, 6, 7)
    assert sizes(pick_bucketed_minor(files, min_file_num=5, target_file_size=100)) == [1, 2, 3, 4, 5]


def test_minor_window_drops_its_oldest_file_at_twice_the_target():
    # 150 -> 210 >= 200: drop 150; 60, 10, 10 fills the window of 3
    assert sizes(pick_bucketed_minor(bucket(150, 60, 10, 10), min_file_num=3, target_file_size=100)) == [60, 10, 10]
    # a file of >= 2 x target slides out at once
    assert sizes(pick_bucketed_minor(bucket(500, 1, 1, 1), min_file_num=3, target_file_size=100)) == [1, 1, 1]
    assert pick_bucketed_minor(bucket(500, 1, 1), min_file_num=3, target_file_size=100) is None


def test_minor_count_is_checked_before_size_so_large_files_can_be_picked():
    # every file is a candidate: a window that fills before reaching 2 x target is picked whole
    assert sizes(pick_bucketed_minor(bucket(150, 10), min_file_num=2, target_file_size=100)) == [150, 10]
    assert sizes(pick_bucketed_minor(bucket(150, 150), min_file_num=2, target_file_size=100)) == [150, 150]
    assert pick_bucketed_minor(bucket(250, 250), min_file_num=2, target_file_size=100) is None


def test_minor_with_min_file_num_one_picks_the_oldest_file():
    assert sizes(pick_bucketed_minor(bucket(7, 8), min_file_num=1, target_file_size=100)) == [7]


def test_minor_rejects_nonsense_arguments():
    with pytest.raises(InvalidArgumentError):
        pick_bucketed_minor(bucket(1), min_file_num=0, target_file_size=100)
    with pytest.raises(InvalidArgumentError):
        pick_bucketed_minor(bucket(1), min_file_num=5, target_file_size=0)


# -- bucketed full (FullCompactTask) -------------------------------------------------------------


def test_full_needs_three_files_unless_forced():
    assert pick_bucketed_full(bucket(1, 1), compaction_file_size=70) is None
    assert pick_bucketed_full([], compaction_file_size=70, force=True) is None
    assert sizes(pick_bucketed_full(bucket(1, 1, 1), compaction_file_size=70)) == [1, 1, 1]
    assert sizes(pick_bucketed_full(bucket(100), compaction_file_size=70, force=True)) == [100]


def test_full_skips_leading_large_files_and_rewrites_the_rest():
    files = bucket(100, 100, 10, 100, 10, 10)
    assert sizes(pick_bucketed_full(files, compaction_file_size=70)) == [10, 100, 10, 10]


def test_full_large_means_at_least_the_compaction_file_size():
    assert sizes(pick_bucketed_full(bucket(70, 69, 69, 69), compaction_file_size=70)) == [69, 69, 69]


def test_full_needs_more_small_than_large_files_and_three_left():
    assert pick_bucketed_full(bucket(10, 100, 100), compaction_file_size=70) is None
    assert pick_bucketed_full(bucket(10, 10, 100, 100), compaction_file_size=70) is None  # 2 small, 2 large
    assert pick_bucketed_full(bucket(100, 100, 100, 10, 10), compaction_file_size=70) is None  # 2 left
    assert pick_bucketed_full(bucket(100, 100, 100), compaction_file_size=70) is None  # all large


def test_full_forced_rewrites_everything_in_sequence_order():
    files = bucket(100, 100, 10, 100)
    assert sizes(pick_bucketed_full(files, compaction_file_size=70, force=True)) == [100, 100, 10, 100]


def test_full_with_deletion_vectors_always_compacts_the_rest():
    assert sizes(pick_bucketed_full(bucket(100, 10), compaction_file_size=70, deletion_vector_files=())) == [10]
    assert pick_bucketed_full(bucket(100, 100), compaction_file_size=70, deletion_vector_files=()) is None
    assert pick_bucketed_full([], compaction_file_size=70, deletion_vector_files=()) is None
    # a leading large file with a deletion vector is not skipped
    files = [meta(100, seq=0, name="dv"), meta(100, seq=1), meta(100, seq=2)]
    picked = pick_bucketed_full(files, compaction_file_size=70, deletion_vector_files={"dv"})
    assert picked == files


# -- unaware bucket (AppendCompactCoordinator) ---------------------------------------------------


def plan(files_by_partition, *, target=100, cfs=70, cost=4, min_num=5):
    return plan_unaware(files_by_partition, target_file_size=target, compaction_file_size=cfs,
                        open_file_cost=cost, min_file_num=min_num)


def test_unaware_packs_by_size_and_emits_bins_at_twice_the_target():
    # sorted 10, 10, 60, 60, 60, 60 weigh 14, 14, 64, ...: 220 >= 200 after five files
    tasks = plan({b"p": bucket(60, 10, 60, 60, 10, 60)})
    assert [(t.partition, sizes(t.files)) for t in tasks] == [(b"p", [10, 10, 60, 60, 60])]  # leftover [60] stays


def test_unaware_skips_files_of_at_least_the_compaction_file_size():
    tasks = plan({b"p": bucket(70, 500, 1, 1, 1, 1, 1)})
    assert [sizes(t.files) for t in tasks] == [[1, 1, 1, 1, 1]]


def test_unaware_open_file_cost_fills_bins():
    # ten 1-byte files weigh 5 each: a bin is full at 4 files; the 2 left are too few
    tasks = plan({b"p": bucket(*[1] * 10)}, target=10)
    assert [len(t.files) for t in tasks] == [4, 4]


def test_unaware_never_emits_a_bin_of_one_file():
    tasks = plan({b"p": bucket(5, 6)}, target=10, cfs=7, cost=100, min_num=5)
    assert [sizes(t.files) for t in tasks] == [[5, 6]]


def test_unaware_leftover_needs_min_file_num_files():
    assert plan({b"p": bucket(1, 1, 1, 1)}) == []
    assert [len(t.files) for t in plan({b"p": bucket(1, 1, 1, 1, 1)})] == [5]
    assert [len(t.files) for t in plan({b"p": bucket(1, 1)}, min_num=2)] == [2]
    single = bucket(1)
    assert plan({b"p": single}, min_num=1) == [AppendCompactTask(partition=b"p", files=tuple(single))]


def test_unaware_partitions_are_planned_apart_and_duplicates_count_once():
    a = bucket(1, 1, 1)
    tasks = plan({b"a": a + a[:2], b"b": bucket(2, 2, 2, 2, 2), b"c": []}, min_num=4)
    assert [(t.partition, len(t.files)) for t in tasks] == [(b"b", 5)]


def test_unaware_rejects_nonsense_arguments():
    for kwargs in ({"min_num": 0}, {"target": 0}, {"cost": -1}):
        with pytest.raises(InvalidArgumentError):
            plan({b"p": bucket(1)}, **kwargs)


# -- properties ----------------------------------------------------------------------------------

file_lists = st.lists(st.integers(min_value=0, max_value=400), max_size=30).map(
    lambda ss: [meta(s, seq=seq) for s, seq in zip(ss, random.Random(len(ss)).sample(range(1000), len(ss)),
                                                     strict=True)])


def _minor_by_index(ordered: list[DataFileMeta], min_num: int, target: int) -> tuple[int, int] | None:
    """Independent model of the sliding window: ``[start, end)`` indexes over prefix sums."""
    prefix = list(itertools.accumulate((f.file_size for f in ordered), initial=0))
    start = 0
    for end in range(1, len(ordered) + 1):
        if end - start >= min_num:
            return start, end
        if prefix[end] - prefix[start] >= 2 * target:
            start += 1
    return None


@settings(max_examples=300, deadline=None)
@given(file_lists, st.integers(1, 8), st.integers(1, 200))
def test_minor_pick_is_the_first_full_window(files, min_num, target):
    picked = pick_bucketed_minor(files, min_file_num=min_num, target_file_size=target)
    ordered = sequence_order(files)
    expected = _minor_by_index(ordered, min_num, target)
    if expected is None:
        assert picked is None
        return
    assert picked is not None and len(picked) == min_num
    assert picked == ordered[expected[0]:expected[1]]  # a contiguous run of candidates, oldest first
    assert all(f in files for f in picked)


@settings(max_examples=300, deadline=None)
@given(file_lists, st.integers(0, 300), st.booleans())
def test_full_pick_is_a_suffix_after_large_files(files, cfs, force):
    picked = pick_bucketed_full(files, compaction_file_size=cfs, force=force)
    ordered = sequence_order(files)
    if picked is None:
        assert not force or not files
        return
    assert ordered[len(ordered) - len(picked):] == picked
    if force:
        assert picked == ordered
        return
    skipped = ordered[:len(ordered) - len(picked)]
    assert all(f.file_size >= cfs for f in skipped)
    assert picked[0].file_size < cfs
    small = sum(1 for f in picked if f.file_size < cfs)
    assert len(picked) >= 3 and small > len(picked) - small


partition_maps = st.dictionaries(
    st.binary(min_size=1, max_size=2),
    st.lists(st.integers(min_value=0, max_value=300), max_size=25).map(lambda ss: [meta(s) for s in ss]),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(partition_maps, st.integers(1, 150), st.integers(0, 300), st.integers(0, 50), st.integers(1, 8))
def test_unaware_bins_respect_thresholds_and_lose_nothing(by_partition, target, cfs, cost, min_num):
    tasks = plan(by_partition, target=target, cfs=cfs, cost=cost, min_num=min_num)
    seen: set[str] = set()
    for task in tasks:
        source = by_partition[task.partition]
        for f in task.files:
            assert f in source and f.file_size < cfs  # every picked file is a candidate
            assert f.file_name not in seen  # nothing picked twice
            seen.add(f.file_name)
        weights = [f.file_size + cost for f in task.files]
        assert sizes(task.files) == sorted(sizes(task.files))
        full = len(task.files) > 1 and sum(weights) >= 2 * target and (
            len(task.files) == 2 or sum(weights[:-1]) < 2 * target)
        assert full or len(task.files) >= min_num  # a full bin, or a leftover with enough files
    for partition, files in by_partition.items():
        candidates = [f for f in files if f.file_size < cfs]
        left = [f for f in candidates if f.file_name not in seen]
        # no file lost: what is not in a task is a too-small leftover of the largest candidates
        assert len(left) < min_num or not left
        assert len(left) <= 1 or sum(f.file_size + cost for f in left) < 2 * target
        if left:
            assert min(f.file_size for f in left) >= max(
                (f.file_size for t in tasks if t.partition == partition for f in t.files), default=0)
