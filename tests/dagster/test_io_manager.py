"""The Paimon IO manager with Dagster's database IO manager conventions: tables named from the asset
key, partitions mapped through ``partition_expr`` (static, time window, ranges, multi), ``columns``
projection, schema evolution, the standard metadata, and typed one-line failures that write
nothing. Real Dagster materializations into a real warehouse (no Spark needed)."""

# No ``from __future__ import annotations``: Dagster reads annotations at runtime.

from datetime import date, datetime
from pathlib import Path

import dagster as dg
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.operators.dagster import PaimonIOManager, PaimonResource


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "wh")


def io(warehouse, **config):
    return {"io_manager": PaimonIOManager(paimon=PaimonResource(warehouse=warehouse), **config)}


def failure_message(result) -> str:
    """The one line a failed step shows: the description of its ``dg.Failure``."""
    [event] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    return event.event_specific_data.user_failure_data.description


def materialization(result, key: dg.AssetKey) -> dict:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == key]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def test_equal_last_key_parts_in_two_prefixes_are_two_tables_and_load_their_own_rows(warehouse):
    @dg.asset(key_prefix=["sales"])
    def orders() -> pa.Table:
        return pa.table({"id": [1, 2], "amount": [10.0, 20.0]})

    @dg.asset(key=["returns", "orders"])
    def returned() -> pa.Table:
        return pa.table({"id": [9], "reason": ["broken"]})

    @dg.asset(ins={"sold": dg.AssetIn(key=["sales", "orders"]), "back": dg.AssetIn(key=["returns", "orders"])})
    def net(sold: pa.Table, back: pa.Table) -> pa.Table:
        return pa.table({"sold": [sold.num_rows], "returned": [back.num_rows],
                         "reasons": [",".join(back.column("reason").to_pylist())]})

    assert dg.materialize([orders, returned, net], resources=io(warehouse)).success
    catalog = Catalog(warehouse)
    assert catalog.get_table("sales.orders").read().to_pylist() == [{"id": 1, "amount": 10.0}, {"id": 2, "amount": 20.0}]
    assert catalog.get_table("returns.orders").read().to_pylist() == [{"id": 9, "reason": "broken"}]
    assert catalog.get_table("default.net").read().to_pylist() == [{"sold": 2, "returned": 1, "reasons": "broken"}]


def test_two_assets_forced_into_one_table_are_refused_and_the_first_keeps_its_rows(warehouse):
    @dg.asset(key_prefix=["sales"])
    def orders() -> pa.Table:
        return pa.table({"id": [1, 2]})

    @dg.asset(key=["returns", "orders"])
    def returned() -> pa.Table:
        return pa.table({"id": [9]})

    resources = io(warehouse, database="one")  # every asset in one database: both are one.orders
    assert dg.materialize([orders], resources=resources).success
    result = dg.materialize([returned], resources=resources, raise_on_error=False)
    assert not result.success
    assert failure_message(result) == ("one.orders holds 'sales/orders'; 'returns/orders' maps to the same table: give "
                                       "one of them a 'schema' metadata value or another key (nothing written)")
    table = Catalog(warehouse).get_table("one.orders")
    assert table.snapshot_manager.latest_id() == 1 and table.read().column("id").to_pylist() == [1, 2]


