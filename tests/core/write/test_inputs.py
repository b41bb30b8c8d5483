"""What ``Table.write`` and the streaming writer take: pyarrow tables, batches and readers, pandas
and polars frames (converted through Arrow, by the same type rule); anything else is one
SchemaError naming the accepted kinds."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from paimonflow.core import Catalog, Table
from paimonflow.core.errors import SchemaError

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()), ("qty", pa.int64()),
                    ("amount", pa.float64()), ("at", pa.timestamp("us")), ("dt", pa.string())])
EXPECTED = [
    {"id": 1, "name": "a", "qty": 10, "amount": 1.5, "at": datetime(2026, 11, 20, 10), "dt": "x"},
    {"id": 2, "name": None, "qty": None, "amount": None, "at": None, "dt": "y"},
]


@pytest.fixture(params=["append", "primary-key"])
def table(request, tmp_path: Path) -> Table:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    keys = ["id", "dt"] if request.param == "primary-key" else []
    return catalog.create_table("db.t", SCHEMA, primary_keys=keys, partition_keys=["dt"],
                                options={"bucket": "1"} if keys else {})


def read(table: Table) -> list[dict]:
    return sorted(table.read().to_pylist(), key=lambda r: r["id"])


def pandas_frame() -> pd.DataFrame:
    frame = pd.DataFrame({
        "dt": pd.Categorical(["x", "y"]),  # dictionary-encoded, another column order
        "id": [1, 2],  # int64 into INT
        "name": ["a", None],
        "qty": pd.array([10, None], dtype="Int64"),  # pandas' nullable integers
        "amount": [1.5, None],
        "at": pd.to_datetime(["2026-11-20 10:00", None]),  # datetime64[ns] into TIMESTAMP(6)
    }, index=[7, 9])  # not written: the index is not a column
    return frame


def test_a_pandas_dataframe_round_trips(table: Table) -> None:
    result = table.write(pandas_frame())
    assert result.added_rows == 2
    assert read(table) == EXPECTED


def test_polars_dataframes_and_lazyframes_round_trip(table: Table) -> None:
    frame = pl.DataFrame({"id": [1, 2], "name": ["a", None], "qty": pl.Series([10, None], dtype=pl.UInt32),
                          "amount": [1.5, None], "at": [datetime(2026, 11, 20, 10), None], "dt": ["x", "y"]})
    table.write(frame)  # large_string, uint32, timestamp[us]
    assert read(table) == EXPECTED
    table.write(frame.lazy().with_columns(pl.col("id") + 10))
    assert [r["id"] for r in read(table)] == [1, 2, 11, 12]


def arrow_rows() -> pa.Table:
    return pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", None], "qty": [10, None],
                     "amount": [1.5, None], "at": pa.array([datetime(2026, 11, 20, 10), None], pa.timestamp("us")),
                     "dt": ["x", "y"]})


@pytest.mark.parametrize("kind", ["table", "batch", "reader", "batches"])
def test_arrow_tables_batches_and_readers_round_trip(table: Table, kind: str) -> None:
    data = arrow_rows()
    batches = data.to_batches(max_chunksize=1)
    given = {"table": data, "batch": data.combine_chunks().to_batches()[0],
             "reader": pa.RecordBatchReader.from_batches(data.schema, batches), "batches": iter(batches)}[kind]
    table.write(given)
    assert read(table) == EXPECTED


def test_the_streaming_writer_takes_the_same_inputs(table: Table) -> None:
    with table.new_write() as writer:
        writer.write(pandas_frame().iloc[:1])
        writer.write(pl.DataFrame({"id": [2], "name": [None], "qty": [None], "amount": [None], "at": [None],
                                   "dt": ["y"]}, schema_overrides={"name": pl.String, "qty": pl.Int64,
                                                                   "amount": pl.Float64, "at": pl.Datetime("us")}))
        table.new_commit().commit(writer.prepare_commit())
    assert read(table) == EXPECTED


def test_frames_follow_the_type_rule_and_name_the_columns(table: Table) -> None:
    frame = pandas_frame()
    frame["qty"] = [1.0, None]  # pandas turns integers with missing values into floats
    frame["dt"] = [20261120, 20261121]  # numbers into a STRING partition key
    with pytest.raises(SchemaError) as info:
        table.write(frame)
    message = str(info.value)
    assert "column 'qty' holds double values with 1 missing (pandas turns an integer column" in message
    assert "column 'dt' holds int64 values but the table's type is STRING" in message
    with pytest.raises(SchemaError, match=r"column 'id' holds int64 values that the table's type INT cannot hold"):
        table.write(pl.DataFrame({"id": [2**40], "name": ["a"], "qty": [1], "amount": [1.0],
                                  "at": [datetime(2026, 1, 1)], "dt": ["x"]}))
    zoned = pandas_frame()
    zoned["at"] = zoned["at"].dt.tz_localize(UTC)
    with pytest.raises(SchemaError, match=r"column 'at' holds timestamp\[ns, tz=UTC\] values .* TIMESTAMP\(6\)"):
        table.write(zoned)
    assert table.latest_snapshot() is None


def test_a_pandas_column_arrow_cannot_type_is_one_schema_error(table: Table) -> None:
    frame = pandas_frame()
    frame["name"] = ["a", 3]
    with pytest.raises(SchemaError, match="pandas DataFrame cannot be converted to Arrow"):
        table.write(frame)


@pytest.mark.parametrize("data", [None, {"id": [1]}, [{"id": 1}], "rows", 5, pd.Series([1, 2]),
                                  [pd.DataFrame({"id": [1]})]],
                         ids=["None", "dict", "list of dicts", "str", "int", "pandas Series", "list of frames"])
def test_anything_else_is_one_line_naming_the_accepted_kinds(table: Table, data) -> None:
    with pytest.raises(SchemaError) as info:
        table.write(data)
    message = str(info.value)
    assert "\n" not in message
    for kind in ("pyarrow Table", "RecordBatchReader", "pandas DataFrame", "polars DataFrame or LazyFrame"):
        assert kind in message
    assert table.latest_snapshot() is None


def test_frames_are_recognized_without_importing_polars() -> None:
    script = ("import sys, tempfile, pyarrow as pa\n"
              "from paimonflow.core import Catalog\n"
              "c = Catalog(tempfile.mkdtemp()); c.create_database('d')\n"
              "t = c.create_table('d.t', pa.schema([('a', pa.int64())]))\n"
              "t.write(pa.table({'a': [1]}))\n"
              "assert 'polars' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", script], check=True)
