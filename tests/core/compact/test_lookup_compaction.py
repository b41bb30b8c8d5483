"""What lookup compaction writes into the levels above 0 (Paimon's ``LookupMergeTreeCompactRewriter``).

Paimon's readers rely on it: deletion-vector and first-row tables are read file by file without
merging, and the other lookup tables (``changelog-producer=lookup``) with ``LookupMergeFunction``,
which takes only a key's row on the lowest level above 0. So every level above 0 must hold the
*merged* state of its keys, and a first-row key must live in one level only. These tests read the
files raw, row by row as stored, without merging.

The layouts: a first commit of many keys lands, alone, on the max level; a later one-row commit is
then pushed up to the level just below (the big file is too large to be absorbed), where the
old code upgraded the level-0 file unmerged.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from paimonflow.core.data import data_file as df
from paimonflow.core.meta.index_files import deleted_mask

FILLER = 2000  # keys of the first commit, so that its file is far larger than a one-row file


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def stored_rows(table) -> list[tuple[int, dict]]:
    """``(level, row)`` of every row stored in the live files above level 0, as written (key
    columns under their own names, ``_VALUE_KIND`` and ``_SEQUENCE_NUMBER`` kept), rows deleted
    by a deletion vector left out."""
    (split,) = table.plan(all_levels=True)
    vectors = {}
    if table.options.deletion_vectors:
        vectors = table.deletion_vectors(table.latest_snapshot()).get((split.partition, split.bucket), {})
    out = []
    for f in split.files:
        if f.level == 0:
            continue
        raw = pq.read_table(f"{table.path}/bucket-{split.bucket}/{f.file_name}")
        keep = deleted_mask(vectors.get(f.file_name), raw.num_rows)
        rows = raw.to_pylist() if keep is None else raw.filter(pa.array(keep)).to_pylist()
        for row in rows:
            out.append((f.level, {name.removeprefix(df.KEY_PREFIX) if name.startswith(df.KEY_PREFIX) else name: value
                                  for name, value in row.items()}))
    return out


def rows_of(table, key_column: str, key) -> list[tuple[int, dict]]:
    return sorted(((level, row) for level, row in stored_rows(table) if row[key_column] == key),
                  key=lambda lr: lr[0])


def newest_stored(table, key_column: str, key) -> dict:
    """The row Paimon's lookup reads for ``key``: the one on the lowest level above 0."""
    rows = rows_of(table, key_column, key)
    assert rows, f"no stored row for {key!r}"
    return rows[0][1]


def filler(schema: pa.Schema, key_column: str) -> pa.Table:
    """``FILLER`` rows of other keys with varied values: a file far larger than a few rows'."""
    scrambled = [(i * 2654435761) % 1000003 for i in range(FILLER)]
    columns = {}
    for field in schema:
        if field.name == key_column:
            values = [10_000 + i for i in range(FILLER)] if pa.types.is_integer(field.type) \
                else [f"f{i:05d}" for i in range(FILLER)]
        elif pa.types.is_integer(field.type):
            values = [v % 1000 for v in scrambled]
        elif pa.types.is_floating(field.type):
            values = [v / 7.0 for v in scrambled]
        else:
            values = [f"v{v}" for v in scrambled]
        columns[field.name] = pa.array(values, field.type)
    return pa.table(columns, schema=schema)


def levels_of(table) -> list[int]:
    return sorted(table.system_table("files").column("level").to_pylist())


# -- partial-update --------------------------------------------------------------------------------

PU = pa.schema([pa.field("k", pa.string(), nullable=False), ("a", pa.int32()), ("c", pa.string()),
                ("e", pa.float64())])


def test_partial_update_lookup_writes_the_merged_row_above_level_0(catalog):
    t = catalog.create_table("db.pu", PU, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "partial-update", "changelog-producer": "lookup"})
    t.write(pa.concat_tables([filler(PU, "k"), pa.table({"k": ["bb"], "a": [1], "c": [None], "e": [1.39]},
                                                              schema=PU)]))
    t.write(pa.table({"k": ["bb"], "a": [-3], "c": ["zz"], "e": [None]}, schema=PU))
    assert levels_of(t) == [4, 5]  # the second commit went to level 4, the first stayed on 5
    newest = newest_stored(t, "k", "bb")
    assert (newest["a"], newest["c"], newest["e"]) == (-3, "zz", 1.39)  # merged, not the raw record (e=None)
    assert [r for r in t.read().to_pylist() if r["k"] == "bb"] == [{"k": "bb", "a": -3, "c": "zz", "e": 1.39}]


# -- aggregation -----------------------------------------------------------------------------------

AGG = pa.schema([pa.field("k", pa.int64(), nullable=False), ("n", pa.int64())])


def test_aggregation_lookup_writes_the_sum_and_reads_do_not_count_twice(catalog):
    t = catalog.create_table("db.agg", AGG, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
        "changelog-producer": "lookup"})
    t.write(pa.concat_tables([filler(AGG, "k"), pa.table({"k": [1], "n": [1]}, schema=AGG)]))
    for n in (2, 4):
        t.write(pa.table({"k": [1], "n": [n]}, schema=AGG))
    assert max(levels_of(t)) == 5 and min(levels_of(t)) < 5
    assert newest_stored(t, "k", 1)["n"] == 7  # 1 + 2 + 4, with older partial sums further down
    assert [r["n"] for r in t.read().to_pylist() if r["k"] == 1] == [7]
    t.compact(full=True)
    assert rows_of(t, "k", 1) == [(5, rows_of(t, "k", 1)[0][1])] and newest_stored(t, "k", 1)["n"] == 7


