"""Table schemas: schema files, create specs and their validation, evolution, the schema
directory under concurrency, reading old data files by field id, and interop with pypaimon."""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
import threading
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core.data.types import DataType, array_of, map_of, parse_type, row_of, type_to_json
from paimonflow.core.errors import (
    CorruptMetadataError,
    InvalidOptionError,
    SchemaChangeError,
    SchemaError,
    UnsupportedError,
)
from paimonflow.core.fs import LocalFileIO, StorageOutcomeUnknownError
from paimonflow.core.meta.schema import DataField, Schema, TableSchema
from paimonflow.core.meta.schema_changes import (
    AddColumn,
    ColumnPosition,
    DropColumn,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
    UpdateComment,
    apply_changes,
)
from paimonflow.core.meta.schema_manager import SchemaManager
from paimonflow.core.read.evolution import current_names, evolve_table, file_columns, index_mapping

REPO = Path(__file__).resolve().parents[3]
PYPAIMON_PYTHON = os.environ.get("PAIMONFLOW_PYPAIMON_PYTHON", str(REPO / ".venv-pypaimon" / "bin" / "python"))
T = parse_type


def pk_schema(**options: str) -> TableSchema:
    arrow = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string()), ("a", pa.int32()), ("b", pa.string())])
    return Schema.from_arrow(arrow, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2", **options}).to_table_schema(time_millis=1)


# -- schema files ------------------------------------------------------------------------------


def test_schema_file_layout_is_javas(tmp_path: Path) -> None:
    manager = SchemaManager(LocalFileIO(), str(tmp_path / "t"))
    schema = pk_schema()
    assert manager.create(schema) and not manager.create(schema)
    text = (tmp_path / "t/schema/schema-0").read_text()
    doc = json.loads(text)
    # Java's key order; "comment" only when set (pypaimon writes null, which Java reads as "null").
    assert list(doc) == ["version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "options",
                         "timeMillis"]
    assert text == json.dumps(doc, indent=2)
    assert doc["fields"][:2] == [{"id": 0, "name": "id", "type": "BIGINT NOT NULL"},  # key columns are NOT NULL
                                 {"id": 1, "name": "dt", "type": "STRING NOT NULL"}]
    assert (doc["version"], doc["id"], doc["highestFieldId"]) == (3, 0, 3)
    assert (doc["partitionKeys"], doc["primaryKeys"], doc["options"]) == (["dt"], ["id", "dt"], {"bucket": "2"})
    assert manager.latest() == schema == TableSchema.from_json(text)
    commented = apply_changes(schema, [UpdateComment("ünïcode"), UpdateColumnComment("a", "the a")])
    doc = json.loads(commented.to_json())
    assert list(doc)[-2:] == ["comment", "timeMillis"] and doc["comment"] == "ünïcode"
    assert doc["fields"][2] == {"id": 2, "name": "a", "type": "INT", "description": "the a"}
    assert "ünïcode".encode() in commented.to_json()
    assert TableSchema.from_json(commented.to_json()) == commented


def test_schema_files_of_other_writers_are_read() -> None:
    doc = json.loads(pk_schema().to_json())
    # pypaimon writes "comment": null and "nullable" in composite types; unknown keys are ignored.
    doc.update(comment=None, someFutureField={"x": 1})
    doc["fields"].append({"id": 9, "name": "l", "type": {"type": "ARRAY", "element": "INT", "nullable": True},
                          "defaultValue": "[]", "future": 1})
    doc["highestFieldId"] = 9
    doc["options"]["snapshot.num-retained.min"] = 5  # Java reads any scalar as text
    doc["options"]["x.flag"] = True
    schema = TableSchema.from_json(json.dumps(doc).encode())
    assert schema.comment is None and schema.field("l") == DataField(
        id=9, name="l", type=array_of(T("INT")), default_value="[]")
    assert schema.options["snapshot.num-retained.min"] == "5" and schema.options["x.flag"] == "true"


@pytest.mark.parametrize(("version", "expected"), [
    (None, {"bucket": "1", "file.format": "orc"}), (1, {"bucket": "1", "file.format": "orc"}),
    (2, {"file.format": "orc"}), (3, {})])
def test_old_schema_versions_get_their_old_defaults(version: int | None, expected: dict[str, str]) -> None:
    doc = {"id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"}], "highestFieldId": 0, "partitionKeys": [],
           "primaryKeys": [], "options": {}}
    if version is not None:
        doc["version"] = version
    schema = TableSchema.from_json(json.dumps(doc))
    assert dict(schema.options) == expected and schema.time_millis == 0
    kept = json.dumps(dict(doc, options={"bucket": "3", "file.format": "parquet"}))
    assert dict(TableSchema.from_json(kept).options) == {"bucket": "3", "file.format": "parquet"}


def _valid_doc() -> dict[str, Any]:
    return json.loads(pk_schema().to_json())


def _without(key: str) -> bytes:
    doc = _valid_doc()
    del doc[key]
    return json.dumps(doc).encode()


def _with(**changes: Any) -> bytes:
    return json.dumps({**_valid_doc(), **changes}).encode()


