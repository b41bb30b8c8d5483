"""Paimon data types: their JSON form in schema files and their Arrow mapping."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from .errors import SchemaError

MAX_LENGTH = 2147483647
_ATOMIC_NO_PARAMS = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE")
_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")


@dataclass(frozen=True, slots=True, kw_only=True)
class DataField:
    id: int
    name: str
    type: DataType
    description: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DataType:
    """One Paimon type. ``root`` is the SQL name (``BIGINT``, ``VARCHAR``, ``ROW``...)."""

    root: str
    nullable: bool = True
    length: int | None = None  # CHAR, VARCHAR, BINARY, VARBINARY
    precision: int | None = None  # DECIMAL, TIME, TIMESTAMP, TIMESTAMP_LTZ
    scale: int | None = None  # DECIMAL
    element: DataType | None = None  # ARRAY, MULTISET
    key: DataType | None = None  # MAP
    value: DataType | None = None  # MAP
    fields: tuple[DataField, ...] | None = None  # ROW

    def copy(self, *, nullable: bool) -> DataType:
        return replace(self, nullable=nullable)

    @property
    def is_atomic(self) -> bool:
        return self.root not in ("ARRAY", "MAP", "MULTISET", "ROW")

    def sql(self) -> str:
        """Paimon's SQL string of an atomic type (``DECIMAL(10, 2) NOT NULL``)."""
        r = self.root
        if r in _ATOMIC_NO_PARAMS:
            text = r
        elif r == "DECIMAL":
            text = f"DECIMAL({self.precision}, {self.scale})"
        elif r == "VARCHAR":
            text = "STRING" if self.length == MAX_LENGTH else f"VARCHAR({self.length})"
        elif r == "VARBINARY":
            text = "BYTES" if self.length == MAX_LENGTH else f"VARBINARY({self.length})"
        elif r in ("CHAR", "BINARY"):
            text = f"{r}({self.length})"
        elif r in ("TIME", "TIMESTAMP"):
            text = f"{r}({self.precision})"
        elif r == "TIMESTAMP_LTZ":
            text = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        else:
            raise SchemaError(f"{r} has no atomic SQL form")
        return text if self.nullable else text + " NOT NULL"


def _t(root: str, **kw: Any) -> DataType:
    return DataType(root=root, **kw)


# -- JSON --------------------------------------------------------------------------------------

_PARAM = re.compile(r"^(?P<root>[A-Z_ ]+?)\s*(?:\((?P<args>[^)]*)\))?(?P<ltz>\s+WITH LOCAL TIME ZONE)?$")


def parse_type_text(text: str) -> DataType:
    """``"DECIMAL(10, 2) NOT NULL"`` -> DataType (atomic types only)."""
    if not isinstance(text, str):
        raise SchemaError(f"expected a type string, got {text!r}")
    s = " ".join(text.strip().upper().split())
    nullable = True
    if s.endswith(" NOT NULL"):
        nullable, s = False, s[: -len(" NOT NULL")]
    elif s.endswith(" NULL"):
        s = s[: -len(" NULL")]
    m = _PARAM.match(s)
    if not m:
        raise SchemaError(f"unknown type {text!r}")
    root = m.group("root").strip()
    args = [int(a) for a in m.group("args").split(",")] if m.group("args") else []
    aliases = {"INTEGER": "INT", "STRING": "VARCHAR", "BYTES": "VARBINARY", "DEC": "DECIMAL", "NUMERIC": "DECIMAL",
               "TIMESTAMP_LTZ": "TIMESTAMP_LTZ", "TIMESTAMP WITHOUT TIME ZONE": "TIMESTAMP"}
    if root in ("STRING", "BYTES"):
        return _t(aliases[root], nullable=nullable, length=MAX_LENGTH)
    root = aliases.get(root, root)
    if m.group("ltz"):
        root = "TIMESTAMP_LTZ"
    if root == "TIMESTAMP WITH LOCAL TIME ZONE":
        root = "TIMESTAMP_LTZ"
    if root in _ATOMIC_NO_PARAMS and not args:
        return _t(root, nullable=nullable)
    if root == "DECIMAL":
        p = args[0] if args else 10
        sc = args[1] if len(args) > 1 else 0
        if not 1 <= p <= 38 or not 0 <= sc <= p:
            raise SchemaError(f"invalid DECIMAL({p}, {sc})")
        return _t(root, nullable=nullable, precision=p, scale=sc)
    if root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        length = args[0] if args else 1
        if length < 1:
            raise SchemaError(f"invalid length in {text!r}")
        return _t(root, nullable=nullable, length=length)
    if root in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
        p = args[0] if args else (0 if root == "TIME" else 6)
        if not 0 <= p <= 9:
            raise SchemaError(f"invalid precision in {text!r}")
        return _t(root, nullable=nullable, precision=p)
    raise SchemaError(f"unknown type {text!r}")


