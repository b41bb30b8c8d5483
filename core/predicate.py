"""Filters: built with :func:`col`, evaluated three ways.

* on rows, vectorized, as a ``pyarrow.compute.Expression`` (:meth:`Predicate.to_arrow`);
* on a file's or manifest's statistics, conservatively: ``might_match`` is False only when no
  row described by the min/max/null counts can match (so skipping is always safe);
* on a partition's values (exact).

    >>> from paimonflow.core.predicate import col
    >>> p = (col("dt") == "2026-11-21") & (col("amount") > 10)

Reads, scans and overwrites first bind a predicate to the table's columns
(:func:`paimonflow.core.data.conversion.bind_predicate`): each compared value becomes an exact
value of its column's type (``10`` on a DOUBLE column is ``10.0``), or the predicate is refused
with a :class:`~paimonflow.core.errors.SchemaError` naming the column, its type and the value's
(``"abc"`` on an INT column, ``3_000_000_000`` on an INT column, ``"2026-11-21"`` on a DATE
column).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """What statistics say about one column of a group of rows; ``None`` = unknown."""

    min: Any = None
    max: Any = None
    null_count: int | None = None
    row_count: int | None = None


ValueBinder = Callable[[str, tuple[Any, ...], pa.DataType | None], tuple[tuple[Any, ...], pa.DataType | None]]
"""``(column, values, their bound type or None) -> (values, type)``: what :meth:`Predicate.bind_values` calls."""


class Predicate(ABC):
    """Base of all predicates; combine with ``&``, ``|`` and ``~``."""

    def __and__(self, other: Predicate) -> Predicate:
        return And((self, other))

    def __or__(self, other: Predicate) -> Predicate:
        return Or((self, other))

    def __invert__(self) -> Predicate:
        return Not(self)

    @abstractmethod
    def fields(self) -> set[str]:
        """The columns this predicate reads."""

    @abstractmethod
    def to_arrow(self) -> pc.Expression:
        """The same predicate as a vectorized Arrow expression (SQL semantics: null never matches)."""

    @abstractmethod
    def might_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        """False only if no row with these statistics can match. Missing fields are unknown."""

    @abstractmethod
    def only_on(self, names: set[str]) -> Predicate | None:
        """The part of this predicate that mentions only ``names`` and is implied by it (for pruning)."""

    def bind_values(self, bind: ValueBinder) -> Predicate:
        """This predicate with the values it compares replaced by ``bind``'s (see
        :func:`paimonflow.core.data.conversion.bind_predicate`); predicates without values are kept."""
        return self


_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


@dataclass(frozen=True, slots=True)
class _Leaf(Predicate):
    """A predicate on one column."""

    field: str

    def fields(self) -> set[str]:
        return {self.field}

    def only_on(self, names: set[str]) -> Predicate | None:
        return self if self.field in names else None


@dataclass(frozen=True, slots=True)
class Compare(_Leaf):
    """``field op value``; ``value_type`` is the column's Arrow type once bound (None: as given)."""

    op: str
    value: Any
    value_type: pa.DataType | None = None

    def to_arrow(self) -> pc.Expression:
        value = self.value if self.value_type is None else pa.scalar(self.value, self.value_type)
        return _OPS[self.op](pc.field(self.field), pc.scalar(value))

    def bind_values(self, bind: ValueBinder) -> Predicate:
        (value,), value_type = bind(self.field, (self.value,), self.value_type)
        return Compare(self.field, self.op, value, value_type)

    def might_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        s = stats.get(self.field)
        if s is None:
            return True
        if s.row_count is not None and s.null_count is not None and s.null_count >= s.row_count:
            return False  # all null: no comparison is true
        lo, hi, v = s.min, s.max, self.value
        try:
            if self.op == "==":
                return (lo is None or lo <= v) and (hi is None or v <= hi)
            if self.op == "!=":
                return not (lo is not None and hi is not None and lo == hi == v)
            if self.op == "<":
                return lo is None or lo < v
            if self.op == "<=":
                return lo is None or lo <= v
            if self.op == ">":
                return hi is None or hi > v
            if self.op == ">=":
                return hi is None or hi >= v
        except TypeError:
            return True  # incomparable statistics: unknown
        return True


@dataclass(frozen=True, slots=True)
class IsIn(_Leaf):
    """``field IN values``; ``value_type`` as for :class:`Compare`."""

    values: tuple[Any, ...]
    value_type: pa.DataType | None = None

    def to_arrow(self) -> pc.Expression:
        if self.value_type is None:
            return pc.field(self.field).isin(list(self.values))
        return pc.field(self.field).isin(pa.array(list(self.values), self.value_type))

    def might_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        return any(Compare(self.field, "==", v).might_match(stats) for v in self.values if v is not None)

    def bind_values(self, bind: ValueBinder) -> Predicate:
        if not self.values:
            return self
        values, value_type = bind(self.field, self.values, self.value_type)
        return IsIn(self.field, tuple(values), value_type)


