"""Paimon data types: the values, their JSON form in schema files, and their Arrow mapping.

One frozen :class:`DataType` describes every Paimon type: ``root`` names it (a :class:`TypeRoot`),
``nullable`` is the ``NOT NULL`` flag, and the parameters that apply are set (``length`` for
CHAR/VARCHAR/BINARY/VARBINARY, ``precision``/``scale`` for DECIMAL, ``precision`` for TIME,
TIMESTAMP and TIMESTAMP_LTZ, ``element`` for ARRAY/MULTISET, ``key``/``value`` for MAP, ``fields``
for ROW). Invalid combinations raise :class:`SchemaError` at construction.

JSON (what Java Paimon's ``DataType.serializeJson`` writes, and both Java and pypaimon read):
atomic types are their SQL string (``"BIGINT NOT NULL"``, ``"DECIMAL(10, 2)"``, ``"STRING"`` for
VARCHAR(2147483647), ``"BYTES"`` for VARBINARY(2147483647), ``"TIMESTAMP(3) WITH LOCAL TIME
ZONE"``); ARRAY, MULTISET, MAP and ROW are objects whose ``"type"`` carries ``NOT NULL``.
pypaimon 2.1.0 differs in two ways, both read here and never written: it spells local-zone
timestamps ``"TIMESTAMP_LTZ(6)"`` and adds a ``"nullable"`` key to composite objects.

Arrow (pypaimon's mapping, which is also how Java Paimon lays out Parquet): CHAR/VARCHAR ->
``string``, BINARY/VARBINARY -> ``binary``, DATE -> ``date32``, TIME(p) -> ``time32('ms')`` (Paimon
keeps milliseconds of the day whatever p is), TIMESTAMP(p) -> ``timestamp`` in ``s`` (p = 0),
``ms`` (1-3), ``us`` (4-6) or ``ns`` (7-9), TIMESTAMP_LTZ(p) -> the same with ``tz='UTC'``, ARRAY
-> ``list<item>``, MAP -> ``map`` (keys never null), MULTISET -> ``map<element, int32 not null>``,
ROW -> ``struct``, VARIANT -> ``struct<value: binary not null, metadata: binary not null>`` (the
unshredded Parquet group Java Paimon and pypaimon write; the two binaries are the Parquet variant
encoding, carried as they are). An Arrow struct is always read as ROW: a VARIANT column is declared
with a Paimon type.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import pyarrow as pa

from ..errors import SchemaError, UnsupportedError

MAX_LENGTH = 2147483647
"""The largest CHAR/VARCHAR/BINARY/VARBINARY length; VARCHAR(MAX_LENGTH) is ``STRING``."""

SYSTEM_FIELD_ID_START = MAX_LENGTH // 2
"""Field ids from here up belong to Paimon's system fields and never count as user ids."""


class TypeRoot(StrEnum):
    """The Paimon type families (``TIMESTAMP_LTZ`` is TIMESTAMP WITH LOCAL TIME ZONE)."""

    BOOLEAN = "BOOLEAN"
    TINYINT = "TINYINT"
    SMALLINT = "SMALLINT"
    INT = "INT"
    BIGINT = "BIGINT"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    DECIMAL = "DECIMAL"
    CHAR = "CHAR"
    VARCHAR = "VARCHAR"
    BINARY = "BINARY"
    VARBINARY = "VARBINARY"
    DATE = "DATE"
    TIME = "TIME"
    TIMESTAMP = "TIMESTAMP"
    TIMESTAMP_LTZ = "TIMESTAMP_LTZ"
    ARRAY = "ARRAY"
    MAP = "MAP"
    MULTISET = "MULTISET"
    ROW = "ROW"
    VARIANT = "VARIANT"


_PLAIN = frozenset({TypeRoot.BOOLEAN, TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT,
                    TypeRoot.FLOAT, TypeRoot.DOUBLE, TypeRoot.DATE})
