"""An overwrite that replaces the partitions a predicate selects (what a Dagster time window or a
set of partition keys maps to), and the per-commit statistics read from a snapshot's delta."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import SchemaError
from paimonflow.core.meta.snapshots import CommitKind
from paimonflow.core.predicate import col

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.float64())])


def rows(dt: str, ids, v: float = 1.0) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [v] * len(ids)}, schema=SCHEMA)


@pytest.fixture(params=["append", "primary-key"])
def table(request, tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    keys = ["id", "dt"] if request.param == "primary-key" else []
    t = catalog.create_table("db.t", SCHEMA, primary_keys=keys, partition_keys=["dt"],
                             options={"bucket": "1"} if keys else {})
    t.write(pa.concat_tables([rows(d, range(3)) for d in ("11-01", "11-02", "11-03", "11-04")]))
    return t


def data_files(t) -> set[str]:
    return {os.path.join(d, f) for d, _, files in os.walk(t.path) for f in files if f.startswith("data-")}


def test_the_partitions_in_the_window_are_replaced_and_the_others_kept(table):
    window = (col("dt") >= "11-02") & (col("dt") < "11-04")
    result = table.write(rows("11-02", range(10, 12), 2.0), overwrite=window)
    assert result.commit_kind is CommitKind.OVERWRITE
    got = sorted((r["dt"], r["id"]) for r in table.read().to_pylist())
    # 11-03 had rows and is in the window: replaced by nothing; 11-01 and 11-04 untouched
    assert got == [("11-01", 0), ("11-01", 1), ("11-01", 2), ("11-02", 10), ("11-02", 11),
                   ("11-04", 0), ("11-04", 1), ("11-04", 2)]
    stats = table.delta_stats(result.snapshot_id)
    assert (stats.added_rows, stats.added_files, stats.deleted_rows) == (2, 1, 6)
    assert stats.added_bytes > 0 and stats.deleted_files == 2


def test_rows_outside_the_window_are_refused_and_nothing_is_left_behind(table):
    before = (table.snapshot_manager.latest_id(), data_files(table))
    with pytest.raises(SchemaError, match=r"partition .*11-05"):
        table.write(pa.concat_tables([rows("11-02", [1]), rows("11-05", [1])]), overwrite=col("dt") == "11-02")
    assert (table.snapshot_manager.latest_id(), data_files(table)) == before
    assert table.read().num_rows == 12


def test_a_predicate_on_a_non_partition_column_is_refused_before_writing(table):
    before = data_files(table)
    with pytest.raises(SchemaError, match="only name partition columns; \\['v'\\]"):
        table.write(rows("11-02", [1]), overwrite=col("v") > 0)
    assert data_files(table) == before


def test_a_window_over_no_partition_adds_its_rows(table):
    result = table.write(rows("12-01", [7]), overwrite=col("dt").isin(["12-01", "12-02"]))
    assert result.commit_kind is CommitKind.OVERWRITE and table.delta_stats(result.snapshot_id).deleted_rows == 0
    assert table.read().num_rows == 13
