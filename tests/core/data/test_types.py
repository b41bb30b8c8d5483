"""Paimon data types: construction, JSON forms (Java's and pypaimon's), Arrow mapping, widening."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimonflow.core.data.types import (
    MAX_LENGTH,
    SYSTEM_FIELD_ID_START,
    DataField,
    DataType,
    TypeRoot,
    array_of,
    atomic,
    collect_field_ids,
    equals_ignoring_ids,
    from_arrow,
    highest_field_id,
    is_safe_widening,
    map_of,
    multiset_of,
    parse_field,
    parse_type,
    parse_type_text,
    reassign_field_ids,
    row_of,
    to_arrow,
    type_to_json,
)
from paimonflow.core.errors import SchemaError, UnsupportedError

# Every atomic form, spelled exactly as Java Paimon writes it.
ATOMIC = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(1, 0)", "DECIMAL(10, 2)",
          "DECIMAL(38, 18)", "DECIMAL(38, 38)", "CHAR(1)", "CHAR(3)", "VARCHAR(1)", "VARCHAR(20)", "STRING",
          "BINARY(4)", "VARBINARY(10)", "BYTES", "DATE", "TIME(0)", "TIME(3)", "TIME(9)", "TIMESTAMP(0)",
          "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)", "TIMESTAMP(0) WITH LOCAL TIME ZONE",
          "TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIMESTAMP(9) WITH LOCAL TIME ZONE"]
T = parse_type_text


@pytest.mark.parametrize("text", ATOMIC)
@pytest.mark.parametrize("not_null", [False, True])
def test_atomic_types_round_trip(text: str, not_null: bool) -> None:
    full = text + (" NOT NULL" if not_null else "")
    t = parse_type(full)
    assert t.nullable is not not_null and t.is_atomic
    assert type_to_json(t) == full == t.sql() == str(t)
    assert parse_type(type_to_json(t)) == t


@pytest.mark.parametrize(("text", "expected"), [
    ("TIMESTAMP_LTZ(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),  # pypaimon's spelling
    ("TIMESTAMP_LTZ(3) NOT NULL", "TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL"),
    ("TIMESTAMP_LTZ", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("VARCHAR(2147483647)", "STRING"),
    ("VARBINARY(2147483647)", "BYTES"),
    ("INTEGER", "INT"),
    ("string not null", "STRING NOT NULL"),
    ("  bigint   NOT   NULL ", "BIGINT NOT NULL"),
    ("INT NULL", "INT"),
    ("DEC(5, 1)", "DECIMAL(5, 1)"),
    ("NUMERIC(7)", "DECIMAL(7, 0)"),
    ("DECIMAL", "DECIMAL(10, 0)"),
    ("DOUBLE PRECISION", "DOUBLE"),
    ("CHAR", "CHAR(1)"),
    ("VARCHAR", "VARCHAR(1)"),
    ("BINARY", "BINARY(1)"),
    ("TIME", "TIME(0)"),
    ("TIME(3) WITHOUT TIME ZONE", "TIME(3)"),
    ("TIMESTAMP", "TIMESTAMP(6)"),
    ("TIMESTAMP(3) WITHOUT TIME ZONE", "TIMESTAMP(3)"),
    ("timestamp(3) with local time zone", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
])
def test_spellings_written_by_others_are_read(text: str, expected: str) -> None:
    assert type_to_json(parse_type(text)) == expected


def test_suffix_collection_notation() -> None:
    assert type_to_json(T("INT NOT NULL ARRAY NOT NULL")) == {"type": "ARRAY NOT NULL", "element": "INT NOT NULL"}
    assert T("STRING MULTISET") == multiset_of(T("STRING"))


@pytest.mark.parametrize("bad", ["", "FOO", "INT INT", "DECIMAL(50, 2)", "DECIMAL(5, 6)", "DECIMAL(0)",
                                 "VARCHAR(0)", "CHAR(2147483648)", "TIMESTAMP(12)", "TIME(10)", "INT(3)",
                                 "DECIMAL(10, 2", "TIMESTAMP(3) WITH TIME ZONE", "ARRAY<INT>", "INT NOT",
                                 "STRING !", "MAP"])
def test_bad_type_strings_raise_schema_error(bad: str) -> None:
    with pytest.raises(SchemaError):
        parse_type(bad)


@pytest.mark.parametrize("value", ["BLOB", "GEOMETRY", "VECTOR<FLOAT, 3>",
                                   {"type": "VECTOR", "element": "FLOAT", "length": 3}])
def test_paimon_types_paimonflow_does_not_handle_are_named(value: object) -> None:
    with pytest.raises(UnsupportedError, match=r"BLOB|GEOMETRY|VECTOR"):
        parse_type(value)


def test_composite_types_round_trip_in_javas_form() -> None:
    doc = {"type": "ROW NOT NULL", "fields": [
        {"id": 5, "name": "a", "type": {"type": "ARRAY", "element": "INT NOT NULL"}},
        {"id": 6, "name": "m", "type": {"type": "MAP NOT NULL", "key": "STRING NOT NULL", "value": "DOUBLE"}},
        {"id": 7, "name": "s", "type": {"type": "MULTISET", "element": "STRING"}, "description": "bag"},
        {"id": 9, "name": "r", "type": {"type": "ROW", "fields": [{"id": 8, "name": "x", "type": "DATE"}]},
         "defaultValue": "1"},
    ]}
    t = parse_type(doc)
    assert t.root is TypeRoot.ROW and not t.nullable
    assert [f.name for f in t.fields or ()] == ["a", "m", "s", "r"]
    assert type_to_json(t) == doc
    assert json.loads(json.dumps(type_to_json(t))) == doc
    assert t.sql() == ("ROW<`a` ARRAY<INT NOT NULL>, `m` MAP<STRING NOT NULL, DOUBLE> NOT NULL, "
                       "`s` MULTISET<STRING> COMMENT 'bag', `r` ROW<`x` DATE>> NOT NULL")


def test_pypaimons_composite_form_is_read() -> None:
    # pypaimon 2.1.0 adds "nullable" to composite objects; nullability comes from "type", as in Java.
    doc = {"type": "ARRAY NOT NULL", "element": {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT",
                                                 "nullable": True}, "nullable": False}
    t = parse_type(doc)
    assert t == array_of(map_of(T("STRING NOT NULL"), T("BIGINT")), nullable=False)
    assert type_to_json(t) == {"type": "ARRAY NOT NULL",
                               "element": {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}}
    assert parse_type({"type": "BIGINT NOT NULL"}) == T("BIGINT NOT NULL")  # pypaimon accepts this too


@pytest.mark.parametrize("bad", [
    {"type": "ARRAY"}, {"type": "MAP", "key": "INT"}, {"type": "ROW"}, {"type": "ROW", "fields": {}},
    {"type": "ARRAY FOO", "element": "INT"}, {"element": "INT"}, {"type": 3}, [], 5, None,
    {"type": "ROW", "fields": [{"id": 1, "name": "a", "type": "INT"}, {"id": 2, "name": "a", "type": "INT"}]},
    {"type": "ROW", "fields": [{"name": "a", "type": "INT"}]},
    {"type": "ROW", "fields": [{"id": True, "name": "a", "type": "INT"}]},
    {"type": "ROW", "fields": [{"id": 1, "name": 2, "type": "INT"}]},
    {"type": "ROW", "fields": [{"id": 1, "name": "a"}]},
    {"type": "ROW", "fields": [{"id": 1, "name": "a", "type": "INT", "description": 5}]},
])
def test_malformed_composites_raise_schema_error(bad: object) -> None:
    with pytest.raises(SchemaError):
        parse_type(bad)


def test_construction_is_validated() -> None:
    assert DataType(root="BIGINT") == atomic(TypeRoot.BIGINT)  # a string root is accepted
    assert DataType(root="BIGINT").root is TypeRoot.BIGINT
    for kwargs in [dict(root="NOPE"), dict(root="INT", length=3), dict(root="VARCHAR"),
                   dict(root="DECIMAL", precision=10), dict(root="DECIMAL", precision=39, scale=0),
                   dict(root="TIMESTAMP", precision=-1), dict(root="ARRAY"), dict(root="MAP", key=T("INT")),
                   dict(root="VARCHAR", length=True)]:
        with pytest.raises(SchemaError):
            DataType(**kwargs)  # type: ignore[arg-type]
    row = row_of([DataField(id=0, name="a", type=T("INT"))])
    assert isinstance(row.fields, tuple) and hash(row) == hash(row_of((DataField(id=0, name="a", type=T("INT")),)))
    assert row.copy(nullable=True) is row and not row.copy(nullable=False).nullable


def test_field_json() -> None:
    f = parse_field({"id": 3, "name": "n", "type": "INT", "description": "d", "defaultValue": "0", "extra": 1})
    assert f == DataField(id=3, name="n", type=T("INT"), description="d", default_value="0")


# -- field ids ---------------------------------------------------------------------------------


def test_nested_ids_follow_paimons_reassign_order() -> None:
    inner = row_of([DataField(id=0, name="z", type=T("TINYINT"))])
    t = row_of([DataField(id=0, name="a", type=T("INT")), DataField(id=1, name="b", type=T("STRING")),
                DataField(id=2, name="c", type=inner),
                DataField(id=3, name="l", type=array_of(row_of([DataField(id=0, name="q", type=T("INT"))])))])
    last = [24]
    renumbered = reassign_field_ids(t, last)
    # Children are numbered before their parent field (Java's ReassignFieldId; pypaimon agrees).
    doc = type_to_json(renumbered)
    assert [(f["id"], f["name"]) for f in doc["fields"]] == [(25, "a"), (26, "b"), (28, "c"), (30, "l")]
    assert doc["fields"][2]["type"]["fields"][0]["id"] == 27
    assert doc["fields"][3]["type"]["element"]["fields"][0]["id"] == 29
    assert last == [30]
    fields = [DataField(id=24, name="row", type=renumbered)]
    assert highest_field_id(fields) == 30
    assert collect_field_ids(fields) == set(range(24, 31))
    assert equals_ignoring_ids(renumbered, t) and renumbered != t


def test_field_id_helpers() -> None:
    assert highest_field_id([]) == -1
    system = DataField(id=SYSTEM_FIELD_ID_START + 1, name="_SEQUENCE_NUMBER", type=T("BIGINT"))
    assert highest_field_id([DataField(id=4, name="a", type=T("INT")), system]) == 4
    dup = [DataField(id=1, name="a", type=row_of([DataField(id=1, name="b", type=T("INT"))]))]
    with pytest.raises(SchemaError, match="1"):
        collect_field_ids(dup)


# -- Arrow ---------------------------------------------------------------------------------------

TO_ARROW = [
    ("BOOLEAN", pa.bool_()), ("TINYINT", pa.int8()), ("SMALLINT", pa.int16()), ("INT", pa.int32()),
    ("BIGINT", pa.int64()), ("FLOAT", pa.float32()), ("DOUBLE", pa.float64()),
    ("DECIMAL(10, 2)", pa.decimal128(10, 2)), ("DECIMAL(38, 0)", pa.decimal128(38, 0)),
    ("CHAR(3)", pa.string()), ("VARCHAR(20)", pa.string()), ("STRING", pa.string()),
    ("BINARY(4)", pa.binary()), ("VARBINARY(10)", pa.binary()), ("BYTES", pa.binary()), ("DATE", pa.date32()),
    ("TIME(0)", pa.time32("ms")), ("TIME(3)", pa.time32("ms")), ("TIME(9)", pa.time32("ms")),
    ("TIMESTAMP(0)", pa.timestamp("s")), ("TIMESTAMP(1)", pa.timestamp("ms")), ("TIMESTAMP(3)", pa.timestamp("ms")),
    ("TIMESTAMP(4)", pa.timestamp("us")), ("TIMESTAMP(6)", pa.timestamp("us")), ("TIMESTAMP(7)", pa.timestamp("ns")),
    ("TIMESTAMP(9)", pa.timestamp("ns")), ("TIMESTAMP(0) WITH LOCAL TIME ZONE", pa.timestamp("s", tz="UTC")),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.timestamp("ms", tz="UTC")),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC")),
    ({"type": "ARRAY", "element": "INT NOT NULL"}, pa.list_(pa.field("item", pa.int32(), False))),
    ({"type": "MAP", "key": "STRING", "value": "BIGINT NOT NULL"},
     pa.map_(pa.field("key", pa.string(), False), pa.field("value", pa.int64(), False))),
    ({"type": "MULTISET", "element": "STRING"},
     pa.map_(pa.field("key", pa.string(), False), pa.field("value", pa.int32(), False))),
    ({"type": "ROW", "fields": [{"id": 1, "name": "x", "type": "INT NOT NULL"}, {"id": 2, "name": "y", "type": "DATE"}]},
     pa.struct([pa.field("x", pa.int32(), False), pa.field("y", pa.date32())])),
]


@pytest.mark.parametrize(("paimon", "arrow"), TO_ARROW, ids=lambda v: json.dumps(v) if isinstance(v, dict) else str(v))
def test_paimon_to_arrow(paimon: object, arrow: pa.DataType) -> None:
    got = to_arrow(parse_type(paimon))
    assert got == arrow
    assert str(got) == str(arrow)  # field names and nullability included


FROM_ARROW = [
    (pa.bool_(), "BOOLEAN"), (pa.int8(), "TINYINT"), (pa.int16(), "SMALLINT"), (pa.int32(), "INT"),
    (pa.int64(), "BIGINT"), (pa.float32(), "FLOAT"), (pa.float64(), "DOUBLE"),
    (pa.decimal128(12, 3), "DECIMAL(12, 3)"), (pa.decimal256(20, 2), "DECIMAL(20, 2)"),
    (pa.decimal32(5, 2), "DECIMAL(5, 2)"), (pa.decimal64(12, 0), "DECIMAL(12, 0)"),
    (pa.string(), "STRING"), (pa.large_string(), "STRING"), (pa.string_view(), "STRING"),
    (pa.binary(), "BYTES"), (pa.large_binary(), "BYTES"), (pa.binary_view(), "BYTES"), (pa.binary(4), "BINARY(4)"),
    (pa.date32(), "DATE"), (pa.date64(), "DATE"),
    (pa.time32("s"), "TIME(0)"), (pa.time32("ms"), "TIME(3)"), (pa.time64("us"), "TIME(6)"),
    (pa.time64("ns"), "TIME(9)"),
    (pa.timestamp("s"), "TIMESTAMP(0)"), (pa.timestamp("ms"), "TIMESTAMP(3)"), (pa.timestamp("us"), "TIMESTAMP(6)"),
    (pa.timestamp("ns"), "TIMESTAMP(9)"), (pa.timestamp("us", tz="UTC"), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    (pa.timestamp("ms", tz="Asia/Tokyo"), "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    (pa.dictionary(pa.int32(), pa.string()), "STRING"),
    (pa.list_(pa.int32()), {"type": "ARRAY", "element": "INT"}),
    (pa.large_list(pa.field("e", pa.string(), False)), {"type": "ARRAY", "element": "STRING NOT NULL"}),
    (pa.list_view(pa.int8()), {"type": "ARRAY", "element": "TINYINT"}),
    (pa.list_(pa.int16(), 3), {"type": "ARRAY", "element": "SMALLINT"}),
    (pa.map_(pa.string(), pa.int64()), {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}),
    (pa.struct([("a", pa.int32()), pa.field("b", pa.string(), False)]),
     {"type": "ROW", "fields": [{"id": 0, "name": "a", "type": "INT"}, {"id": 1, "name": "b", "type": "STRING NOT NULL"}]}),
]


@pytest.mark.parametrize(("arrow", "paimon"), FROM_ARROW, ids=lambda v: str(v))
def test_arrow_to_paimon(arrow: pa.DataType, paimon: object) -> None:
    assert type_to_json(from_arrow(arrow)) == paimon
    not_null = from_arrow(arrow, nullable=False)
    assert not not_null.nullable and not_null.copy(nullable=True) == from_arrow(arrow)


@pytest.mark.parametrize("arrow", [pa.uint8(), pa.uint64(), pa.float16(), pa.null(), pa.decimal256(40, 2),
                                   pa.decimal128(5, -2), pa.month_day_nano_interval(), pa.duration("s"),
                                   pa.struct([("u", pa.uint32())])], ids=str)
def test_arrow_types_paimon_cannot_hold(arrow: pa.DataType) -> None:
    with pytest.raises(SchemaError):
        from_arrow(arrow)


# -- property tests ----------------------------------------------------------------------------

_atomic = st.sampled_from(ATOMIC).map(parse_type_text)
_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=8)


def _row(types: list[DataType], names: list[str], ids: list[int], nullable: bool) -> DataType:
    unique = list(dict.fromkeys(names))
    return row_of([DataField(id=i, name=n, type=t) for i, n, t in zip(ids, unique, types, strict=False)],
                  nullable=nullable)


paimon_types = st.recursive(
    st.builds(lambda t, n: t.copy(nullable=n), _atomic, st.booleans()),
    lambda inner: st.one_of(
        st.builds(lambda e, n: array_of(e, nullable=n), inner, st.booleans()),
        st.builds(lambda e, n: multiset_of(e, nullable=n), inner, st.booleans()),
        st.builds(lambda k, v, n: map_of(k, v, nullable=n), inner, inner, st.booleans()),
        st.builds(_row, st.lists(inner, min_size=1, max_size=4), st.lists(_names, min_size=4, max_size=4),
                  st.lists(st.integers(0, 10_000), min_size=4, max_size=4), st.booleans()),
    ),
    max_leaves=10,
)


@given(paimon_types)
def test_any_type_round_trips_through_json(t: DataType) -> None:
    text = json.dumps(type_to_json(t), ensure_ascii=False)
    assert parse_type(json.loads(text)) == t
    if t.is_atomic:
        assert parse_type_text(t.sql()) == t


@given(paimon_types)
def test_arrow_mapping_is_stable(t: DataType) -> None:
    arrow = to_arrow(t)
    assert to_arrow(from_arrow(arrow, t.nullable)) == arrow
    assert is_safe_widening(t, t) and is_safe_widening(t.copy(nullable=False), t.copy(nullable=True))


# -- widening --------------------------------------------------------------------------------

SAFE = [("TINYINT", "SMALLINT"), ("TINYINT", "BIGINT"), ("SMALLINT", "INT"), ("INT", "BIGINT"),
        ("TINYINT", "FLOAT"), ("SMALLINT", "FLOAT"), ("INT", "DOUBLE"), ("SMALLINT", "DOUBLE"), ("FLOAT", "DOUBLE"),
        ("INT", "DECIMAL(10, 0)"), ("TINYINT", "DECIMAL(5, 2)"), ("BIGINT", "DECIMAL(38, 19)"),
        ("DECIMAL(10, 2)", "DECIMAL(12, 2)"), ("DECIMAL(10, 2)", "DECIMAL(10, 2)"),
        ("CHAR(3)", "CHAR(5)"), ("CHAR(3)", "VARCHAR(3)"), ("CHAR(3)", "STRING"), ("VARCHAR(5)", "STRING"),
        ("BINARY(4)", "BINARY(8)"), ("BINARY(4)", "BYTES"), ("VARBINARY(4)", "BYTES"),
        ("TIME(0)", "TIME(3)"), ("TIMESTAMP(0)", "TIMESTAMP(3)"), ("TIMESTAMP(3)", "TIMESTAMP(6)"),
        ("TIMESTAMP(7)", "TIMESTAMP(9)"), ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
        ("INT NOT NULL", "INT"), ("INT NOT NULL", "BIGINT"), ("DATE", "DATE")]
UNSAFE = [("BIGINT", "INT"), ("INT", "SMALLINT"), ("DOUBLE", "FLOAT"), ("INT", "FLOAT"), ("BIGINT", "DOUBLE"),
          ("STRING", "INT"), ("INT", "STRING"), ("INT", "BOOLEAN"), ("DECIMAL(10, 2)", "DECIMAL(12, 3)"),
          ("DECIMAL(12, 2)", "DECIMAL(10, 2)"), ("INT", "DECIMAL(10, 2)"), ("BIGINT", "DECIMAL(18, 0)"),
          ("FLOAT", "DECIMAL(38, 10)"), ("VARCHAR(5)", "VARCHAR(4)"), ("STRING", "CHAR(10)"), ("VARCHAR(3)", "CHAR(3)"),
          ("BYTES", "BINARY(4)"), ("STRING", "BYTES"), ("TIMESTAMP(6)", "TIMESTAMP(3)"),
          ("TIMESTAMP(6)", "TIMESTAMP(9)"), ("TIMESTAMP(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
          ("DATE", "TIMESTAMP(3)"), ("TIME(3)", "TIME(0)"), ("INT", "INT NOT NULL"), ("INT", "BIGINT NOT NULL")]


@pytest.mark.parametrize(("old", "new"), SAFE)
def test_safe_widenings(old: str, new: str) -> None:
    assert is_safe_widening(T(old), T(new))


@pytest.mark.parametrize(("old", "new"), UNSAFE)
def test_unsafe_changes(old: str, new: str) -> None:
    assert not is_safe_widening(T(old), T(new))


_EXTREMES: dict[TypeRoot, list[object]] = {
    TypeRoot.TINYINT: [-128, 0, 127], TypeRoot.SMALLINT: [-32768, 32767], TypeRoot.INT: [-(2**31), 2**31 - 1],
    TypeRoot.BIGINT: [-(2**63), 2**63 - 1], TypeRoot.FLOAT: [3.4028234663852886e38, -1.5, 1e-45],
    TypeRoot.DECIMAL: [Decimal("-99999999.99"), Decimal("0.01")], TypeRoot.CHAR: ["abc"], TypeRoot.VARCHAR: ["abcd"],
    TypeRoot.BINARY: [b"\x00\x01\x02\x03"], TypeRoot.VARBINARY: [b"\xff"], TypeRoot.DATE: [dt.date(1, 1, 1)],
    TypeRoot.TIME: [dt.time(23, 59, 59)],
    TypeRoot.TIMESTAMP: [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)],
    TypeRoot.TIMESTAMP_LTZ: [dt.datetime(1, 1, 1, tzinfo=dt.UTC), dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)],
}


@pytest.mark.parametrize(("old", "new"), [p for p in SAFE if T(p[0]).root in _EXTREMES and T(p[0]).nullable
                                           and "(7)" not in p[0]])
def test_safe_widenings_cast_every_value_exactly(old: str, new: str) -> None:
    """The rules are only worth something if a plain Arrow cast of old data is exact."""
    source = pa.array([*_EXTREMES[T(old).root], None], to_arrow(T(old)))
    widened = pc.cast(source, to_arrow(T(new)), safe=True)
    assert widened.to_pylist() == source.to_pylist()


def test_why_microseconds_do_not_widen_to_nanoseconds() -> None:
    old = pa.array(_EXTREMES[TypeRoot.TIMESTAMP], to_arrow(T("TIMESTAMP(6)")))
    with pytest.raises(pa.ArrowInvalid):
        pc.cast(old, to_arrow(T("TIMESTAMP(9)")), safe=True)


def test_nested_widening() -> None:
    def row(*types: str, names: str = "ab") -> DataType:
        return row_of([DataField(id=i + 10, name=n, type=T(t)) for i, (n, t) in enumerate(zip(names, types, strict=False))])

    assert is_safe_widening(array_of(T("INT")), array_of(T("BIGINT")))
    assert is_safe_widening(array_of(T("INT NOT NULL")), array_of(T("INT")))
    assert not is_safe_widening(array_of(T("INT")), array_of(T("INT NOT NULL")))
    assert is_safe_widening(map_of(T("STRING"), T("FLOAT")), map_of(T("STRING"), T("DOUBLE")))
    assert not is_safe_widening(map_of(T("INT"), T("FLOAT")), map_of(T("BIGINT"), T("FLOAT")))
    assert is_safe_widening(row("INT", "STRING"), row("BIGINT", "STRING"))
    assert is_safe_widening(row("INT", "STRING"), reassign_field_ids(row("BIGINT", "STRING"), [99]))  # ids ignored
    assert not is_safe_widening(row("INT", "STRING"), row("INT", "STRING", names="ac"))
    assert not is_safe_widening(row("INT", "STRING"), row("INT"))
    assert not is_safe_widening(array_of(T("INT")), multiset_of(T("INT")))
    assert MAX_LENGTH == 2**31 - 1
