"""Which data a column takes: the one rule of lossless conversions, for writes and filter values.

Data of Arrow type S is written into (or, as a filter value, compared with) a column whose Arrow
type is T only if the conversion loses nothing. :func:`conversion` says how S converts to T:

* ``SAME``: the same values, perhaps in another encoding;
* ``WIDENING``: every value of S converts exactly;
* ``CHECKED``: some values of S do not fit T, so each value is checked as it is converted
  (Arrow's safe cast) and one that does not fit refuses the whole write or filter;
* ``REFUSED``: the kinds differ (strings and numbers, ...): refused whatever the values.

What converts (data's Arrow type -> the column's Paimon type: when), one entry of :data:`_RULES`
per pair of kinds:

* the column's own type, another encoding of it (``large_string`` and ``string_view`` -> STRING;
  ``large_binary``, ``binary_view`` and fixed-size binary -> BYTES), a dictionary (a pandas
  categorical) of a type that converts: as its values;
* ``null`` (an all-null column) -> any column: always (a NOT NULL column still refuses the nulls);
* integers, signed or unsigned -> TINYINT..BIGINT: widening always, narrowing when every value fits;
* integers -> FLOAT, DOUBLE: when every value is exact (|v| up to 2^24, 2^53), so always from
  8/16-bit into FLOAT and up to 32-bit into DOUBLE;
* integers -> DECIMAL(p, s): when every value has at most p - s digits;
* float16, float32 -> FLOAT, DOUBLE: widening only;
* decimals -> DECIMAL(p, s): when no value loses a digit (always if neither the scale nor the
  integer digits shrink);
* date32, date64 -> DATE: date64 of whole days;
* time32, time64 -> TIME: when no value has digits below a millisecond;
* timestamps without a zone -> TIMESTAMP(p): when no value is truncated or out of range
  (nanoseconds hold the years 1677-2262); timestamps in any zone -> TIMESTAMP(p) WITH LOCAL TIME
  ZONE, the same (the instant is kept);
* list, large_list, fixed_size_list -> ARRAY; map -> MAP, MULTISET; struct -> ROW (the same field
  names, in any order): their parts by these rules.

Everything else is refused: strings into numbers, dates or booleans and back, booleans and
numbers, floats into integers or DECIMAL (a float is rarely an exact decimal), double into FLOAT
(it rounds most values), timestamps into DATE (the time of day would be dropped), a timestamp
without a zone into a local-zone column and the reverse (which zone?), list views (Arrow's cast of
them loses elements), durations, intervals and unions. CHAR(n)/VARCHAR(n) lengths are not
checked (Arrow holds every string type as ``string``).

Filter values (:func:`bind_predicate`) follow the same rule, each value taken with the Arrow type
``pyarrow.scalar`` gives it (``int`` is int64, ``float`` double, ``str`` string, ``date`` date32,
``datetime`` a microsecond timestamp, zoned if it has a ``tzinfo``, ``Decimal`` a decimal of its
digits); a ``pyarrow.Scalar`` keeps its own type. So ``5`` compares with a DOUBLE column as 5.0,
``"2026-11-20"`` does not compare with a DATE column (pass ``datetime.date(2026, 11, 20)``), and
``3_000_000_000`` does not compare with an INT column (it does not fit). One addition for filters:
a ``float`` compares with a FLOAT column when it is exactly a FLOAT value (``0.5``, not ``0.1``;
pass ``numpy.float32(0.1)`` for the nearest FLOAT).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import TYPE_CHECKING, Any, TypeAlias, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import SchemaError
from .types import DataField, DataType, from_arrow

if TYPE_CHECKING:
    from ..predicate import Predicate

ArrowValues: TypeAlias = pa.Array | pa.ChunkedArray


class Conversion(IntEnum):
    """How data of one Arrow type converts to another; larger is worse (see the module docstring)."""

    SAME = 0
    WIDENING = 1
    CHECKED = 2
    REFUSED = 3


class _Family(Enum):
    NULL = "null"
    BOOLEAN = "boolean"
    INTEGER = "integer"
    FLOAT = "floating point"
    DECIMAL = "decimal"
    STRING = "string"
    BINARY = "binary"
    DATE = "date"
    TIME = "time"
    TIMESTAMP = "timestamp without a time zone"
    ZONED_TIMESTAMP = "timestamp with a time zone"
    LIST = "list"
    MAP = "map"
    STRUCT = "struct"


def _family(t: pa.DataType) -> _Family | None:
    """The family of ``t`` (a dictionary counts as its values); None for types nothing takes."""
    T = pa.types
    if T.is_dictionary(t):
        return _family(t.value_type)
    checks: tuple[tuple[Callable[[pa.DataType], bool], _Family], ...] = (
        (T.is_null, _Family.NULL), (T.is_boolean, _Family.BOOLEAN), (T.is_integer, _Family.INTEGER),
        (T.is_floating, _Family.FLOAT), (T.is_decimal, _Family.DECIMAL),
        (lambda x: T.is_string(x) or T.is_large_string(x) or T.is_string_view(x), _Family.STRING),
        (lambda x: T.is_binary(x) or T.is_large_binary(x) or T.is_binary_view(x) or T.is_fixed_size_binary(x),
         _Family.BINARY),
        (T.is_date, _Family.DATE), (T.is_time, _Family.TIME),
        (lambda x: T.is_timestamp(x) and x.tz is None, _Family.TIMESTAMP),
        (lambda x: T.is_timestamp(x) and x.tz is not None, _Family.ZONED_TIMESTAMP),
        (lambda x: T.is_list(x) or T.is_large_list(x) or T.is_fixed_size_list(x), _Family.LIST),
        (T.is_map, _Family.MAP), (T.is_struct, _Family.STRUCT),
    )
    for check, family in checks:
        if check(t):
            return family
    return None  # list views, durations, intervals, unions, extension types...


def _values(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


# -- the rule, one entry per pair of families ------------------------------------------------------

_UNIT_ORDER = {"s": 0, "ms": 1, "us": 2, "ns": 3}
_FLOAT_EXACT_BITS = {16: 11, 32: 24, 64: 53}  # integers up to 2^bits are exact in a float of that width


def _integer_range(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    return (0, 2**bits - 1) if pa.types.is_unsigned_integer(t) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _integer_digits(t: pa.DataType) -> int:
    low, high = _integer_range(t)
    return len(str(max(-low, high)))


def _integer_to_integer(s: pa.DataType, t: pa.DataType) -> Conversion:
    (s_low, s_high), (t_low, t_high) = _integer_range(s), _integer_range(t)
    return Conversion.WIDENING if t_low <= s_low and s_high <= t_high else Conversion.CHECKED


def _integer_to_float(s: pa.DataType, t: pa.DataType) -> Conversion:
    low, high = _integer_range(s)
    return Conversion.WIDENING if max(-low, high) <= 2 ** _FLOAT_EXACT_BITS[t.bit_width] else Conversion.CHECKED


def _integer_to_decimal(s: pa.DataType, t: pa.DataType) -> Conversion:
    return Conversion.WIDENING if t.precision - t.scale >= _integer_digits(s) else Conversion.CHECKED


def _float_to_float(s: pa.DataType, t: pa.DataType) -> Conversion:
    return Conversion.WIDENING if s.bit_width <= t.bit_width else Conversion.REFUSED


def _decimal_to_decimal(s: pa.DataType, t: pa.DataType) -> Conversion:
    keeps = t.scale >= s.scale and t.precision - t.scale >= s.precision - s.scale
    return Conversion.WIDENING if keeps else Conversion.CHECKED


def _date_to_date(s: pa.DataType, t: pa.DataType) -> Conversion:
    return Conversion.CHECKED if pa.types.is_date64(s) and pa.types.is_date32(t) else Conversion.WIDENING


def _by_unit(s: pa.DataType, t: pa.DataType) -> Conversion:
    """Times and timestamps: a finer unit truncates, and nanoseconds hold only the years
    1677-2262, so both are checked value by value."""
    finer = _UNIT_ORDER[t.unit] >= _UNIT_ORDER[s.unit]
    return Conversion.WIDENING if finer and (t.unit != "ns" or s.unit == "ns") else Conversion.CHECKED


def _encoding(s: pa.DataType, t: pa.DataType) -> Conversion:
    return Conversion.SAME


_RULES: dict[tuple[_Family, _Family], Callable[[pa.DataType, pa.DataType], Conversion]] = {
    (_Family.BOOLEAN, _Family.BOOLEAN): _encoding,
    (_Family.INTEGER, _Family.INTEGER): _integer_to_integer,
    (_Family.INTEGER, _Family.FLOAT): _integer_to_float,
    (_Family.INTEGER, _Family.DECIMAL): _integer_to_decimal,
    (_Family.FLOAT, _Family.FLOAT): _float_to_float,
    (_Family.DECIMAL, _Family.DECIMAL): _decimal_to_decimal,
    (_Family.STRING, _Family.STRING): _encoding,
    (_Family.BINARY, _Family.BINARY): _encoding,
    (_Family.DATE, _Family.DATE): _date_to_date,
    (_Family.TIME, _Family.TIME): _by_unit,
    (_Family.TIMESTAMP, _Family.TIMESTAMP): _by_unit,
    (_Family.ZONED_TIMESTAMP, _Family.ZONED_TIMESTAMP): _by_unit,
}
"""The atomic pairs that may convert; a pair that is not here is refused. Lists, maps and structs
convert when their parts do (:func:`judge`)."""

_NARROWER_FLOAT = "a narrower float rounds most values: cast the data to it first"
_HINTS: dict[tuple[_Family, _Family], str] = {
    (_Family.FLOAT, _Family.INTEGER): "floats are not converted to integers, even whole ones",
    (_Family.FLOAT, _Family.DECIMAL): "floats are rarely exact decimals: use decimal.Decimal values",
    (_Family.TIMESTAMP, _Family.ZONED_TIMESTAMP): "it has no time zone: attach one first (a tzinfo, "
                                                  "pandas .dt.tz_localize)",
    (_Family.ZONED_TIMESTAMP, _Family.TIMESTAMP): "it has a time zone and the column has none: convert it "
                                                  "to wall-clock times first",
    (_Family.TIMESTAMP, _Family.DATE): "the time of day would be dropped: convert to dates first (pandas .dt.date)",
    (_Family.STRING, _Family.DATE): "dates are datetime.date values, not strings",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """:func:`judge`'s answer: the conversion and, when refused, the innermost data and column
    types that cannot convert (the types judged, for a refusal at the top) and why."""

    conversion: Conversion
    source: pa.DataType
    target: pa.DataType
    reason: str | None = None


def conversion(source: pa.DataType, target: pa.DataType) -> Conversion:
    """How data of Arrow type ``source`` converts to a column of Arrow type ``target``."""
    return judge(source, target).conversion


def judge(source: pa.DataType, target: pa.DataType) -> Verdict:
    """:func:`conversion` with the part of a nested type that decides a refusal."""
    if source == target:
        return Verdict(Conversion.SAME, source, target)
    s_family, t_family = _family(source), _family(target)
    if s_family is _Family.NULL:
        return Verdict(Conversion.SAME, source, target)
    if s_family is None or t_family is None:
        reason = "list views are not converted (Arrow's cast loses elements)" if (
            pa.types.is_list_view(source) or pa.types.is_large_list_view(source)) else None
        return Verdict(Conversion.REFUSED, source, target, reason)
    if s_family is t_family and s_family in (_Family.LIST, _Family.MAP, _Family.STRUCT):
        return _judge_nested(_values(source), target, s_family)
    rule = _RULES.get((s_family, t_family))
    if rule is None:
        return Verdict(Conversion.REFUSED, source, target, _HINTS.get((s_family, t_family)))
    verdict = rule(_values(source), target)
    reason = _NARROWER_FLOAT if verdict is Conversion.REFUSED and s_family is _Family.FLOAT else None
    return Verdict(verdict, source, target, reason)


def _judge_nested(source: pa.DataType, target: pa.DataType, family: _Family) -> Verdict:
    if family is _Family.LIST:
        parts = [(source.value_type, target.value_type)]
    elif family is _Family.MAP:
        parts = [(source.key_type, target.key_type), (source.item_type, target.item_type)]
    else:
        names = [f.name for f in source]
        wanted = [f.name for f in target]
        if sorted(names) != sorted(wanted) or len(set(names)) != len(names):
            missing = [n for n in wanted if n not in names]
            unknown = [n for n in names if n not in wanted]
            return Verdict(Conversion.REFUSED, source, target,
                           f"the struct's fields differ: missing {missing}, unknown {unknown}")
        parts = [(source.field(n).type, target.field(n).type) for n in wanted]
    worst = Verdict(Conversion.SAME, source, target)
    for s, t in parts:
        verdict = judge(s, t)
        if verdict.conversion is Conversion.REFUSED:
            return verdict
        if verdict.conversion > worst.conversion:
            worst = Verdict(verdict.conversion, source, target)
    return worst


# -- converting data ----------------------------------------------------------------------------


def paimon_notation(arrow_type: pa.DataType, table_type: DataType | None = None) -> str:
    """A column type in Paimon's notation, nullability aside (``table_type`` when known, which
    keeps CHAR lengths and timestamp precisions that Arrow types do not hold)."""
    if table_type is not None:
        return table_type.copy(nullable=True).sql()
    try:
        return from_arrow(arrow_type).sql()
    except SchemaError:
        return str(arrow_type)


def refusal(column: str, source: pa.DataType, target: pa.DataType, table_type: DataType | None = None) -> str | None:
    """Why data of type ``source`` cannot be written into ``column`` of type ``target`` (one
    sentence naming the column and both types), or None if it can."""
    verdict = judge(source, target)
    if verdict.conversion is not Conversion.REFUSED:
        return None
    text = f"column {column!r} holds {source} values but the table's type is {paimon_notation(target, table_type)}"
    if verdict.source != source or verdict.target != target:
        text += f" ({verdict.source} cannot be stored as {paimon_notation(verdict.target)} inside it)"
    if verdict.reason:
        text += f" ({verdict.reason})"
    return text


def check_writable(data: pa.Schema, table: pa.Schema, table_types: Mapping[str, DataType] | None = None) -> None:
    """Raise one :class:`SchemaError` naming every column present in both schemas whose data
    type the table's column refuses (by type alone: values are checked when converted).
    For engines that know the data's schema before they have its rows."""
    problems = [p for f in data if table.get_field_index(f.name) >= 0
                and (p := refusal(f.name, f.type, table.field(f.name).type, (table_types or {}).get(f.name)))]
    if problems:
        raise SchemaError(_refused(problems))


