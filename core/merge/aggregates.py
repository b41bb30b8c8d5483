"""Vectorized field aggregators of Paimon's ``aggregation`` merge engine.

Each aggregator folds the rows of every key group, oldest first, the way Paimon's
``FieldAggregator`` subclasses fold them one record at a time (``agg`` for +I/+U, ``retract``
for -U/-D), but over whole Arrow/numpy columns: the work is per column and per group boundary,
never per row in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimonflow.core.errors import DataError, InvalidOptionError, SchemaError

#: Aggregate functions this module implements (Paimon's names).
AGGREGATE_FUNCTIONS = frozenset({
    "sum", "product", "count", "max", "min", "last_value", "last_non_null_value", "listagg",
    "bool_and", "bool_or", "first_value", "first_non_null_value",
    "collect", "merge_map", "nested_update", "rbm32", "theta_sketch",
})

#: Functions Paimon lets retract (-U/-D) without ``ignore-retract``.
RETRACTABLE = frozenset({"sum", "product", "count", "last_value", "last_non_null_value",
                         "collect", "merge_map", "nested_update"})

#: Paimon functions deliberately left out, with the reason given to the user.
UNSUPPORTED_FUNCTIONS = {
    "rbm64": "Paimon stores rbm64 values in Java RoaringBitmap's Roaring64Bitmap (ART) serialization, "
             "which differs from the portable 64-bit format pyroaring reads and writes",
}


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
    untouched); ``delimiter`` is ``fields.<f>.list-agg-delimiter`` (listagg only);
    ``distinct`` is ``fields.<f>.distinct`` (collect only); ``nested_key`` is
    ``fields.<f>.nested-key`` and ``count_limit`` ``fields.<f>.count-limit`` (nested_update only;
    None means no limit).
    """

    function: str
    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False
    nested_key: tuple[str, ...] = ()
    count_limit: int | None = None

    def __post_init__(self) -> None:
        if self.function in UNSUPPORTED_FUNCTIONS:
            raise InvalidOptionError("aggregate-function", self.function, UNSUPPORTED_FUNCTIONS[self.function])
        if self.function not in AGGREGATE_FUNCTIONS:
            raise InvalidOptionError("aggregate-function", self.function,
                                     f"not one of {sorted(AGGREGATE_FUNCTIONS)}")
        if self.count_limit is not None and self.count_limit < 0:
            raise InvalidOptionError("count-limit", self.count_limit, "must not be negative")


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
    check_type = _TYPE_CHECKS.get(function)
    if check_type is not None:
        check_type(name, values.type, aggregate)
    if aggregate.ignore_retract and retract.any():
        # Retract rows leave the accumulator as it is: fold only the others.
        return aggregate_subset(name, values, ~retract, groups, aggregate)
    if retract.any():
        require_retractable(name, aggregate)
    return _FOLDS[function](values, retract, groups, aggregate)


def require_retractable(name: str, aggregate: FieldAggregate) -> None:
    """Raise :class:`DataError` when field ``name`` cannot take a retraction (-U/-D): its function
    cannot retract and ``ignore_retract`` is off (Paimon's ``UnsupportedOperationException``)."""
    if aggregate.function not in RETRACTABLE and not aggregate.ignore_retract:
        raise DataError(
            f"aggregate function {aggregate.function!r} of field {name!r} does not support retraction (-U/-D); "
            f"set 'fields.{name}.ignore-retract'='true' to ignore retraction messages")


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


# -- collection, bitmap and sketch functions -----------------------------------------------------
#
# Arrow has kernels to flatten, group and rebuild lists and maps, so the folds of ``collect``,
# ``merge_map`` and ``nested_update`` without retraction are vectorized. Retraction is order
# dependent (a -U removes what came before it, not what follows), so groups holding a retract row
# are folded one record at a time in Python. Bitmap and sketch unions have no Arrow kernel: only
# groups with more than one non-null value are unioned in Python; the others are taken as they are.


def _is_list(type_: pa.DataType) -> bool:
    return pa.types.is_list(type_) or pa.types.is_large_list(type_)


