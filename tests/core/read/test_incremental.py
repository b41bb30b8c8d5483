"""Incremental reads between snapshots: changelog, delta and diff modes."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def catalog(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def changes(t, a, b, **kw) -> list[tuple]:
    return sorted((r["rowkind"], r["id"], r["v"]) for r in t.read_changes(a, b, **kw).to_pylist())


def history(t):
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    first = t.latest_snapshot().id
    t.write(pa.table({"id": [1, 2, 4], "v": ["a2", None, "d"]}, schema=SCHEMA), row_kinds=pa.array(["+U", "-D", "+I"]))
    t.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))  # an update that changes nothing
    return first, t.latest_snapshot().id


def test_diff_mode_for_primary_key_tables(catalog):
    t = catalog.create_table("db.d", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    first, last = history(t)
    t.compact(full=True)
    assert changes(t, first, last) == [("+I", 4, "d"), ("+U", 1, "a2"), ("-D", 2, "b"), ("-U", 1, "a")]
    assert changes(t, first, t.latest_snapshot().id) == changes(t, first, last)  # compaction changes nothing
    # delta mode shows the rows as written, unmerged
    assert ("+I", 3, "c") in changes(t, first, last, mode="delta")


def test_changelog_mode_reads_the_changelog_files(catalog):
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "lookup",
                                      "changelog-producer.row-deduplicate": "true"})
    first, last = history(t)
    assert changes(t, first, last) == [("+I", 4, "d"), ("+U", 1, "a2"), ("-D", 2, "b"), ("-U", 1, "a")]


def test_append_tables_read_new_rows_and_bad_ranges_are_refused(catalog):
    t = catalog.create_table("db.a", SCHEMA)
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2, 3], "v": ["b", "c"]}, schema=SCHEMA))
    assert changes(t, 1, 2) == [("+I", 2, "b"), ("+I", 3, "c")]
    assert t.read_changes(1, 2, columns=["v"]).column_names == ["rowkind", "v"]
    with pytest.raises(InvalidArgumentError):
        t.read_changes(2, 1)
    with pytest.raises(InvalidArgumentError):
        t.read_changes(1, 2, mode="sideways")


def test_overwrite_shows_as_deletes_in_diff_mode(catalog):
    t = catalog.create_table("db.o", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    t.truncate()
    assert changes(t, 1, 2) == [("-D", 1, "a"), ("-D", 2, "b")]


def test_audit_log_shows_each_rows_kind(catalog):
    t = catalog.create_table("db.audit", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    t.write(pa.table({"id": [1, 2], "v": ["a2", None]}, schema=SCHEMA), row_kinds=pa.array(["+U", "-D"]))
    log = sorted((r["rowkind"], r["id"], r["v"]) for r in t.system_table("audit_log").to_pylist())
    assert log == [("+I", 3, "c"), ("+U", 1, "a2")]
    a = catalog.create_table("db.audit_append", SCHEMA)
    assert a.system_table("audit_log").column_names == ["rowkind", "id", "v"]
    a.write(pa.table({"id": [1], "v": ["x"]}, schema=SCHEMA))
    assert a.system_table("$audit_log").to_pylist() == [{"rowkind": "+I", "id": 1, "v": "x"}]


def test_diff_of_a_partitioned_table_with_not_null_partition_keys(tmp_path):
    """One bucket merged from several files, another read from one: both sides of the diff must
    agree on the partition column's nullability."""
    from paimonflow.core import Catalog

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                        pa.field("dt", pa.string(), nullable=False)])
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    t = c.create_table("db.p", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                       options={"bucket": "1", "write-only": "true"})
    t.write(pa.table({"id": [0, 1, 2], "v": ["a"] * 3, "dt": ["d"] * 3}, schema=schema))
    t.write(pa.table({"id": [1, 7], "v": ["b"] * 2, "dt": ["d"] * 2}, schema=schema))
    got = t.read_changes(1, 2, mode="diff")
    assert sorted(zip(got.column("rowkind").to_pylist(), got.column("id").to_pylist(), strict=True)) == [
        ("+I", 7), ("+U", 1), ("-U", 1)]


def test_diff_from_the_empty_table(tmp_path):
    from paimonflow.core import Catalog

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    t = c.create_table("db.p", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.write(pa.table({"id": [2], "v": ["B"]}, schema=schema))
    got = t.read_changes(0, 2, mode="diff")
    assert sorted(zip(got.column("rowkind").to_pylist(), got.column("v").to_pylist(), strict=True)) == [
        ("+I", "B"), ("+I", "a")]


def test_delta_across_partitions_read_from_different_files(tmp_path):
    from paimonflow.core import Catalog

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                        pa.field("dt", pa.string(), nullable=False)])
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    t = c.create_table("db.p", schema, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["a"], "dt": ["x"]}, schema=schema))
    t.write(pa.table({"id": [2, 3], "v": ["b", "c"], "dt": ["x", "y"]}, schema=schema))
    got = t.read_changes(0, 2, mode="delta")
    assert sorted(got.column("id").to_pylist()) == [1, 2, 3]
