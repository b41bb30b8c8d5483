import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from paimonflow.core.predicate import ColumnStats, col, filter_table

OPS = ["==", "!=", "<", "<=", ">", ">="]


def _apply(op, a, b):
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _pred(op, name, v):
    c = col(name)
    return {"==": c == v, "!=": c != v, "<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v}[op]


@given(st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=1, max_size=30),
       st.sampled_from(OPS), st.integers(-60, 60))
def test_statistics_never_skip_a_matching_group(values, op, literal):
    """Skipping is safe: if any row matches, might_match must be True."""
    present = [v for v in values if v is not None]
    stats = ColumnStats(min(present) if present else None, max(present) if present else None,
                        values.count(None), len(values))
    pred = _pred(op, "x", literal)
    any_match = any(_apply(op, v, literal) for v in present)
    if any_match:
        assert pred.might_match({"x": stats})
    rows = filter_table(pa.table({"x": pa.array(values, pa.int64())}), pred)
    assert rows.column("x").to_pylist() == [v for v in present if _apply(op, v, literal)]


def test_combinations_and_pruning():
    p = (col("dt") == "a") & (col("n") > 2)
    assert p.only_on({"dt"}) == (col("dt") == "a")
    assert (col("dt") == "a").might_match({"dt": ColumnStats("a", "a", 0, 1)})
    assert not p.might_match({"dt": ColumnStats("b", "b", 0, 1)})
    assert (col("dt") == "a") | (col("n") > 2) is not None
    assert ((col("dt") == "a") | (col("n") > 2)).only_on({"dt"}) is None
    assert col("n").isin([1, 5]).might_match({"n": ColumnStats(4, 9, 0, 3)})
    assert not col("n").isin([1, 2]).might_match({"n": ColumnStats(4, 9, 0, 3)})
    assert not col("n").is_null().might_match({"n": ColumnStats(4, 9, 0, 3)})
    assert not col("n").is_not_null().might_match({"n": ColumnStats(None, None, 3, 3)})
    t = pa.table({"n": [1, None, 3], "s": ["a", "b", None]})
    assert filter_table(t, col("n").between(1, 2) | col("s").is_null()).to_pylist() == [
        {"n": 1, "s": "a"}, {"n": 3, "s": None}]
    assert filter_table(t, ~(col("n") == 1)).column("n").to_pylist() == [3]