@pytest.mark.parametrize(("data", "reason"), [
    (b"", "not valid JSON"), (b"{", "not valid JSON"), (b"\xff\xfe\x00", "not valid JSON"), (b"[]", "JSON object"),
    (b'{"id": 0}', "fields"), *[(_without(k), k) for k in ("id", "fields", "highestFieldId", "partitionKeys",
                                                            "primaryKeys", "options")],
    (_with(id="x"), "'id'"), (_with(id=True), "'id'"), (_with(version="3"), "version"),
    (_with(highestFieldId=1.5), "highestFieldId"), (_with(timeMillis="now"), "timeMillis"),
    (_with(fields={}), "fields"), (_with(primaryKeys="id"), "primaryKeys"), (_with(partitionKeys=[1]), "partitionKeys"),
    (_with(options=[]), "options"), (_with(options={"a": None}), "'a'"), (_with(comment=5), "comment"),
    (_with(fields=[{"id": 0, "name": "id", "type": "NOPE"}]), "NOPE"),
    (_with(fields=[{"id": 0, "name": "id", "type": "INT"}, {"id": 0, "name": "dt", "type": "INT"}]), "id 0"),
    (_with(primaryKeys=["nope"]), "nope"),
])
def test_corrupt_schema_files_name_path_and_reason(data: bytes, reason: str) -> None:
    with pytest.raises(CorruptMetadataError, match="t/schema/schema-0") as info:
        TableSchema.from_json(data, "t/schema/schema-0")
    assert reason in info.value.reason


def test_unsupported_types_are_not_called_corrupt() -> None:
    with pytest.raises(UnsupportedError, match="BLOB"):
        TableSchema.from_json(_with(fields=[{"id": 0, "name": "id", "type": "BLOB"},
                                            {"id": 1, "name": "dt", "type": "STRING"}]))


def test_table_schema_facts() -> None:
    schema = pk_schema()
    assert schema.field_names == ["id", "dt", "a", "b"]
    assert schema.field("a") == DataField(id=2, name="a", type=T("INT")) and schema.field("zz") is None
    assert schema.field_by_id(3).name == "b" and schema.field_by_id(7) is None  # type: ignore[union-attr]
    assert schema.trimmed_primary_keys == ("id",) and schema.bucket_keys == ("id",)
    assert not schema.cross_partition_update
    assert schema.logical_row_type == row_of(schema.fields)
    assert schema.arrow_schema() == pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False),
                                               ("a", pa.int32()), ("b", pa.string())])
    # A key column nullable in the file (another writer) is still NOT NULL in Arrow, unless allowed.
    loose = TableSchema(id=0, fields=(DataField(id=0, name="k", type=T("INT")),), highest_field_id=0, primary_keys=("k",))
    assert not loose.arrow_schema().field("k").nullable
    allowed = TableSchema(id=0, fields=loose.fields, highest_field_id=0, primary_keys=("k",),
                          options={"primary-key.nullable": "true"})
    assert allowed.arrow_schema().field("k").nullable
    append = Schema.from_arrow(pa.schema([("a", pa.int32()), ("b", pa.string())]),
                               options={"bucket": "2", "bucket-key": " b , a"}).to_table_schema()
    assert append.bucket_keys == ("b", "a") and append.trimmed_primary_keys == ()


# -- creating ----------------------------------------------------------------------------------


def test_create_from_arrow_numbers_fields_like_paimon() -> None:
    arrow = pa.schema([
        pa.field("id", pa.int64(), metadata={b"description": "the key"}),
        ("row", pa.struct([("a", pa.int32()), ("c", pa.struct([("z", pa.int8())]))])),
        ("lrow", pa.list_(pa.struct([("q", pa.int32())]))),
        ("m", pa.map_(pa.string(), pa.struct([("v", pa.float64())]))),
        ("last", pa.date32()),
    ])
    schema = Schema.from_arrow(arrow, primary_keys=["id"], comment="c").to_table_schema()
    doc = json.loads(schema.to_json())
    assert [(f["id"], f["name"]) for f in doc["fields"]] == [(0, "id"), (1, "row"), (5, "lrow"), (7, "m"), (9, "last")]
    assert doc["fields"][0] == {"id": 0, "name": "id", "type": "BIGINT NOT NULL", "description": "the key"}
    row = doc["fields"][1]["type"]
    assert [(f["id"], f["name"]) for f in row["fields"]] == [(2, "a"), (4, "c")]
    assert row["fields"][1]["type"]["fields"][0]["id"] == 3
    assert doc["fields"][2]["type"]["element"]["fields"][0]["id"] == 6
    assert doc["fields"][3]["type"]["value"]["fields"][0]["id"] == 8
    assert doc["highestFieldId"] == 9 and doc["comment"] == "c"


def test_create_from_fields() -> None:
    spec = Schema.from_fields(
        [("k", T("STRING")), ("v", pa.decimal128(10, 2), "money"),
         DataField(id=77, name="r", type=row_of([DataField(id=5, name="x", type=T("INT"))]), default_value="x")],
        primary_keys=["k"], options={"bucket": "1"})
    schema = spec.to_table_schema(3, time_millis=42)
    assert (schema.id, schema.time_millis, schema.highest_field_id) == (3, 42, 3)
    assert [(f.id, f.name, type_to_json(f.type), f.description) for f in schema.fields] == [
        (0, "k", "STRING NOT NULL", None), (1, "v", "DECIMAL(10, 2)", "money"),
        (2, "r", {"type": "ROW", "fields": [{"id": 3, "name": "x", "type": "INT"}]}, None)]
    assert schema.fields[2].default_value == "x"


def test_key_options_become_keys_and_key_nullability_follows_the_option() -> None:
    arrow = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
    schema = Schema.from_arrow(arrow, options={"primary-key": "id, dt", "partition": "dt",
                                               "bucket": "1"}).to_table_schema()
    assert (schema.primary_keys, schema.partition_keys) == (("id", "dt"), ("dt",))
    assert dict(schema.options) == {"bucket": "1"} and not schema.field("id").type.nullable  # type: ignore[union-attr]
    with pytest.raises(SchemaError, match="primary-key"):
        Schema.from_arrow(arrow, primary_keys=["id"], options={"primary-key": "id"}).to_table_schema()
    nullable = Schema.from_arrow(pa.schema([pa.field("id", pa.int64(), False)]), primary_keys=["id"],
                                 options={"primary-key.nullable": "true"}).to_table_schema()
    assert nullable.field("id").type.nullable  # type: ignore[union-attr]


