"""Vectorized field aggregators of Paimon's ``aggregation`` merge engine.

Each aggregator folds the rows of every key group, oldest first, the way Paimon's
``FieldAggregator`` subclasses fold them one record at a time (``agg`` for +I/+U, ``retract``
for -U/-D), but over whole Arrow/numpy columns: the work is per column and per group boundary,
never per row in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimonflow.core.errors import DataError, InvalidOptionError, SchemaError

#: Aggregate functions this module implements (Paimon's names).
AGGREGATE_FUNCTIONS = frozenset({
    "sum", "product", "count", "max", "min", "last_value", "last_non_null_value", "listagg",
    "bool_and", "bool_or", "first_value", "first_non_null_value",
})

#: Functions Paimon lets retract (-U/-D) without ``ignore-retract``.
RETRACTABLE = frozenset({"sum", "product", "count", "last_value", "last_non_null_value"})


@dataclass(frozen=True, slots=True)
class Groups:
    """Key groups of a table sorted by key: one group per distinct key, rows contiguous.

    ``starts``/``ends`` are the first/last row index of each group (inclusive); ``ids`` gives
    each row's group number.
    """

    starts: np.ndarray
    ends: np.ndarray
    ids: np.ndarray

    @property
    def count(self) -> int:
        return int(self.starts.size)

    @classmethod
    def from_last_mask(cls, last: np.ndarray) -> Groups:
        """Groups from a mask that is True on the last row of every key run."""
        n = last.size
        first = np.ones(n, dtype=bool)
        first[1:] = last[:-1]
        return cls(starts=np.flatnonzero(first), ends=np.flatnonzero(last), ids=np.cumsum(first) - 1)

    def last_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the index of the last row where ``mask`` holds, or -1."""
        if mask.size == 0:
            return np.empty(0, dtype=np.int64)
        positions = np.where(mask, np.arange(mask.size), -1)
        found = np.maximum.accumulate(positions)[self.ends]
        return np.where(found >= self.starts, found, -1)

    def first_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the index of the first row where ``mask`` holds, or -1."""
        n = mask.size
        if n == 0:
            return np.empty(0, dtype=np.int64)
        positions = np.where(mask, np.arange(n), n)
        found = np.minimum.accumulate(positions[::-1])[::-1][self.starts]
        return np.where(found <= self.ends, found, -1)

    def any(self, mask: np.ndarray) -> np.ndarray:
        """Per group, whether ``mask`` holds on some row."""
        return np.logical_or.reduceat(mask, self.starts) if mask.size else np.zeros(0, dtype=bool)


def take_or_null(values: pa.Array | pa.ChunkedArray, indices: np.ndarray) -> pa.Array | pa.ChunkedArray:
    """``values[indices]`` where an index of -1 gives null."""
    return values.take(pa.array(indices, pa.int64(), mask=indices < 0))


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldAggregate:
    """How one value field is aggregated.

    ``function`` is a Paimon aggregate name (``fields.<f>.aggregate-function``);
    ``ignore_retract`` mirrors ``fields.<f>.ignore-retract`` (retract rows leave the field
    untouched); ``delimiter`` is ``fields.<f>.list-agg-delimiter`` (listagg only).
    """

    function: str
    ignore_retract: bool = False
    delimiter: str = ","

    def __post_init__(self) -> None:
        if self.function not in AGGREGATE_FUNCTIONS:
            raise InvalidOptionError("aggregate-function", self.function,
                                     f"not one of {sorted(AGGREGATE_FUNCTIONS)}")


def aggregate_field(name: str, values: pa.ChunkedArray | pa.Array, retract: np.ndarray, groups: Groups,
                    aggregate: FieldAggregate) -> pa.Array | pa.ChunkedArray:
    """Fold ``values`` (sorted by key, then oldest first) per group with ``aggregate``.

    ``retract`` marks -U/-D rows. Returns one value per group. Raises :class:`DataError` when a
    retract row meets a function that cannot retract and ``ignore_retract`` is off (Paimon's
    ``UnsupportedOperationException``), :class:`SchemaError` for a type the function does not take.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    function = aggregate.function
    if aggregate.ignore_retract and retract.any():
        # Retract rows leave the accumulator as it is: fold only the others.
        return aggregate_subset(name, values, ~retract, groups, aggregate)
    if retract.any() and function not in RETRACTABLE:
        raise DataError(
            f"aggregate function {function!r} of field {name!r} does not support retraction (-U/-D); "
            f"set 'fields.{name}.ignore-retract'='true' to ignore retraction messages")
    return _FOLDS[function](values, retract, groups, aggregate)


