"""``Table.write(..., schema_mode="merge")`` (``core/write/evolve.py``): the schema evolves from the
data (new nullable columns, safe widenings, missing nullable columns as null) or the write is
refused in one line with nothing changed, and the values are checked before the schema is."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import AddColumn, Catalog, UpdateColumnType
from paimonflow.core.errors import DataError, InvalidArgumentError, SchemaError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("name", pa.string())])


@pytest.fixture
def table(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "qty": [5], "name": ["a"]}, schema=SCHEMA))
    return t


def test_new_and_wider_columns_are_merged_and_missing_ones_written_as_null(table):
    data = pa.table({"id": pa.array([2], pa.int64()), "qty": pa.array([2**40], pa.int64()),
                     "note": pa.array(["new"], pa.string())})
    result = table.write(data, schema_mode="merge")
    fresh = table.refresh()
    assert result.snapshot_id == 2 and fresh.schema.id == 1
    assert fresh.arrow_schema.field("qty").type == pa.int64() and "note" in fresh.arrow_schema.names
    rows = {r["id"]: r for r in fresh.read().to_pylist()}
    assert rows[1] == {"id": 1, "qty": 5, "name": "a", "note": None}  # older rows read the new column as null
    assert rows[2] == {"id": 2, "qty": 2**40, "name": None, "note": "new"}  # "name" was missing: null
    # the same data again: nothing to merge, no new schema
    assert fresh.write(data, schema_mode="merge").snapshot_id == 3 and fresh.refresh().schema.id == 1


def test_what_cannot_be_merged_is_refused_in_one_line_and_nothing_changes(table):
    bad = pa.table({"id": pa.array([2], pa.int64()), "qty": pa.array(["x"], pa.string()),
                    "extra": pa.array([1.0], pa.float64())})
    with pytest.raises(SchemaError, match=r"db.t: the data does not fit the table: column 'qty' is INT in the "
                                          r"table, STRING in the data \(nothing written\)"):
        table.write(bad, schema_mode="merge")
    with pytest.raises(SchemaError, match="NOT NULL column 'id' is missing from the data"):
        table.write(pa.table({"qty": pa.array([1], pa.int32())}), schema_mode="merge")
    with pytest.raises(InvalidArgumentError, match="schema_mode must be one of strict, merge"):
        table.write(bad, schema_mode="union")
    fresh = table.refresh()
    assert fresh.schema.id == 0 and fresh.latest_snapshot().id == 1 and "extra" not in fresh.arrow_schema.names


def test_values_that_the_merged_schema_refuses_leave_no_schema_behind(table):
    """A new column and a null key: the key is refused before the new schema is committed."""
    data = pa.table({"id": pa.array([None], pa.int64()), "qty": pa.array([1], pa.int32()),
                     "note": pa.array(["x"], pa.string())})
    with pytest.raises(DataError, match="primary key column 'id' is NOT NULL but has 1 null"):
        table.write(data, schema_mode="merge")
    assert table.schema_manager.list_ids() == [0]
    assert table.refresh().schema.id == 0


def test_a_repeated_exactly_once_write_changes_no_schema(table):
    data = pa.table({"id": pa.array([7], pa.int64()), "note": pa.array(["n"], pa.string())})
    first = table.write(data, schema_mode="merge", commit_user="hourly", commit_identifier=10)
    again = table.refresh().write(data, schema_mode="merge", commit_user="hourly", commit_identifier=10)
    assert again.already_committed and again.snapshot_id == first.snapshot_id
    assert table.refresh().schema.id == 1


def test_the_schema_changes_are_exported_for_alter(table):
    altered = table.alter([AddColumn("score", pa.float64()), UpdateColumnType("qty", pa.int64())])
    assert altered.arrow_schema.field("score").type == pa.float64()
    assert altered.arrow_schema.field("qty").type == pa.int64()


def test_unsigned_columns_take_the_signed_type_that_holds_every_value(table):
    """Issue 39: polars' len() is u32; a new unsigned column becomes the signed type holding all
    its values (u32 -> BIGINT), an unsigned widening of a column too (u16 into INT stays INT,
    u32 widens it to BIGINT), and uint64 (no such type) is refused in one line."""
    data = pa.table({"id": pa.array([2], pa.int64()), "qty": pa.array([2**32 - 1], pa.uint32()),
                     "count": pa.array([2**32 - 1], pa.uint32()), "small": pa.array([255], pa.uint8())})
    table.write(data, schema_mode="merge")
    fresh = table.refresh()
    types = {f.name: f.type for f in fresh.arrow_schema}
    assert types["count"] == pa.int64() and types["small"] == pa.int16() and types["qty"] == pa.int64()
    assert {r["id"]: r for r in fresh.read().to_pylist()}[2]["count"] == 2**32 - 1
    fresh.write(pa.table({"id": pa.array([3], pa.int64()), "small": pa.array([7], pa.uint16())}),
                schema_mode="merge")
    assert fresh.refresh().arrow_schema.field("small").type == pa.int32()
    with pytest.raises(SchemaError, match=r"uint64 has no Paimon equivalent.*decimal"):
        fresh.refresh().write(pa.table({"id": pa.array([4], pa.int64()), "big": pa.array([1], pa.uint64())}),
                              schema_mode="merge")