@pytest.mark.parametrize(("columns", "keys", "options", "match"), [
    ([], {}, {}, "at least one column"),
    ([("", "INT")], {}, {}, "empty"),
    ([(" a", "INT")], {}, {}, "whitespace"),
    ([("a", "INT"), ("a", "STRING")], {}, {}, "duplicate column names \\['a'\\]"),
    ([("a", "INT")], {"primary_keys": ["a", "a"]}, {}, "duplicate primary key"),
    ([("a", "INT"), ("p", "INT")], {"partition_keys": ["p", "p"]}, {}, "duplicate partition key"),
    ([("a", "INT")], {"primary_keys": ["b"]}, {}, "primary key columns \\['b'\\]"),
    ([("a", "INT")], {"partition_keys": ["p"]}, {}, "partition key columns \\['p'\\]"),
    ([("a", {"type": "ARRAY", "element": "INT"})], {"primary_keys": ["a"]}, {}, "'a'.*ARRAY"),
    ([("a", {"type": "MAP", "key": "INT", "value": "INT"}), ("b", "INT")], {"primary_keys": ["a", "b"]}, {}, "MAP"),
    ([("a", {"type": "MULTISET", "element": "INT"})], {"primary_keys": ["a"]}, {}, "MULTISET"),
    ([("a", {"type": "ROW", "fields": []}), ("b", "INT")], {"partition_keys": ["a"]}, {}, "partition key column 'a'"),
    ([("a", "INT"), ("p", "INT")], {"primary_keys": ["p"], "partition_keys": ["p"]}, {}, "same as the partition"),
    ([("a", "INT"), ("p", "INT")], {"primary_keys": ["a"], "partition_keys": ["p"]}, {"bucket": "2"}, "bucket = -1"),
    ([("a", "INT")], {}, {"sequence.field": "s"}, "sequence.field column 's'"),
    ([("a", "INT")], {}, {"bucket-key": "z"}, "bucket-key column 'z'"),
    ([("a", "INT"), ("p", "INT")], {"partition_keys": ["p"]}, {"bucket-key": "p"}, "not be a partition key"),
    ([("a", "INT"), ("b", "INT")], {"primary_keys": ["a"]}, {"bucket-key": "b"}, "part of the primary key"),
    ([("a", {"type": "ARRAY", "element": "INT"})], {}, {"bucket-key": "a"}, "nested type"),
])
def test_invalid_create_specs_are_named(columns: list[tuple[str, Any]], keys: dict[str, list[str]],
                                        options: dict[str, str], match: str) -> None:
    spec = Schema.from_fields([(name, T(t)) for name, t in columns], options=options, **keys)
    with pytest.raises(SchemaError, match=match):
        spec.to_table_schema()


def test_valid_edge_specs() -> None:
    float_key = Schema.from_fields([("f", T("DOUBLE")), ("p", T("INT"))], primary_keys=["f", "p"],
                                   partition_keys=["p"]).to_table_schema()
    assert float_key.trimmed_primary_keys == ("f",)  # Java allows FLOAT/DOUBLE keys
    cross = Schema.from_fields([("a", T("INT")), ("p", T("INT"))], primary_keys=["a"], partition_keys=["p"],
                               options={"bucket": "-1"}).to_table_schema()
    assert cross.cross_partition_update
    spaced = Schema.from_fields([("order id", T("INT"))]).to_table_schema()
    assert spaced.field_names == ["order id"]
    with pytest.raises(SchemaError, match="'u'"):
        Schema.from_arrow(pa.schema([("u", pa.uint8())]))
    with pytest.raises(SchemaError, match="sequence"):
        Schema(fields=(), primary_keys="id")  # type: ignore[arg-type]


# -- evolution ---------------------------------------------------------------------------------


def test_changes_build_with_factories_and_are_frozen() -> None:
    pos = ColumnPosition.after("a")
    assert SchemaChange.add_column("c", T("INT"), "doc", pos) == AddColumn("c", T("INT"), "doc", pos)
    assert SchemaChange.set_option("k", "v") == SetOption("k", "v")
    assert SchemaChange.remove_option("k") == RemoveOption("k")
    assert SchemaChange.drop_column("a") == DropColumn("a")
    assert SchemaChange.rename_column("a", "b") == RenameColumn("a", "b")
    assert SchemaChange.update_column_type("a", T("BIGINT")) == UpdateColumnType("a", T("BIGINT"), False)
    assert SchemaChange.update_column_nullability("a", True) == UpdateColumnNullability("a", True)
    assert SchemaChange.update_column_comment("a", "x") == UpdateColumnComment("a", "x")
    assert SchemaChange.update_column_position("a", ColumnPosition.first()) == UpdateColumnPosition(
        "a", ColumnPosition("FIRST"))
    assert SchemaChange.update_comment(None) == UpdateComment(None)
    with pytest.raises(AttributeError):
        DropColumn("a").name = "b"  # type: ignore[misc]