def test_an_asset_gaining_a_column_materializes_again_and_old_rows_read_null(warehouse):
    shops = dg.StaticPartitionsDefinition(["a", "b"])

    def version(columns):
        @dg.asset(key=["shop", "items"], partitions_def=shops,
                  metadata={"paimon/primary_keys": ["sku"], "partition_expr": "shop"})
        def items(context: dg.AssetExecutionContext) -> pa.Table:
            return pa.table({**columns, "shop": [context.partition_key] * len(columns["sku"])})

        return items

    first = version({"sku": [1, 2], "qty": pa.array([5, 6], pa.int32())})
    assert dg.materialize([first], resources=io(warehouse), partition_key="a").success
    # a new column, and qty widened from INT to BIGINT
    second = version({"sku": [3], "qty": pa.array([7], pa.int64()), "colour": ["red"]})
    result = dg.materialize([second], resources=io(warehouse), partition_key="b")
    assert result.success
    table = Catalog(warehouse).get_table("shop.items")
    assert [f.name for f in table.schema.fields] == ["sku", "qty", "shop", "colour"]
    assert str(table.schema.fields[1].type) == "BIGINT"
    assert sorted(table.read().to_pylist(), key=lambda r: r["sku"]) == [
        {"sku": 1, "qty": 5, "shop": "a", "colour": None}, {"sku": 2, "qty": 6, "shop": "a", "colour": None},
        {"sku": 3, "qty": 7, "shop": "b", "colour": "red"}]
    meta = materialization(result, dg.AssetKey(["shop", "items"]))
    assert [c.name for c in meta["dagster/column_schema"].columns] == ["sku", "qty", "shop", "colour"]
    # the older shape again (no colour): written as null, the table keeps the column
    assert dg.materialize([first], resources=io(warehouse), partition_key="b").success
    assert {r["colour"] for r in Catalog(warehouse).get_table("shop.items").read().to_pylist()} == {None}


def test_an_incompatible_change_fails_in_one_line_and_writes_nothing(warehouse):
    @dg.asset(key=["shop", "prices"])
    def v1() -> pa.Table:
        return pa.table({"sku": [1], "price": [1.5]})

    @dg.asset(key=["shop", "prices"])
    def v2() -> pa.Table:
        return pa.table({"sku": ["one"], "price": pa.array([1], pa.int32()), "note": ["x"]})

    assert dg.materialize([v1], resources=io(warehouse)).success
    before = Catalog(warehouse).get_table("shop.prices")
    result = dg.materialize([v2], resources=io(warehouse), raise_on_error=False)
    assert not result.success
    # price INT -> the table's DOUBLE is a safe cast, the new column would be added: sku alone does not fit
    assert failure_message(result) == ("shop.prices: the output does not fit the table: column 'sku' is BIGINT in "
                                       "the table, STRING in the output (nothing written)")
    after = Catalog(warehouse).get_table("shop.prices")
    assert after.schema.id == before.schema.id  # the new column 'note' was not added either
    assert after.snapshot_manager.latest_id() == 1 and after.read().to_pylist() == [{"sku": 1, "price": 1.5}]


def test_static_partitions_replace_their_own_table_partition_and_load_only_theirs(warehouse):
    regions = dg.StaticPartitionsDefinition(["eu", "us"])

    @dg.asset(partitions_def=regions, metadata={"partition_expr": "region", "paimon/primary_keys": ["sku"]},
              key_prefix=["stock"])
    def levels(context: dg.AssetExecutionContext) -> pd.DataFrame:
        n = 2 if context.partition_key == "eu" else 3
        return pd.DataFrame({"sku": range(n), "region": [context.partition_key] * n, "qty": [10 * n] * n})

    @dg.asset(partitions_def=regions, key_prefix=["stock"], metadata={"partition_expr": "region"},
              ins={"levels": dg.AssetIn(key=["stock", "levels"], metadata={"columns": ["qty"]})})
    def total(context: dg.AssetExecutionContext, levels: pd.DataFrame) -> pd.DataFrame:
        assert list(levels.columns) == ["qty"]  # projection pushed into the read
        return pd.DataFrame({"region": [context.partition_key], "total": [int(levels["qty"].sum())]})

    for _ in range(2):  # materializing a partition again replaces exactly that partition
        for region in ("eu", "us"):
            result = dg.materialize([levels, total], resources=io(warehouse), partition_key=region)
            assert result.success
    table = Catalog(warehouse).get_table("stock.levels")
    assert table.partition_keys == ("region",) and set(table.primary_keys) == {"sku", "region"}
    rows = sorted((r["region"], r["sku"], r["qty"]) for r in table.read().to_pylist())
    assert rows == [("eu", 0, 20), ("eu", 1, 20), ("us", 0, 30), ("us", 1, 30), ("us", 2, 30)]
    totals = sorted((r["region"], r["total"]) for r in Catalog(warehouse).get_table("stock.total").read().to_pylist())
    assert totals == [("eu", 40), ("us", 90)]  # each partition loaded only its own rows
    meta = materialization(result, dg.AssetKey(["stock", "levels"]))
    # a partition's rows are known from the output; a partitioned primary-key table's total is not
    # counted (it needs a merge of every key)
    assert meta["dagster/partition_row_count"] == 3 and "dagster/row_count" not in meta