_LENGTHED = frozenset({TypeRoot.CHAR, TypeRoot.VARCHAR, TypeRoot.BINARY, TypeRoot.VARBINARY})
_TIMED = frozenset({TypeRoot.TIME, TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ})
COMPOSITE_ROOTS = frozenset({TypeRoot.ARRAY, TypeRoot.MAP, TypeRoot.MULTISET, TypeRoot.ROW})
#: Roots no key, partition or bucket key can have: the composite ones and VARIANT (no order, no hash).
UNKEYABLE_ROOTS = COMPOSITE_ROOTS | {TypeRoot.VARIANT}
_INTEGERS = (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT)
_INTEGER_DIGITS = {TypeRoot.TINYINT: 3, TypeRoot.SMALLINT: 5, TypeRoot.INT: 10, TypeRoot.BIGINT: 19}
# Known Paimon types this version does not handle (read from other writers' schemas).
_UNSUPPORTED_KEYWORDS = frozenset({"BLOB", "GEOMETRY", "GEOGRAPHY", "VECTOR", "INTERVAL", "RAW"})


@dataclass(frozen=True, slots=True, kw_only=True)
class DataField:
    """A named, numbered field of a table or of a ROW type.

    ``id`` is the field id that data files are matched by across schema versions; it is never
    reused within a table. ``default_value`` is Paimon's ``defaultValue`` (kept, not interpreted).
    """

    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DataType:
    """One Paimon data type (see the module docstring for which parameters apply to which root).

    ``root`` may be given as a string (``"BIGINT"``); it is stored as a :class:`TypeRoot`.
    Raises :class:`SchemaError` when a parameter is missing, out of Paimon's range, or does not
    apply to the root.
    """

    root: TypeRoot
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    element: DataType | None = None
    key: DataType | None = None
    value: DataType | None = None
    fields: tuple[DataField, ...] | None = None

    def __post_init__(self) -> None:
        try:
            root = TypeRoot(self.root)
        except ValueError:
            raise SchemaError(f"unknown type root {self.root!r}") from None
        object.__setattr__(self, "root", root)
        if self.fields is not None and not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))
        given = {name for name in ("length", "precision", "scale", "element", "key", "value", "fields")
                 if getattr(self, name) is not None}
        expected = _PARAMETERS[root]
        if given - expected or (expected - given - {"scale"}) or (root is TypeRoot.DECIMAL and "scale" not in given):
            raise SchemaError(f"{root} takes {sorted(expected) or 'no parameters'}, got {sorted(given) or 'none'}")
        if root in _LENGTHED and not 1 <= _int(self.length) <= MAX_LENGTH:
            raise SchemaError(f"{root} length must be between 1 and {MAX_LENGTH}, got {self.length}")
        if root is TypeRoot.DECIMAL:
            precision, scale = _int(self.precision), _int(self.scale)
            if not 1 <= precision <= 38 or not 0 <= scale <= precision:
                raise SchemaError(f"DECIMAL({self.precision}, {self.scale}): precision must be 1..38 "
                                  "and scale 0..precision")
        if root in _TIMED and not 0 <= _int(self.precision) <= 9:
            raise SchemaError(f"{root} precision must be between 0 and 9, got {self.precision}")
        if root is TypeRoot.ROW:
            names = [f.name for f in self.fields or ()]
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise SchemaError(f"ROW field names must be unique, found duplicates {dupes}")

    # -- facts ---------------------------------------------------------------------------------

    @property
    def is_atomic(self) -> bool:
        """False for ARRAY, MAP, MULTISET and ROW."""
        return self.root not in COMPOSITE_ROOTS

    def copy(self, *, nullable: bool) -> DataType:
        """The same type with another nullability."""
        return self if nullable == self.nullable else replace(self, nullable=nullable)

    def children(self) -> Iterator[DataType]:
        """The directly nested types (element; key and value; field types), in order."""
        if self.element is not None:
            yield self.element
        if self.key is not None:
            yield self.key
        if self.value is not None:
            yield self.value
        for f in self.fields or ():
            yield f.type

    def sql(self) -> str:
        """Paimon's SQL string (``DECIMAL(10, 2) NOT NULL``, ``ARRAY<INT>``, ``ROW<`a` INT>``).

        For atomic types this is exactly their JSON form.
        """
        r = self.root
        if r in _PLAIN or r is TypeRoot.VARIANT:
            text = str(r)
        elif r is TypeRoot.DECIMAL:
            text = f"DECIMAL({self.precision}, {self.scale})"
        elif r is TypeRoot.VARCHAR and self.length == MAX_LENGTH:
            text = "STRING"
        elif r is TypeRoot.VARBINARY and self.length == MAX_LENGTH:
            text = "BYTES"
        elif r in _LENGTHED:
            text = f"{r}({self.length})"
        elif r is TypeRoot.TIMESTAMP_LTZ:
            text = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        elif r in _TIMED:
            text = f"{r}({self.precision})"
        elif r is TypeRoot.MAP:
            text = f"MAP<{_required(self.key).sql()}, {_required(self.value).sql()}>"
        elif r is TypeRoot.ROW:
            text = "ROW<" + ", ".join(_field_sql(f) for f in self.fields or ()) + ">"
        else:
            text = f"{r}<{_required(self.element).sql()}>"
        return text if self.nullable else text + " NOT NULL"

    def __str__(self) -> str:
        return self.sql()