def parse_type(value: Any) -> DataType:
    """A type as stored in a schema file: a string (atomic) or an object (ARRAY, MAP, MULTISET, ROW)."""
    if isinstance(value, str):
        return parse_type_text(value)
    if not isinstance(value, dict) or "type" not in value:
        raise SchemaError(f"invalid type {value!r}")
    head = str(value["type"]).strip().upper()
    nullable = not head.endswith("NOT NULL")
    root = head.replace("NOT NULL", "").strip()
    if root in ("ARRAY", "MULTISET"):
        return _t(root, nullable=nullable, element=parse_type(value["element"]))
    if root == "MAP":
        return _t(root, nullable=nullable, key=parse_type(value["key"]), value=parse_type(value["value"]))
    if root == "ROW":
        return _t(root, nullable=nullable, fields=tuple(parse_field(f) for f in value["fields"]))
    raise SchemaError(f"unknown type {value!r}")


def parse_field(value: Any) -> DataField:
    if not isinstance(value, dict) or not {"id", "name", "type"} <= value.keys():
        raise SchemaError(f"invalid field {value!r}")
    if not isinstance(value["id"], int) or not isinstance(value["name"], str):
        raise SchemaError(f"invalid field {value!r}")
    return DataField(id=value["id"], name=value["name"], type=parse_type(value["type"]),
                     description=value.get("description"))


def field_to_json(f: DataField) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f.id, "name": f.name, "type": type_to_json(f.type)}
    if f.description is not None:
        out["description"] = f.description
    return out


def type_to_json(t: DataType) -> Any:
    if t.is_atomic:
        return t.sql()
    head = t.root if t.nullable else f"{t.root} NOT NULL"
    if t.root in ("ARRAY", "MULTISET"):
        return {"type": head, "element": type_to_json(t.element)}
    if t.root == "MAP":
        return {"type": head, "key": type_to_json(t.key), "value": type_to_json(t.value)}
    return {"type": head, "fields": [field_to_json(f) for f in t.fields or ()]}


# -- Arrow -------------------------------------------------------------------------------------


def _unit(precision: int) -> str:
    return "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


def to_arrow(t: DataType) -> pa.DataType:
    r = t.root
    simple = {"BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
              "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATE": pa.date32(),
              "CHAR": pa.string(), "VARCHAR": pa.string(), "BINARY": pa.binary(), "VARBINARY": pa.binary()}
    if r in simple:
        return simple[r]
    if r == "DECIMAL":
        return pa.decimal128(t.precision, t.scale)
    if r == "TIME":
        return pa.time32("ms") if (t.precision or 0) <= 3 else pa.time64("us" if t.precision <= 6 else "ns")
    if r == "TIMESTAMP":
        return pa.timestamp(_unit(t.precision))
    if r == "TIMESTAMP_LTZ":
        return pa.timestamp(_unit(t.precision), tz="UTC")
    if r == "ARRAY":
        return pa.list_(pa.field("element", to_arrow(t.element), t.element.nullable))
    if r == "MULTISET":
        return pa.map_(pa.field("key", to_arrow(t.element), False), pa.field("value", pa.int32(), False))
    if r == "MAP":
        return pa.map_(pa.field("key", to_arrow(t.key), False), pa.field("value", to_arrow(t.value), t.value.nullable))
    if r == "ROW":
        return pa.struct([pa.field(f.name, to_arrow(f.type), f.type.nullable) for f in t.fields or ()])
    raise SchemaError(f"no Arrow mapping for {r}")


