"""Table.scan: a lazy scan that DuckDB, Polars, pandas and pyarrow read with the same rows as
read(), pushing their projection and filters into split planning (files opened are counted with
inotify, whoever opens them)."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError, SchemaError
from paimonflow.core.meta.schema_changes import RenameColumn
from paimonflow.core.predicate import col
from paimonflow.core.read.arrow_filter import pushdown, referenced_columns
from tests.file_opens import FileOpens

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("name", pa.string()), ("dt", pa.string())])
DAYS = ["2026-11-01", "2026-11-02", "2026-11-03"]


def rows(day_index: int, start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "v": [i * 0.5 for i in ids], "name": [None if i % 7 == 0 else f"n{i}" for i in ids],
                     "dt": [DAYS[day_index]] * n}, schema=SCHEMA)


def ordered(table: pa.Table) -> pa.Table:
    return table.sort_by([(c, "ascending") for c in table.column_names])


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    return catalog


@pytest.fixture
def append_table(catalog):
    """Three daily partitions of three files each (ids 0..299 per day, one file per 100)."""
    table = catalog.create_table("db.events", SCHEMA, partition_keys=["dt"])
    for d in range(3):
        for k in range(3):
            table.write(rows(d, k * 100, 100))
    return table.refresh()


def kinds(catalog) -> dict:
    """Tables of every read path: merged buckets, compacted (raw) buckets, deletion vectors,
    ORC and Avro files, a renamed column (schema evolution)."""
    out = {}
    pk = catalog.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": "2"})
    pk.write(rows(0, 0, 50))
    pk.write(rows(0, 25, 50).set_column(1, "v", pa.array([-1.0] * 50)))
    out["pk merged"] = pk.refresh()
    done = catalog.create_table("db.pk_compacted", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "2"})
    done.write(rows(0, 0, 50))
    done.write(rows(1, 0, 50))
    done.write(rows(0, 10, 20).set_column(1, "v", pa.array([9.0] * 20)))
    done.refresh().compact(full=True)
    out["pk compacted"] = done.refresh()
    dv = catalog.create_table("db.pk_dv", SCHEMA, primary_keys=["id"], options={"bucket": "1",
                              "deletion-vectors.enabled": "true"})
    dv.write(rows(0, 0, 40))
    dv.refresh().compact(full=True)
    dv.refresh().write(rows(1, 5, 10))
    dv.refresh().compact(full=False)
    out["deletion vectors"] = dv.refresh()
    for fmt in ("orc", "avro"):
        t = catalog.create_table(f"db.{fmt}", SCHEMA, partition_keys=["dt"], options={"file.format": fmt})
        t.write(rows(0, 0, 30))
        t.write(rows(2, 0, 30))
        out[fmt] = t.refresh()
    renamed = catalog.create_table("db.renamed", SCHEMA, partition_keys=["dt"])
    renamed.write(rows(1, 0, 30))
    renamed = renamed.alter([RenameColumn("v", "amount")])
    renamed.write(rows(1, 30, 10).rename_columns(["id", "amount", "name", "dt"]))
    out["renamed column"] = renamed.refresh()
    return out


def test_every_way_of_consuming_a_scan_gives_the_rows_of_read(catalog, append_table):
    for name, table in {"append": append_table, **kinds(catalog)}.items():
        expected = ordered(table.read())
        scan = table.scan()  # noqa: F841 - DuckDB finds it by name
        via_duckdb_stream = duckdb.sql("select * from scan").to_arrow_table()
        dataset = table.scan().to_pyarrow_dataset()
        via_duckdb_dataset = duckdb.sql("select * from dataset").to_arrow_table()
        for how, got in {"to_arrow": table.scan().to_arrow(), "C stream": pa.table(table.scan()),
                         "DuckDB (stream)": via_duckdb_stream, "DuckDB (dataset)": via_duckdb_dataset,
                         "pyarrow dataset": dataset.to_table(),
                         "Polars": table.scan().to_polars().collect().to_arrow(),
                         "pandas": pa.Table.from_pandas(table.scan().to_pandas(), preserve_index=False)}.items():
            got = pa.Table.from_batches(got.to_batches(), schema=got.schema)
            assert ordered(got.cast(expected.schema)).equals(expected), (name, how)
        assert table.scan().count_rows() == expected.num_rows, name


def test_a_scan_reads_its_snapshot_however_the_table_moves_on(append_table):
    scan = append_table.scan(filter=col("dt") == DAYS[0])
    before = scan.count_rows()
    append_table.write(rows(0, 1000, 10))
    assert scan.count_rows() == before == 300
    assert append_table.refresh().scan(filter=col("dt") == DAYS[0]).count_rows() == 310
    assert append_table.scan(snapshot_id=1).count_rows() == 100


def test_the_scan_s_own_columns_and_filter_decide_what_duckdb_reads_from_the_stream(append_table):
    scan = append_table.scan(columns=["id", "v"], filter=(col("dt") == DAYS[1]) & (col("id") >= 200))
    assert scan.schema.names == ["id", "v"]
    with FileOpens(append_table.path) as opens:
        got = duckdb.sql("select count(*), sum(v) from scan").fetchall()
    assert got == [(100, sum(i * 0.5 for i in range(200, 300)))]
    assert len(opens.data_files) == 1 and all(f.startswith(f"dt={DAYS[1]}/") for f in opens.data_files)
    assert len(scan.plan_files()) == 1


def test_polars_projection_and_filters_reach_split_planning(append_table):
    lazy = pl.scan_pyarrow_dataset(append_table.scan())
    with FileOpens(append_table.path) as opens:
        got = lazy.filter((pl.col("dt") == DAYS[2]) & (pl.col("id") < 100)).select("id", "v").collect()
    assert got.columns == ["id", "v"] and got.height == 100
    assert len(opens.data_files) == 1, opens.files  # one partition, and in it the one file holding ids < 100
    with FileOpens(append_table.path) as opens:
        assert append_table.scan().to_polars().filter(pl.col("dt") == DAYS[0]).select(pl.len()).collect().item() == 300
    assert {f.split("/")[0] for f in opens.data_files} == {f"dt={DAYS[0]}"}


def test_duckdb_pushes_its_filters_and_projection_into_the_dataset(append_table):
    connection = append_table.scan().to_duckdb("events")
    with FileOpens(append_table.path) as opens:
        got = connection.sql(f"select count(*), sum(v) from events where dt = '{DAYS[0]}' and id < 150").fetchall()
    assert got == [(150, sum(i * 0.5 for i in range(150)))]
    assert {f.split("/")[0] for f in opens.data_files} == {f"dt={DAYS[0]}"}  # other partitions never opened
    dataset = append_table.scan(columns=["id"], filter=col("dt") == DAYS[2]).to_pyarrow_dataset()
    assert dataset.schema.names == ["id", "dt"]  # the filter's column stays (a dataset filters its own columns)
    assert dataset.count_rows() == 300


def test_merged_buckets_are_read_by_the_engine_and_compacted_ones_as_files(catalog):
    import pyarrow.dataset as ds

    tables = kinds(catalog)
    compacted = tables["pk compacted"].scan().to_pyarrow_dataset()
    assert isinstance(compacted, ds.FileSystemDataset)  # one file per bucket, no retraction: read as stored
    merged = tables["pk merged"].scan().to_pyarrow_dataset()
    assert isinstance(merged, ds.InMemoryDataset)  # two files per bucket: merged by this engine
    assert merged.to_table().num_rows == 75 and pc.sum(merged.to_table()["v"]).as_py() == \
        sum(i * 0.5 for i in range(25)) - 50
    assert isinstance(tables["avro"].scan().to_pyarrow_dataset(), ds.InMemoryDataset)  # pyarrow reads no Avro


_PROGRAM = """
import os, resource, sys
import duckdb, polars, psutil, pyarrow as pa, pyarrow.compute as pc
from paimonflow.core import Catalog
from paimonflow.core.predicate import col
table = Catalog(sys.argv[1]).get_table("db.big")
day, how = sys.argv[2], sys.argv[3]
if how == "limited":  # an address-space limit that the whole table does not fit in
    limit = psutil.Process().memory_info().vms + 200 * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        table.read()
        print("read")
    except MemoryError:
        print("MemoryError", end=" ")
    total = 0.0
    for batch in table.scan(columns=["v"], filter=col("dt") == day).to_batches():
        total += pc.sum(batch["v"]).as_py()
    print(total)
    sys.exit()
