"""``--filter``/``--where`` text (``core/cli/expressions.py``): each form selects exactly the rows
the same condition computed with pyarrow selects, and a malformed text is one InvalidArgumentError
naming the flag and the place."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimonflow.core.cli.expressions import parse_filter
from paimonflow.core.errors import InvalidArgumentError

ROWS = pa.table({"id": pa.array(range(10), pa.int64()), "name": ["a", "b", None, "it's", "e", "f", "g", None, "i", "j"],
                 "amount": [float(i) * 1.5 for i in range(10)], "ok": [i % 2 == 0 for i in range(10)],
                 "day": [dt.date(2026, 11, 20 + i % 3) for i in range(10)], "odd col": list(range(10))})
f = pc.field

CASES = [
    ("id = 3", f("id") == 3),
    ("id == 3 OR id <> 4 AND id < 2", (f("id") == 3) | ((f("id") != 4) & (f("id") < 2))),
    ("(id = 3 OR id = 4) AND amount >= 6", ((f("id") == 3) | (f("id") == 4)) & (f("amount") >= 6)),
    ("NOT id > 5", ~(f("id") > 5)),
    ("id IN (1, 2, 9)", f("id").isin([1, 2, 9])),
    ("id NOT IN (1, 2, 9)", ~f("id").isin([1, 2, 9])),
    ("id BETWEEN 2 AND 4", (f("id") >= 2) & (f("id") <= 4)),
    ("id NOT BETWEEN 2 AND 4", ~((f("id") >= 2) & (f("id") <= 4))),
    ("name IS NULL", f("name").is_null()),
    ("name is not null and name != 'b'", f("name").is_valid() & (f("name") != "b")),
    ("name = 'it''s'", f("name") == "it's"),
    ("amount > 4.5e0", f("amount") > 4.5),
    ("ok = TRUE", f("ok") == True),  # noqa: E712 (an Arrow expression, not a Python comparison)
    ("day = '2026-11-21'", f("day") == pa.scalar(dt.date(2026, 11, 21))),
    ("`odd col` >= 8", f("odd col") >= 8),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_condition_selects_what_pyarrow_selects(text, expected):
    predicate = parse_filter(text, schema=ROWS.schema)
    got = ROWS.filter(predicate.to_arrow()).column("id").to_pylist()
    assert got == ROWS.filter(expected).column("id").to_pylist()


@pytest.mark.parametrize(("text", "message"), [
    ("", "is empty"),
    ("id =", "expected a value"),
    ("id = 1 AND", "expected a column name, found the end"),
    ("id 3", "expected a comparison"),
    ("(id = 1", "expected '\\)'"),
    ("id IN (1, ", "expected a value"),
    ("id = 1 id = 2", "expected AND, OR or the end, found 'id' at character 8"),
    ("id = @", "cannot read '@'"),
    ("id NOT = 1", "expected IN or BETWEEN after NOT"),
    ("day = 'soon'", "'soon' is not a DATE value for column 'day'"),
    ("name IS 'x'", "expected NULL"),
])
def test_a_malformed_condition_is_one_line_naming_the_place(text, message):
    with pytest.raises(InvalidArgumentError, match=message) as info:
        parse_filter(text, "--where", ROWS.schema)
    assert str(info.value).startswith("--where") and "\n" not in str(info.value)
