"""Row filters written as text on the command line (``read --filter``, ``delete --where``), in
SQL's spelling, parsed into :mod:`paimonflow.core.predicate` predicates. Nothing is evaluated:
a small recursive-descent parser that knows columns, literals and these forms::

    dt = '2026-11-21' AND amount > 10
    id IN (1, 2, 3) OR name IS NULL
    NOT (dt BETWEEN '2026-11-01' AND '2026-11-07')

Comparisons ``= == != <> < <= > >=`` put a column on the left and a literal on the right;
literals are 'text' (a doubled '' inside), integers, decimals, TRUE, FALSE and NULL only in
``IS [NOT] NULL``; a column name with other characters is quoted in backticks. Keywords are
case-insensitive. Values are bound to the columns' types by the read (a date as its text).
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

from ..data.conversion import paimon_notation
from ..errors import InvalidArgumentError
from ..predicate import Predicate, col

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<string>'(?:[^']|'')*')
    | (?P<number>[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    | (?P<quoted>`(?:[^`]|``)+`)
    | (?P<word>[A-Za-z_][A-Za-z0-9_$.]*)
    | (?P<op><>|!=|==|<=|>=|=|<|>|\(|\)|,)
    )""", re.VERBOSE)
_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE"}
_COMPARE = {"=": "__eq__", "==": "__eq__", "!=": "__ne__", "<>": "__ne__", "<": "__lt__", "<=": "__le__",
            ">": "__gt__", ">=": "__ge__"}


def parse_filter(text: str, option: str = "--filter", schema: pa.Schema | None = None) -> Predicate:
    """The predicate ``text`` spells; :class:`InvalidArgumentError` naming ``option``, the place
    and what was expected otherwise. With the table's ``schema``, a 'text' literal compared with
    a date, time, timestamp or decimal column is read as that type (``d = '2026-11-21'``)."""
    tokens = _tokens(text, option)
    parser = _Parser(tokens, text, option)
    predicate = parser.disjunction()
    if parser.position < len(tokens):
        parser.fail("AND, OR or the end")
    if schema is None:
        return predicate

    def typed(name: str, values: tuple[Any, ...], value_type: pa.DataType | None):
        index = schema.get_field_index(name)
        target = schema.field(index).type if index >= 0 else None
        if target is None or not _read_from_text(target):
            return values, value_type
        out = []
        for value in values:
            if isinstance(value, str):
                try:
                    value = pa.scalar(value).cast(target).as_py()
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise InvalidArgumentError(f"{option}: {value!r} is not a {paimon_notation(target)} value for "
                                               f"column {name!r} ({str(exc).splitlines()[0]})") from None
            out.append(value)
        return tuple(out), value_type

    return predicate.bind_values(typed)


def _read_from_text(t: pa.DataType) -> bool:
    return pa.types.is_temporal(t) or pa.types.is_decimal(t)


def _tokens(text: str, option: str) -> list[tuple[str, str, int]]:
    out, position = [], 0
    stripped = text.rstrip()
    while position < len(stripped):
        found = _TOKEN.match(stripped, position)
        if found is None or found.end() == position:
            raise InvalidArgumentError(f"{option} {text!r}: cannot read {stripped[position:].strip()[:20]!r} "
                                       f"at character {position + 1}")
        kind = found.lastgroup or ""
        value, start = found.group(kind), found.start(kind)
        if kind == "word" and value.upper() in _KEYWORDS:
            kind, value = "keyword", value.upper()
        out.append((kind, value, start + 1))
        position = found.end()
    if not out:
        raise InvalidArgumentError(f"{option} is empty: give a condition such as \"dt = '2026-11-21'\"")
    return out


class _Parser:
    def __init__(self, tokens: list[tuple[str, str, int]], text: str, option: str) -> None:
        self.tokens, self.text, self.option, self.position = tokens, text, option, 0

    def fail(self, expected: str) -> None:
        if self.position < len(self.tokens):
            _, value, at = self.tokens[self.position]
            where = f"{value!r} at character {at}"
        else:
            where = "the end"
        raise InvalidArgumentError(f"{self.option} {self.text!r}: expected {expected}, found {where}")

    def peek(self, kind: str, value: str | None = None) -> bool:
        if self.position >= len(self.tokens):
            return False
        k, v, _ = self.tokens[self.position]
        return k == kind and (value is None or v == value)

    def take(self, kind: str, value: str | None = None, expected: str = "") -> str:
        if not self.peek(kind, value):
            self.fail(expected or value or kind)
        self.position += 1
        return self.tokens[self.position - 1][1]

    def disjunction(self) -> Predicate:
        left = self.conjunction()
        while self.peek("keyword", "OR"):
            self.position += 1
            left = left | self.conjunction()
        return left

    def conjunction(self) -> Predicate:
        left = self.negation()
        while self.peek("keyword", "AND"):
            self.position += 1
            left = left & self.negation()
        return left

    def negation(self) -> Predicate:
        if self.peek("keyword", "NOT"):
            self.position += 1
            return ~self.negation()
        if self.peek("op", "("):
            self.position += 1
            inner = self.disjunction()
            self.take("op", ")", "')'")
            return inner
        return self.condition()

    def condition(self) -> Predicate:
        column = col(self.column())
        if self.peek("keyword", "IS"):
            self.position += 1
            negated = self.peek("keyword", "NOT")
            if negated:
                self.position += 1
            self.take("keyword", "NULL", "NULL")
            return column.is_not_null() if negated else column.is_null()
        negated = self.peek("keyword", "NOT")
        if negated:
            self.position += 1
        if self.peek("keyword", "IN"):
            self.position += 1
            self.take("op", "(", "'(' and a list of values")
            values = [self.literal()]
            while self.peek("op", ","):
                self.position += 1
                values.append(self.literal())
            self.take("op", ")", "',' or ')'")
            found = column.isin(values)
            return ~found if negated else found
        if self.peek("keyword", "BETWEEN"):
            self.position += 1
            low = self.literal()
            self.take("keyword", "AND", "AND")
            found = column.between(low, self.literal())
            return ~found if negated else found
        if negated:
            self.fail("IN or BETWEEN after NOT")
        if not self.peek("op") or self.tokens[self.position][1] not in _COMPARE:
            self.fail("a comparison (= != < <= > >=), IN, BETWEEN or IS NULL")
        method = _COMPARE[self.take("op")]
        return getattr(column, method)(self.literal())

    def column(self) -> str:
        if self.peek("word"):
            return self.take("word")
        if self.peek("quoted"):
            return self.take("quoted")[1:-1].replace("``", "`")
        self.fail("a column name")
        raise AssertionError  # (unreachable: fail raises)

    def literal(self) -> Any:
        if self.peek("string"):
            return self.take("string")[1:-1].replace("''", "'")
        if self.peek("number"):
            text = self.take("number")
            return float(text) if any(c in text for c in ".eE") else int(text)
        if self.peek("keyword", "TRUE") or self.peek("keyword", "FALSE"):
            return self.take("keyword") == "TRUE"
        self.fail("a value ('text', a number, TRUE or FALSE)")
        raise AssertionError
