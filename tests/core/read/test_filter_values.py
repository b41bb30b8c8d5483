"""Filter values of the wrong type: converted when the conversion is exact, else one SchemaError
naming the column, its type and the value's type; on reads, scans, partition pruning and
overwrites (``core/data/conversion.py``, ``bind_predicate``)."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from paimonflow.core import Catalog, Table, col
from paimonflow.core.data.conversion import bind_predicate
from paimonflow.core.errors import SchemaError
from paimonflow.core.predicate import Compare, IsIn

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("day", pa.date32(), nullable=False),
                    ("amount", pa.float64()), ("price", pa.decimal128(10, 2)), ("ratio", pa.float32()),
                    ("note", pa.string()), ("at", pa.timestamp("us", tz="UTC"))])
AT = datetime(2026, 11, 20, 8, tzinfo=UTC)


def rows(keys, day: date) -> pa.Table:
    keys = list(keys)
    return pa.table({"k": pa.array(keys, pa.int32()), "day": [day] * len(keys),
                     "amount": [float(k) for k in keys], "price": [Decimal(k) for k in keys],
                     "ratio": pa.array([k / 2 for k in keys], pa.float32()), "note": [f"n{k}" for k in keys],
                     "at": [AT] * len(keys)}, schema=SCHEMA)


@pytest.fixture(params=["append", "primary-key"])
def table(request, tmp_path: Path) -> Table:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    keys = ["k", "day"] if request.param == "primary-key" else []
    t = catalog.create_table("db.t", SCHEMA, primary_keys=keys, partition_keys=["day"],
                             options={"bucket": "1"} if keys else {})
    t.write(rows(range(1, 4), date(2026, 11, 20)))
    t.write(rows(range(4, 6), date(2026, 11, 21)))
    return t


def keys_of(table: pa.Table) -> list[int]:
    return sorted(table.column("k").to_pylist())


@pytest.mark.parametrize(("predicate", "names"), [
    (col("k") == "abc", ("'k'", "INT", "str", "string")),
    (col("k") > 2**40, ("'k'", "INT", "int", "not fit")),
    (col("k").isin([1, "x"]), ("'k'", "INT", "'x'", "str")),
    (col("day") == "2026-11-20", ("'day'", "DATE", "str")),
    (col("day") == datetime(2026, 11, 20), ("'day'", "DATE", "datetime")),
    (col("amount") == "12.5", ("'amount'", "DOUBLE", "str")),
    (col("price") > 1.5, ("'price'", "DECIMAL(10, 2)", "float", "decimal.Decimal")),
    (col("price") == Decimal("1.005"), ("'price'", "DECIMAL(10, 2)", "Decimal")),
    (col("ratio") == 0.1, ("'ratio'", "FLOAT", "0.1", "numpy.float32")),
    (col("note") == 5, ("'note'", "STRING", "int")),
    (col("at") >= datetime(2026, 11, 20), ("'at'", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "datetime", "zone")),
    (~(col("k") == "1") | (col("note") == "n1"), ("'k'", "INT", "str")),
])
def test_a_value_that_does_not_convert_exactly_is_one_typed_error(table: Table, predicate, names) -> None:
    for call in (lambda: table.read(filter=predicate), lambda: list(table.to_batches(filter=predicate)),
                 lambda: table.plan(filter=predicate)):
        with pytest.raises(SchemaError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message
        for name in names:
            assert name in message, message


def test_an_empty_table_refuses_the_same_filters(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    empty = catalog.create_table("db.empty", SCHEMA)
    with pytest.raises(SchemaError, match="'k' has type INT"):
        empty.read(filter=col("k") == "abc")


@pytest.mark.parametrize(("predicate", "expected"), [
    (col("k") == 2, [2]),
    (col("k").isin([np.int64(1), 5]), [1, 5]),
    (col("amount") >= 4, [4, 5]),  # an int on a DOUBLE column
    (col("price") > 3, [4, 5]),  # an int on a DECIMAL column
    (col("price") == Decimal("2.00"), [2]),
    (col("price") == Decimal("2"), [2]),  # fewer digits of scale: exact
    (col("ratio") == 0.5, [1]),  # exactly a FLOAT value
    (col("ratio") == np.float32(1.5), [3]),
    (col("day") == date(2026, 11, 21), [4, 5]),
    (col("day").between(date(2026, 11, 1), date(2026, 11, 20)), [1, 2, 3]),
    (col("at") == AT, [1, 2, 3, 4, 5]),
    (col("at") == pa.scalar(AT, pa.timestamp("ms", tz="UTC")), [1, 2, 3, 4, 5]),
    (col("note").isin(["n1", None]), [1]),
])
def test_values_that_convert_exactly_filter_as_their_columns_type(table: Table, predicate, expected) -> None:
    assert keys_of(table.read(filter=predicate)) == expected
    assert keys_of(pa.Table.from_batches(list(table.to_batches(filter=predicate)), SCHEMA)) == expected


def test_a_partition_filter_prunes_with_the_converted_value(table: Table) -> None:
    assert len(table.plan(filter=col("day") == date(2026, 11, 21))) == 1
    assert len(table.plan()) == 2
    with pytest.raises(SchemaError, match=r"column 'day' has type DATE; the filter value '2026-11-21' is a str"):
        table.plan(filter=col("day") == "2026-11-21")


def test_an_engine_reading_splits_with_an_unbound_filter_gets_it_bound(table: Table) -> None:
    reader = table.split_reader()
    splits = table.plan()
    assert keys_of(reader.read(splits, predicate=col("amount") > 3)) == [4, 5]
    batches = list(reader.read_batches(splits, predicate=col("price") <= 1))
    assert keys_of(pa.Table.from_batches(batches, SCHEMA)) == [1]
    with pytest.raises(SchemaError, match="'k' has type INT"):
        list(reader.read_batches(splits, predicate=col("k") == "1"))


def test_binding_converts_once_and_is_idempotent() -> None:
    schema = pa.schema([("x", pa.float64()), ("n", pa.int16())])
    bound = bind_predicate((col("x") == 1) & col("n").isin([1, 2]), schema)
    assert bound == (Compare("x", "==", 1.0, pa.float64()) & IsIn("n", (1, 2), pa.int16()))
    assert bind_predicate(bound, schema) == bound
    assert bind_predicate(col("other") == "a", schema) == Compare("other", "==", "a")  # unknown: left alone
    assert bind_predicate(None, schema) is None


def data_files(t: Table) -> set[str]:
    return {os.path.join(d, f) for d, _, files in os.walk(t.path) for f in files if f.startswith("data-")}


def test_an_overwrite_predicate_with_a_wrong_value_writes_nothing(table: Table) -> None:
    before, files = table.snapshot_manager.latest_id(), data_files(table)
    with pytest.raises(SchemaError, match=r"column 'day' has type DATE; the filter value '2026-11-20' is a str"):
        table.write(rows([7], date(2026, 11, 20)), overwrite=col("day") == "2026-11-20")
    assert table.snapshot_manager.latest_id() == before and data_files(table) == files


def test_an_overwrite_predicate_converts_exact_values(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("hour", pa.int16(), nullable=False),
                        ("v", pa.string())])
    t = catalog.create_table("db.h", schema, partition_keys=["hour"])
    t.write(pa.table({"id": [1, 2, 3], "hour": pa.array([1, 2, 3], pa.int16()), "v": ["a", "b", "c"]}))
    t.write(pa.table({"id": [9], "hour": [2], "v": ["z"]}), overwrite=col("hour").between(2, 3))  # int64 data, ints
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "hour": 1, "v": "a"}, {"id": 9, "hour": 2, "v": "z"}]
    with pytest.raises(SchemaError, match="column 'hour' has type SMALLINT"):
        t.write(pa.table({"id": [9], "hour": [2], "v": ["z"]}), overwrite=col("hour") == 2**20)