connection = duckdb.connect()
connection.sql("select 1").fetchall()  # the engines started before the measure
polars.DataFrame({"a": [1]}).lazy().select(polars.col("a").sum()).collect()
with open("/proc/self/clear_refs", "w") as reset:  # the peak (VmHWM) starts again from here
    reset.write("5")
before = psutil.Process().memory_info().rss
if how == "read":
    whole = table.read()
    answer = pc.sum(whole.filter(pc.field("dt") == day)["v"]).as_py()
elif how == "duckdb":
    table.scan().to_duckdb("big", connection)
    answer = connection.sql(f"select sum(v) from big where dt = '{day}'").fetchall()[0][0]
else:
    answer = table.scan().to_polars().filter(polars.col("dt") == day).select(polars.col("v").sum()).collect().item()
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(answer, peak * 1024 - before)
"""


def test_a_table_larger_than_the_memory_allowed_is_aggregated_through_the_scan(tmp_path):
    """A ~250 MB table (in memory): under an address-space limit of 200 MB more than the loaded
    libraries, read() of it fails and the scan streams one partition's column through; DuckDB's
    and Polars' aggregates of one partition through the scan grow the process by a small part of
    what read() grows it by (peak RSS, each in its own process; DuckDB under an address-space
    limit can hang while it starts threads, so it is measured, not limited)."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    big = catalog.create_table("db.big", SCHEMA, partition_keys=["dt"])
    n = 500_000
    payload = pa.array(["x" * 100] * n)
    for d, day in enumerate([*DAYS, "2026-11-04"]):
        ids = pa.array(range(d * n, (d + 1) * n), pa.int64())
        big.write(pa.table({"id": ids, "v": pc.multiply(ids, 0.5), "name": payload, "dt": [day] * n}, schema=SCHEMA))
    expected = sum(range(2 * n, 3 * n)) * 0.5
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"}

    def run(how: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", _PROGRAM, str(tmp_path / "wh"), DAYS[2], how],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    assert run("limited") == ["MemoryError", str(expected)]
    growth = {}
    for how in ("read", "duckdb", "polars"):
        answer, grown = run(how)
        assert float(answer) == expected, how
        growth[how] = int(grown)
    assert growth["read"] > 250 * 2**20, growth  # the whole table was loaded
    print(growth)
    assert growth["duckdb"] < growth["read"] / 4 and growth["polars"] < growth["read"] / 4, growth


def test_bad_scans_fail_in_one_typed_line(append_table):
    with pytest.raises(SchemaError, match="unknown columns"):
        append_table.scan(columns=["nope"])
    with pytest.raises(SchemaError):
        append_table.scan(filter=col("nope") == 1)
    with pytest.raises(SchemaError):
        append_table.scan(filter=col("id") == "abc")  # a value the column's type cannot hold
    scan = append_table.scan(columns=["id"])
    with pytest.raises(SchemaError, match="the scan reads"):
        list(scan.to_batches(columns=["v"]))
    with pytest.raises(SchemaError, match="the scan reads"):
        list(scan.to_batches(filter=pc.field("v") > 1))
    with pytest.raises(InvalidArgumentError, match="filter must be"):
        list(scan.to_batches(filter="id > 1"))


def test_batches_keep_to_their_size_and_head_stops_reading(append_table):
    sizes = [b.num_rows for b in append_table.scan().to_batches(batch_size=40)]
    assert max(sizes) <= 40 and sum(sizes) == 900
    with FileOpens(append_table.path) as opens:
        assert append_table.scan().head(5).num_rows == 5
    assert len(opens.data_files) == 1


# -- Arrow expressions: what is pushed down is implied by the expression -----------------------


def test_the_pushed_down_predicate_of_each_kind_of_expression():
    day = datetime.date(2026, 11, 21)
    assert str(pushdown(pc.field("dt") == pa.scalar(day))) == str(col("dt") == day)
    assert str(pushdown(pc.scalar(3) < pc.field("id"))) == str(col("id") > 3)
    assert str(pushdown(pc.field("id").isin([1, 2]))) == str(col("id").isin([1, 2]))
    assert pushdown(pc.field("v").is_null(nan_is_null=True)) is None  # NaN is not a null to a predicate
    assert pushdown(pc.field("id").cast(pa.int32()) > 1) is None
    kept = pushdown((pc.field("id") > 1) & (pc.utf8_length(pc.field("name")) > 2))
    assert str(kept) == str(col("id") > 1)  # the conjunct not understood is left to the rows
    assert pushdown((pc.field("id") > 1) | (pc.utf8_length(pc.field("name")) > 2)) is None
    assert pushdown(~(pc.field("id") > 1) & pc.field("name").is_valid()) is not None
    assert referenced_columns((pc.field("a") > 1) & pc.field("b").is_null()) == ["a", "b"]


_field = st.sampled_from(["id", "v", "name", "dt"])
_values = {"id": st.integers(-5, 320), "v": st.floats(-5, 160, allow_nan=False), "name": st.sampled_from(
    ["n1", "n150", "zz", "n299"]), "dt": st.sampled_from([*DAYS, "2026-12-31"])}


@st.composite
def expressions(draw, depth: int = 2) -> pc.Expression:
    if depth == 0 or draw(st.booleans()):
        name = draw(_field)
        kind = draw(st.sampled_from(["cmp", "isin", "null", "valid", "cmp_flipped"]))
        if kind == "null":
            return pc.field(name).is_null()
        if kind == "valid":
            return pc.field(name).is_valid()
        if kind == "isin":
            values = draw(st.lists(_values[name], min_size=1, max_size=3))
            return pc.field(name).isin(values + ([None] if draw(st.booleans()) else []))
        op = draw(st.sampled_from(["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]))
        value = pc.scalar(draw(_values[name]))
        return getattr(value, op)(pc.field(name)) if kind == "cmp_flipped" else getattr(pc.field(name), op)(value)
    left, right = draw(expressions(depth - 1)), draw(expressions(depth - 1))
    how = draw(st.sampled_from(["and", "or", "not", "opaque"]))
    if how == "not":
        return ~left
    if how == "opaque":  # a function no predicate takes: never pushed down, still applied
        return left & (pc.utf8_length(pc.field("name")) > draw(st.integers(0, 4)))
    return left & right if how == "and" else left | right


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expression=expressions())
def test_any_arrow_filter_gives_exactly_the_rows_pyarrow_keeps(append_table, expression):
    expected = ordered(append_table.read().filter(expression).select(["id", "v"]))
    got = pa.Table.from_batches(list(append_table.scan().to_batches(columns=["id", "v"], filter=expression)),
                                schema=expected.schema)
    assert ordered(got).equals(expected), str(expression)


def test_a_scan_of_a_table_on_an_object_store_reads_through_duckdb_and_polars(s3_bucket, s3_storage_options):
    catalog = Catalog(f"s3://{s3_bucket}/wh", storage_options=s3_storage_options)
    catalog.create_database("db")
    table = catalog.create_table("db.events", SCHEMA, partition_keys=["dt"])
    for d in range(3):
        table.write(rows(d, 0, 100))
    table = table.refresh()
    dataset = table.scan().to_pyarrow_dataset()
    assert dataset.files and all(not f.startswith("s3://") for f in dataset.files)  # paths of pyarrow's S3 file system
    connection = table.scan().to_duckdb("events")
    assert connection.sql(f"select count(*), sum(v) from events where dt = '{DAYS[1]}'").fetchall() == \
        [(100, sum(i * 0.5 for i in range(100)))]
    got = table.scan().to_polars().filter(pl.col("id") < 10).collect()
    assert got.height == 30 and ordered(got.to_arrow().cast(SCHEMA)).equals(
        ordered(table.read(filter=col("id") < 10)))


def test_a_scan_pickles_with_its_snapshot_held(append_table):
    """Polars may serialize its plan with the scan in it; the copy reads the same snapshot."""
    import pickle

    scan = append_table.scan(columns=["id"], filter=col("dt") == DAYS[0])
    append_table.write(rows(0, 5000, 5))
    copy = pickle.loads(pickle.dumps(scan))
    assert copy.snapshot_id == scan.snapshot_id and copy.to_arrow().equals(scan.to_arrow())
    assert copy.count_rows() == 300
