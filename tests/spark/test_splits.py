"""Packing a read's splits into Spark partitions (jobs/splits.py): every split read exactly once,
as many partitions as the session runs at once or the target size asks, partitions balanced to
within one split, and Paimon's options parsed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimonflow.core.errors import InvalidOptionError
from paimonflow.jobs.splits import OPEN_FILE_COST, TARGET_SIZE, SplitPacking

MB = 1 << 20


@given(st.lists(st.tuples(st.integers(0, 300 * MB), st.integers(1, 20)), max_size=200),
       st.integers(1, 64), st.integers(1, 256 * MB), st.integers(0, 16 * MB))
def test_every_split_once_in_balanced_partitions(splits, parallelism, target, open_cost):
    packing = SplitPacking(target, open_cost, parallelism)
    sizes, files = [s for s, _ in splits], [f for _, f in splits]
    groups = packing.pack(list(range(len(splits))), sizes, files)
    assert sorted(i for g in groups for i in g) == list(range(len(splits)))
    costs = [s + f * open_cost for s, f in splits]
    wanted = max(parallelism, -(-sum(costs) // target))
    assert len(groups) == min(len(splits), wanted) and all(groups)
    loads = [sum(costs[i] for i in g) for g in groups]
    if loads:
        assert max(loads) - min(loads) <= max(costs)


def test_equal_small_splits_spread_over_the_parallelism():
    groups = SplitPacking(parallelism=4).pack(list(range(40)), [MB] * 40, [1] * 40)
    assert [len(g) for g in groups] == [10, 10, 10, 10]


def test_a_large_table_gets_partitions_of_about_the_target_size():
    groups = SplitPacking(parallelism=2).pack(list(range(100)), [60 * MB] * 100, [1] * 100)
    assert len(groups) == 50  # 100 x 64 MB over 128 MB partitions, not 2 partitions of 3.2 GB
    # 208 + 104 + 14 MB weigh three targets: three partitions, though the session runs two at once
    assert SplitPacking(parallelism=2).pack(["a", "b", "c"], [200 * MB, 100 * MB, 10 * MB], [2, 1, 1]) == [
        ["a"], ["b"], ["c"]]


def test_options_by_paimons_names_read_over_the_tables():
    packing = SplitPacking.from_options({"source.split.target-size": "64 mb", "SOURCE.SPLIT.OPEN-FILE-COST": "1 mb"}, 3)
    assert packing == SplitPacking(64 * MB, MB, 3)
    assert SplitPacking.from_options({}, 0) == SplitPacking(TARGET_SIZE, OPEN_FILE_COST, 1)
    with pytest.raises(InvalidOptionError, match=r"source\.split\.target-size"):
        SplitPacking.from_options({"source.split.target-size": "0 b"}, 2)
    with pytest.raises(InvalidOptionError, match=r"source\.split\.open-file-cost"):
        SplitPacking.from_options({"source.split.open-file-cost": "much"}, 2)