@dataclass(frozen=True, slots=True)
class IsNull(_Leaf):

    def to_arrow(self) -> pc.Expression:
        return pc.field(self.field).is_null()

    def might_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        s = stats.get(self.field)
        return s is None or s.null_count is None or s.null_count > 0


@dataclass(frozen=True, slots=True)
class IsNotNull(_Leaf):

    def to_arrow(self) -> pc.Expression:
        return pc.field(self.field).is_valid()

    def might_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        s = stats.get(self.field)
        if s is None or s.null_count is None or s.row_count is None:
            return True
        return s.null_count < s.row_count


@dataclass(frozen=True, slots=True)
class And(Predicate):
    children: tuple[Predicate, ...]

    def fields(self) -> set[str]:
        return set().union(*(c.fields() for c in self.children))

    def to_arrow(self) -> pc.Expression:
        expr = self.children[0].to_arrow()
        for child in self.children[1:]:
            expr = expr & child.to_arrow()
        return expr

    def might_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        return all(c.might_match(stats) for c in self.children)

    def bind_values(self, bind: ValueBinder) -> Predicate:
        return And(tuple(c.bind_values(bind) for c in self.children))

    def only_on(self, names: set[str]) -> Predicate | None:
        kept = [p for p in (c.only_on(names) for c in self.children) if p is not None]
        return None if not kept else kept[0] if len(kept) == 1 else And(tuple(kept))


@dataclass(frozen=True, slots=True)
class Or(Predicate):
    children: tuple[Predicate, ...]

    def fields(self) -> set[str]:
        return set().union(*(c.fields() for c in self.children))

    def to_arrow(self) -> pc.Expression:
        expr = self.children[0].to_arrow()
        for child in self.children[1:]:
            expr = expr | child.to_arrow()
        return expr

    def might_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        return any(c.might_match(stats) for c in self.children)

    def bind_values(self, bind: ValueBinder) -> Predicate:
        return Or(tuple(c.bind_values(bind) for c in self.children))

    def only_on(self, names: set[str]) -> Predicate | None:
        parts = [c.only_on(names) for c in self.children]
        return None if any(p is None for p in parts) else Or(tuple(p for p in parts if p is not None))


@dataclass(frozen=True, slots=True)
class Not(Predicate):
    child: Predicate

    def fields(self) -> set[str]:
        return self.child.fields()

    def to_arrow(self) -> pc.Expression:
        return ~self.child.to_arrow()

    def might_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        return True  # statistics cannot refute a negation in general

    def bind_values(self, bind: ValueBinder) -> Predicate:
        return Not(self.child.bind_values(bind))

    def only_on(self, names: set[str]) -> Predicate | None:
        return self if self.child.fields() <= names else None


class _Column:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, value: object) -> Predicate:  # type: ignore[override]
        return IsNull(self.name) if value is None else Compare(self.name, "==", value)

    def __ne__(self, value: object) -> Predicate:  # type: ignore[override]
        return IsNotNull(self.name) if value is None else Compare(self.name, "!=", value)

    def __lt__(self, value: Any) -> Predicate:
        return Compare(self.name, "<", value)

    def __le__(self, value: Any) -> Predicate:
        return Compare(self.name, "<=", value)

    def __gt__(self, value: Any) -> Predicate:
        return Compare(self.name, ">", value)

    def __ge__(self, value: Any) -> Predicate:
        return Compare(self.name, ">=", value)

    def isin(self, values: Sequence[Any]) -> Predicate:
        return IsIn(self.name, tuple(values))

    def is_null(self) -> Predicate:
        return IsNull(self.name)

    def is_not_null(self) -> Predicate:
        return IsNotNull(self.name)

    def between(self, low: Any, high: Any) -> Predicate:
        return And((Compare(self.name, ">=", low), Compare(self.name, "<=", high)))

    __hash__ = None  # type: ignore[assignment]


def col(name: str) -> _Column:
    """Start a predicate on column ``name``: ``col("id") > 3``, ``col("dt").isin([...])``."""
    return _Column(name)


def filter_table(table: pa.Table, predicate: Predicate | None) -> pa.Table:
    """Rows of ``table`` matching ``predicate`` (vectorized; SQL semantics: null is not a match)."""
    if predicate is None or table.num_rows == 0:
        return table
    return table.filter(predicate.to_arrow())