def _is_binary(type_: pa.DataType) -> bool:
    return pa.types.is_binary(type_) or pa.types.is_large_binary(type_)


def _check_collect(name: str, type_: pa.DataType, aggregate: FieldAggregate) -> None:
    if not _is_list(type_):
        raise SchemaError(f"aggregate function 'collect' of field {name!r} needs an ARRAY column, not {type_}")


def _check_merge_map(name: str, type_: pa.DataType, aggregate: FieldAggregate) -> None:
    if not pa.types.is_map(type_):
        raise SchemaError(f"aggregate function 'merge_map' of field {name!r} needs a MAP column, not {type_}")


def _check_nested_update(name: str, type_: pa.DataType, aggregate: FieldAggregate) -> None:
    if not (_is_list(type_) and pa.types.is_struct(type_.value_type)):
        raise SchemaError(
            f"aggregate function 'nested_update' of field {name!r} needs an ARRAY<ROW> column, not {type_}")
    nested = {type_.value_type.field(i).name for i in range(type_.value_type.num_fields)}
    missing = [key for key in aggregate.nested_key if key not in nested]
    if missing:
        raise SchemaError(f"nested-key {missing} of field {name!r} are not fields of its rows {sorted(nested)}")


def _check_binary(name: str, type_: pa.DataType, aggregate: FieldAggregate) -> None:
    if not _is_binary(type_):
        raise SchemaError(
            f"aggregate function {aggregate.function!r} of field {name!r} needs a VARBINARY column, not {type_}")


_TYPE_CHECKS: dict[str, Callable[[str, pa.DataType, FieldAggregate], None]] = {
    "collect": _check_collect,
    "merge_map": _check_merge_map,
    "nested_update": _check_nested_update,
    "rbm32": _check_binary,
    "theta_sketch": _check_binary,
}


