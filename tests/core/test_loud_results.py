"""Issue 38, item 5: results that were silent or misleading are errors naming the problem, and
nothing changes when they are raised."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError, SchemaError, WarehouseNotFoundError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("h", pa.int32(), nullable=False), ("v", pa.float64())])


@pytest.fixture
def table(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt", "h"], partition_keys=["dt", "h"],
                             options={"bucket": "4"})
    t.write(pa.table({"id": [1, 2], "dt": ["2026-11-21"] * 2, "h": [3, 3], "v": [1.0, 2.0]}, schema=SCHEMA))
    return t


def test_listing_a_warehouse_that_does_not_exist_is_an_error(tmp_path):
    with pytest.raises(WarehouseNotFoundError, match="does not exist"):
        Catalog(str(tmp_path / "typo")).list_databases()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert Catalog(str(empty)).list_databases() == []  # an existing, empty warehouse has none
    fresh = Catalog(str(tmp_path / "fresh"))
    fresh.create_database("db")  # (create_database still makes a new warehouse)
    assert fresh.list_databases() == ["db"]


def test_compacting_a_bucket_the_table_does_not_have_is_an_error(table):
    before = table.latest_snapshot().id
    with pytest.raises(InvalidArgumentError, match=r"has no bucket 99: 'bucket' is 4 \(buckets 0 to 3\)"):
        table.compact(buckets=[99])
    for bad in ([-1], [True], ["1"]):
        with pytest.raises(InvalidArgumentError, match="buckets are numbers from 0"):
            table.compact(buckets=bad)
    assert table.latest_snapshot().id == before
    assert table.compact(buckets=[0, 1, 2, 3]).snapshot_id is not None


def test_an_append_table_with_fixed_buckets_and_no_bucket_key_is_refused_at_creation(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([("k", pa.int32()), ("v", pa.string())])
    with pytest.raises(SchemaError, match="'bucket' = 4 needs 'bucket-key'"):
        catalog.create_table("db.a", schema, options={"bucket": "4"})
    assert catalog.list_tables("db") == []
    created = catalog.create_table("db.a", schema, options={"bucket": "4", "bucket-key": "k"})
    assert created.write(pa.table({"k": [1, 2], "v": ["x", "y"]}, schema=schema)).snapshot_id == 1


def test_a_partition_value_of_the_wrong_type_in_a_static_overwrite_is_a_type_error(table):
    rows = pa.table({"id": [9], "dt": ["2026-11-21"], "h": [3], "v": [9.0]}, schema=SCHEMA)
    before = table.latest_snapshot().id
    with pytest.raises(SchemaError, match=r"dt=20261121 \(int\) does not fit column 'dt' of type STRING"):
        table.write(rows, overwrite={"dt": 20261121})
    with pytest.raises(SchemaError, match=r"h=True \(bool\) does not fit column 'h' of type INT"):
        table.write(rows, overwrite={"dt": "2026-11-21", "h": True})
    assert table.latest_snapshot().id == before
    assert table.write(rows, overwrite={"dt": "2026-11-21", "h": 3}).snapshot_id == before + 1
    assert table.write(rows, overwrite={"dt": "2026-11-21", "h": "3"}).snapshot_id == before + 2  # text, as a CLI gives


def test_a_pandas_integer_column_with_a_missing_value_is_named_as_such(table):
    frame = pd.DataFrame({"id": [5, None], "dt": ["2026-11-21"] * 2, "h": [3, 3], "v": [1.0, 2.0]})
    with pytest.raises(SchemaError, match=r"column 'id' holds double values with 1 missing .*'Int64' dtype"):
        table.write(frame)
    with pytest.raises(SchemaError, match="floats are not converted to integers"):  # a real fraction: as before
        table.write(pd.DataFrame({"id": [5.5], "dt": ["2026-11-21"], "h": [3], "v": [1.0]}))
    assert table.read().num_rows == 2
