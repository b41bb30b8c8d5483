"""Interop, both ways, with pypaimon 2.1.0 (Apache Paimon's Python SDK) as the peer.

Every scenario writes several commits (inserts, updates, deletes) with paimonflow, with pypaimon,
or alternately with both, then reads with both; both must return exactly the rows a plain
Python model predicts, for every primitive type, nulls and long strings included.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

from .dataset import SCENARIOS, SCHEMA, Model, random_commits
from .oracle import Oracle, canonical

pytestmark = pytest.mark.interop

WRITERS = ["paimonflow", "pypaimon", "alternating"]


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("name,primary_key,partitioned,options", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_both_readers_agree_with_the_model(tmp_path, writer, name, primary_key, partitioned, options):
    rng = random.Random(f"{name}-{writer}")
    warehouse = tmp_path / "wh"
    identifier = "db.t"
    table_options = dict(options)
    if primary_key:
        table_options["rowkind.field"] = "op"
    pks = ["id", "dt"] if primary_key else []
    parts = ["dt"] if partitioned else []
    commits = random_commits(rng, primary_key)
    model = Model(primary_key)
    oracle = Oracle(tmp_path)

    catalog = Catalog(str(warehouse))
    if writer == "pypaimon":
        oracle.create_table(warehouse, identifier, SCHEMA, primary_keys=pks, partition_keys=parts, options=table_options)
        for batch in commits:
            oracle.write(warehouse, identifier, batch)
        oracle.run()
    else:
        catalog.create_database("db")
        catalog.create_table(identifier, SCHEMA, primary_keys=pks, partition_keys=parts, options=table_options)
        for i, batch in enumerate(commits):
            if writer == "alternating" and i % 2 == 1:
                oracle.write(warehouse, identifier, batch)
                oracle.run()
            else:
                catalog.get_table(identifier).write(batch)
    for batch in commits:
        model.apply(batch)

    columns = [f.name for f in SCHEMA if f.name != "op"]
    table = catalog.get_table(identifier)
    ours = table.read()
    oracle.read(warehouse, identifier)
    oracle.read(warehouse, identifier, snapshot_id=1)
    theirs, theirs_at_one = oracle.run()
    expected = model.expected(columns)
    assert canonical(ours, columns) == expected
    assert canonical(theirs, columns) == expected
    assert len(table.snapshot_manager.list_ids()) == len(commits)
    # time travel agrees too
    assert canonical(table.read(snapshot_id=1), columns) == canonical(theirs_at_one, columns)


def test_pypaimon_reads_our_overwrite_and_truncate(tmp_path):
    warehouse = tmp_path / "wh"
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    schema = pa.schema([("dt", pa.string()), ("n", pa.int64())])
    t = catalog.create_table("db.o", schema, partition_keys=["dt"])
    t.write(pa.table({"dt": ["a", "b"], "n": [1, 2]}, schema=schema))
    t.write(pa.table({"dt": ["a"], "n": [3]}, schema=schema), overwrite={"dt": "a"})
    oracle = Oracle(tmp_path)
    oracle.read(warehouse, "db.o")
    (theirs,) = oracle.run()
    assert canonical(theirs) == canonical(t.read()) == [("a", 3), ("b", 2)]
    t.truncate()
    oracle.read(warehouse, "db.o")
    oracle.read(warehouse, "db.o", snapshot_id=2)
    empty, before = oracle.run()
    assert empty.num_rows == 0 and canonical(before) == [("a", 3), ("b", 2)]


def test_we_read_pypaimon_overwrites(tmp_path):
    warehouse = tmp_path / "wh"
    schema = pa.schema([("dt", pa.string()), ("n", pa.int64())])
    oracle = Oracle(tmp_path)
    oracle.create_table(warehouse, "db.o", schema, partition_keys=["dt"])
    oracle.write(warehouse, "db.o", pa.table({"dt": ["a", "b"], "n": [1, 2]}, schema=schema))
    oracle.write(warehouse, "db.o", pa.table({"dt": ["a"], "n": [5]}, schema=schema), overwrite={"dt": "a"})
    oracle.run()
    t = Catalog(str(warehouse)).get_table("db.o")
    assert canonical(t.read()) == [("a", 5), ("b", 2)]
    assert t.latest_snapshot().commit_kind.value == "OVERWRITE"


@pytest.mark.parametrize("file_format", ["orc", "avro"])
def test_other_file_formats_both_ways(tmp_path, file_format):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("d", pa.float64())])
    data = pa.table({"id": list(range(50)), "s": [f"v{i}" if i % 7 else None for i in range(50)],
                     "d": [i / 3 for i in range(50)]}, schema=schema)
    ours_wh, theirs_wh = tmp_path / "ours", tmp_path / "theirs"
    catalog = Catalog(str(ours_wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "2", "file.format": file_format})
    t.write(data)
    t.write(data.slice(0, 10), row_kinds="-D")
    oracle = Oracle(tmp_path)
    oracle.read(ours_wh, "db.t")
    oracle.create_table(theirs_wh, "db.t", schema, primary_keys=["id"], options={"bucket": "2", "file.format": file_format})
    oracle.write(theirs_wh, "db.t", data)
    (theirs,) = oracle.run()
    expected = canonical(data.slice(10))
    assert canonical(theirs) == expected
    assert canonical(Catalog(str(theirs_wh)).get_table("db.t").read()) == canonical(data)


def test_schema_evolution_both_ways(tmp_path):
    from paimonflow.core.meta.schema_changes import AddColumn, DropColumn, RenameColumn

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int32())])
    first = pa.table({"id": [1, 2], "a": ["x", "y"], "b": [10, 20]}, schema=schema)
    # ours evolved, pypaimon reads
    ours = tmp_path / "ours"
    catalog = Catalog(str(ours))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write(first)
    t = t.alter([AddColumn("c", pa.float64()), RenameColumn("a", "a2"), DropColumn("b")])
    t.write(pa.table({"id": [2, 3], "a2": ["Y", "z"], "c": [2.5, 3.5]}, schema=t.arrow_schema))
    oracle = Oracle(tmp_path)
    oracle.read(ours, "db.t")
    # theirs evolved, we read
    theirs = tmp_path / "theirs"
    oracle.create_table(theirs, "db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    oracle.write(theirs, "db.t", first)
    oracle.alter_table(theirs, "db.t", [{"kind": "add_column", "name": "c", "type": "DOUBLE"},
                                        {"kind": "rename_column", "name": "a", "new_name": "a2"},
                                        {"kind": "drop_column", "name": "b"}])
    (read_by_them,) = oracle.run()
    expected = [(1, "x", None), (2, "Y", 2.5), (3, "z", 3.5)]
    assert canonical(read_by_them, ["id", "a2", "c"]) == expected
    assert canonical(t.read(), ["id", "a2", "c"]) == expected
    evolved = Catalog(str(theirs)).get_table("db.t")
    assert evolved.schema.id == 1 and evolved.schema.highest_field_id == 3  # one alter; ids never reused
    evolved.write(pa.table({"id": [2, 3], "a2": ["Y", "z"], "c": [2.5, 3.5]}, schema=evolved.arrow_schema))
    assert canonical(evolved.read(), ["id", "a2", "c"]) == expected


@pytest.mark.parametrize("primary_key", [True, False], ids=["pk", "append"])
def test_time_travel_across_schema_evolution_both_ways(tmp_path, primary_key):
    """A read by snapshot id or tag uses the schema that snapshot was committed under (pypaimon's
    and Java's time travel), so after add/rename/drop snapshot 1 still has ``a`` and ``b``;
    incremental reads (pypaimon's ``incremental-between-timestamp``, our ``read_changes``) use
    the table's latest schema."""
    import time

    from paimonflow.core.meta.schema_changes import AddColumn, DropColumn, RenameColumn

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int32())])
    evolved_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a2", pa.string()), ("c", pa.float64())])
    first = pa.table({"id": [1, 2], "a": ["x", "y"], "b": [10, 20]}, schema=schema)
    second = pa.table({"id": [2, 3], "a2": ["Y", "z"], "c": [2.5, 3.5]}, schema=evolved_schema)
    keys = {"primary_keys": ["id"], "options": {"bucket": "1"}} if primary_key else {}
    travels = [{"snapshot_id": 1}, {"tag": "v1"}, {}]
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    catalog = Catalog(str(ours))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, **keys)
    t.write(first)
    t.tags.create("v1")
    time.sleep(0.005)  # distinct commit times for the incremental read by timestamps
    t = t.alter([AddColumn("c", pa.float64()), RenameColumn("a", "a2"), DropColumn("b")])
    t.write(second)
    oracle = Oracle(tmp_path)
    for travel in travels:
        oracle.read(ours, "db.t", **travel)
    oracle.create_table(theirs, "db.t", schema, **keys)
    oracle.write(theirs, "db.t", first)
    oracle.create_tag(theirs, "db.t", "v1")
    oracle.alter_table(theirs, "db.t", [{"kind": "add_column", "name": "c", "type": "DOUBLE"},
                                        {"kind": "rename_column", "name": "a", "new_name": "a2"},
                                        {"kind": "drop_column", "name": "b"}])
    oracle.write(theirs, "db.t", second)
    for travel in travels:
        oracle.read(theirs, "db.t", **travel)
    results = oracle.run()
    ours_by_them, theirs_by_them = results[:3], results[3:]
    theirs_table = Catalog(str(theirs)).get_table("db.t")
    old_rows = [(1, "x", 10), (2, "y", 20)]
    for travel, by_them, by_us_theirs in zip(travels[:2], ours_by_them, theirs_by_them, strict=False):
        assert by_them.column_names == ["id", "a", "b"] == by_us_theirs.column_names, travel
        for table in (by_them, by_us_theirs, t.read(**travel), theirs_table.read(**travel)):
            assert table.column_names == ["id", "a", "b"], travel
            assert canonical(table) == old_rows, travel
    latest = [(1, "x", None), (2, "Y", 2.5), (3, "z", 3.5)] if primary_key else \
        [(1, "x", None), (2, "Y", 2.5), (2, "y", None), (3, "z", 3.5)]
    for table in (ours_by_them[2], theirs_by_them[2], t.read(), theirs_table.read()):
        assert table.column_names == ["id", "a2", "c"]
        assert canonical(table) == latest
    # incremental: the rows snapshot 2 added, with the latest columns, in both engines
    windows = {}
    for warehouse, table in ((ours, t), (theirs, theirs_table)):
        s1, s2 = (table.snapshot_manager.snapshot(i).time_millis for i in (1, 2))
        assert s1 < s2
        windows[warehouse] = f"{s1},{s2}"
        oracle.read(warehouse, "db.t", options={"incremental-between-timestamp": windows[warehouse]})
    added = [(2, "Y", 2.5), (3, "z", 3.5)]
    for table in (*oracle.run(), t.read_changes(1, 2, mode="delta"), theirs_table.read_changes(1, 2, mode="delta")):
        assert [c for c in table.column_names if c != "rowkind"] == ["id", "a2", "c"]
        assert canonical(table, ["id", "a2", "c"]) == added