def _hashable(value: object) -> object:
    """A hashable stand-in for a Python value of an Arrow element (lists, rows and maps included)
    that is equal exactly when the values are."""
    if isinstance(value, dict):
        return ("row", tuple((key, _hashable(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(_hashable(item) for item in value))
    return value


def _flatten(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The elements of the non-null lists (or map entries) of ``values`` and each one's row."""
    if pa.types.is_map(values.type):
        # list_parent_indices does not take maps: look at the same buffers as a list of entries.
        entries = pa.struct([values.type.key_field, values.type.item_field])
        values = values.view(pa.list_(pa.field("entries", entries, nullable=False)))
    return pc.list_flatten(values), pc.list_parent_indices(values).to_numpy().astype(np.int64)


def _rebuild(type_: pa.DataType, elements: pa.Array, element_groups: np.ndarray, groups: Groups,
             present: np.ndarray) -> pa.Array:
    """One list (or map) per group from ``elements`` (in group order); null where not ``present``."""
    counts = np.bincount(element_groups, minlength=groups.count) if element_groups.size else np.zeros(
        groups.count, np.int64)
    large = pa.types.is_large_list(type_)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]), pa.int64() if large else pa.int32())
    mask = pa.array(~present)
    if pa.types.is_map(type_):
        entries = pa.list_(pa.field("entries", elements.type, nullable=False))
        return pa.ListArray.from_arrays(offsets, elements, type=entries, mask=mask).view(type_)
    array_class = pa.LargeListArray if large else pa.ListArray
    return array_class.from_arrays(offsets, elements, type=type_, mask=mask)


def _first_and_last(element_groups: np.ndarray, keys: list[pa.Array]) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct (group, key...) among the elements: the position of its first and of its last
    element, ordered by group, then by first position. Keys compare by value, nulls equal."""
    columns = {"g": pa.array(element_groups), "i": pa.array(np.arange(element_groups.size))}
    columns |= {f"k{n}": key for n, key in enumerate(keys)}
    try:
        result = pa.table(columns).group_by(["g", *(f"k{n}" for n in range(len(keys)))],
                                            use_threads=False).aggregate([("i", "min"), ("i", "max")])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return _first_and_last_python(element_groups, keys)
    first = result.column("i_min").to_numpy()
    last = result.column("i_max").to_numpy()
    order = np.argsort(first, kind="stable")  # groups are contiguous, so first positions sort by group
    return first[order], last[order]


def _first_and_last_python(element_groups: np.ndarray, keys: list[pa.Array]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_first_and_last` for key types Arrow cannot group by (lists, rows, maps)."""
    seen: dict[object, int] = {}
    firsts: list[int] = []
    lasts: list[int] = []
    for position, (group, *key) in enumerate(zip(element_groups.tolist(), *(k.to_pylist() for k in keys),
                                                 strict=True)):
        identity = (group, _hashable(key))
        slot = seen.get(identity)
        if slot is None:
            seen[identity] = len(firsts)
            firsts.append(position)
            lasts.append(position)
        else:
            lasts[slot] = position
    return np.array(firsts, dtype=np.int64), np.array(lasts, dtype=np.int64)


def _rank_in_group(sorted_groups: np.ndarray) -> np.ndarray:
    """0, 1, 2... within each run of equal values of an ascending array."""
    return np.arange(sorted_groups.size) - np.searchsorted(sorted_groups, sorted_groups, side="left")


def _retracting_groups(retract: np.ndarray, groups: Groups) -> np.ndarray:
    return np.flatnonzero(groups.any(retract))


# The Python values (``to_pylist``) the record-by-record folds work on: a column's value type is
# also its accumulator's; an ARRAY<ROW> element is a row, a MAP element a key-value pair.
_Value = TypeVar("_Value")
_Row = dict[str, object]
_MapEntry = tuple[object, object]


def _fold_groups_in_python(values: pa.Array, retract: np.ndarray, groups: Groups, selected: np.ndarray,
                           agg: Callable[[_Value | None, _Value | None], _Value | None],
                           retract_fn: Callable[[_Value | None, _Value | None], _Value | None]) -> pa.Array:
    """Fold the groups ``selected`` record by record, Paimon's way: the accumulator starts null,
    an insert calls ``agg(accumulator, value)``, a retraction ``retract_fn(accumulator, value)``."""
    rows = np.flatnonzero(np.isin(groups.ids, selected))
    python_values = values.take(pa.array(rows)).to_pylist()
    row_groups = groups.ids[rows]
    row_retract = retract[rows]
    results: dict[int, _Value | None] = {}
    accumulator: _Value | None = None
    for position, (group, value) in enumerate(zip(row_groups.tolist(), python_values, strict=True)):
        if position == 0 or row_groups[position - 1] != group:
            accumulator = None
        accumulator = retract_fn(accumulator, value) if row_retract[position] else agg(accumulator, value)
        results[group] = accumulator
    return pa.array([results[int(group)] for group in selected], values.type)


def _patch(base: pa.Array, selected: np.ndarray, replacement: pa.Array) -> pa.Array:
    """``base`` with the values of groups ``selected`` replaced by ``replacement``."""
    if selected.size == 0:
        return base
    indices = np.arange(len(base))
    indices[selected] = len(base) + np.arange(selected.size)
    return pa.concat_arrays([base, replacement]).take(pa.array(indices))


def _collect(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """Paimon's ``collect``: the arrays of a key concatenated, oldest first (null when every array
    is null). With ``distinct`` only the first occurrence of each element is kept (Paimon keeps a
    hash set, so its element order is unspecified). A retraction removes, for each element it
    carries, one equal element of the accumulator (nulls match nulls); retracting from a null
    accumulator leaves null."""
    present = groups.any(_valid(values))
    elements, parents = _flatten(values)
    element_groups = groups.ids[parents]
    if aggregate.distinct:
        first, _ = _first_and_last(element_groups, [elements])
        result = _rebuild(values.type, elements.take(pa.array(first)), element_groups[first], groups, present)
    elif groups.count == len(values):
        result = values  # one row per key: nothing to concatenate
    else:
        result = _rebuild(values.type, elements, element_groups, groups, present)
    selected = _retracting_groups(retract, groups)
    if selected.size == 0:
        return result
    distinct = aggregate.distinct

    def agg(accumulator: Sequence[object] | None,
            value: Sequence[object] | None) -> Sequence[object] | None:
        if accumulator is None and value is None:
            return None
        if not distinct:
            return value if accumulator is None else accumulator if value is None else [*accumulator, *value]
        merged: list[object] = []
        seen: set[object] = set()
        for element in [*(accumulator or ()), *(value or ())]:
            identity = _hashable(element)
            if identity not in seen:
                seen.add(identity)
                merged.append(element)
        return merged

    def retract_fn(accumulator: Sequence[object] | None,
                   value: Sequence[object] | None) -> Sequence[object] | None:
        if accumulator is None or not value:
            return accumulator
        remaining = [_hashable(element) for element in value]
        kept: list[object] = []
        for element in accumulator:
            identity = _hashable(element)
            if identity in remaining:
                remaining.remove(identity)
            else:
                kept.append(element)
        return kept

    return _patch(result, selected, _fold_groups_in_python(values, retract, groups, selected, agg, retract_fn))


def _merge_map(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """Paimon's ``merge_map``: the maps of a key merged, a newer entry overwriting the value of an
    older one with the same key (null when every map is null). Keys keep the position where they
    first appeared (Paimon's hash map order is unspecified). A retraction removes the keys it
    carries, whatever their values; retracting from a null accumulator leaves null."""
    if groups.count == len(values):
        result = values
    else:
        present = groups.any(_valid(values))
        entries, parents = _flatten(values)
        element_groups = groups.ids[parents]
        first, last = _first_and_last(element_groups, [entries.field(0)])
        result = _rebuild(values.type, entries.take(pa.array(last)), element_groups[first], groups, present)
    selected = _retracting_groups(retract, groups)
    if selected.size == 0:
        return result

    def agg(accumulator: Sequence[_MapEntry] | None,
            value: Sequence[_MapEntry] | None) -> Sequence[_MapEntry] | None:
        if accumulator is None or value is None:
            return value if accumulator is None else accumulator
        merged: dict[object, tuple[object, object]] = {}
        for key, item in [*accumulator, *value]:
            merged[_hashable(key)] = (key, item)
        return list(merged.values())

    def retract_fn(accumulator: Sequence[_MapEntry] | None,
                   value: Sequence[_MapEntry] | None) -> Sequence[_MapEntry] | None:
        if accumulator is None or not value:
            return accumulator
        removed = {_hashable(key) for key, _ in value}
        kept: dict[object, tuple[object, object]] = {}
        for key, item in accumulator:
            if _hashable(key) not in removed:
                kept[_hashable(key)] = (key, item)
        return list(kept.values())

    return _patch(result, selected, _fold_groups_in_python(values, retract, groups, selected, agg, retract_fn))


def _nested_update(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """Paimon's ``nested_update`` over an ARRAY<ROW>: null rows inside arrays are dropped; with
    ``nested_key`` a newer row replaces the older row with the same key (nulls in keys compare
    equal, Paimon's default ``merge`` strategy) and keeps its position; without it rows are
    appended. ``count_limit`` caps the number of rows (keys) kept: the first ones win, later new
    rows (keys) are dropped. A retraction removes the rows with its rows' keys, or without a
    nested key every row equal to one of its rows; retracting into a null accumulator leaves null.
    The result is null when every array is null."""
    limit = aggregate.count_limit
    key_names = aggregate.nested_key
    present = groups.any(_valid(values))
    elements, parents = _flatten(values)
    kept_rows = _valid(elements)
    elements, element_groups = elements.filter(pa.array(kept_rows)), groups.ids[parents][kept_rows]
    if key_names:
        first, last = _first_and_last(element_groups, [pc.struct_field(elements, name) for name in key_names])
        chosen, chosen_groups = last, element_groups[first]
    else:
        chosen, chosen_groups = np.arange(element_groups.size), element_groups
    if limit is not None:
        within = _rank_in_group(chosen_groups) < limit
        chosen, chosen_groups = chosen[within], chosen_groups[within]
    result = _rebuild(values.type, elements.take(pa.array(chosen)), chosen_groups, groups, present)
    selected = _retracting_groups(retract, groups)
    if selected.size == 0:
        return result
    capacity = limit if limit is not None else np.iinfo(np.int64).max

    def key_of(row: _Row) -> object:
        return _hashable([row[name] for name in key_names])

    def agg(accumulator: Sequence[_Row | None] | None,
            value: Sequence[_Row | None] | None) -> Sequence[_Row | None] | None:
        if value is None:
            return accumulator
        old = [row for row in accumulator or () if row is not None]
        new = [row for row in value if row is not None]
        if not key_names:
            if accumulator is None:
                return new[:capacity]
            return old if len(old) >= capacity else old + new[:capacity - len(old)]
        merged = {key_of(row): row for row in old}
        for row in new:
            key = key_of(row)
            if key in merged or len(merged) < capacity:
                merged[key] = row
        return list(merged.values())

    def retract_fn(accumulator: Sequence[_Row | None] | None,
                   value: Sequence[_Row | None] | None) -> Sequence[_Row | None] | None:
        if accumulator is None or value is None:
            return accumulator
        rows = [row for row in accumulator if row is not None]
        removed = [row for row in value if row is not None]
        if not key_names:
            return [row for row in rows if row not in removed]
        keys = {key_of(row) for row in removed}
        return [row for row in rows if key_of(row) not in keys]

    return _patch(result, selected, _fold_groups_in_python(values, retract, groups, selected, agg, retract_fn))


def _union_per_group(values: pa.Array, groups: Groups, union: Callable[[list[bytes]], bytes]) -> pa.Array:
    """Per group the only non-null value as it is (null without one), or ``union`` of the non-null
    values when there are several (nulls are skipped, as Paimon's ``agg`` does)."""
    valid = _valid(values)
    counts = np.add.reduceat(valid.astype(np.int64), groups.starts) if valid.size else np.zeros(0, np.int64)
    result = take_or_null(values, groups.last_where(valid))
    selected = np.flatnonzero(counts > 1)
    if selected.size == 0:
        return result
    rows = np.flatnonzero(valid & (counts[groups.ids] > 1))
    blobs = values.take(pa.array(rows)).to_pylist()
    boundaries = np.flatnonzero(np.diff(groups.ids[rows])) + 1
    unions = [union(blobs[start:end]) for start, end in zip(np.r_[0, boundaries], np.r_[boundaries, rows.size],
                                                             strict=True)]
    return _patch(result, selected, pa.array(unions, values.type))


def _rbm32(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """Paimon's ``rbm32``: the OR of 32-bit RoaringBitmaps in the portable serialization (Java
    RoaringBitmap / pyroaring ``BitMap.serialize``), run-optimized as Paimon writes them. Cannot
    retract."""
    from pyroaring import BitMap

    def union(blobs: list[bytes]) -> bytes:
        try:
            merged = BitMap.union(*(BitMap.deserialize(blob) for blob in blobs))
        except (ValueError, OverflowError) as exc:
            raise DataError(f"rbm32 value is not a serialized 32-bit RoaringBitmap: {exc}") from exc
        merged.run_optimize()
        return bytes(merged.serialize())

    return _union_per_group(values, groups, union)


def _theta_sketch(values: pa.Array, retract: np.ndarray, groups: Groups, aggregate: FieldAggregate) -> pa.Array:
    """Paimon's ``theta_sketch``: the union of Apache DataSketches Theta sketches (default seed and
    nominal entries, as Paimon's ``ThetaSketch.union``), written as an ordered compact sketch.
    Cannot retract."""
    from datasketches import compact_theta_sketch, theta_union, update_theta_sketch

    def union(blobs: list[bytes]) -> bytes:
        merged = theta_union()
        for blob in blobs:
            try:
                sketch = compact_theta_sketch.deserialize(blob)
            except (RuntimeError, ValueError):
                try:
                    sketch = update_theta_sketch.deserialize(blob)
                except (RuntimeError, ValueError) as exc:
                    raise DataError(f"theta_sketch value is not a serialized Theta sketch: {exc}") from exc
            merged.update(sketch)
        return bytes(merged.get_result().serialize())

    return _union_per_group(values, groups, union)


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
    "collect": _collect,
    "merge_map": _merge_map,
    "nested_update": _nested_update,
    "rbm32": _rbm32,
    "theta_sketch": _theta_sketch,
}
