"""PaimonWriteOperator on the core engine refuses landed files that do not fit the table in one
typed line (``core/data/source_files.py``, the reader ``paimonflow write`` uses): the file, every
bad column by name, its first bad value and its record; and nothing is committed or written."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import SchemaError
from paimonflow.operators.airflow import PaimonWriteOperator
from tests.files import tree

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("amount", pa.float64()),
                    ("v", pa.string())])


@pytest.fixture
def warehouse(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("lab")
    catalog.create_table("lab.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    return tmp_path / "wh"


def execute(warehouse, path, format: str, **kwargs) -> dict:
    operator = PaimonWriteOperator(task_id="write", table="lab.t", warehouse=str(warehouse), engine="core", path=str(path),
                                   format=format, **kwargs)
    context = {"ti": SimpleNamespace(dag_id="land", task_id="write", map_index=-1),
               "logical_date": datetime(2026, 11, 21, tzinfo=UTC)}
    return operator.execute(context)


def refused(warehouse, path, format: str) -> str:
    before = tree(warehouse)
    with pytest.raises(SchemaError) as info:
        execute(warehouse, path, format)
    assert tree(warehouse) == before  # nothing committed, no data file left
    assert Catalog(str(warehouse)).get_table("lab.t").latest_snapshot() is None
    message = str(info.value)
    assert "\n" not in message and "Arrow" not in message
    return message


def test_landed_csv_with_bad_values_in_two_columns_is_one_schema_error_line(warehouse, tmp_path):
    """Was: ``ArrowInvalid: In CSV column #2: Row #3: CSV conversion error to double: invalid value
    'lots'`` (no column name, the other bad column missed)."""
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "part-0.csv").write_text("id,qty,amount,v\n1,1,1.5,a\n2,2,2.5,b\n")
    (landing / "part-1.csv").write_text("id,qty,amount,v\n3,3,3.5,c\n4,4,lots,d\n5,five,5.5,e\n")
    assert refused(warehouse, landing, "csv") == (
        f"{landing}/part-1.csv: does not fit the table's columns: column 'qty' (INT) cannot hold 'five' (record 3); "
        "column 'amount' (DOUBLE) cannot hold 'lots' (record 2)")


def test_landed_json_with_a_bad_value_is_one_schema_error_line(warehouse, tmp_path):
    path = tmp_path / "rows.json"
    path.write_text("\n".join(json.dumps(r) for r in [{"id": 1, "qty": 1, "amount": 1.5, "v": "a"},
                                                      {"id": 2, "qty": 2.5, "amount": "lots", "v": "b"}]) + "\n")
    assert refused(warehouse, path, "json") == (
        f"{path}: does not fit the table's columns: column 'qty' (INT) cannot hold '2.5' (record 2); "
        "column 'amount' (DOUBLE) cannot hold '\"lots\"' (record 2)")


def test_landed_parquet_with_a_missing_an_unknown_and_a_wrong_type_column_is_one_line(warehouse, tmp_path):
    from paimonflow.operators.airflow.operators import _read_files

    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": [1], "qty": ["1"], "price": [2.0], "v": ["a"]}), path)
    message = refused(warehouse, path, "parquet")
    assert message.startswith(f"{path}: does not fit the table's columns: missing columns ['amount']; ")
    assert message.endswith("column 'qty' holds string values but the table's type is INT; only lossless conversions "
                            "are written (cast the data first)")
    # told its extra columns (the row-kind column, when there is one), the reader refuses any other
    with pytest.raises(SchemaError) as info:
        _read_files(str(path), "parquet", SCHEMA, extra_columns=[])
    assert "; unknown columns ['price'] (the table's are ['id', 'qty', 'amount', 'v']); " in str(info.value)


def test_landed_json_dates_are_read_from_their_iso_text_and_written_in_one_commit(warehouse, tmp_path):
    """Was: ``ArrowInvalid: JSON parse error: Column(/day) changed from number to string`` (pyarrow's
    JSON reader takes days since 1970 for a DATE, not ``"2026-11-21"``)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("day", pa.date32()), ("v", pa.string())])
    Catalog(str(warehouse)).create_table("lab.d", schema, primary_keys=["id"], options={"bucket": "1"})
    path = tmp_path / "rows.json"
    path.write_text('{"id": 1, "day": "2026-11-21", "v": "007"}\n\n{"id": 2, "day": null, "v": "b"}\n')
    operator = PaimonWriteOperator(task_id="write", table="lab.d", warehouse=str(warehouse), engine="core",
                                   path=str(path), format="json")
    result = operator.execute({"ti": SimpleNamespace(dag_id="land", task_id="write", map_index=-1),
                               "logical_date": datetime(2026, 11, 21, tzinfo=UTC)})
    table = Catalog(str(warehouse)).get_table("lab.d")
    assert result["snapshot_id"] == 1 and table.latest_snapshot().id == 1
    assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "day": date(2026, 11, 21), "v": "007"}, {"id": 2, "day": None, "v": "b"}]
