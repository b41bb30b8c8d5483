"""The VARIANT type: parsed and written in Paimon's JSON form, carried as Paimon's Parquet group of
two binaries, never a key, only in Parquet tables, never shredded."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.data.types import (
    VARIANT_ARROW,
    DataField,
    TypeRoot,
    array_of,
    atomic,
    from_arrow,
    parse_type,
    parse_type_text,
    row_of,
    to_arrow,
    type_to_json,
)
from paimonflow.core.data.variant import require_unshredded
from paimonflow.core.errors import SchemaError, UnsupportedError
from paimonflow.core.meta.schema import Schema
from paimonflow.core.meta.schema_changes import SchemaChange

VALUE = {"value": b"\x0c\x05", "metadata": b"\x01\x00\x00"}  # the integer 5, an empty dictionary


def test_the_type_is_parsed_and_written_as_java_does():
    t = parse_type_text("variant")
    assert t.root is TypeRoot.VARIANT and t.nullable and t.is_atomic
    assert type_to_json(t) == "VARIANT" and str(parse_type("VARIANT NOT NULL")) == "VARIANT NOT NULL"
    assert parse_type({"type": "ARRAY", "element": "VARIANT"}) == array_of(atomic("VARIANT"))
    with pytest.raises(SchemaError):
        parse_type_text("VARIANT(3)")


def test_arrow_form_is_the_unshredded_parquet_group():
    assert to_arrow(atomic("VARIANT")) == VARIANT_ARROW
    assert [(f.name, f.type, f.nullable) for f in VARIANT_ARROW] == [
        ("value", pa.binary(), False), ("metadata", pa.binary(), False)]
    assert from_arrow(VARIANT_ARROW).root is TypeRoot.ROW  # an Arrow struct stays a ROW


def _fields(doc_type=None):
    return (DataField(id=0, name="id", type=atomic("BIGINT", nullable=False)),
            DataField(id=1, name="doc", type=doc_type or atomic("VARIANT")))


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def test_a_table_writes_reads_and_compacts_variant_values(catalog):
    nested = row_of([DataField(id=10, name="v", type=atomic("VARIANT")),
                     DataField(id=11, name="all", type=array_of(atomic("VARIANT")))])
    fields = (*_fields(), DataField(id=2, name="deep", type=nested))
    t = catalog.create_table("db.t", Schema(fields=fields, primary_keys=("id",), options={"bucket": "1"}))
    schema = t.arrow_schema
    assert schema.field("doc").type == VARIANT_ARROW
    data = pa.table({"id": [1, 2], "doc": [VALUE, None],
                     "deep": [{"v": VALUE, "all": [VALUE, None]}, None]}, schema=schema)
    t.write(data)
    t.write(pa.table({"id": [2], "doc": [VALUE], "deep": [None]}, schema=schema))
    t.compact(full=True)
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "doc": VALUE, "deep": {"v": VALUE, "all": [VALUE, None]}},
        {"id": 2, "doc": VALUE, "deep": None}]
    assert catalog.get_table("db.t").schema.fields[1].type.root is TypeRoot.VARIANT


@pytest.mark.parametrize(("keys", "options", "message"), [
    ({"primary_keys": ("doc",)}, {}, "VARIANT cannot be a primary key"),
    ({"partition_keys": ("doc",)}, {}, "VARIANT cannot be a partition key"),
    ({"primary_keys": ("id",)}, {"bucket": "1", "bucket-key": "doc"}, "bucket-key"),
    ({}, {"file.format": "orc"}, "need Parquet files"),
    ({}, {"file.format": "avro"}, "need Parquet files"),
    ({}, {"changelog-file.format": "orc"}, "need Parquet files"),
])
def test_keys_and_other_formats_are_refused(catalog, keys, options, message):
    with pytest.raises(SchemaError, match=message):
        catalog.create_table("db.t", Schema(fields=_fields(), options=options, **keys))


def test_a_variant_nested_in_a_row_needs_parquet_too(catalog):
    nested = row_of([DataField(id=10, name="v", type=atomic("VARIANT"))])
    with pytest.raises(SchemaError, match="need Parquet"):
        catalog.create_table("db.t", Schema(fields=_fields(nested), options={"file.format": "orc"}))


def test_switching_a_variant_table_to_orc_is_refused(catalog):
    t = catalog.create_table("db.t", Schema(fields=_fields(), primary_keys=("id",), options={"bucket": "1"}))
    with pytest.raises(SchemaError, match="need Parquet"):
        t.alter([SchemaChange.set_option("file.format", "orc")])


def test_shredded_files_are_refused_on_read():
    """A shredded group keeps part of each value in ``typed_value``: reading only ``value`` would
    lose it, so such a file is refused, wherever the VARIANT sits."""
    shredded = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary()),
                          pa.field("typed_value", pa.struct([pa.field("a", pa.int64())]))])
    require_unshredded("doc", atomic("VARIANT"), VARIANT_ARROW)
    with pytest.raises(UnsupportedError, match="shredded VARIANT"):
        require_unshredded("doc", atomic("VARIANT"), shredded)
    nested = row_of([DataField(id=0, name="all", type=array_of(atomic("VARIANT")))])
    with pytest.raises(UnsupportedError, match="shredded VARIANT"):
        require_unshredded("deep", nested, pa.struct([pa.field("all", pa.list_(shredded))]))


def test_aggregate_functions_check_the_type(catalog):
    options = {"bucket": "1", "merge-engine": "aggregation", "fields.doc.aggregate-function": "max"}
    with pytest.raises(SchemaError, match="max"):
        t = catalog.create_table("db.t", Schema(fields=_fields(), primary_keys=("id",), options=options))
        t.write(pa.table({"id": [1], "doc": [VALUE]}, schema=t.arrow_schema))