_PARAMETERS: dict[TypeRoot, frozenset[str]] = {
    **{r: frozenset() for r in _PLAIN},
    TypeRoot.VARIANT: frozenset(),
    **{r: frozenset({"length"}) for r in _LENGTHED},
    **{r: frozenset({"precision"}) for r in _TIMED},
    TypeRoot.DECIMAL: frozenset({"precision", "scale"}),
    TypeRoot.ARRAY: frozenset({"element"}),
    TypeRoot.MULTISET: frozenset({"element"}),
    TypeRoot.MAP: frozenset({"key", "value"}),
    TypeRoot.ROW: frozenset({"fields"}),
}


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise SchemaError(f"expected an integer type parameter, got {value!r}")
    return value


def _required(t: DataType | None) -> DataType:
    if t is None:  # unreachable for a constructed DataType; keeps the type checker honest
        raise SchemaError("incomplete composite type")
    return t


def _field_sql(f: DataField) -> str:
    name = "`" + f.name.replace("`", "``") + "`"
    text = f"{name} {f.type.sql()}"
    if f.description:
        text += " COMMENT '" + f.description.replace("'", "''") + "'"
    return text


# -- constructors ------------------------------------------------------------------------------


def atomic(root: TypeRoot | str, *, nullable: bool = True, length: int | None = None,
           precision: int | None = None, scale: int | None = None) -> DataType:
    """An atomic type; ``atomic("DECIMAL", precision=10, scale=2)`` is ``DECIMAL(10, 2)``."""
    return DataType(root=TypeRoot(root), nullable=nullable, length=length, precision=precision, scale=scale)


def array_of(element: DataType, *, nullable: bool = True) -> DataType:
    """``ARRAY<element>``."""
    return DataType(root=TypeRoot.ARRAY, nullable=nullable, element=element)


def multiset_of(element: DataType, *, nullable: bool = True) -> DataType:
    """``MULTISET<element>``."""
    return DataType(root=TypeRoot.MULTISET, nullable=nullable, element=element)


def map_of(key: DataType, value: DataType, *, nullable: bool = True) -> DataType:
    """``MAP<key, value>``."""
    return DataType(root=TypeRoot.MAP, nullable=nullable, key=key, value=value)


def row_of(fields: Iterable[DataField], *, nullable: bool = True) -> DataType:
    """``ROW<...>`` of ``fields`` (ids as given; table schemas reassign them)."""
    return DataType(root=TypeRoot.ROW, nullable=nullable, fields=tuple(fields))


# -- field ids ---------------------------------------------------------------------------------


def iter_nested_fields(fields: Iterable[DataField]) -> Iterator[DataField]:
    """Every field of ``fields`` and, after each, the fields of ROW types nested in it (depth first)."""
    for f in fields:
        yield f
        yield from _nested_fields(f.type)


def _nested_fields(t: DataType) -> Iterator[DataField]:
    if t.root is TypeRoot.ROW:
        yield from iter_nested_fields(t.fields or ())
    else:
        for child in t.children():
            yield from _nested_fields(child)


def collect_field_ids(fields: Iterable[DataField]) -> set[int]:
    """All field ids, nested ROW fields included. Raises SchemaError on a duplicate id."""
    seen: set[int] = set()
    for f in iter_nested_fields(fields):
        if f.id in seen:
            raise SchemaError(f"field id {f.id} is used twice (field {f.name!r})")
        seen.add(f.id)
    return seen


def highest_field_id(fields: Iterable[DataField]) -> int:
    """The largest user field id among ``fields`` and nested ROW fields; -1 if there is none.

    System field ids (from :data:`SYSTEM_FIELD_ID_START`) do not count, as in Paimon.
    """
    user = [i for i in collect_field_ids(fields) if i < SYSTEM_FIELD_ID_START]
    return max(user, default=-1)