def _refused(problems: Sequence[str]) -> str:
    return "; ".join(problems) + "; only lossless conversions are written (cast the data first)"


def _an(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def convert_columns(columns: Mapping[str, ArrowValues], schema: pa.Schema,
                    table_types: Mapping[str, DataType] | None = None) -> dict[str, ArrowValues]:
    """``columns`` (by name, each a field of ``schema``) converted to their column's type.

    Raises one :class:`SchemaError` naming every column whose type is refused; else one naming
    every column holding a value that does not convert exactly (nothing is converted in part).
    """
    types = table_types or {}
    problems = [_nan_as_null(name, values, schema.field(name).type, types.get(name)) or p
                for name, values in columns.items()
                if (p := refusal(name, values.type, schema.field(name).type, types.get(name)))]
    if problems:
        raise SchemaError(_refused(problems))
    out: dict[str, ArrowValues] = {}
    lossy: list[str] = []
    for name, values in columns.items():
        target = schema.field(name).type
        try:
            out[name] = cast_exactly(values, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError) as exc:
            lossy.append(f"column {name!r} holds {values.type} values that the table's type "
                         f"{paimon_notation(target, types.get(name))} cannot hold exactly ({_first_line(exc)})")
    if lossy:
        raise SchemaError("; ".join(lossy) + "; only lossless conversions are written (cast or fix the data first)")
    return out


def _nan_as_null(name: str, values: ArrowValues, target: pa.DataType, table_type: DataType | None) -> str | None:
    """For floats refused by an integer column: if they are whole numbers with some missing (null
    or NaN), the likely cause (pandas keeps an integer column with a missing value as floats),
    said instead of "holds double values"."""
    if not (pa.types.is_floating(values.type) and pa.types.is_integer(target)):
        return None
    present = pc.drop_null(values)
    missing = values.null_count + pc.sum(pc.is_nan(present)).as_py() if len(present) else values.null_count
    if not missing:
        return None
    whole = pc.drop_null(pc.if_else(pc.is_nan(present), None, present)) if len(present) else present
    if len(whole) and not pc.all(pc.equal(whole, pc.floor(whole))).as_py():
        return None  # fractions: the float type itself is the problem
    return (f"column {name!r} holds {values.type} values with {missing} missing (pandas turns an integer column "
            f"with a missing value into floats), but the table's type is {paimon_notation(target, table_type)}: "
            "use pandas' nullable 'Int64' dtype (a missing value is then a null), or fill or drop them")


def cast_exactly(values: ArrowValues, target: pa.DataType) -> ArrowValues:
    """``values`` as ``target`` by Arrow's safe cast (an error for any value that would change);
    the caller has checked that the types convert (:func:`conversion`)."""
    if values.type == target:
        return values
    via = _wide_decimals(values.type, target)
    if via is not None:  # Arrow refuses integer -> DECIMAL when the type (not the value) may not fit
        values = pc.cast(values, via, safe=True)
    return pc.cast(values, target, safe=True)


def _wide_decimals(source: pa.DataType, target: pa.DataType) -> pa.DataType | None:
    """``target`` with every DECIMAL that an integer of ``source`` goes into widened to hold any
    such integer (a step Arrow's cast needs); None if there is none."""
    source = _values(source)
    if pa.types.is_integer(source) and pa.types.is_decimal(target):
        precision = _integer_digits(source) + target.scale
        if precision <= target.precision:
            return None
        return (pa.decimal128 if precision <= 38 else pa.decimal256)(precision, target.scale)
    if (pa.types.is_list(source) or pa.types.is_large_list(source) or pa.types.is_fixed_size_list(source)) \
            and pa.types.is_list(target):
        element = _wide_decimals(source.value_type, target.value_type)
        return None if element is None else pa.list_(target.value_field.with_type(element))
    if pa.types.is_map(source) and pa.types.is_map(target):
        key = _wide_decimals(source.key_type, target.key_type)
        item = _wide_decimals(source.item_type, target.item_type)
        if key is None and item is None:
            return None
        return pa.map_(target.key_field.with_type(key or target.key_type),
                       target.item_field.with_type(item or target.item_type))
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        fields = [(f, _wide_decimals(source.field(f.name).type, f.type) if source.get_field_index(f.name) >= 0
                   else None) for f in target]
        if all(wide is None for _, wide in fields):
            return None
        return pa.struct([f if wide is None else f.with_type(wide) for f, wide in fields])
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# -- filter values ------------------------------------------------------------------------------


def convert_literals(column: str, values: Sequence[Any], target: pa.DataType,
                     table_type: DataType | None = None) -> tuple[Any, ...]:
    """Filter values for ``column`` (of Arrow type ``target``) as exact values of its type.

    Raises :class:`SchemaError` naming the column, its type and the value's type when a value
    does not convert exactly (see the module docstring). None stays None.
    """
    if not values:
        return ()
    scalars = [v if isinstance(v, pa.Scalar) else None for v in values]
    try:
        if any(s is not None for s in scalars):
            array = pa.array([s.as_py() if s is not None else v for s, v in zip(scalars, values, strict=True)],
                             type=_common_scalar_type(scalars))
        else:
            array = pa.array(list(values))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError) as exc:
        if len(values) == 1:
            raise SchemaError(f"column {column!r} has type {paimon_notation(target, table_type)}; the filter value "
                              f"{_shown(values[0])} ({_an(type(values[0]).__name__)}) has no Arrow type: "
                              f"{_first_line(exc)}") from None
        for value in values:  # find the value that does not convert, or else the mix
            convert_literals(column, [value], target, table_type)
        raise SchemaError(f"the filter values for column {column!r} ({', '.join(map(_shown, values))}) are of "
                          f"different types; the column's type is {paimon_notation(target, table_type)}") from None
    return tuple(_convert_array(column, values, array, target, table_type).to_pylist())


