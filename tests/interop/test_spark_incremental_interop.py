"""The ``paimonflow`` Spark source's batch ``incremental-between`` against Apache Paimon's own
batch read of the same option (Java core 0.9): without ``with-rowkind`` both return the range's
changes merged per key (the last one wins, through the merge engine) with retractions dropped,
the scan mode ``auto`` meaning ``changelog`` with a changelog producer and ``delta`` without, an
OVERWRITE snapshot in the range contributing nothing. With ``with-rowkind`` the source returns
every change row with its kind, which is what docs/spark.md's table says."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from tests.interop.java_peer import without_kinds
from tests.interop.oracle import canonical

pytestmark = [pytest.mark.interop, pytest.mark.spark]

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64()),
                    pa.field("dt", pa.string(), nullable=False)])

CASES = {  # name: (primary keys, options)
    "pk": (["id", "dt"], {"bucket": "2"}),
    "pk-input-changelog": (["id", "dt"], {"bucket": "2", "changelog-producer": "input"}),
    "pk-partial-update": (["id", "dt"], {"bucket": "2", "merge-engine": "partial-update", "ignore-delete": "true"}),
    "append": ([], {}),
}


def rows(ids, v, n, dt="a"):
    return pa.table({"id": list(ids), "v": [v] * len(ids), "n": list(n), "dt": [dt] * len(ids)}, schema=SCHEMA)


def history(table) -> None:
    """Snapshots 1..5: 1 000 rows; 10 of them upserted; 3 upserted again and 2 deleted; an
    overwrite of partition b; a partial row for key 5 (v only)."""
    table.write(rows(range(1000), "first", range(1000)))
    table.write(rows(range(10), "second", range(10, 20)))
    if table.primary_keys:
        table.write(rows([1, 2, 3, 7, 8], "third", [0, 0, 0, 0, 0]), row_kinds=["+U", "+U", "+U", "-D", "-D"])
    else:
        table.write(rows([1, 2, 3], "third", [0, 0, 0]))
    table.write(rows([1, 2], "over", [5, 5], dt="b"), overwrite={"dt": "b"})
    partial = pa.table({"id": [5], "v": ["fifth"], "n": pa.array([None], pa.int64()), "dt": ["a"]}, schema=SCHEMA)
    table.write(partial)


@pytest.mark.parametrize("case", list(CASES))
def test_batch_incremental_between_agrees_with_java(spark, java_peer, tmp_path, case):
    keys, options = CASES[case]
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=keys, partition_keys=["dt"], options=options)
    history(table)
    table = catalog.get_table("db.t")
    ranges = ["1,3", "1,5", "0,2", "3,4"]
    for between in ranges:
        java_peer.read(catalog.warehouse, "db.t", options={"incremental-between": between})
    java = [without_kinds(t) for t in java_peer.run()]
    for between, theirs in zip(ranges, java, strict=True):
        ours = (spark.read.format("paimonflow").option("warehouse", catalog.warehouse)
                .option("incremental-between", between).load("db.t"))
        assert "rowkind" not in ours.columns
        got = pa.Table.from_pylist([r.asDict() for r in ours.collect()], schema=SCHEMA)
        assert canonical(got) == canonical(theirs.select(SCHEMA.names)), (case, between)
    if keys:  # the upserts of snapshot 2 are 10 rows, their new values, not 20 old and new
        first = {r["id"]: r for r in java[0].to_pylist()}
        assert {k: (first[k]["v"], first[k]["n"]) for k in (0, 1, 9)} == {0: ("second", 10), 1: ("third", 0),
                                                                           9: ("second", 19)}
        assert (7 in first) == (options.get("ignore-delete") == "true")  # deleted in the range: no row


def test_with_rowkind_returns_every_change_with_its_kind(spark, tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2", "changelog-producer": "input"})
    history(table)
    got = (spark.read.format("paimonflow").option("warehouse", catalog.warehouse).option("incremental-between", "1,3")
           .option("with-rowkind", "true").load("db.t"))
    kinds = sorted((r["rowkind"], r["id"]) for r in got.collect())
    assert kinds == sorted([("+I", i) for i in range(10)] + [("+U", 1), ("+U", 2), ("+U", 3), ("-D", 7), ("-D", 8)])


def test_diff_mode_without_rowkind_returns_the_new_values_only(spark, tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2"})
    history(table)
    read = (spark.read.format("paimonflow").option("warehouse", catalog.warehouse).option("incremental-between", "1,3")
            .option("incremental-between-scan-mode", "diff"))
    got = {r["id"]: (r["v"], r["n"]) for r in read.load("db.t").collect()}
    assert got == {0: ("second", 10), 1: ("third", 0), 2: ("third", 0), 3: ("third", 0), 4: ("second", 14),
                   5: ("second", 15), 6: ("second", 16), 9: ("second", 19)}
    kinds = sorted((r["rowkind"], r["id"]) for r in read.option("with-rowkind", "true").load("db.t").collect())
    assert kinds.count(("-U", 1)) == 1 and ("-D", 7) in kinds and len(kinds) == 2 * 8 + 2