def test_evolution_assigns_ids_and_never_reuses_them() -> None:
    s0 = pk_schema()
    s1 = apply_changes(s0, [AddColumn("c", pa.float64()), DropColumn("b"), RenameColumn("a", "a2"),
                            SetOption("snapshot.num-retained.min", "5"), UpdateComment("hello")], time_millis=7)
    assert [(f.id, f.name) for f in s1.fields] == [(0, "id"), (1, "dt"), (2, "a2"), (4, "c")]
    assert (s1.highest_field_id, s1.id, s1.comment, s1.time_millis) == (4, 1, "hello", 7)
    s2 = apply_changes(s1, [AddColumn("b", pa.string()), RemoveOption("snapshot.num-retained.min"),
                            RemoveOption("not-there")])
    assert s2.field("b").id == 5 and "snapshot.num-retained.min" not in s2.options  # type: ignore[union-attr]
    nested = row_of([DataField(id=0, name="x", type=T("INT")),
                     DataField(id=1, name="y", type=array_of(row_of([DataField(id=0, name="z", type=T("INT"))])))])
    s3 = apply_changes(s2, [AddColumn("n", nested), DropColumn("n"), AddColumn("n", T("INT"))])
    # "n" (6) took 7..9 for its nested fields (children first); the re-added "n" gets 10.
    assert s3.field("n").id == 10 and s3.highest_field_id == 10  # type: ignore[union-attr]
    s4 = apply_changes(s2, [AddColumn("n", nested)])
    doc = type_to_json(s4.field("n").type)  # type: ignore[union-attr]
    assert [f["id"] for f in doc["fields"]] == [7, 9] and doc["fields"][1]["type"]["element"]["fields"][0]["id"] == 8
    assert s4.highest_field_id == 9


def test_highest_field_id_is_never_below_a_field_id() -> None:
    # A file whose highestFieldId lags its fields (another writer's bug) must not make ids collide.
    doc = json.loads(pk_schema().to_json())
    doc["highestFieldId"] = 1
    schema = TableSchema.from_json(json.dumps(doc))
    assert apply_changes(schema, [AddColumn("c", T("INT"))]).field("c").id == 4  # type: ignore[union-attr]


def test_column_positions() -> None:
    s0 = pk_schema()

    def names(*changes: SchemaChange, schema: TableSchema = s0) -> list[str]:
        return apply_changes(schema, list(changes)).field_names

    assert names(AddColumn("c", T("INT"), position=ColumnPosition.first())) == ["c", "id", "dt", "a", "b"]
    assert names(AddColumn("c", T("INT"), position=ColumnPosition.after("id"))) == ["id", "c", "dt", "a", "b"]
    assert names(AddColumn("c", T("INT"), position=ColumnPosition.before("b"))) == ["id", "dt", "a", "c", "b"]
    assert names(AddColumn("c", T("INT"), position=ColumnPosition.last())) == ["id", "dt", "a", "b", "c"]
    assert names(UpdateColumnPosition("b", ColumnPosition.first())) == ["b", "id", "dt", "a"]
    assert names(UpdateColumnPosition("id", ColumnPosition.after("b"))) == ["dt", "a", "b", "id"]
    before = pk_schema(**{"add-column-before-partition": "true"})
    assert names(AddColumn("c", T("INT")), schema=before) == ["id", "c", "dt", "a", "b"]
    for bad in (AddColumn("c", T("INT"), position=ColumnPosition.after("zz")),
                UpdateColumnPosition("a", ColumnPosition.after("a")),
                AddColumn("c", T("INT"), position=ColumnPosition("AFTER"))):
        with pytest.raises(SchemaChangeError):
            apply_changes(s0, [bad])


def test_type_nullability_and_comment_updates() -> None:
    s0 = apply_changes(pk_schema(), [AddColumn("n", T("INT")), UpdateColumnType("n", T("BIGINT"))])
    assert s0.field("n").type == T("BIGINT")  # type: ignore[union-attr]
    not_null = TableSchema(id=0, fields=(DataField(id=0, name="k", type=T("INT NOT NULL")),
                                         DataField(id=1, name="v", type=T("INT NOT NULL"))),
                           highest_field_id=1, primary_keys=("k",))

    def v(*changes: SchemaChange) -> DataType:
        return apply_changes(not_null, list(changes)).field("v").type  # type: ignore[union-attr]

    assert v(UpdateColumnType("v", T("BIGINT"))) == T("BIGINT")  # Paimon: the new type's nullability
    assert v(UpdateColumnType("v", T("BIGINT"), keep_nullability=True)) == T("BIGINT NOT NULL")
    assert v(UpdateColumnType("v", pa.int64())) == T("BIGINT NOT NULL")  # Arrow types have no nullability
    assert v(UpdateColumnNullability("v", True)) == T("INT")
    assert v(UpdateColumnNullability("v", False)) == T("INT NOT NULL")
    assert apply_changes(not_null, [UpdateColumnComment("v", "d")]).field("v").description == "d"  # type: ignore[union-attr]
    row = row_of([DataField(id=0, name="x", type=T("INT"))])
    s1 = apply_changes(pk_schema(), [AddColumn("r", row)])
    s2 = apply_changes(s1, [UpdateColumnType("r", row_of([DataField(id=50, name="x", type=T("BIGINT"))]))])
    assert s2.field("r").type.fields[0].id == s1.field("r").type.fields[0].id  # type: ignore[union-attr,index]
    assert s2.field("r").type.fields[0].type == T("BIGINT")  # type: ignore[union-attr,index]


def test_renames_follow_into_options() -> None:
    schema = Schema.from_fields([("k", T("INT")), ("s", T("INT")), ("v", T("INT"))], primary_keys=["k"],
                                options={"bucket": "1", "merge-engine": "partial-update",
                                         "fields.v.aggregate-function": "sum",
                                         "fields.s,v.sequence-group": "v"}).to_table_schema()
    renamed = apply_changes(schema, [RenameColumn("v", "w")])
    assert renamed.options["fields.w.aggregate-function"] == "sum"
    assert renamed.options["fields.s,w.sequence-group"] == "w"
    seq = Schema.from_fields([("k", T("INT")), ("s", T("INT"))], primary_keys=["k"],
                             options={"bucket": "1", "sequence.field": "s"}).to_table_schema()
    assert apply_changes(seq, [RenameColumn("s", "t")]).options["sequence.field"] == "t"
    with pytest.raises(SchemaError, match=r"sequence\.field column 's'"):
        apply_changes(seq, [DropColumn("s")])