def reassign_field_ids(t: DataType, last_id: list[int]) -> DataType:
    """``t`` with every nested ROW field renumbered from the counter ``last_id[0]``.

    The order is Paimon's (``ReassignFieldId``): depth first, a field's nested fields are
    numbered before the field itself. ``last_id[0]`` ends at the last id handed out.
    """
    if t.root is TypeRoot.ROW:
        renumbered = []
        for f in t.fields or ():
            nested = reassign_field_ids(f.type, last_id)
            last_id[0] += 1
            renumbered.append(replace(f, id=last_id[0], type=nested))
        return replace(t, fields=tuple(renumbered))
    if t.root in (TypeRoot.ARRAY, TypeRoot.MULTISET):
        return replace(t, element=reassign_field_ids(_required(t.element), last_id))
    if t.root is TypeRoot.MAP:
        key = reassign_field_ids(_required(t.key), last_id)
        return replace(t, key=key, value=reassign_field_ids(_required(t.value), last_id))
    return t


# -- JSON --------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<int>\d+)|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<sym>[(),<>]))")


class _SqlTypeParser:
    """A recursive-descent parser of Paimon's atomic SQL type strings (Java's grammar)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        pos, stripped = 0, text.rstrip()
        while pos < len(stripped):
            m = _TOKEN.match(stripped, pos)
            if m is None or m.end() == pos:
                raise SchemaError(f"cannot parse type {text!r} at position {pos}")
            self.tokens.append(m.group("int") or (m.group("word") or "").upper() or m.group("sym"))
            pos = m.end()
        self.pos = 0

    def fail(self, why: str) -> SchemaError:
        return SchemaError(f"cannot parse type {self.text!r}: {why}")

    def peek(self, *words: str) -> bool:
        return tuple(self.tokens[self.pos:self.pos + len(words)]) == words

    def take(self, *words: str) -> bool:
        if self.peek(*words):
            self.pos += len(words)
            return True
        return False

    def expect(self, word: str) -> None:
        if not self.take(word):
            found = self.tokens[self.pos] if self.pos < len(self.tokens) else "the end"
            raise self.fail(f"expected {word!r}, found {found!r}")

    def number(self) -> int:
        if self.pos >= len(self.tokens) or not self.tokens[self.pos].isdigit():
            raise self.fail("expected a number")
        self.pos += 1
        return int(self.tokens[self.pos - 1])

    def parameters(self, most: int) -> list[int]:
        if not self.take("("):
            return []
        values = [self.number()]
        while len(values) < most and self.take(","):
            values.append(self.number())
        self.expect(")")
        return values

    def parse(self) -> DataType:
        t = self.with_nullability()
        if self.pos != len(self.tokens):
            raise self.fail(f"unexpected {self.tokens[self.pos]!r}")
        return t

    def with_nullability(self) -> DataType:
        t = self.by_keyword().copy(nullable=self.nullability())
        if self.take("ARRAY"):  # Java's suffix notation: "INT ARRAY"
            t = array_of(t).copy(nullable=self.nullability())
        elif self.take("MULTISET"):
            t = multiset_of(t).copy(nullable=self.nullability())
        return t

    def nullability(self) -> bool:
        if self.take("NOT", "NULL"):
            return False
        self.take("NULL")
        return True

    def by_keyword(self) -> DataType:
        if self.pos >= len(self.tokens):
            raise self.fail("empty type")
        word = self.tokens[self.pos]
        self.pos += 1
        simple = {"BOOLEAN": "BOOLEAN", "TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INT",
                  "INTEGER": "INT", "BIGINT": "BIGINT", "FLOAT": "FLOAT", "DATE": "DATE"}
        if word in simple:
            return atomic(simple[word])
        if word == "DOUBLE":
            self.take("PRECISION")
            return atomic(TypeRoot.DOUBLE)
        if word == "STRING":
            return atomic(TypeRoot.VARCHAR, length=MAX_LENGTH)
        if word == "BYTES":
            return atomic(TypeRoot.VARBINARY, length=MAX_LENGTH)
        if word in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            args = self.parameters(1)
            return atomic(word, length=args[0] if args else 1)
        if word in ("DECIMAL", "NUMERIC", "DEC"):
            args = self.parameters(2)
            return atomic(TypeRoot.DECIMAL, precision=args[0] if args else 10, scale=args[1] if len(args) > 1 else 0)
        if word == "TIME":
            args = self.parameters(1)
            if self.take("WITHOUT"):
                self.expect("TIME")
                self.expect("ZONE")
            return atomic(TypeRoot.TIME, precision=args[0] if args else 0)
        if word == "TIMESTAMP":
            args = self.parameters(1)
            precision = args[0] if args else 6
            if self.take("WITHOUT"):
                self.expect("TIME")
                self.expect("ZONE")
            elif self.take("WITH"):
                for w in ("LOCAL", "TIME", "ZONE"):
                    self.expect(w)
                return atomic(TypeRoot.TIMESTAMP_LTZ, precision=precision)
            return atomic(TypeRoot.TIMESTAMP, precision=precision)
        if word == "VARIANT":
            return atomic(TypeRoot.VARIANT)
        if word == "TIMESTAMP_LTZ":
            args = self.parameters(1)
            return atomic(TypeRoot.TIMESTAMP_LTZ, precision=args[0] if args else 6)
        if word in _UNSUPPORTED_KEYWORDS:
            raise UnsupportedError(f"the Paimon type {word} (in {self.text!r}) is not supported by paimonflow")
        raise self.fail(f"unknown type {word!r}")


def parse_type_text(text: str) -> DataType:
    """Parse an atomic type string as Paimon writes or accepts it.

    Accepts Java's grammar: case-insensitive keywords, ``INTEGER``, ``DEC``/``NUMERIC``,
    ``DOUBLE PRECISION``, ``STRING``, ``BYTES``, ``TIMESTAMP_LTZ(p)``, ``... WITHOUT TIME ZONE``,
    defaults (``CHAR`` = CHAR(1), ``DECIMAL`` = DECIMAL(10, 0), ``TIME`` = TIME(0), ``TIMESTAMP``
    = TIMESTAMP(6)), a trailing ``NULL``/``NOT NULL`` and the ``INT ARRAY`` suffix form. Raises
    SchemaError for anything else, UnsupportedError for Paimon types paimonflow does not handle
    (BLOB, VECTOR, GEOMETRY, ...).
    """
    if not isinstance(text, str):
        raise SchemaError(f"expected a type string, got {text!r}")
    return _SqlTypeParser(text).parse()


_COMPOSITE_HEAD = re.compile(r"^\s*(?P<root>[A-Za-z_]+)\s*(?P<rest>.*?)\s*$")


def parse_type(value: Any) -> DataType:
    """A type as stored in a schema file: a string (atomic) or an object (ARRAY, MAP, MULTISET, ROW).

    Unknown keys in objects (such as pypaimon's ``"nullable"``) are ignored; nullability comes
    from the ``"type"`` string as in Java. Raises SchemaError for malformed input.
    """
    if isinstance(value, str):
        return parse_type_text(value)
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise SchemaError(f"invalid type {value!r}: expected a string or an object with a 'type' string")
    head = _COMPOSITE_HEAD.match(value["type"])
    root = head.group("root").upper() if head else ""
    if root not in ("ARRAY", "MULTISET", "MAP", "ROW"):
        if root == "VECTOR":
            raise UnsupportedError("the Paimon type VECTOR is not supported by paimonflow")
        return parse_type_text(value["type"])  # pypaimon accepts an atomic type here too
    rest = " ".join(head.group("rest").upper().split()) if head else ""
    if rest not in ("", "NULL", "NOT NULL"):
        raise SchemaError(f"invalid type {value['type']!r}")
    nullable = rest != "NOT NULL"
    try:
        if root in ("ARRAY", "MULTISET"):
            return DataType(root=TypeRoot(root), nullable=nullable, element=parse_type(value["element"]))
        if root == "MAP":
            return map_of(parse_type(value["key"]), parse_type(value["value"]), nullable=nullable)
        fields = value["fields"]
    except KeyError as exc:
        raise SchemaError(f"{root} type without {exc.args[0]!r}: {value!r}") from None
    if not isinstance(fields, list):
        raise SchemaError(f"ROW 'fields' must be a list, got {fields!r}")
    return row_of((parse_field(f) for f in fields), nullable=nullable)


def parse_field(value: Any) -> DataField:
    """A field object (``{"id", "name", "type", "description"?, "defaultValue"?}``); SchemaError if invalid."""
    if not isinstance(value, Mapping):
        raise SchemaError(f"invalid field {value!r}: expected an object")
    field_id, name = value.get("id"), value.get("name")
    if not isinstance(field_id, int) or isinstance(field_id, bool):
        raise SchemaError(f"invalid field {value!r}: 'id' must be an integer")
    if not isinstance(name, str):
        raise SchemaError(f"invalid field {value!r}: 'name' must be a string")
    if "type" not in value:
        raise SchemaError(f"invalid field {value!r}: no 'type'")
    description, default = value.get("description"), value.get("defaultValue")
    for key, text in (("description", description), ("defaultValue", default)):
        if text is not None and not isinstance(text, str):
            raise SchemaError(f"invalid field {name!r}: {key!r} must be a string")
    return DataField(id=field_id, name=name, type=parse_type(value["type"]), description=description,
                     default_value=default)


def type_to_json(t: DataType) -> Any:
    """The JSON value Java Paimon writes for ``t`` (a string, or a dict for composite types)."""
    if t.is_atomic:
        return t.sql()
    head = str(t.root) if t.nullable else f"{t.root} NOT NULL"
    if t.root is TypeRoot.MAP:
        return {"type": head, "key": type_to_json(_required(t.key)), "value": type_to_json(_required(t.value))}
    if t.root is TypeRoot.ROW:
        return {"type": head, "fields": [field_to_json(f) for f in t.fields or ()]}
    return {"type": head, "element": type_to_json(_required(t.element))}


def field_to_json(f: DataField) -> dict[str, Any]:
    """A field as Java writes it: id, name, type, then description / defaultValue when set."""
    out: dict[str, Any] = {"id": f.id, "name": f.name, "type": type_to_json(f.type)}
    if f.description is not None:
        out["description"] = f.description
    if f.default_value is not None:
        out["defaultValue"] = f.default_value
    return out


# -- Arrow -------------------------------------------------------------------------------------

_ARROW_SIMPLE: dict[TypeRoot, pa.DataType] = {
    TypeRoot.BOOLEAN: pa.bool_(), TypeRoot.TINYINT: pa.int8(), TypeRoot.SMALLINT: pa.int16(),
    TypeRoot.INT: pa.int32(), TypeRoot.BIGINT: pa.int64(), TypeRoot.FLOAT: pa.float32(),
    TypeRoot.DOUBLE: pa.float64(), TypeRoot.DATE: pa.date32(), TypeRoot.CHAR: pa.string(),
    TypeRoot.VARCHAR: pa.string(), TypeRoot.BINARY: pa.binary(), TypeRoot.VARBINARY: pa.binary(),
    TypeRoot.TIME: pa.time32("ms"),
}
_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}
#: A VARIANT column's Arrow type: Paimon's Parquet group of two required binaries, value first.
VARIANT_ARROW = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])


def timestamp_unit(precision: int) -> str:
    """The Arrow unit holding a TIMESTAMP(precision) exactly: s, ms, us or ns."""
    return "s" if precision == 0 else "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


def to_arrow(t: DataType) -> pa.DataType:
    """The Arrow type paimonflow (and pypaimon) uses for ``t``; see the module docstring."""
    simple = _ARROW_SIMPLE.get(t.root)
    if simple is not None:
        return simple
    if t.root is TypeRoot.DECIMAL:
        return pa.decimal128(_int(t.precision), _int(t.scale))
    if t.root is TypeRoot.VARIANT:
        return VARIANT_ARROW
    if t.root is TypeRoot.TIMESTAMP:
        return pa.timestamp(timestamp_unit(_int(t.precision)))
    if t.root is TypeRoot.TIMESTAMP_LTZ:
        return pa.timestamp(timestamp_unit(_int(t.precision)), tz="UTC")
    if t.root is TypeRoot.ARRAY:
        element = _required(t.element)
        return pa.list_(pa.field("item", to_arrow(element), element.nullable))
    if t.root is TypeRoot.MULTISET:
        return pa.map_(pa.field("key", to_arrow(_required(t.element)), False), pa.field("value", pa.int32(), False))
    if t.root is TypeRoot.MAP:
        value = _required(t.value)
        return pa.map_(pa.field("key", to_arrow(_required(t.key)), False),
                       pa.field("value", to_arrow(value), value.nullable))
    return pa.struct([to_arrow_field(f) for f in t.fields or ()])


def to_arrow_field(f: DataField) -> pa.Field:
    """``f`` as an Arrow field (name, type, nullability; no metadata)."""
    return pa.field(f.name, to_arrow(f.type), f.type.nullable)


_SIGNED_HOLDING = {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}


def holding_signed(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with each unsigned integer in it (nested ones too) replaced by the narrowest
    signed type that holds all its values: uint8 -> int16, uint16 -> int32, uint32 -> int64 (a
    polars ``len()``). The type a table made from data takes (the write rule then widens the
    data's values losslessly); uint64 has no such type and stays (refused by :func:`from_arrow`)."""
    t, T = arrow_type, pa.types
    if T.is_unsigned_integer(t):
        return _SIGNED_HOLDING.get(t.bit_width, t)
    if T.is_dictionary(t):
        return holding_signed(t.value_type)
    if T.is_list(t) or T.is_large_list(t):
        make = pa.list_ if T.is_list(t) else pa.large_list
        return make(t.value_field.with_type(holding_signed(t.value_type)))
    if T.is_struct(t):
        return pa.struct([f.with_type(holding_signed(f.type)) for f in t])
    if T.is_map(t):
        return pa.map_(t.key_field.with_type(holding_signed(t.key_type)),
                       t.item_field.with_type(holding_signed(t.item_type)))
    return t


def schema_holding_signed(schema: pa.Schema) -> pa.Schema:
    """:func:`holding_signed` of every field of ``schema`` (metadata kept)."""
    return pa.schema([f.with_type(holding_signed(f.type)) for f in schema], metadata=schema.metadata)


def from_arrow(arrow_type: pa.DataType, nullable: bool = True) -> DataType:
    """The Paimon type for an Arrow type.

    Accepts the large and view variants (``large_string``, ``string_view``, ``large_binary``,
    ``large_list``, ``list_view``...), dictionaries (their value type), ``date64``, every
    decimal width, ``fixed_size_binary(n)`` (BINARY(n)) and ``fixed_size_list`` (ARRAY). Map keys
    are NOT NULL. Nested ROW fields are numbered 0, 1, ... locally; a table schema renumbers
    them. Raises SchemaError for types Paimon cannot hold (unsigned integers, float16, null...).
    """
    t, T = arrow_type, pa.types
    if T.is_dictionary(t):
        return from_arrow(t.value_type, nullable)
    for check, root in ((T.is_boolean, TypeRoot.BOOLEAN), (T.is_int8, TypeRoot.TINYINT),
                        (T.is_int16, TypeRoot.SMALLINT), (T.is_int32, TypeRoot.INT), (T.is_int64, TypeRoot.BIGINT),
                        (T.is_float32, TypeRoot.FLOAT), (T.is_float64, TypeRoot.DOUBLE), (T.is_date, TypeRoot.DATE)):
        if check(t):
            return atomic(root, nullable=nullable)
    if T.is_unsigned_integer(t):
        raise SchemaError(f"unsigned type {t} has no Paimon equivalent; cast it to a signed type"
                          + (" (int64 for values below 2^63, or decimal(20, 0))" if T.is_uint64(t) else ""))
    if T.is_string(t) or T.is_large_string(t) or T.is_string_view(t):
        return atomic(TypeRoot.VARCHAR, nullable=nullable, length=MAX_LENGTH)
    if T.is_fixed_size_binary(t) and not T.is_decimal(t):
        return atomic(TypeRoot.BINARY, nullable=nullable, length=t.byte_width)
    if T.is_binary(t) or T.is_large_binary(t) or T.is_binary_view(t):
        return atomic(TypeRoot.VARBINARY, nullable=nullable, length=MAX_LENGTH)
    if T.is_decimal(t):
        if t.precision > 38 or t.scale < 0:
            raise SchemaError(f"{t} does not fit Paimon's DECIMAL (precision 1..38, scale 0..precision)")
        return atomic(TypeRoot.DECIMAL, nullable=nullable, precision=t.precision, scale=t.scale)
    if T.is_time(t):
        return atomic(TypeRoot.TIME, nullable=nullable, precision=_UNIT_PRECISION[t.unit])
    if T.is_timestamp(t):
        root = TypeRoot.TIMESTAMP_LTZ if t.tz else TypeRoot.TIMESTAMP
        return atomic(root, nullable=nullable, precision=_UNIT_PRECISION[t.unit])
    if T.is_list(t) or T.is_large_list(t) or T.is_fixed_size_list(t) or T.is_list_view(t) or T.is_large_list_view(t):
        return array_of(from_arrow(t.value_type, t.value_field.nullable), nullable=nullable)
    if T.is_map(t):
        return map_of(from_arrow(t.key_type, False), from_arrow(t.item_type, t.item_field.nullable), nullable=nullable)
    if T.is_struct(t):
        fields = [DataField(id=i, name=f.name, type=from_arrow(f.type, f.nullable)) for i, f in enumerate(t)]
        return row_of(fields, nullable=nullable)
    raise SchemaError(f"Arrow type {t} has no Paimon equivalent")


# -- evolution ---------------------------------------------------------------------------------


def equals_ignoring_ids(a: DataType, b: DataType) -> bool:
    """True if ``a`` and ``b`` are the same type, nested ROW field ids aside."""
    return _strip_ids(a) == _strip_ids(b)


def _strip_ids(t: DataType) -> DataType:
    return reassign_field_ids(t, [-1]) if not t.is_atomic else t


def is_safe_widening(old: DataType, new: DataType) -> bool:
    """True if every value of ``old`` is exactly representable in ``new``, so old data files can
    be read as ``new`` by a plain cast.

    Allowed: the same type; NOT NULL -> nullable (never the reverse); TINYINT -> SMALLINT -> INT ->
    BIGINT; TINYINT/SMALLINT -> FLOAT; TINYINT/SMALLINT/INT -> DOUBLE; FLOAT -> DOUBLE; an integer
    into a DECIMAL with enough integer digits; DECIMAL(p, s) -> DECIMAL(p', s) with p' >= p (the
    scale never changes); longer CHAR/VARCHAR/BINARY/VARBINARY and CHAR -> VARCHAR, BINARY ->
    VARBINARY; a higher TIME precision; a higher TIMESTAMP(_LTZ) precision that stays within
    microseconds (nanoseconds cannot hold every older value); ARRAY/MULTISET/MAP/ROW whose parts
    widen safely (MAP keys and ROW field names unchanged). Field ids inside ROW types are ignored.
    """
    if old.nullable and not new.nullable:
        return False
    o, n = old.root, new.root
    if o is n:
        if o in _LENGTHED:
            return _int(new.length) >= _int(old.length)
        if o is TypeRoot.DECIMAL:
            return new.scale == old.scale and _int(new.precision) >= _int(old.precision)
        if o is TypeRoot.TIME:
            return _int(new.precision) >= _int(old.precision)
        if o in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
            p_old, p_new = _int(old.precision), _int(new.precision)
            return p_new >= p_old and (p_new <= 6 or p_old > 6)
        if o in (TypeRoot.ARRAY, TypeRoot.MULTISET):
            return is_safe_widening(_required(old.element), _required(new.element))
        if o is TypeRoot.MAP:
            return (equals_ignoring_ids(_required(old.key), _required(new.key))
                    and is_safe_widening(_required(old.value), _required(new.value)))
        if o is TypeRoot.ROW:
            old_fields, new_fields = old.fields or (), new.fields or ()
            return len(old_fields) == len(new_fields) and all(
                a.name == b.name and is_safe_widening(a.type, b.type)
                for a, b in zip(old_fields, new_fields, strict=True))
        return True
    if o in _INTEGERS:
        if n in _INTEGERS:
            return _INTEGERS.index(n) > _INTEGERS.index(o)
        if n is TypeRoot.FLOAT:
            return o in (TypeRoot.TINYINT, TypeRoot.SMALLINT)
        if n is TypeRoot.DOUBLE:
            return o is not TypeRoot.BIGINT
        if n is TypeRoot.DECIMAL:
            return _int(new.precision) - _int(new.scale) >= _INTEGER_DIGITS[o]
        return False
    if (o, n) in ((TypeRoot.FLOAT, TypeRoot.DOUBLE),):
        return True
    if (o, n) in ((TypeRoot.CHAR, TypeRoot.VARCHAR), (TypeRoot.BINARY, TypeRoot.VARBINARY)):
        return _int(new.length) >= _int(old.length)
    return False