def test_a_time_window_range_on_a_date_column_is_one_commit_and_a_day_column_of_strings_too(warehouse):
    days = dg.DailyPartitionsDefinition(start_date="2026-11-01", end_date="2026-11-08")

    @dg.asset(partitions_def=days, metadata={"partition_expr": "day"}, key_prefix=["events"],
              backfill_policy=dg.BackfillPolicy.single_run())
    def clicks(context: dg.AssetExecutionContext) -> pl.DataFrame:
        start, end = context.partition_time_window
        span = pd.date_range(start, end, freq="D", inclusive="left").date
        return pl.DataFrame({"day": list(span), "clicks": [len(span)] * len(span)})

    @dg.asset(partitions_def=days, metadata={"partition_expr": "dt"}, key_prefix=["events"],
              backfill_policy=dg.BackfillPolicy.single_run())
    def names(context: dg.AssetExecutionContext, clicks: pl.DataFrame) -> pa.Table:
        return pa.table({"dt": [context.partition_key], "rows": [clicks.height]})

    job = dg.define_asset_job("clicks_job", selection=[clicks, names])
    defs = dg.Definitions(assets=[clicks, names], jobs=[job], resources=io(warehouse))
    whole = defs.resolve_job_def("clicks_job")
    tags = {"dagster/asset_partition_range_start": "2026-11-01", "dagster/asset_partition_range_end": "2026-11-04"}
    assert whole.execute_in_process(tags=tags, asset_selection=[clicks.key]).success  # four days, one run
    table = Catalog(warehouse).get_table("events.clicks")
    assert table.snapshot_manager.latest_id() == 1
    assert sorted(r["day"] for r in table.read().to_pylist()) == [date(2026, 11, d) for d in range(1, 5)]
    # one day again: replaces that day only
    again = whole.execute_in_process(partition_key="2026-11-02")
    assert again.success
    meta = materialization(again, clicks.key)  # an append table: its total from the snapshot's record count
    assert meta["dagster/partition_row_count"] == 1 and meta["dagster/row_count"] == 4
    got = sorted((r["day"], r["clicks"]) for r in table.read().to_pylist())
    assert got == [(date(2026, 11, 1), 4), (date(2026, 11, 2), 1), (date(2026, 11, 3), 4), (date(2026, 11, 4), 4)]
    # the downstream day (a string partition column) loaded only its day from the date column
    assert Catalog(warehouse).get_table("events.names").read().to_pylist() == [{"dt": "2026-11-02", "rows": 1}]


def test_multi_partitions_map_each_dimension_to_its_column(warehouse):
    multi = dg.MultiPartitionsDefinition({
        "hour": dg.HourlyPartitionsDefinition(start_date="2026-11-21-00:00", end_date="2026-11-21-04:00"),
        "shop": dg.StaticPartitionsDefinition(["a", "b"])})

    @dg.asset(partitions_def=multi, metadata={"partition_expr": {"hour": "ts", "shop": "shop"}}, key_prefix=["m"])
    def sales(context: dg.AssetExecutionContext) -> pa.Table:
        key = context.partition_key.keys_by_dimension
        start = multi.get_partitions_def_for_dimension("hour").time_window_for_partition_key(key["hour"]).start
        return pa.table({"ts": pa.array([start.replace(tzinfo=None)], pa.timestamp("us")), "shop": [key["shop"]],
                         "n": [1]})

    for hour, shop in [("2026-11-21-01:00", "a"), ("2026-11-21-01:00", "b"), ("2026-11-21-02:00", "a"),
                       ("2026-11-21-01:00", "a")]:
        key = dg.MultiPartitionKey({"hour": hour, "shop": shop})
        assert dg.materialize([sales], resources=io(warehouse), partition_key=key).success
    table = Catalog(warehouse).get_table("m.sales")
    assert set(table.partition_keys) == {"ts", "shop"}
    got = sorted((r["ts"], r["shop"]) for r in table.read().to_pylist())
    assert got == [(datetime(2026, 11, 21, 1), "a"), (datetime(2026, 11, 21, 1), "b"), (datetime(2026, 11, 21, 2), "a")]


