"""Paimon types (JSON form, Arrow mapping, widening) and schema files."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimonflow.core.data.types import (
    MAX_LENGTH,
    DataType,
    from_arrow,
    is_safe_widening,
    parse_type,
    parse_type_text,
    to_arrow,
    type_to_json,
)
from paimonflow.core.errors import CorruptMetadataError, SchemaChangeError, SchemaError
from paimonflow.core.fs import LocalFileIO
from paimonflow.core.meta.schema import Schema, TableSchema
from paimonflow.core.meta.schema_changes import (
    AddColumn,
    DropColumn,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnType,
    UpdateComment,
    apply_changes,
)
from paimonflow.core.meta.schema_manager import SchemaManager
from paimonflow.core.read.evolution import evolve_table

ATOMIC = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)", "DECIMAL(38, 18)",
          "CHAR(3)", "VARCHAR(20)", "STRING", "BINARY(4)", "VARBINARY(10)", "BYTES", "DATE", "TIME(0)", "TIME(3)",
          "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)", "TIMESTAMP(3) WITH LOCAL TIME ZONE",
          "TIMESTAMP(6) WITH LOCAL TIME ZONE"]


@pytest.mark.parametrize("text", ATOMIC)
@pytest.mark.parametrize("not_null", [False, True])
def test_atomic_types_round_trip(text, not_null):
    full = text + (" NOT NULL" if not_null else "")
    t = parse_type(full)
    assert t.nullable is not not_null
    assert type_to_json(t) == full
    assert parse_type(type_to_json(t)) == t


def test_spellings_written_by_others_are_read():
    assert parse_type_text("TIMESTAMP_LTZ(6)") == parse_type_text("TIMESTAMP(6) WITH LOCAL TIME ZONE")
    assert parse_type_text("VARCHAR(2147483647)") == parse_type_text("STRING")
    assert parse_type_text("INTEGER") == parse_type_text("INT")
    assert parse_type_text("string not null").nullable is False
    for bad in ["FOO", "DECIMAL(50, 2)", "VARCHAR(0)", "TIMESTAMP(12)", ""]:
        with pytest.raises(SchemaError):
            parse_type_text(bad)


def test_composite_types_round_trip():
    doc = {"type": "ROW NOT NULL", "fields": [
        {"id": 5, "name": "a", "type": {"type": "ARRAY", "element": "INT NOT NULL"}},
        {"id": 6, "name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "DOUBLE"}},
        {"id": 7, "name": "s", "type": {"type": "MULTISET", "element": "STRING"}, "description": "bag"},
    ]}
    t = parse_type(doc)
    assert type_to_json(t) == doc
    arrow = to_arrow(t)
    assert pa.types.is_struct(arrow) and pa.types.is_list(arrow.field("a").type)
    assert pa.types.is_map(arrow.field("m").type)


ARROW_TYPES = [pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(),
               pa.decimal128(12, 3), pa.string(), pa.binary(), pa.date32(), pa.time32("ms"), pa.timestamp("ms"),
               pa.timestamp("us"), pa.timestamp("ns"), pa.timestamp("us", tz="UTC"),
               pa.list_(pa.int32()), pa.map_(pa.string(), pa.int64()), pa.struct([("x", pa.int32()), ("y", pa.string())])]


@pytest.mark.parametrize("arrow", ARROW_TYPES, ids=str)
def test_arrow_mapping_round_trips(arrow):
    paimon = from_arrow(arrow)
    back = to_arrow(paimon)
    if pa.types.is_list(arrow):
        assert back.value_type == arrow.value_type
    elif pa.types.is_map(arrow):
        assert back.key_type == arrow.key_type and back.item_type == arrow.item_type
    else:
        assert back == arrow
    assert from_arrow(pa.large_string()) == from_arrow(pa.string())
    with pytest.raises(SchemaError):
        from_arrow(pa.uint32())


_atomic_types = st.sampled_from(ATOMIC).map(parse_type_text)


def _with_nullability(t: DataType, nullable: bool) -> DataType:
    return t.copy(nullable=nullable)


types = st.recursive(
    st.builds(_with_nullability, _atomic_types, st.booleans()),
    lambda inner: st.one_of(
        st.builds(lambda e, n: DataType(root="ARRAY", nullable=n, element=e), inner, st.booleans()),
        st.builds(lambda k, v: DataType(root="MAP", key=k.copy(nullable=False), value=v), _atomic_types, inner),
    ),
    max_leaves=6,
)


@given(types)
def test_any_type_round_trips_through_json(t):
    assert parse_type(json.loads(json.dumps(type_to_json(t)))) == t


def test_widening_rules():
    t = parse_type_text
    assert is_safe_widening(t("INT"), t("BIGINT"))
    assert is_safe_widening(t("FLOAT"), t("DOUBLE"))
    assert is_safe_widening(t("DECIMAL(10, 2)"), t("DECIMAL(12, 2)"))
    assert is_safe_widening(t("VARCHAR(5)"), t("STRING"))
    assert is_safe_widening(t("INT NOT NULL"), t("INT"))
    assert not is_safe_widening(t("BIGINT"), t("INT"))
    assert not is_safe_widening(t("STRING"), t("INT"))
    assert not is_safe_widening(t("DECIMAL(10, 2)"), t("DECIMAL(12, 3)"))
    assert not is_safe_widening(t("INT"), t("INT NOT NULL"))


def test_schema_file_layout_and_corruption(tmp_path):
    io = LocalFileIO()
    manager = SchemaManager(io, str(tmp_path / "t"))
    arrow = pa.schema([pa.field("id", pa.int64()), ("v", pa.string())])
    schema = Schema.from_arrow(arrow, primary_keys=["id"], options={"bucket": "2"}).to_table_schema()
    assert manager.create(schema) and not manager.create(schema)
    doc = json.loads((tmp_path / "t/schema/schema-0").read_text())
    assert list(doc) == ["version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "options",
                         "timeMillis"]  # Java writes "comment" only when the table has one
    assert doc["fields"][0] == {"id": 0, "name": "id", "type": "BIGINT NOT NULL"}  # key columns are NOT NULL
    assert doc["highestFieldId"] == 1
    assert manager.latest() == schema
    for bad in (b"", b"{", b"[]", b'{"id": 0}', b'{"id": "x", "fields": []}'):
        with pytest.raises(CorruptMetadataError, match="schema-0"):
            TableSchema.from_json(bad, "t/schema/schema-0")
    extra = dict(doc, someFutureField=1)
    assert TableSchema.from_json(json.dumps(extra).encode()).fields == schema.fields


def test_evolution_rules_and_field_ids():
    arrow = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string()), ("a", pa.int32()), ("b", pa.string())])
    s0 = Schema.from_arrow(arrow, primary_keys=["id", "dt"], partition_keys=["dt"]).to_table_schema()
    s1 = apply_changes(s0, [AddColumn("c", pa.float64()), DropColumn("b"), RenameColumn("a", "a2"),
                            SetOption("snapshot.num-retained.min", "5"), UpdateComment("hello")])
    assert [(f.id, f.name) for f in s1.fields] == [(0, "id"), (1, "dt"), (2, "a2"), (4, "c")]
    assert s1.highest_field_id == 4 and s1.id == 1 and s1.comment == "hello"
    s2 = apply_changes(s1, [AddColumn("b", pa.string()), RemoveOption("snapshot.num-retained.min")])
    assert s2.field("b").id == 5  # ids are never reused
    assert "snapshot.num-retained.min" not in s2.options
    for change, match in [(DropColumn("id"), "id"), (RenameColumn("dt", "day"), "dt"), (DropColumn("zz"), "zz"),
                          (UpdateColumnType("a2", pa.int16()), "a2"), (AddColumn("c", pa.int32()), "c"),
                          (AddColumn("nn", DataType(root="INT", nullable=False)), "nn"),
                          (SetOption("bucket", "8"), "bucket")]:
        with pytest.raises(SchemaChangeError, match=match):
            apply_changes(s2, [change])


def test_evolve_table_reads_by_field_id():
    arrow = pa.schema([pa.field("id", pa.int64()), ("a", pa.int32()), ("b", pa.string())])
    old = Schema.from_arrow(arrow, primary_keys=["id"]).to_table_schema()
    new = apply_changes(old, [RenameColumn("a", "x"), DropColumn("b"), AddColumn("c", pa.string()),
                              UpdateColumnType("x", pa.int64())])
    written = pa.table({"id": [1, 2], "a": pa.array([10, 20], pa.int32()), "b": ["p", "q"]})
    got = evolve_table(written, old, new)
    assert got.column_names == ["id", "x", "c"]
    assert got.column("x").type == pa.int64() and got.column("x").to_pylist() == [10, 20]
    assert got.column("c").to_pylist() == [None, None]
    assert evolve_table(written, old, new, ["x"]).column_names == ["x"]


def test_invalid_create_specs():
    arrow = pa.schema([pa.field("id", pa.int64()), ("l", pa.list_(pa.int32()))])
    with pytest.raises(SchemaError, match="l"):
        Schema.from_arrow(arrow, primary_keys=["l"]).to_table_schema()
    with pytest.raises(SchemaError, match="duplicate"):
        Schema.from_arrow(arrow, primary_keys=["id", "id"]).to_table_schema()
    with pytest.raises(SchemaError, match="bucket-key"):
        Schema.from_arrow(arrow, primary_keys=["id"], options={"bucket-key": "l"}).to_table_schema()
    assert MAX_LENGTH == 2**31 - 1