def write_both(tmp_path, schema: pa.Schema, batches: list[pa.Table], *, primary_keys=(), options=None):
    """Write ``batches`` into one table with paimonflow and into another with pypaimon (same
    schema and options, one commit per batch); both read both. Returns
    ``(our table, their table opened by us, ours read by pypaimon, theirs read by pypaimon)``."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    catalog = Catalog(str(ours))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=list(primary_keys), options=dict(options or {}))
    for batch in batches:
        t.write(batch)
    oracle = Oracle(tmp_path)
    oracle.read(ours, "db.t")
    oracle.create_table(theirs, "db.t", schema, primary_keys=primary_keys, options=options)
    for batch in batches:
        oracle.write(theirs, "db.t", batch)
    oracle.read(theirs, "db.t")
    read_ours, read_theirs = oracle.run()
    return t, Catalog(str(theirs)).get_table("db.t"), read_ours, read_theirs


def test_input_changelog_tables_both_ways(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    batches = [pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema),
               pa.table({"id": [2, 4], "v": ["B", "d"]}, schema=schema)]
    t, theirs_table, read_ours, read_theirs = write_both(
        tmp_path, schema, batches, primary_keys=["id"], options={"bucket": "2", "changelog-producer": "input"})
    expected = [(1, "a"), (2, "B"), (3, "c"), (4, "d")]
    assert canonical(read_ours) == canonical(t.read()) == expected
    assert canonical(read_theirs) == canonical(theirs_table.read()) == expected
    # their changelog is readable by us, and holds exactly the second commit's input; ours too
    for table in (theirs_table, t):
        snap = table.latest_snapshot()
        entries = table.manifest_io.changelog_entries(snap)
        assert sum(e.file.row_count for e in entries) == snap.changelog_record_count == 2


def test_sequence_field_both_ways(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("ts", pa.int64())])
    batches = [pa.table({"id": [1, 2], "v": ["new", "new"], "ts": [100, 100]}, schema=schema),
               pa.table({"id": [1, 2], "v": ["old", "newer"], "ts": [50, 200]}, schema=schema)]
    t, theirs_table, read_ours, read_theirs = write_both(
        tmp_path, schema, batches, primary_keys=["id"], options={"bucket": "1", "sequence.field": "ts"})
    expected = [(1, "new", 100), (2, "newer", 200)]
    assert canonical(read_ours) == canonical(t.read()) == expected
    assert canonical(read_theirs) == canonical(theirs_table.read()) == expected


@pytest.mark.parametrize("primary_key", [True, False])
def test_pypaimon_reads_our_compacted_tables_and_we_compact_theirs(tmp_path, primary_key):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        ("v", pa.string())])
    options = {"bucket": "2"} if primary_key else {}
    pks = ["id", "dt"] if primary_key else []
    batches = [pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": ["x", "y", "z"]}, schema=schema),
               pa.table({"id": [2, 4], "dt": ["a", "b"], "v": ["Y", "w"]}, schema=schema)]
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    catalog = Catalog(str(ours))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=pks, partition_keys=["dt"], options=options)
    for batch in batches:
        t.write(batch)
    before = canonical(t.read())
    assert t.compact(full=True).snapshot_id == 3
    oracle = Oracle(tmp_path)
    oracle.read(ours, "db.t")
    oracle.create_table(theirs, "db.t", schema, primary_keys=pks, partition_keys=["dt"], options=options)
    for batch in batches:
        oracle.write(theirs, "db.t", batch)
    (read_by_them,) = oracle.run()
    assert canonical(read_by_them) == before
    theirs_table = Catalog(str(theirs)).get_table("db.t")
    assert theirs_table.compact(full=True).snapshot_id == 3
    oracle.read(theirs, "db.t")
    (their_compacted,) = oracle.run()
    assert canonical(their_compacted) == canonical(theirs_table.read()) == before


def test_pypaimon_reads_after_universal_compaction(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=["id"],
                             options={"bucket": "2", "num-sorted-run.compaction-trigger": "2"})
    for i in range(6):
        t.write(pa.table({"id": list(range(i, i + 20)), "v": [f"w{i}"] * 20}, schema=schema))
        if i % 2:
            t.compact(full=False)
    t.write(pa.table({"id": [3, 4], "v": ["x", "x"]}, schema=schema), row_kinds="-D")
    t.compact(full=False)
    levels = set(t.system_table("files").column("level").to_pylist())
    assert levels - {0}, "the compactions moved files above level 0"
    oracle = Oracle(tmp_path)
    oracle.read(wh, "db.t")
    (theirs,) = oracle.run()
    assert canonical(theirs) == canonical(t.read())
    assert {r["id"] for r in t.read().to_pylist()} == set(range(25)) - {3, 4}


ENGINE_CASES = [
    ("partial-update", {"merge-engine": "partial-update"}),
    ("aggregation", {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                     "fields.b.aggregate-function": "listagg", "fields.c.aggregate-function": "max"}),
]


@pytest.mark.parametrize("name,options", ENGINE_CASES, ids=[c[0] for c in ENGINE_CASES])
def test_merge_engines_both_ways(tmp_path, name, options):
    """pypaimon's own test tables pk_pu and pk_agg (reference/pypaimon.md §2), written by each side."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.string()),
                        ("c", pa.float64())])
    batches = [pa.table({"id": [1, 2], "a": [1, None], "b": ["p", "q"], "c": [5.0, None]}, schema=schema),
               pa.table({"id": [1, 2], "a": [10, 5], "b": [None, "s"], "c": [3.0, 9.0]}, schema=schema),
               pa.table({"id": [1], "a": [100], "b": ["t"], "c": [None]}, schema=schema)]
    t, theirs_table, read_ours, read_theirs = write_both(tmp_path, schema, batches, primary_keys=["id"],
                                                         options={"bucket": "1", **options})
    if name == "partial-update":
        expected = [(1, 100, "t", 3.0), (2, 5, "s", 9.0)]
    else:
        expected = [(1, 111, "p,t", 5.0), (2, 5, "q,s", 9.0)]
    assert canonical(t.read()) == canonical(read_ours) == expected
    assert canonical(theirs_table.read()) == canonical(read_theirs) == expected


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_pypaimon_reads_our_compaction_changelog(tmp_path, producer):
    """Writers that compact commit APPEND + COMPACT snapshots; the COMPACT one carries the
    changelog. pypaimon's incremental read (changelog mode for such tables) sees our changelog
    rows, and its batch read sees the compacted data (files above level 0)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    options = {"bucket": "2", "changelog-producer": producer}
    if producer == "full-compaction":
        options["full-compaction.delta-commits"] = "1"
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options=options)
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t.write(pa.table({"id": [1, 2, 4], "v": ["a2", None, "d"]}, schema=schema),
            row_kinds=pa.array(["+U", "-D", "+I"]))
    kinds = [t.snapshot_manager.snapshot(i).commit_kind.value for i in t.snapshot_manager.list_ids()]
    assert kinds == ["APPEND", "COMPACT", "APPEND", "COMPACT"]
    assert set(t.system_table("files").column("level").to_pylist()) - {0}
    first, last = t.snapshot_manager.snapshot(2), t.snapshot_manager.snapshot(4)
    oracle = Oracle(tmp_path)
    oracle.read(wh, "db.t")
    oracle.read(wh, "db.t", options={"incremental-between-timestamp": f"{first.time_millis},{last.time_millis}"})
    data, changes = oracle.run()
    assert canonical(data) == canonical(t.read()) == [(1, "a2"), (3, "c"), (4, "d")]
    # the second commit's changelog: -U (1,a), +U (1,a2), -D (2,b), +I (4,d); pypaimon shows values only
    assert canonical(changes) == [(1, "a"), (1, "a2"), (2, "b"), (4, "d")]


def test_pypaimon_reads_our_deletion_vector_tables(tmp_path):
    """Merge-on-write: our deletion-vector index files and index manifest, read by pypaimon
    (which applies the vectors and skips level 0 just as we do)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        ("v", pa.string())])
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": list(range(40)), "dt": ["a", "b"] * 20, "v": ["v0"] * 40}, schema=schema))
    t.write(pa.table({"id": list(range(0, 40, 3)), "dt": ["a", "b"] * 7, "v": ["v1"] * 14}, schema=schema))
    t.write(pa.table({"id": [1, 2, 4], "dt": ["b", "a", "a"], "v": [None] * 3}, schema=schema), row_kinds="-D")
    t.write(pa.table({"id": [5], "dt": ["b"], "v": ["v3"]}, schema=schema))
    assert t.system_table("index_files").num_rows >= 1
    oracle = Oracle(tmp_path)
    oracle.read(wh, "db.t")
    (theirs,) = oracle.run()
    ours = canonical(t.read())
    assert canonical(theirs) == ours
    expected = {(i, "ab"[i % 2]): "v0" for i in range(40)}
    expected.update({(i, "ab"[i % 2]): "v1" for i in range(0, 40, 3) if (i, "ab"[i % 2]) in expected})
    for key in [(1, "b"), (2, "a"), (4, "a")]:
        expected.pop(key, None)
    expected[(5, "b")] = "v3"
    assert ours == sorted(((k[0], k[1], v) for k, v in expected.items()), key=repr)