def test_standard_metadata_on_the_materialization(warehouse):
    @dg.asset(key=["shop", "totals"], metadata={"paimon/primary_keys": ["day"]})
    def totals() -> pa.Table:
        return pa.table({"day": ["d1", "d2", "d2"], "total": [1, 2, 3]})  # two rows of one key: merged

    result = dg.materialize([totals], resources=io(warehouse))
    meta = materialization(result, dg.AssetKey(["shop", "totals"]))
    table = Catalog(warehouse).get_table("shop.totals")
    assert meta["dagster/table_name"] == "shop.totals" and meta["dagster/uri"] == Path(table.path).as_uri()
    assert meta["dagster/row_count"] == 2 and "dagster/partition_row_count" not in meta
    assert meta["paimon/snapshot_id"] == 1 and meta["paimon/commit_kind"] == "OVERWRITE"
    assert meta["paimon/files_written"] == 1 and meta["paimon/bytes_written"] > 0
    columns = {c.name: (c.type, c.constraints.nullable) for c in meta["dagster/column_schema"].columns}
    assert columns == {"day": ("STRING NOT NULL", False), "total": ("BIGINT", True)}


def test_a_polars_count_makes_a_bigint_column_and_reads_back(warehouse):
    """Issue 39: polars' len() and count() are u32; the table made from the frame takes BIGINT (the
    signed type holding every u32 value), and a later output of the same frame writes into it."""
    @dg.asset(key=["shop", "counts"])
    def counts() -> pl.DataFrame:
        frame = pl.DataFrame({"category": ["a", "a", "b"], "amount": [1.0, 2.0, 3.0]})
        return frame.group_by("category").agg(pl.len().alias("orders"), pl.col("amount").count().alias("priced"))

    assert dg.materialize([counts], resources=io(warehouse)).success
    table = Catalog(warehouse).get_table("shop.counts")
    assert table.arrow_schema.field("orders").type == pa.int64() and table.arrow_schema.field("priced").type == \
        pa.int64()
    assert sorted(table.read().to_pylist(), key=lambda r: r["category"]) == [
        {"category": "a", "orders": 2, "priced": 2}, {"category": "b", "orders": 1, "priced": 1}]
    assert dg.materialize([counts], resources=io(warehouse)).success  # again, into the BIGINT columns


def test_mistakes_fail_in_one_line(warehouse):
    hours = dg.StaticPartitionsDefinition(["h1"])

    @dg.asset(partitions_def=hours)
    def unmapped() -> pa.Table:
        return pa.table({"x": [1]})

    result = dg.materialize([unmapped], resources=io(warehouse), partition_key="h1", raise_on_error=False)
    assert "is partitioned but has no 'partition_expr' metadata" in failure_message(result)

    @dg.asset
    def text() -> str:
        return "not a frame"

    result = dg.materialize([text], resources=io(warehouse), raise_on_error=False)
    assert failure_message(result).startswith("PaimonIOManager cannot store a str")

    @dg.op(out=dg.Out(io_manager_key="io_manager"))
    def made() -> pa.Table:
        return pa.table({"x": [1]})

    @dg.job(resource_defs=io(warehouse))
    def plain():
        made()

    result = plain.execute_in_process(raise_on_error=False)
    assert "op output 'result' has no asset key: give it a 'table' metadata value" in failure_message(result)