@pytest.mark.parametrize(("change", "match"), [
    (DropColumn("id"), "primary key column 'id'"), (DropColumn("dt"), "partition column 'dt'"),
    (RenameColumn("id", "key"), "primary key column 'id'"), (RenameColumn("dt", "day"), "partition column 'dt'"),
    (UpdateColumnType("id", T("DECIMAL(20, 0)")), "'id'"), (UpdateColumnType("dt", T("STRING")), "'dt'"),
    (UpdateColumnNullability("id", True), "primary key column 'id'"),
    (UpdateColumnNullability("a", False), "NOT NULL"),
    (DropColumn("zz"), "'zz' does not exist"), (RenameColumn("zz", "y"), "'zz'"),
    (RenameColumn("a", "b"), "'b' already exists"), (RenameColumn("a", ""), "empty"),
    (UpdateColumnType("zz", T("INT")), "'zz'"), (UpdateColumnComment("zz", "x"), "'zz'"),
    (AddColumn("a", T("BIGINT")), "'a' already exists"), (AddColumn("nn", T("INT NOT NULL")), "'nn' as NOT NULL"),
    (AddColumn("bad\x00", T("INT")), "control"), (AddColumn("x", "INT"), "type"),  # type: ignore[arg-type]
    (UpdateColumnType("a", T("SMALLINT")), "'a' from INT to SMALLINT"),
    (UpdateColumnType("b", T("INT")), "'b' from STRING to INT"),
    (UpdateColumnType("a", T("INT NOT NULL")), "'a'"),
    (SetOption("bucket", "8"), "'bucket'"), (SetOption("merge-engine", "first-row"), "'merge-engine'"),
    (RemoveOption("bucket"), "'bucket'"), (SetOption("bucket-key", "id"), "'bucket-key'"),
    ("drop a", "not a schema change"),
])
def test_disallowed_changes_are_named(change: Any, match: str) -> None:
    with pytest.raises(SchemaChangeError, match=match):
        apply_changes(pk_schema(), [change])


def test_other_refusals() -> None:
    one = Schema.from_fields([("only", T("INT"))]).to_table_schema()
    with pytest.raises(SchemaChangeError, match="at least one column"):
        apply_changes(one, [DropColumn("only")])
    assert apply_changes(pk_schema(), [SetOption("bucket", "2")]).options["bucket"] == "2"  # unchanged: fine
    assert apply_changes(pk_schema(), [RenameColumn("a", "a")]).field_names == ["id", "dt", "a", "b"]


# -- the schema directory ----------------------------------------------------------------------


def test_manager_reads_and_lists(tmp_path: Path) -> None:
    io = LocalFileIO()
    manager = SchemaManager(io, str(tmp_path / "t"))
    assert manager.list_ids() == [] and manager.latest() is None
    with pytest.raises(SchemaError, match="no schema"):
        manager.commit_changes([AddColumn("c", T("INT"))])
    s0 = pk_schema()
    manager.create(s0)
    s1 = manager.commit_changes([AddColumn("c", T("INT"))])
    assert s1.id == 1 and manager.latest() == s1 and manager.schema(0) == s0
    (tmp_path / "t/schema/.schema-2.abc.tmp").write_text("partial")
    (tmp_path / "t/schema/schema-x").write_text("junk")
    (tmp_path / "t/schema/schema-7").mkdir()
    assert manager.list_ids() == [0, 1]
    with pytest.raises(SchemaError, match="schema 5 does not exist"):
        manager.schema(5)
    (tmp_path / "t/schema/schema-3").write_bytes(s1.to_json())
    with pytest.raises(CorruptMetadataError, match="holds schema id 1"):
        manager.schema(3)
    (tmp_path / "t/schema/schema-3").write_text("{")
    with pytest.raises(CorruptMetadataError, match="schema-3"):
        manager.latest()


def test_commit_changes_checks_options(tmp_path: Path) -> None:
    manager = SchemaManager(LocalFileIO(), str(tmp_path / "t"))
    manager.create(pk_schema())
    with pytest.raises(InvalidOptionError, match=r"metadata\.stats-mode"):
        manager.commit_changes([SetOption("metadata.stats-mode", "sometimes")])
    seen: list[TableSchema] = []
    manager.commit_changes([SetOption("x", "1")], validate=seen.append)
    assert [s.id for s in seen] == [1] and manager.list_ids() == [0, 1]


class ScriptedFileIO(LocalFileIO):
    """LocalFileIO whose create_if_absent runs a hook first (a rival writer, a lost response...)."""

    def __init__(self, before_create: Any = None, after_create: Any = None) -> None:
        super().__init__()
        self.before_create, self.after_create = before_create, after_create
        self.calls = 0

    def create_if_absent(self, path: str, data: bytes) -> bool:
        self.calls += 1
        if self.before_create is not None:
            self.before_create(self.calls, path)
        created = super().create_if_absent(path, data)
        if self.after_create is not None:
            self.after_create(self.calls, path)
        return created