def _common_scalar_type(scalars: Sequence[pa.Scalar | None]) -> pa.DataType:
    types = {s.type for s in scalars if s is not None}
    if len(types) != 1 or any(s is None for s in scalars):
        raise TypeError("mixed values")
    return types.pop()


def _convert_array(column: str, values: Sequence[Any], array: pa.Array, target: pa.DataType,
                   table_type: DataType | None) -> pa.Array:
    source = array.type
    if pa.types.is_float64(source) and pa.types.is_float32(target):
        narrowed = pc.cast(array, target, safe=False)
        exact = np.asarray(pc.cast(narrowed, source).fill_null(0).to_numpy(zero_copy_only=False))
        original = np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False))
        inexact = [v for v, a, b in zip(values, original, exact, strict=True)
                   if not (a == b or (np.isnan(a) and np.isnan(b)))]
        if inexact:
            raise SchemaError(f"column {column!r} has type {paimon_notation(target, table_type)}; the filter value "
                              f"{_shown(inexact[0])} is not exactly a FLOAT value (pass numpy.float32(...) to "
                              "compare with the nearest one)")
        return narrowed
    verdict = judge(source, target)
    if verdict.conversion is Conversion.REFUSED:
        hint = f" ({verdict.reason})" if verdict.reason else ""
        raise SchemaError(f"column {column!r} has type {paimon_notation(target, table_type)}; the filter value "
                          f"{_shown(values[0])} is {_kind_of(values[0], source)} and does not convert to it "
                          f"exactly{hint}")
    try:
        return cast_exactly(array, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError) as exc:
        shown = ", ".join(_shown(v) for v in values[:5]) + (", ..." if len(values) > 5 else "")
        what = f"value {shown}, {_kind_of(values[0], source)}, does" if len(values) == 1 else \
            f"values {shown} ({source}) do"
        raise SchemaError(f"column {column!r} has type {paimon_notation(target, table_type)}; the filter {what} not "
                          f"fit it exactly: {_first_line(exc)}") from None