def test_a_table_paimonflow_cannot_write_is_refused_in_one_line_before_its_schema_changes(warehouse):
    """The capability gate: an output into a table whose external data paths are on another
    storage (as a Paimon 2.x writer may leave it) with a new column fails in one line; neither
    the schema nor the data changes."""
    import json
    import os

    @dg.asset(key=["shop", "tracked"])
    def v1() -> pa.Table:
        return pa.table({"sku": [1], "price": [1.5]})

    @dg.asset(key=["shop", "tracked"])
    def v2() -> pa.Table:
        return pa.table({"sku": [2], "price": [2.5], "note": ["new column"]})

    assert dg.materialize([v1], resources=io(warehouse)).success
    table = Catalog(warehouse).get_table("shop.tracked")
    schema_file = os.path.join(table.path, "schema", f"schema-{table.schema.id}")
    with open(schema_file) as f:
        doc = json.load(f)
    doc["options"].update({"data-file.external-paths": "s3://elsewhere/ext",  # as Paimon 2.x may leave it
                           "data-file.external-paths.strategy": "round-robin"})
    with open(schema_file, "w") as f:
        json.dump(doc, f)
    result = dg.materialize([v2], resources=io(warehouse), raise_on_error=False)
    assert not result.success
    message = failure_message(result)
    assert "\n" not in message and "external data paths" in message and "write" in message, message
    after = Catalog(warehouse).get_table("shop.tracked")
    assert after.schema.id == table.schema.id and after.snapshot_manager.latest_id() == 1


# -- write modes (issue: append and upsert beside overwrite) ------------------------------------

def schema_files(table) -> list[str]:
    import os

    return sorted(os.listdir(os.path.join(table.path, "schema")))


def test_append_adds_the_rows_and_a_retried_step_appends_them_once(warehouse):
    """``write_mode="append"`` on the IO manager: each run adds its rows. A step that stored its
    output and then failed is retried in the same run: the retry finds its commit (same commit
    identity) and appends nothing; only a new run appends again."""
    attempts, failing = [], [True]

    @dg.asset(key=["logs", "visits"], retry_policy=dg.RetryPolicy(max_retries=1))
    def visits(context: dg.AssetExecutionContext):
        attempts.append(context.retry_number)
        yield dg.Output(pa.table({"page": ["home", "cart"], "n": [3, 1]}))
        if failing.pop() if failing else False:  # after the output was stored and committed
            raise RuntimeError("the step fails after its output was written")

    result = dg.materialize([visits], resources=io(warehouse, write_mode="append"))
    assert result.success and attempts == [0, 1]
    table = Catalog(warehouse).get_table("logs.visits")
    assert table.snapshot_manager.latest_id() == 1 and table.read().num_rows == 2  # appended once
    result = dg.materialize([visits], resources=io(warehouse, write_mode="append"))  # a new run
    assert result.success
    table = Catalog(warehouse).get_table("logs.visits")
    assert sorted((r["page"], r["n"]) for r in table.read().to_pylist()) == [("cart", 1), ("cart", 1), ("home", 3),
                                                                            ("home", 3)]
    meta = materialization(result, visits.key)
    assert meta["paimon/write_mode"] == "append" and meta["paimon/commit_kind"] == "APPEND"
    assert meta["dagster/row_count"] == 4 and meta["paimon/rows_written"] == 2  # the table's count from the snapshot


def test_upsert_replaces_rows_by_key_in_the_assets_partition_only(warehouse):
    """``write_mode: upsert`` in an asset's metadata (the IO manager overwrites by default): rows
    replace the rows with their key, others stay; a partition's upsert touches only its partition,
    and rows outside it are refused in one line with nothing written."""
    shops = dg.StaticPartitionsDefinition(["a", "b"])
    outputs = {}

    @dg.asset(key=["shop", "stock"], partitions_def=shops,
              metadata={"write_mode": "upsert", "paimon/primary_keys": ["sku"], "partition_expr": "shop"})
    def stock(context: dg.AssetExecutionContext) -> pa.Table:
        return outputs[context.partition_key]

    def rows(shop, skus, qty):
        return pa.table({"sku": skus, "shop": [shop] * len(skus), "qty": [qty] * len(skus)})

    outputs.update(a=rows("a", [1, 2], 10), b=rows("b", [1], 5))
    for shop in ("a", "b"):
        assert dg.materialize([stock], resources=io(warehouse), partition_key=shop).success
    outputs["a"] = rows("a", [2, 3], 20)  # sku 2 changes, sku 3 is new, sku 1 is not in the output
    result = dg.materialize([stock], resources=io(warehouse), partition_key="a")
    assert result.success
    table = Catalog(warehouse).get_table("shop.stock")
    got = sorted((r["shop"], r["sku"], r["qty"]) for r in table.read().to_pylist())
    assert got == [("a", 1, 10), ("a", 2, 20), ("a", 3, 20), ("b", 1, 5)]
    meta = materialization(result, stock.key)
    assert meta["paimon/write_mode"] == "upsert" and meta["paimon/commit_kind"] == "APPEND"
    before = table.snapshot_manager.latest_id()
    outputs["a"] = pa.concat_tables([rows("a", [4], 1), rows("b", [9], 1)])  # a row of partition b
    result = dg.materialize([stock], resources=io(warehouse), partition_key="a", raise_on_error=False)
    assert not result.success
    assert failure_message(result) == ("shop/stock: rows of partition {'shop': 'b'} lie outside "
                                       "is_in(shop, {value_set=string:[\n  \"a\"\n], null_matching_behavior=MATCH})")
    assert Catalog(warehouse).get_table("shop.stock").snapshot_manager.latest_id() == before