def test_dynamic_bucket_tables_share_one_hash_index(tmp_path):
    """Dynamic buckets: pypaimon reads our table and, writing into it, keeps our keys in the
    buckets our HASH index says (no duplicate rows); we then keep its keys in its buckets."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        ("v", pa.string())])
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "20"})
    t.write(pa.table({"id": list(range(50)), "dt": ["a"] * 50, "v": ["ours"] * 50}, schema=schema))
    before = canonical(t.read())
    oracle = Oracle(tmp_path)
    oracle.read(wh, "db.t")
    oracle.write(wh, "db.t", pa.table({"id": [3, 45, 60, 61], "dt": ["a"] * 4, "v": ["theirs"] * 4}, schema=schema))
    (read_by_them,) = oracle.run()
    assert canonical(read_by_them) == before
    t = catalog.get_table("db.t")
    t.write(pa.table({"id": [60, 7], "dt": ["a", "a"], "v": ["ours again"] * 2}, schema=schema))
    got = {r["id"]: r["v"] for r in t.read().to_pylist()}
    assert len(got) == t.read().num_rows == 52  # every key once: both writers used the same index
    assert got[3] == got[45] == got[61] == "theirs" and got[60] == got[7] == "ours again"
    oracle.read(wh, "db.t")
    (final,) = oracle.run()
    assert canonical(final) == canonical(t.read())


def test_pypaimon_reads_our_cross_partition_upserts(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        ("v", pa.string())])
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=["id"], partition_keys=["dt"], options={"bucket": "-1"})
    t.write(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": ["x", "y", "z"]}, schema=schema))
    t.write(pa.table({"id": [1, 3], "dt": ["c", "a"], "v": ["moved", "moved"]}, schema=schema))
    oracle = Oracle(tmp_path)
    oracle.read(wh, "db.t")
    (theirs,) = oracle.run()
    assert canonical(theirs) == canonical(t.read()) == [(1, "c", "moved"), (2, "a", "y"), (3, "a", "moved")]


def test_expiry_both_ways(tmp_path):
    """We expire our table and pypaimon's; pypaimon reads both afterwards, at the latest snapshot
    and at a tag whose snapshot expired."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    catalog = Catalog(str(ours))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    oracle = Oracle(tmp_path)
    oracle.create_table(theirs, "db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    for i in range(6):
        batch = pa.table({"id": [i, i + 1], "v": [f"c{i}"] * 2}, schema=schema)
        t.write(batch)
        oracle.write(theirs, "db.t", batch)
        if i == 1:
            t.tag_manager.create("early", t.latest_snapshot())
    oracle.run()
    early = canonical(t.read(tag="early"))
    theirs_table = Catalog(str(theirs)).get_table("db.t")
    for table in (t, theirs_table):
        assert table.expire_snapshots(retain_min=2, older_than_millis=0).expired_snapshots > 0
        assert len(table.snapshot_manager.list_ids()) == 2
    oracle.read(ours, "db.t")
    oracle.read(theirs, "db.t")
    oracle.read(ours, "db.t", tag="early")
    read_ours, read_theirs, read_tag = oracle.run()
    assert canonical(read_ours) == canonical(t.read()) == canonical(read_theirs) == canonical(theirs_table.read())
    assert canonical(read_tag) == early


def test_pypaimon_reads_our_tags_and_rolled_back_tables(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    for i in range(4):
        t.write(pa.table({"id": [i, 10], "v": [f"c{i}"] * 2}, schema=schema))
    t.tags.create("ttl", snapshot_id=2, time_retained="1 d")
    at_two = canonical(t.read(snapshot_id=2))
    t.rollback(snapshot_id=3)
    t.write(pa.table({"id": [5], "v": ["after"]}, schema=schema))  # reuses id 4
    oracle = Oracle(tmp_path)
    oracle.read(wh, "db.t")
    oracle.read(wh, "db.t", tag="ttl")
    latest, tagged = oracle.run()
    assert canonical(latest) == canonical(t.read())
    assert canonical(tagged) == at_two


def test_we_tag_and_roll_back_pypaimon_tables(tmp_path):
    """A table pypaimon wrote (and tagged): we tag it, roll it back to its tag and to one of ours,
    write on, and both readers agree at the latest snapshot and at every tag."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    wh = tmp_path / "wh"
    oracle = Oracle(tmp_path)
    oracle.create_table(wh, "db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    for i in range(5):
        oracle.write(wh, "db.t", pa.table({"id": [i, 9], "v": [f"p{i}"] * 2}, schema=schema))
        if i == 1:
            oracle.create_tag(wh, "db.t", "theirs")
    oracle.run()
    t = Catalog(str(wh)).get_table("db.t")
    assert set(t.tags.list()) == {"theirs"} and t.tags.get("theirs").id == 2
    at_theirs = canonical(t.read(tag="theirs"))
    t.tags.create("ours", snapshot_id=4, time_retained="2 d")
    at_ours = canonical(t.read(tag="ours"))
    t.rollback(tag="ours")
    assert t.snapshot_manager.latest_id() == 4
    t.write(pa.table({"id": [7], "v": ["after"]}, schema=schema))  # reuses id 5
    oracle.read(wh, "db.t")
    oracle.read(wh, "db.t", tag="ours")
    oracle.read(wh, "db.t", tag="theirs")
    latest, ours, theirs = oracle.run()
    assert canonical(latest) == canonical(t.read())
    assert canonical(ours) == at_ours and canonical(theirs) == at_theirs
    t.rollback(tag="theirs")
    t.tags.delete("theirs")
    oracle.read(wh, "db.t")
    (rolled,) = oracle.run()
    assert canonical(rolled) == canonical(t.read()) == at_theirs