def aggregate_subset(name: str, values: pa.Array, mask: np.ndarray, groups: Groups,
                     aggregate: FieldAggregate) -> pa.Array | pa.ChunkedArray:
    """Fold, per group, only the (non-retract) rows where ``mask`` holds; a group with no such row
    keeps a null accumulator."""
    kept = groups.any(mask)
    if not kept.any():
        return pa.nulls(groups.count, values.type)
    sub_values = values.filter(pa.array(mask))
    sub_groups = Groups.from_last_mask(_last_mask_of(groups.ids[mask]))
    folded = _FOLDS[aggregate.function](sub_values, np.zeros(len(sub_values), dtype=bool), sub_groups, aggregate)
    slots = np.full(groups.count, -1, dtype=np.int64)
    slots[kept] = np.arange(int(kept.sum()))
    return take_or_null(folded, slots)


def _last_mask_of(ids: np.ndarray) -> np.ndarray:
    last = np.ones(ids.size, dtype=bool)
    if ids.size > 1:
        last[:-1] = ids[1:] != ids[:-1]
    return last


def _valid(values: pa.Array) -> np.ndarray:
    return pc.is_valid(values).to_numpy(zero_copy_only=False)


def _numeric_numpy(values: pa.Array, function: str) -> np.ndarray:
    if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        raise SchemaError(f"aggregate function {function!r} does not support type {values.type}")
    return values.fill_null(0).to_numpy(zero_copy_only=False)