def test_a_write_mode_that_does_not_fit_the_table_is_refused_in_one_line(warehouse):
    @dg.asset(key=["shop", "events"], metadata={"write_mode": "upsert"})
    def events() -> pa.Table:
        return pa.table({"id": [1]})

    result = dg.materialize([events], resources=io(warehouse), raise_on_error=False)
    assert failure_message(result) == (
        "write_mode 'upsert' replaces rows by primary key, but shop.events has no primary key (give the asset "
        "'paimon/primary_keys' metadata before its table is made, or write_mode 'append') (nothing written)")
    assert not Path(warehouse).exists()  # refused before the table (and its warehouse) was made

    @dg.asset(key=["shop", "keyed"], metadata={"paimon/primary_keys": ["id"]})
    def keyed() -> pa.Table:
        return pa.table({"id": [1], "v": ["x"]})

    assert dg.materialize([keyed], resources=io(warehouse)).success
    result = dg.materialize([keyed], resources=io(warehouse, write_mode="append"), raise_on_error=False)
    assert failure_message(result) == ("write_mode 'append' adds rows, but shop.keyed has primary keys ['id']: a row "
                                       "replaces the row with its key; use write_mode 'upsert' (nothing written)")

    @dg.asset(key=["shop", "odd"], metadata={"write_mode": "merge"})
    def odd() -> pa.Table:
        return pa.table({"id": [1]})

    result = dg.materialize([odd], resources=io(warehouse), raise_on_error=False)
    assert failure_message(result) == ("shop/odd: write_mode 'merge' is not one of overwrite, append, upsert "
                                       "(nothing written)")
    assert Catalog(warehouse).get_table("shop.keyed").snapshot_manager.latest_id() == 1


# -- the schema change and the rows land together -----------------------------------------------

def test_a_new_column_with_a_null_key_is_refused_and_the_schema_stays_as_it_was(warehouse):
    """Issue: the schema evolution used to be committed before the write was refused (schema-1
    left without a snapshot, the new column visible to every reader). Now nothing changes; then a
    good output with the same new column evolves the schema and lands in one go."""
    @dg.asset(key=["shop", "prices"], metadata={"paimon/primary_keys": ["sku"]})
    def v1() -> pa.Table:
        return pa.table({"sku": [1, 2], "price": [1.5, 2.5]})

    bad = pa.table({"sku": pa.array([3, None], pa.int64()), "price": [3.5, 4.5], "currency": ["EUR", "USD"]})
    good = pa.table({"sku": [2, 3], "price": [2.0, 3.5], "currency": ["EUR", "USD"]})
    outputs = [bad]

    @dg.asset(key=["shop", "prices"], metadata={"paimon/primary_keys": ["sku"], "write_mode": "upsert"})
    def v2() -> pa.Table:
        return outputs[-1]

    assert dg.materialize([v1], resources=io(warehouse)).success
    before = Catalog(warehouse).get_table("shop.prices")
    files_before = sorted(p.name for p in Path(before.path).rglob("*") if p.is_file())
    result = dg.materialize([v2], resources=io(warehouse), raise_on_error=False)
    assert not result.success
    assert failure_message(result) == "shop/prices: primary key column 'sku' is NOT NULL but has 1 null value(s)"
    after = Catalog(warehouse).get_table("shop.prices")
    assert after.schema.id == before.schema.id and schema_files(after) == ["schema-0"]
    assert sorted(p.name for p in Path(after.path).rglob("*") if p.is_file()) == files_before  # no file left
    assert after.read().to_pylist() == [{"sku": 1, "price": 1.5}, {"sku": 2, "price": 2.5}]
    outputs.append(good)
    result = dg.materialize([v2], resources=io(warehouse))
    assert result.success
    table = Catalog(warehouse).get_table("shop.prices")
    assert schema_files(table) == ["schema-0", "schema-1"] and table.latest_snapshot().schema_id == 1
    assert sorted(table.read().to_pylist(), key=lambda r: r["sku"]) == [
        {"sku": 1, "price": 1.5, "currency": None}, {"sku": 2, "price": 2.0, "currency": "EUR"},
        {"sku": 3, "price": 3.5, "currency": "USD"}]
    assert [c.name for c in materialization(result, v2.key)["dagster/column_schema"].columns] == [
        "sku", "price", "currency"]