def _shown(value: Any) -> str:
    text = repr(value.as_py() if isinstance(value, pa.Scalar) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind_of(value: Any, arrow_type: pa.DataType) -> str:
    if isinstance(value, pa.Scalar):
        return f"an Arrow {arrow_type} scalar"
    return f"{_an(type(value).__name__)} (Arrow {arrow_type})"


@overload
def bind_predicate(predicate: Predicate, schema: pa.Schema,
                   table_types: Mapping[str, DataType] | None = None) -> Predicate: ...
@overload
def bind_predicate(predicate: None, schema: pa.Schema,
                   table_types: Mapping[str, DataType] | None = None) -> None: ...
def bind_predicate(predicate: Predicate | None, schema: pa.Schema,
                   table_types: Mapping[str, DataType] | None = None) -> Predicate | None:
    """``predicate`` with every compared value converted to its column's type in ``schema`` (see
    the module docstring); raises :class:`SchemaError` for a value that does not convert exactly.
    Columns ``schema`` lacks are left alone (the reader names them). Idempotent: values bound to
    their column's type are kept as they are."""
    if predicate is None:
        return None
    types = table_types or {}

    def bind(column: str, values: tuple[Any, ...], bound: pa.DataType | None) -> tuple[tuple[Any, ...], pa.DataType | None]:
        index = schema.get_field_index(column)
        if index < 0:
            return values, bound
        target = schema.field(index).type
        if values and pa.types.is_nested(target):
            raise SchemaError(f"column {column!r} is a nested column ({types.get(column) or target}): a filter "
                              f"compares only columns "
                              f"of scalar types (a nested column can be tested for null)")
        if bound == target:
            return values, bound
        return convert_literals(column, values, target, types.get(column)), target

    return predicate.bind_values(bind)


def field_types(fields: Iterable[DataField]) -> dict[str, DataType]:
    """``{name: type}`` of a table's fields (:class:`~paimonflow.core.data.types.DataField`)."""
    return {f.name: f.type for f in fields}


__all__ = [
    "Conversion",
    "Verdict",
    "bind_predicate",
    "cast_exactly",
    "check_writable",
    "conversion",
    "convert_columns",
    "convert_literals",
    "field_types",
    "judge",
    "paimon_notation",
    "refusal",
]
