"""A stream's batches regrouped for routing (core/write/conform.py ``chunks``): every row once, in
order, each chunk within the row and byte bounds unless one batch alone exceeds them."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from paimonflow.core.write.conform import chunks


@settings(deadline=None)  # the first example pays for the imports
@given(st.lists(st.integers(0, 300), max_size=40), st.integers(1, 500), st.integers(1, 4000))
def test_every_row_once_in_order_within_the_bounds(sizes, rows, max_bytes):
    batches, start = [], 0
    for n in sizes:
        batches.append(pa.record_batch({"x": pa.array(range(start, start + n), pa.int64())}))
        start += n
    out = list(chunks(iter(batches), max_bytes, rows=rows))
    assert [v for c in out for v in c.column("x").to_pylist()] == list(range(start))
    # a chunk closes with the batch that reaches a bound (an int64 column: 8 bytes a row); what is
    # left over at the end, even empty batches, is one more chunk
    expected, count, pending = [], 0, 0
    for n in sizes:
        count, pending = count + n, pending + 1
        if count >= rows or 8 * count >= max_bytes:
            expected.append(count)
            count, pending = 0, 0
    if pending:
        expected.append(count)
    assert [c.num_rows for c in out] == expected
