"""What of a ``pyarrow.compute.Expression`` filter a scan can plan with.

Engines that read through the ``pyarrow.dataset`` interface (Polars' ``scan_pyarrow_dataset``,
pyarrow's own scanners) hand a scan their filter as an Arrow expression. :func:`pushdown` turns
the part of it this engine understands into a :class:`~paimonflow.core.predicate.Predicate` that
every row matching the expression also matches, so planning may skip partitions, files and row
groups with it; the expression itself is then evaluated exactly on the rows read. What is not
understood (a cast, arithmetic, a string function) is simply not pushed down: it costs reads,
never rows.

The expression's structure is read from Arrow's own serialization of it (what pickling an
expression produces: an IPC file whose schema metadata lists the calls in prefix order, and
whose columns hold the literals and function options), through the Arrow C data interface for
the metadata in order.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..predicate import And, Compare, IsIn, IsNotNull, IsNull, Not, Or, Predicate

_COMPARISONS = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
                "greater_equal": ">="}
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def pushdown(expression: pc.Expression) -> Predicate | None:
    """A predicate implied by ``expression`` (every row it keeps, the predicate keeps), or None
    when nothing of it can be planned with."""
    try:
        node = _parse(expression)
    except (ValueError, IndexError, pa.ArrowException):  # a form this reader does not know: no pushdown
        return None
    return _implied(node)[0]


def referenced_columns(expression: pc.Expression) -> list[str] | None:
    """The top-level columns ``expression`` reads, or None when they cannot be told (a nested
    field reference)."""
    try:
        node = _parse(expression)
    except (ValueError, IndexError, pa.ArrowException):
        return None
    names: list[str] = []
    for leaf in _walk(node):
        if isinstance(leaf, _Field):
            if leaf.name is None:
                return None
            names.append(leaf.name)
    return list(dict.fromkeys(names))


# -- the expression tree --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    name: str | None  # None: a nested reference (a dotted path)


@dataclass(frozen=True)
class _Literal:
    value: pa.Scalar


@dataclass(frozen=True)
class _Call:
    function: str
    arguments: tuple[Any, ...]
    options: dict | None


def _walk(node) -> Iterator[Any]:
    yield node
    if isinstance(node, _Call):
        for argument in node.arguments:
            yield from _walk(argument)


def _parse(expression: pc.Expression):
    """``expression`` as a tree of :class:`_Call`, :class:`_Field` and :class:`_Literal`."""
    serialized = expression.__reduce__()[1][0]
    reader = pa.ipc.open_file(serialized)
    batch = reader.get_batch(0) if reader.num_record_batches else None
    items = _ordered_metadata(reader.schema)
    position = 0

    def column(index: str) -> pa.Scalar:
        assert batch is not None
        return batch.column(int(index))[0]

    def parse():
        nonlocal position
        key, value = items[position]
        position += 1
        if key == "literal":
            return _Literal(column(value))
        if key == "field_ref":
            return _Field(None if value.startswith((".", "[")) else value)
        if key != "call":
            raise ValueError(f"unexpected {key!r} in a serialized expression")
        arguments, options = [], None
        while items[position][0] != "end":
            if items[position][0] == "options":
                scalar = column(items[position][1])
                options = scalar.as_py() if isinstance(scalar, pa.StructScalar) else None
                position += 1
                continue
            arguments.append(parse())
        position += 1  # the call's end
        return _Call(value, tuple(arguments), options)

    return parse()


class _CSchema(ctypes.Structure):
    """The Arrow C data interface's ``struct ArrowSchema``."""

    _fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
                ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
                ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


# a prototype of its own (setting argtypes on ctypes.pythonapi's shared attribute would change it
# for every other user in the process)
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _ordered_metadata(schema: pa.Schema) -> list[tuple[str, str]]:
    """The key-value metadata of ``schema`` in order, repeated keys kept (``Schema.metadata`` is
    a dict): read from its C data interface export, whose metadata is an int32 count followed by
    length-prefixed keys and values."""
    capsule = schema.__arrow_c_schema__()  # released by its destructor
    exported = _CSchema.from_address(_capsule_pointer(capsule, b"arrow_schema"))
    if not exported.metadata:
        return []
    address = exported.metadata

    def int32(at: int) -> int:
        return struct.unpack("=i", ctypes.string_at(at, 4))[0]

    count, at, out = int32(address), address + 4, []
    for _ in range(count):
        pair = []
        for _ in range(2):
            length = int32(at)
            pair.append(ctypes.string_at(at + 4, length).decode())
            at += 4 + length
        out.append((pair[0], pair[1]))
    return out


# -- what a predicate can take ----------------------------------------------------------------------


def _implied(node) -> tuple[Predicate | None, bool]:
    """``(predicate implied by node, whether it is equivalent)``: conjuncts not understood are
    dropped (the rest is still implied); anything else not understood gives ``(None, False)``."""
    if not isinstance(node, _Call):
        return None, False
    name, args = node.function, node.arguments
    if name in ("and", "and_kleene"):
        parts = [_implied(a) for a in args]
        kept = [p for p, _ in parts if p is not None]
        exact = all(e for _, e in parts)
        return (None if not kept else kept[0] if len(kept) == 1 else And(tuple(kept))), exact and bool(kept)
    if name in ("or", "or_kleene"):
        parts = [_implied(a) for a in args]
        if any(p is None for p, _ in parts):
            return None, False
        return Or(tuple(p for p, _ in parts if p is not None)), all(e for _, e in parts)
    if name == "invert" and len(args) == 1:
        inner, exact = _implied(args[0])
        return (Not(inner), True) if inner is not None and exact else (None, False)
    if name in _COMPARISONS and len(args) == 2:
        op = _COMPARISONS[name]
        field, literal = args
        if isinstance(field, _Literal) and isinstance(literal, _Field):
            field, literal, op = literal, field, _FLIPPED[op]
        if isinstance(field, _Field) and field.name is not None and isinstance(literal, _Literal) \
                and literal.value.is_valid:
            return Compare(field.name, op, literal.value.as_py(), None), True
        return None, False
    if name == "is_in" and len(args) == 1 and isinstance(args[0], _Field) and args[0].name is not None:
        values = (node.options or {}).get("value_set")
        if values is None:
            return None, False
        members = tuple(v for v in values if v is not None)
        matches_null = len(members) < len(values) and (node.options or {}).get("null_matching_behavior", 0) == 0
        if matches_null:  # nulls match too: the predicate must keep them
            return Or((IsIn(args[0].name, members), IsNull(args[0].name))), True
        return IsIn(args[0].name, members), True
    if name == "is_null" and len(args) == 1 and isinstance(args[0], _Field) and args[0].name is not None:
        if (node.options or {}).get("nan_is_null"):  # NaN counts as null there: not our IS NULL
            return None, False
        return IsNull(args[0].name), True
    if name == "is_valid" and len(args) == 1 and isinstance(args[0], _Field) and args[0].name is not None:
        return IsNotNull(args[0].name), True
    return None, False