def _with_nulls(result: np.ndarray, present: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.array(result, type_, mask=~present)


def _sum(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """Null-skipping sum; retract rows subtract (Java's wrapping arithmetic for integers; a
    decimal sum that no longer fits the field's precision raises :class:`DataError`)."""
    if pa.types.is_decimal(values.type):
        return _decimal_sum(values, retract, groups)
    data = _numeric_numpy(values, "sum")
    signed = np.where(retract, -data, data).astype(data.dtype, copy=False) if retract.any() else data
    with np.errstate(over="ignore"):
        total = np.add.reduceat(signed, groups.starts, dtype=data.dtype)
    present = groups.any(_valid(values))
    return _with_nulls(total, present, values.type)


def _decimal_sum(values: pa.Array, retract: np.ndarray, groups: Groups) -> pa.Array:
    signed = pc.if_else(pa.array(retract), pc.negate(values), values) if retract.any() else values
    result = pa.table({"g": pa.array(groups.ids), "v": signed}).group_by("g", use_threads=False).aggregate(
        [("v", "sum")])
    order = np.argsort(result.column("g").to_numpy())
    total = result.column("v_sum").take(pa.array(order)).combine_chunks()
    try:
        return total.cast(values.type)
    except pa.ArrowInvalid as exc:
        raise DataError(f"decimal sum overflows {values.type}") from exc


def _product(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """Null-skipping product; a retract row divides the accumulator (truncating for integers)
    or, when the accumulator is still null, becomes it."""
    data = _numeric_numpy(values, "product")
    valid = _valid(values)
    if not retract.any():
        ones = np.where(valid, data, np.ones(1, dtype=data.dtype))
        with np.errstate(over="ignore"):
            result = np.multiply.reduceat(ones, groups.starts, dtype=data.dtype)
        return _with_nulls(result, groups.any(valid), values.type)
    # Division does not reassociate: fold depth by depth, each step vectorized over all groups.
    return _fold_by_depth(data, valid, retract, groups, values.type, _product_step)


def _product_step(accumulator: np.ndarray, value: np.ndarray, retract: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if np.issubdtype(accumulator.dtype, np.integer):
            safe = np.where(value == 0, 1, value)
            quotient = np.abs(accumulator) // np.abs(safe) * np.sign(accumulator) * np.sign(safe)
            if np.any(retract & (value == 0)):
                raise DataError("product retraction divides by zero")
            divided = quotient.astype(accumulator.dtype)
        else:
            divided = accumulator / value
        return np.where(retract, divided, accumulator * value).astype(accumulator.dtype, copy=False)


def _fold_by_depth(data: np.ndarray, valid: np.ndarray, retract: np.ndarray, groups: Groups,
                   type_: pa.DataType,
                   step: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> pa.Array:
    """Sequential fold of every group; iteration ``d`` processes the d-th row of all groups at once
    (so the Python loop runs max-group-length times, never once per row)."""
    accumulator = np.zeros(groups.count, dtype=data.dtype)
    present = np.zeros(groups.count, dtype=bool)
    lengths = groups.ends - groups.starts + 1
    for depth in range(int(lengths.max()) if lengths.size else 0):
        active = np.flatnonzero(lengths > depth)
        rows = groups.starts[active] + depth
        row_valid = valid[rows]
        active, rows = active[row_valid], rows[row_valid]
        value = data[rows]
        first = ~present[active]
        stepped = step(accumulator[active], value, retract[rows])
        accumulator[active] = np.where(first, value, stepped)
        present[active] = True
    return _with_nulls(accumulator, present, type_)


def _count(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """Paimon's count: the first row of a key sets 1 (whatever its value or kind); each later
    non-null value adds 1, or subtracts 1 when it is a retraction."""
    if not (pa.types.is_int32(values.type) or pa.types.is_int64(values.type)):
        raise SchemaError(f"aggregate function 'count' does not support type {values.type}")
    dtype = np.int32 if pa.types.is_int32(values.type) else np.int64
    steps = np.where(_valid(values), np.where(retract, -1, 1), 0).astype(dtype)
    steps[groups.starts] = 1
    with np.errstate(over="ignore"):
        total = np.add.reduceat(steps, groups.starts, dtype=dtype)
    return pa.array(total, values.type)


def _min_max(function: str) -> Callable[[pa.Array, np.ndarray, Groups, FieldAggregate], pa.Array]:
    def fold(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
        """Null-skipping min/max (null when a key has no value)."""
        grouped = pa.table({"g": pa.array(groups.ids), "v": values}).group_by("g", use_threads=False)
        try:
            result = grouped.aggregate([("v", function)])
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SchemaError(f"aggregate function {function!r} does not support type {values.type}") from exc
        order = np.argsort(result.column("g").to_numpy())
        return result.column(f"v_{function}").take(pa.array(order)).combine_chunks()
    return fold


def _last_value(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """The newest row's value (even null); a retraction sets the field to null."""
    last = groups.ends
    return take_or_null(values, np.where(retract[last], -1, last))


def _last_non_null_value(values: pa.Array, retract: np.ndarray, groups: Groups,
                         aggregate: FieldAggregate) -> pa.Array:
    """The newest non-null value; a retraction carrying a non-null value sets null."""
    last = groups.last_where(_valid(values))
    retracted = np.zeros(last.size, dtype=bool)
    found = last >= 0
    retracted[found] = retract[last[found]]
    return take_or_null(values, np.where(retracted, -1, last))


def _first_value(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """The oldest row's value (even null)."""
    return values.take(pa.array(groups.starts))


def _first_non_null_value(values: pa.Array, retract: np.ndarray, groups: Groups,
                          aggregate: FieldAggregate) -> pa.Array:
    """The oldest non-null value."""
    return take_or_null(values, groups.first_where(_valid(values)))


def _bool(function: str) -> Callable[[pa.Array, np.ndarray, Groups, FieldAggregate], pa.Array]:
    def fold(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
        """Null-skipping AND / OR (null when a key has no value)."""
        if not pa.types.is_boolean(values.type):
            raise SchemaError(f"aggregate function {function!r} does not support type {values.type}")
        neutral = function == "bool_and"
        data = values.fill_null(neutral).to_numpy(zero_copy_only=False)
        ufunc = np.logical_and if neutral else np.logical_or
        return _with_nulls(ufunc.reduceat(data, groups.starts), groups.any(_valid(values)), values.type)
    return fold


def _listagg(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """Non-blank strings joined with the delimiter, oldest first; null or blank values are skipped
    (null when a key has none)."""
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise SchemaError(f"aggregate function 'listagg' does not support type {values.type}")
    blank = pc.equal(pc.utf8_trim_whitespace(values), "").fill_null(True).to_numpy(zero_copy_only=False)
    keep = ~blank
    counts = np.add.reduceat(keep.astype(np.int64), groups.starts) if keep.size else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    lists = pa.ListArray.from_arrays(pa.array(offsets), values.filter(pa.array(keep)), mask=pa.array(counts == 0))
    return pc.binary_join(lists, aggregate.delimiter).cast(values.type)


_FOLDS: dict[str, Callable[[pa.Array, np.ndarray, Groups, FieldAggregate], pa.Array]] = {
    "sum": _sum,
    "product": _product,
    "count": _count,
    "max": _min_max("max"),
    "min": _min_max("min"),
    "last_value": _last_value,
    "last_non_null_value": _last_non_null_value,
    "first_value": _first_value,
    "first_non_null_value": _first_non_null_value,
    "bool_and": _bool("bool_and"),
    "bool_or": _bool("bool_or"),
    "listagg": _listagg,
}