def test_a_lost_race_reapplies_the_changes_on_the_new_latest(tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    rival = SchemaManager(LocalFileIO(), table)
    rival.create(pk_schema())

    def rival_commits_first(call: int, path: str) -> None:
        if call == 1:
            rival.commit_changes([AddColumn("theirs", T("INT"))])

    io = ScriptedFileIO(before_create=rival_commits_first)
    ours = SchemaManager(io, table).commit_changes([AddColumn("ours", T("STRING")), SetOption("k", "v")])
    assert ours.id == 2 and io.calls == 2
    assert [(f.id, f.name) for f in ours.fields][-2:] == [(4, "theirs"), (5, "ours")]
    assert rival.latest() == ours and rival.schema(1).field("ours") is None


def test_a_lost_race_can_make_the_change_invalid(tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    rival = SchemaManager(LocalFileIO(), table)
    rival.create(pk_schema())

    def rival_drops_our_column(call: int, path: str) -> None:
        if call == 1:
            rival.commit_changes([DropColumn("a")])

    with pytest.raises(SchemaChangeError, match="'a' does not exist"):
        SchemaManager(ScriptedFileIO(before_create=rival_drops_our_column), table).commit_changes(
            [RenameColumn("a", "x")])
    assert rival.list_ids() == [0, 1]


def test_retries_are_bounded(tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    rival = SchemaManager(LocalFileIO(), table)
    rival.create(pk_schema())
    io = ScriptedFileIO(before_create=lambda call, path: rival.commit_changes([SetOption("n", str(call))]))
    with pytest.raises(SchemaChangeError, match="concurrently 3 times"):
        SchemaManager(io, table).commit_changes([SetOption("mine", "1")], max_attempts=3)
    assert "mine" not in rival.latest().options  # type: ignore[union-attr]


def test_unknown_outcome_is_resolved_by_reading_back(tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    SchemaManager(LocalFileIO(), table).create(pk_schema())

    def response_lost(call: int, path: str) -> None:
        if call == 1:
            raise StorageOutcomeUnknownError("timeout after the write")

    landed = SchemaManager(ScriptedFileIO(after_create=response_lost), table).commit_changes([SetOption("a", "1")])
    assert landed.id == 1 and SchemaManager(LocalFileIO(), table).list_ids() == [0, 1]

    def request_lost(call: int, path: str) -> None:
        if call == 1:
            raise StorageOutcomeUnknownError("timeout before the write")

    io = ScriptedFileIO(before_create=request_lost)
    written = SchemaManager(io, table).commit_changes([SetOption("b", "1")])
    assert written.id == 2 and io.calls == 2 and SchemaManager(LocalFileIO(), table).latest() == written


def test_concurrent_commits_from_threads_all_land(tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    SchemaManager(LocalFileIO(), table).create(pk_schema())
    writers = 6
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def commit(i: int) -> None:
        try:
            barrier.wait()
            SchemaManager(LocalFileIO(), table).commit_changes([AddColumn(f"c{i}", T("INT"))], max_attempts=50)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    manager = SchemaManager(LocalFileIO(), table)
    latest = manager.latest()
    assert manager.list_ids() == list(range(writers + 1)) and latest is not None
    added = [f for f in latest.fields if f.name.startswith("c")]
    assert sorted(f.name for f in added) == [f"c{i}" for i in range(writers)]
    assert sorted(f.id for f in added) == list(range(4, 4 + writers)) and latest.highest_field_id == 3 + writers


# -- reading old data files by field id --------------------------------------------------------


def test_evolve_table_reads_real_parquet_files_by_field_id(tmp_path: Path) -> None:
    arrow = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.int32()), ("b", pa.string()),
                       ("f", pa.float32()), ("d", pa.decimal128(10, 2)), ("s", pa.string()),
                       pa.field("nn", pa.int16(), False), ("gone", pa.binary())])
    old = Schema.from_fields([("id", T("BIGINT")), ("a", T("INT")), ("b", T("STRING")), ("f", T("FLOAT")),
                              ("d", T("DECIMAL(10, 2)")), ("s", T("VARCHAR(5)")), ("nn", T("SMALLINT NOT NULL")),
                              ("gone", T("BYTES"))], primary_keys=["id"]).to_table_schema()
    assert old.arrow_schema() == arrow
    path = tmp_path / "data-0.parquet"
    rows = {"id": [1, 2, 3], "a": [10, None, -(2**31)], "b": ["p", "q", None], "f": [1.5, None, -2.25],
            "d": [Decimal("12345678.90"), None, Decimal("-0.01")], "s": ["x", "yy", None],
            "nn": [1, 2, 3], "gone": [b"1", b"2", b"3"]}
    pq.write_table(pa.table(rows, schema=arrow), path, row_group_size=2)
    new = apply_changes(old, [
        RenameColumn("a", "x"), UpdateColumnType("x", T("BIGINT")), DropColumn("b"), AddColumn("c", T("STRING")),
        UpdateColumnType("f", T("DOUBLE")), UpdateColumnType("d", T("DECIMAL(20, 2)")),
        UpdateColumnType("s", T("STRING")), UpdateColumnNullability("nn", True), DropColumn("gone"),
        AddColumn("first", T("DATE"), position=ColumnPosition.first())])
    assert file_columns(old, new) == ["id", "a", "f", "d", "s", "nn"]
    assert file_columns(old, new, ["c", "x"]) == ["a"]
    raw = pq.read_table(path, columns=file_columns(old, new))
    got = evolve_table(raw, old, new)
    assert got.schema == new.arrow_schema()
    assert got.column_names == ["first", "id", "x", "f", "d", "s", "nn", "c"]
    assert got.to_pydict() == {
        "first": [None] * 3, "id": [1, 2, 3], "x": [10, None, -(2**31)], "f": [1.5, None, -2.25],
        "d": rows["d"], "s": ["x", "yy", None], "nn": [1, 2, 3], "c": [None] * 3}
    projected = evolve_table(pq.read_table(path, columns=file_columns(old, new, ["c", "x"])), old, new, ["c", "x"])
    assert projected.column_names == ["c", "x"] and projected.num_rows == 3
    assert evolve_table(raw, old, new, []).num_rows == 3  # count-only reads keep the row count
    assert current_names(old, new) == {"id": "id", "a": "x", "b": None, "f": "f", "d": "d", "s": "s", "nn": "nn",
                                       "gone": None}
    assert index_mapping(new.fields, old.fields) == (-1, 0, 1, 3, 4, 5, 6, -1)
    assert index_mapping(old.fields, old.fields) is None
    with pytest.raises(SchemaError, match="'zz'"):
        evolve_table(raw, old, new, ["zz"])
    with pytest.raises(SchemaError, match="'zz'"):
        file_columns(old, new, ["zz"])


def test_evolve_table_reports_data_that_does_not_cast() -> None:
    old = Schema.from_fields([("v", T("STRING"))]).to_table_schema()
    # A schema another writer evolved unsafely (pypaimon accepts STRING -> INT, §7.4 of the reference).
    bad = TableSchema(id=1, fields=(DataField(id=0, name="v", type=T("INT")),), highest_field_id=0)
    with pytest.raises(SchemaError, match=r"'v'.*STRING.*INT"):
        evolve_table(pa.table({"v": ["x"]}), old, bad)


def _nested_schema(schema_id: int, row_fields: list[dict[str, Any]]) -> TableSchema:
    def row(offset: int) -> dict[str, Any]:  # the same ROW in three columns, with distinct ids
        return {"type": "ROW", "fields": [dict(f, id=f["id"] + offset) for f in row_fields]}

    doc = {"version": 3, "id": schema_id, "highestFieldId": 60, "partitionKeys": [], "primaryKeys": [], "options": {},
           "fields": [{"id": 0, "name": "r", "type": row(0)},
                      {"id": 1, "name": "l", "type": {"type": "ARRAY", "element": row(20)}},
                      {"id": 2, "name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": row(40)}}]}
    return TableSchema.from_json(json.dumps(doc))


def test_evolve_table_matches_nested_row_fields_by_id() -> None:
    """Java Paimon evolves nested fields (add, rename, drop, widen); old files are read by id."""
    old = _nested_schema(0, [{"id": 10, "name": "x", "type": "INT"}, {"id": 11, "name": "y", "type": "STRING"},
                             {"id": 12, "name": "z", "type": "DOUBLE"}])
    new = _nested_schema(1, [{"id": 13, "name": "w", "type": "DATE"}, {"id": 10, "name": "x", "type": "BIGINT"},
                             {"id": 11, "name": "y2", "type": "STRING"}])
    row_type = old.arrow_schema().field("r").type
    rows = [{"x": 1, "y": "a", "z": 0.5}, None, {"x": None, "y": "c", "z": 1.5}, {"x": 4, "y": "d", "z": 2.5}]
    data = pa.table({
        "r": pa.array(rows, row_type),
        "l": pa.array([[rows[0], None], None, [], [rows[2], rows[3]]], old.arrow_schema().field("l").type),
        "m": pa.array([[("k", rows[0])], [("n", None)], None, []], old.arrow_schema().field("m").type),
    })
    data = pa.concat_tables([data.slice(0, 1), data.slice(1)])  # several chunks, sliced arrays
    got = evolve_table(data, old, new)
    assert got.schema == new.arrow_schema()

    def evolved(r: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if r is None else {"w": None, "x": r["x"], "y2": r["y"]}

    assert got.column("r").to_pylist() == [evolved(r) for r in rows]
    assert got.column("l").to_pylist() == [[evolved(rows[0]), None], None, [], [evolved(rows[2]), evolved(rows[3])]]
    assert got.column("m").to_pylist() == [[("k", evolved(rows[0]))], [("n", None)], None, []]


# -- interop with pypaimon 2.1.0 ---------------------------------------------------------------

ALL_TYPES_ARROW = textwrap.dedent("""
    import pyarrow as pa
    ALL_TYPES = pa.schema([
        pa.field('id', pa.int64(), nullable=False),
        ('b', pa.bool_()), ('i8', pa.int8()), ('i16', pa.int16()), ('i32', pa.int32()), ('f', pa.float32()),
        ('d', pa.float64()), ('dec', pa.decimal128(10, 2)), ('dec38', pa.decimal128(38, 18)),
        ('s', pa.string()), ('ls', pa.large_string()), ('bin', pa.binary()), ('fb', pa.binary(4)),
        ('date', pa.date32()), ('t0', pa.time32('s')),
        ('ts0', pa.timestamp('s')), ('ts3', pa.timestamp('ms')), ('ts6', pa.timestamp('us')),
        ('ts9', pa.timestamp('ns')), ('ltz', pa.timestamp('us', tz='UTC')), ('ltz3', pa.timestamp('ms', tz='Asia/Tokyo')),
        ('arr', pa.list_(pa.int32())), ('arrnn', pa.list_(pa.field('x', pa.int32(), nullable=False))),
        ('m', pa.map_(pa.string(), pa.int64())),
        ('row', pa.struct([('a', pa.int32()), pa.field('b', pa.string(), nullable=False),
                           ('c', pa.struct([('z', pa.int8())]))])),
        pa.field('rownn', pa.struct([('a', pa.int32())]), nullable=False),
        ('lrow', pa.list_(pa.struct([('q', pa.int32())]))),
        pa.field('dt', pa.string(), nullable=False),
    ])
""")

PYPAIMON_SCRIPT = ALL_TYPES_ARROW + textwrap.dedent("""
    import json, sys
    from pypaimon import CatalogFactory, Schema
    from pypaimon.schema.data_types import AtomicType, DataField, PyarrowFieldParser, RowType
    from pypaimon.schema.schema_change import SchemaChange
    warehouse = sys.argv[1]
    catalog = CatalogFactory.create({'warehouse': warehouse})
    catalog.create_database('db', True)
    catalog.create_table('db.theirs', Schema.from_pyarrow_schema(
        ALL_TYPES, primary_keys=['id', 'dt'], partition_keys=['dt'], options={'bucket': '2'}, comment='all types'),
        False)
    extra = RowType(True, [DataField(0, 'p', AtomicType('INT')),
                           DataField(1, 'q', RowType(True, [DataField(0, 'r', AtomicType('STRING'))]))])
    catalog.alter_table('db.theirs', [SchemaChange.add_column('extra', extra)])
    ours = catalog.get_table('db.ours')
    arrow = {}
    for f in ours.fields:
        try:
            arrow[f.name] = str(PyarrowFieldParser.from_paimon_field(f))
        except Exception as exc:  # pypaimon has no Arrow mapping for MULTISET
            arrow[f.name] = 'unsupported: ' + type(exc).__name__
    print(json.dumps({'fields': [[f.id, f.name, str(f.type), f.type.nullable] for f in ours.fields],
                      'primary_keys': ours.primary_keys, 'partition_keys': ours.partition_keys,
                      'options': ours.table_schema.options, 'comment': ours.table_schema.comment, 'arrow': arrow}))
""")


def _pypaimon_python() -> str:
    if "PAIMONFLOW_PYPAIMON_PYTHON" not in os.environ and not Path(PYPAIMON_PYTHON).exists():
        pytest.skip(f"pypaimon interpreter {PYPAIMON_PYTHON} not found (make pypaimon-venv)")
    return PYPAIMON_PYTHON


def _as_java_writes(doc: Any) -> Any:
    """pypaimon's schema JSON with its documented differences from Java's removed."""
    if isinstance(doc, dict):
        out = {k: _as_java_writes(v) for k, v in doc.items()
               if not (k == "nullable" and str(doc.get("type", "")).split(" ")[0] in ("ARRAY", "MAP", "MULTISET", "ROW"))}
        if "comment" in out and out["comment"] is None and "timeMillis" in out:
            del out["comment"]
        return out
    if isinstance(doc, list):
        return [_as_java_writes(v) for v in doc]
    if isinstance(doc, str):
        return re.sub(r"^TIMESTAMP_LTZ\((\d)\)", r"TIMESTAMP(\1) WITH LOCAL TIME ZONE", doc)
    return doc


@pytest.mark.interop
def test_schema_files_match_pypaimon_both_ways(tmp_path: Path) -> None:
    python = _pypaimon_python()
    namespace: dict[str, Any] = {}
    exec(ALL_TYPES_ARROW, namespace)  # the same Arrow schema on both sides
    ours = Schema.from_arrow(namespace["ALL_TYPES"], primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2"}, comment="all types").to_table_schema()
    multiset = {"id": ours.highest_field_id + 1, "name": "bag", "type": {"type": "MULTISET", "element": "STRING"}}
    with_multiset = apply_changes(ours, [AddColumn("bag", parse_type(multiset["type"]))])
    ours_dir = tmp_path / "db.db" / "ours"
    assert SchemaManager(LocalFileIO(), str(ours_dir)).create(replace(with_multiset, id=0))

    result = subprocess.run([python, "-c", PYPAIMON_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    seen_by_pypaimon = json.loads(result.stdout.strip().splitlines()[-1])

    # 1. pypaimon's schema-0 for every type, parsed by us, and written back exactly as Java would.
    their_text = (tmp_path / "db.db/theirs/schema/schema-0").read_text()
    theirs = TableSchema.from_json(their_text, "theirs/schema-0")
    assert theirs.fields == ours.fields and theirs.highest_field_id == ours.highest_field_id == 33
    assert (theirs.primary_keys, theirs.partition_keys, theirs.comment) == (("id", "dt"), ("dt",), "all types")
    expected = _as_java_writes(json.loads(their_text))
    assert json.loads(ours.to_json()) == dict(expected, timeMillis=ours.time_millis)
    assert list(json.loads(ours.to_json())) == list(expected)
    assert theirs.field("ltz").type == parse_type("TIMESTAMP(6) WITH LOCAL TIME ZONE")  # type: ignore[union-attr]

    # 2. Adding a nested column: pypaimon and we hand out the same ids.
    their_next = TableSchema.from_json((tmp_path / "db.db/theirs/schema/schema-1").read_bytes())
    extra = row_of([DataField(id=0, name="p", type=T("INT")),
                    DataField(id=1, name="q", type=row_of([DataField(id=0, name="r", type=T("STRING"))]))])
    our_next = apply_changes(theirs, [AddColumn("extra", extra)])
    assert our_next.fields == their_next.fields and our_next.highest_field_id == their_next.highest_field_id == 37

    # 3. pypaimon reads the schema file we wrote (Java spellings, no "nullable", no comment key).
    fields = seen_by_pypaimon["fields"]
    assert [(i, n, nullable) for i, n, _, nullable in fields] == [
        (f.id, f.name, f.type.nullable) for f in with_multiset.fields]
    by_name = {n: t for _, n, t, _ in fields}
    assert by_name["ltz"] == "TIMESTAMP(6) WITH LOCAL TIME ZONE" and by_name["dec"] == "DECIMAL(10, 2)"
    assert by_name["arrnn"] == "ARRAY<INT NOT NULL>" and by_name["bag"] == "MULTISET<STRING>"
    assert seen_by_pypaimon["primary_keys"] == ["id", "dt"] and seen_by_pypaimon["comment"] == "all types"
    arrow = with_multiset.arrow_schema()
    for name, text in seen_by_pypaimon["arrow"].items():
        if name == "bag":
            assert text.startswith("unsupported")
        else:
            assert text == str(arrow.field(name)), name


def test_map_helpers_for_readers() -> None:
    data = Schema.from_fields([("a", T("INT")), ("b", T("INT"))]).to_table_schema()
    read = apply_changes(data, [AddColumn("c", map_of(T("STRING"), T("INT")), position=ColumnPosition.first())])
    assert index_mapping(read.fields, data.fields) == (-1, 0, 1)
    assert index_mapping(data.fields, read.fields) == (1, 2)
