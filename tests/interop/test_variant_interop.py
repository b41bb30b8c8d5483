"""VARIANT columns both ways with pypaimon 2.1.0: pypaimon declares VARIANT for an Arrow
``struct<value: binary not null, metadata: binary not null>`` and writes it to Parquet as Java
Paimon does (an unannotated group of two required binaries); paimonflow reads, upserts and
compacts such a table, and pypaimon reads the same bytes back, and the other way round."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.data.types import VARIANT_ARROW, DataField, TypeRoot, atomic, parse_type_text
from paimonflow.core.meta.schema import Schema

from .oracle import Oracle, canonical

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("doc", VARIANT_ARROW)])
EMPTY_METADATA = b"\x01\x00\x00"  # version 1, an empty dictionary


def int8_variant(n: int) -> dict:
    """A variant holding an 8-bit integer (primitive type 3: header 0x0c, then the byte)."""
    return {"value": bytes([0x0C, n & 0xFF]), "metadata": EMPTY_METADATA}


def string_variant(text: str) -> dict:
    """A variant holding a short string (basic type 1, the length in the header's upper bits)."""
    raw = text.encode()
    return {"value": bytes([(len(raw) << 2) | 1]) + raw, "metadata": EMPTY_METADATA}


def rows(ids, docs) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "doc": pa.array(docs, VARIANT_ARROW)}, schema=SCHEMA)


def test_pypaimon_variant_tables_are_read_upserted_and_compacted(tmp_path):
    wh = tmp_path / "wh"
    oracle = Oracle(tmp_path)
    oracle.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    oracle.write(wh, "db.t", rows([1, 2, 3], [int8_variant(1), string_variant("two"), None]))
    oracle.run()
    table = Catalog(str(wh)).get_table("db.t")
    assert table.schema.fields[1].type.root is TypeRoot.VARIANT
    assert table.read().schema.field("doc").type == VARIANT_ARROW
    assert canonical(table.read()) == canonical(rows([1, 2, 3], [int8_variant(1), string_variant("two"), None]))
    table.write(rows([2, 4], [int8_variant(-5), string_variant("four")]))
    table.compact(full=True)
    expected = rows([1, 2, 3, 4], [int8_variant(1), int8_variant(-5), None, string_variant("four")])
    assert canonical(table.read()) == canonical(expected)
    oracle.read(wh, "db.t")
    (back,) = oracle.run()
    assert canonical(back) == canonical(expected)


def test_paimonflow_variant_tables_are_read_by_pypaimon(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    fields = (DataField(id=0, name="id", type=atomic("BIGINT", nullable=False)),
              DataField(id=1, name="doc", type=parse_type_text("VARIANT")))
    table = catalog.create_table("db.t", Schema(fields=fields, primary_keys=("id",), options={"bucket": "2"}))
    data = rows([1, 2, 3], [string_variant("a"), None, int8_variant(7)])
    table.write(data)
    oracle = Oracle(tmp_path)
    oracle.write(tmp_path / "wh", "db.t", rows([3, 9], [string_variant("z"), int8_variant(9)]))
    oracle.read(tmp_path / "wh", "db.t")
    (back,) = oracle.run()
    expected = rows([1, 2, 3, 9], [string_variant("a"), None, string_variant("z"), int8_variant(9)])
    assert canonical(back) == canonical(expected)
    assert canonical(catalog.get_table("db.t").read()) == canonical(expected)


def test_shredded_pypaimon_files_are_refused_not_misread(tmp_path):
    """With ``variant.shreddingSchema`` pypaimon moves field ``a`` of each object into a
    ``typed_value`` column; reading ``value`` alone would lose it, so the read is refused."""
    import json

    from paimonflow.core.errors import UnsupportedError

    wh = tmp_path / "wh"
    shredding = {"type": "ROW", "fields": [{"id": 0, "name": "doc", "type": {
        "type": "ROW", "fields": [{"id": 1, "name": "a", "type": "BIGINT"}]}}]}
    oracle = Oracle(tmp_path)
    oracle.create_table(wh, "db.t", SCHEMA, primary_keys=["id"],
                        options={"bucket": "1", "variant.shreddingSchema": json.dumps(shredding)})
    oracle.write(wh, "db.t", rows([1, 2], [string_variant("x"), None]))
    oracle.run()
    with pytest.raises(UnsupportedError, match="shredded VARIANT"):
        Catalog(str(wh)).get_table("db.t").read()