# -- deduplicate -----------------------------------------------------------------------------------

DEDUP = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("sq", pa.int64())])


def test_deduplicate_lookup_with_a_sequence_field_rewrites_what_it_moves_up(catalog):
    t = catalog.create_table("db.dd", DEDUP, primary_keys=["k"], options={
        "bucket": "1", "changelog-producer": "lookup", "sequence.field": "sq"})
    t.write(pa.concat_tables([filler(DEDUP, "k"), pa.table({"k": [1], "v": ["a"], "sq": [2]},
                                                                         schema=DEDUP)]))
    t.write(pa.table({"k": [1], "v": ["b"], "sq": [1]}, schema=DEDUP))  # arrives late: older by sq
    assert levels_of(t) == [4, 5]
    newest = newest_stored(t, "k", 1)
    assert (newest["v"], newest["sq"]) == ("a", 2)
    assert [r["v"] for r in t.read().to_pylist() if r["k"] == 1] == ["a"]


def test_deduplicate_lookup_without_sequence_field_upgrades_level_0_as_it_is(catalog):
    t = catalog.create_table("db.dd2", DEDUP, primary_keys=["k"], options={
        "bucket": "1", "changelog-producer": "lookup", "write-only": "true"})
    t.write(pa.concat_tables([filler(DEDUP, "k"), pa.table({"k": [1], "v": ["a"], "sq": [2]},
                                                                         schema=DEDUP)]))
    t.compact(full=False)
    t.write(pa.table({"k": [1], "v": ["b"], "sq": [1]}, schema=DEDUP))
    (level0,) = [f for f in t.plan(all_levels=True)[0].files if f.level == 0]
    t.compact(full=False)
    moved = {f.file_name: f.level for f in t.plan(all_levels=True)[0].files}
    assert moved[level0.file_name] == 4  # the newest record already is the merged one: no rewrite
    assert newest_stored(t, "k", 1)["v"] == "b"


# -- first-row ------------------------------------------------------------------------------------

FIRST = pa.schema([pa.field("k", pa.string(), nullable=False), ("b", pa.int32())])


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_first_row_drops_a_level_0_row_whose_key_lives_above(catalog, producer):
    t = catalog.create_table(f"db.fr_{producer}", FIRST, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "first-row", "changelog-producer": producer})
    first = pa.concat_tables([filler(FIRST, "k"), pa.table({"k": ["y"], "b": [92]}, schema=FIRST)])
    t.write(first, row_kinds=pa.array(["+U"] * first.num_rows))
    t.write(pa.table({"k": ["y", "z"], "b": [-43, 7]}, schema=FIRST), row_kinds=pa.array(["+U", "+U"]))
    stored = stored_rows(t)
    keys = [row["k"] for _, row in stored]
    assert len(keys) == len(set(keys)) == FILLER + 2  # no key twice across the levels above 0
    assert [row["b"] for _, row in rows_of(t, "k", "y")] == [92]
    assert [row["b"] for _, row in rows_of(t, "k", "z")] == [7]
    assert sorted(r["b"] for r in t.read().to_pylist() if r["k"] in ("y", "z")) == [7, 92]
    if producer == "lookup":  # only the new key is a change, with its row as written (+U)
        changes = t.read_changes(2, t.latest_snapshot().id).to_pylist()
        assert changes == [{"rowkind": "+U", "k": "z", "b": 7}]


# -- deletion vectors --------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"},
    {"merge-engine": "deduplicate", "sequence.field": "a"},
], ids=["partial-update", "aggregation", "sequence-field"])
def test_deletion_vectors_keep_one_live_merged_row_per_key(catalog, options):
    t = catalog.create_table("db.dv", PU, primary_keys=["k"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", **options})
    t.write(pa.concat_tables([filler(PU, "k"), pa.table({"k": ["bb"], "a": [5], "c": [None], "e": [1.39]},
                                                              schema=PU)]))
    t.write(pa.table({"k": ["bb"], "a": [1], "c": ["zz"], "e": [None]}, schema=PU))
    t.write(pa.table({"k": ["bb"], "a": [2], "c": [None], "e": [2.5]}, schema=PU))
    stored = stored_rows(t)
    keys = [row["k"] for _, row in stored]
    assert len(keys) == len(set(keys)) == FILLER + 1  # live once, so reads need no merge
    (row,) = [row for _, row in stored if row["k"] == "bb"]
    merged = (row["a"], row["c"], row["e"])
    assert merged == {"partial-update": (2, "zz", 2.5), "aggregation": (8, "zz", 2.5),
                      "deduplicate": (5, None, 1.39)}[options["merge-engine"]]  # dedup: newest by a
    assert [r for r in t.read().to_pylist() if r["k"] == "bb"] == [
        {"k": "bb", "a": merged[0], "c": merged[1], "e": merged[2]}]


def test_lookup_candidates_keep_level_0_and_the_lowest_level_above_it():
    from paimonflow.core.data.keys import lookup_candidates

    keys = pa.table({"k": [1, 1, 1, 1, 2, 2, 3]})
    levels = [5, 0, 3, 0, 4, 4, 0]  # key 2: two rows on one level (the first one wins)
    assert lookup_candidates(keys, ["k"], levels).tolist() == [False, True, True, True, True, False, True]
