"""Key ordering helpers: the radix sort of integer keys is numpy's stable sort, faster."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimonflow.core.data.keys import stable_integer_order

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(DTYPES), st.data())
def test_stable_integer_order_is_numpys_stable_sort(dtype, data):
    info = np.iinfo(dtype)
    bound = data.draw(st.sampled_from([3, 1 << 15, 1 << 40, None]))
    low, high = (int(info.min), int(info.max)) if bound is None else (max(int(info.min), -bound), min(int(info.max), bound))
    values = np.array(data.draw(st.lists(st.integers(low, high), max_size=300)), dtype=dtype)
    order = stable_integer_order(values)
    assert order.dtype == np.int64
    assert order.tolist() == np.argsort(values, kind="stable").tolist()


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_stable_integer_order_full_span_and_ties(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    values = np.concatenate([np.array([info.max, info.min, info.max, 0, info.min], dtype=dtype),
                             rng.integers(info.min, info.max, 5000, dtype=dtype, endpoint=True)])
    values = np.concatenate([values, values[::-1]])  # every value at least twice: ties keep positions
    assert stable_integer_order(values).tolist() == np.argsort(values, kind="stable").tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=0, max_size=60), st.booleans())
def test_last_in_order_is_last_per_key_of_the_taken_table(values, as_string):
    """The numpy shortcut (one integer key) and the general path agree (primary keys are
    never null)."""
    import pyarrow as pa

    from paimonflow.core.data.keys import last_in_order, last_per_key

    column = pa.array([str(v) if as_string else v for v in values], pa.string() if as_string else pa.int64())
    table = pa.table({"k": column, "v": pa.array(range(len(values)), pa.int64())})
    order = np.argsort(np.array(values, dtype=np.int64), kind="stable")
    expected = last_per_key(table.select(["k"]).take(pa.array(order, pa.int64())), ["k"])
    assert last_in_order(table, ["k"], order).tolist() == expected.tolist()