def from_arrow(t: pa.DataType, nullable: bool = True, next_id: list[int] | None = None) -> DataType:
    """The Paimon type for an Arrow type. ``next_id`` hands out ids to nested ROW fields."""
    T = pa.types
    if T.is_boolean(t):
        return _t("BOOLEAN", nullable=nullable)
    for check, root in ((T.is_int8, "TINYINT"), (T.is_int16, "SMALLINT"), (T.is_int32, "INT"), (T.is_int64, "BIGINT"),
                        (T.is_float32, "FLOAT"), (T.is_float64, "DOUBLE"), (T.is_date32, "DATE")):
        if check(t):
            return _t(root, nullable=nullable)
    if T.is_uint8(t) or T.is_uint16(t) or T.is_uint32(t) or T.is_uint64(t):
        raise SchemaError(f"unsigned type {t} has no Paimon equivalent; cast it to a signed type")
    if T.is_string(t) or T.is_large_string(t) or T.is_string_view(t):
        return _t("VARCHAR", nullable=nullable, length=MAX_LENGTH)
    if T.is_binary(t) or T.is_large_binary(t) or T.is_binary_view(t):
        return _t("VARBINARY", nullable=nullable, length=MAX_LENGTH)
    if T.is_fixed_size_binary(t):
        return _t("BINARY", nullable=nullable, length=t.byte_width)
    if T.is_decimal(t):
        return _t("DECIMAL", nullable=nullable, precision=t.precision, scale=t.scale)
    if T.is_time32(t):
        return _t("TIME", nullable=nullable, precision=0 if t.unit == "s" else 3)
    if T.is_time64(t):
        return _t("TIME", nullable=nullable, precision=6 if t.unit == "us" else 9)
    if T.is_timestamp(t):
        p = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return _t("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP", nullable=nullable, precision=max(p, 3) if p == 0 else p)
    if T.is_list(t) or T.is_large_list(t) or T.is_fixed_size_list(t):
        return _t("ARRAY", nullable=nullable, element=from_arrow(t.value_type, t.value_field.nullable, next_id))
    if T.is_map(t):
        return _t("MAP", nullable=nullable, key=from_arrow(t.key_type, False, next_id),
                  value=from_arrow(t.item_type, t.item_field.nullable, next_id))
    if T.is_struct(t):
        counter = next_id if next_id is not None else [0]
        fields = []
        for f in t:
            fid = counter[0]
            counter[0] += 1
            fields.append(DataField(id=fid, name=f.name, type=from_arrow(f.type, f.nullable, counter)))
        return _t("ROW", nullable=nullable, fields=tuple(fields))
    if T.is_dictionary(t):
        return from_arrow(t.value_type, nullable, next_id)
    raise SchemaError(f"Arrow type {t} has no Paimon equivalent")


# -- evolution ---------------------------------------------------------------------------------


def is_safe_widening(old: DataType, new: DataType) -> bool:
    """True if every value of ``old`` is exactly representable in ``new`` (nullability may only relax)."""
    if old.nullable and not new.nullable:
        return False
    if old.root == new.root:
        if old.root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            return (new.length or 0) >= (old.length or 0)
        if old.root == "DECIMAL":
            return new.scale == old.scale and new.precision >= old.precision
        if old.root in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
            return (new.precision or 0) >= (old.precision or 0)
        if old.is_atomic:
            return True
        if old.root in ("ARRAY", "MULTISET"):
            return old.element == new.element
        if old.root == "MAP":
            return old.key == new.key and old.value == new.value
        return old.fields == new.fields
    if old.root in _INTEGERS and new.root in _INTEGERS:
        return _INTEGERS.index(new.root) > _INTEGERS.index(old.root)
    if old.root == "FLOAT" and new.root == "DOUBLE":
        return True
    if old.root in ("TINYINT", "SMALLINT", "INT") and new.root == "DOUBLE":
        return True
    if old.root in ("TINYINT", "SMALLINT") and new.root == "FLOAT":
        return True
    if old.root == "CHAR" and new.root == "VARCHAR":
        return (new.length or 0) >= (old.length or 0)
    if old.root == "BINARY" and new.root == "VARBINARY":
        return (new.length or 0) >= (old.length or 0)
    return False


def highest_nested_id(fields: tuple[DataField, ...] | list[DataField]) -> int:
    """The largest field id among ``fields`` and every nested ROW field (-1 if none)."""
    best = -1
    stack = [f for f in fields]
    while stack:
        f = stack.pop()
        best = max(best, f.id)
        t = f.type
        while t is not None:
            if t.fields:
                stack.extend(t.fields)
                break
            t = t.element or t.value
    return best