def test_a_new_column_with_a_row_outside_the_partition_is_refused_and_the_schema_stays(warehouse):
    days = dg.StaticPartitionsDefinition(["2026-11-01", "2026-11-02"])
    outputs = [pa.table({"dt": ["2026-11-01"], "clicks": [1]})]

    @dg.asset(key=["web", "clicks"], partitions_def=days, metadata={"partition_expr": "dt"})
    def clicks() -> pa.Table:
        return outputs[-1]

    assert dg.materialize([clicks], resources=io(warehouse), partition_key="2026-11-01").success
    outputs.append(pa.table({"dt": ["2026-11-01", "2026-11-02"], "clicks": [2, 3], "source": ["ad", "ad"]}))
    result = dg.materialize([clicks], resources=io(warehouse), partition_key="2026-11-01", raise_on_error=False)
    assert not result.success
    assert failure_message(result).startswith("web/clicks: overwrite where is_in(dt, {value_set=string:[\n  "
                                              "\"2026-11-01\"\n]") and failure_message(result).endswith(
        "got rows of partition {'dt': '2026-11-02'}")
    table = Catalog(warehouse).get_table("web.clicks")
    assert schema_files(table) == ["schema-0"] and table.read().to_pylist() == [{"dt": "2026-11-01", "clicks": 1}]


def test_an_evolving_write_that_loses_the_schema_race_plans_again_on_the_newer_schema(warehouse):
    """The core's evolving write (what the IO manager commits with): its files are written under
    the prospective schema id; when another writer publishes that id first, they are deleted and
    the write is planned again on the newer schema, which it then extends."""
    from paimonflow.core.meta.schema_changes import AddColumn
    from paimonflow.core.write.evolving_write import write_evolving

    catalog = Catalog(warehouse)
    catalog.create_database("db")
    stale = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False)]),
                                 primary_keys=["id"], options={"bucket": "1"})
    catalog.get_table("db.t").alter([AddColumn("by_other", pa.string())])  # schema-1, by another writer
    written = write_evolving(stale, pa.table({"id": [1], "mine": ["x"]}), commit_user="me", commit_identifier=7)
    assert [f.name for f in written.table.schema.fields] == ["id", "by_other", "mine"]
    assert written.table.schema.id == 2 and written.commit.snapshot_id == 1
    table = catalog.get_table("db.t")
    assert schema_files(table) == ["schema-0", "schema-1", "schema-2"] and table.latest_snapshot().schema_id == 2
    assert table.read().to_pylist() == [{"id": 1, "by_other": None, "mine": "x"}]
    data_files = [p for p in Path(table.path).rglob("data-*") if p.is_file()]
    assert len(data_files) == 1  # the files written under the lost schema id were deleted
    again = write_evolving(catalog.get_table("db.t"), pa.table({"id": [1], "mine": ["x"]}), commit_user="me",
                           commit_identifier=7)
    assert again.commit.already_committed and catalog.get_table("db.t").snapshot_manager.latest_id() == 1
