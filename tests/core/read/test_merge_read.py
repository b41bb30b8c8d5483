"""Property-based: the merged read of a primary-key split returns exactly what the literal recipe
returns (every row of every file decoded as stored, sorted by key, sequence field and sequence
number, the newest row of each key kept, retractions dropped).

The reader takes shortcuts this checks: it reads ``_SEQUENCE_NUMBER`` only when the files'
sequence ranges overlap (otherwise a row's position is its arrival), decodes value columns only
of files that hold a winner, keeps each file open between its two passes, and fills partition
columns from the split's partition values instead of decoding them. Splits are read as planned
(files in sequence order) and with their files reversed (the general path that must compare
sequence numbers).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.data import data_file as df

KINDS = ["+I", "-U", "+U", "-D"]

LAYOUTS = {
    # name: (schema, primary keys, partition keys); the partition key's values come from `parts`
    "int key, string partition": (
        pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                   ("v", pa.string()), ("s", pa.int32())]), ["k", "p"], ["p"]),
    "string key, int partition": (
        pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("p", pa.int32(), nullable=False),
                   ("v", pa.string()), ("s", pa.int32())]), ["k", "p"], ["p"]),
    "composite key, string partition": (
        pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("k2", pa.string(), nullable=False),
                   pa.field("p", pa.string(), nullable=False), ("v", pa.string()), ("s", pa.int32())]),
        ["k", "k2", "p"], ["p"]),
    "unpartitioned": (
        pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("s", pa.int32())]), ["k"], []),
}

row = st.fixed_dictionaries({
    "k": st.integers(0, 12), "k2": st.sampled_from(["a", "b"]), "p": st.sampled_from([0, 1, None]),
    "v": st.one_of(st.none(), st.text(max_size=6)), "s": st.one_of(st.none(), st.integers(0, 3)),
    "kind": st.sampled_from(KINDS),
})
commits = st.lists(st.lists(row, min_size=1, max_size=20), min_size=1, max_size=5)


def _batch(schema: pa.Schema, rows: list[dict]) -> pa.Table:
    columns = {}
    for field in schema:
        values = [r[field.name] for r in rows]
        if field.name == "k" and pa.types.is_string(field.type):
            values = [f"key-{v:02d}" for v in values]
        if field.name == "p":
            if not field.nullable:
                values = [0 if v is None else v for v in values]
            if pa.types.is_string(field.type):
                values = [None if v is None else f"part-{v}" for v in values]
        columns[field.name] = pa.array(values, field.type)
    return pa.table(columns, schema=schema)


def _literal_merge(paths: list[str], schema: pa.Schema, keys: list[str], sequence_field: str | None) -> pa.Table:
    """The recipe the reader must agree with, written out plainly."""
    table = pa.concat_tables([pq.read_table(p) for p in paths])
    sort_keys = [(k, "ascending") for k in keys]
    if sequence_field:
        sort_keys.append((sequence_field, "ascending", "at_start"))
    sort_keys.append((df.SEQUENCE_NUMBER, "ascending"))
    ordered = table.take(pc.sort_indices(table, sort_keys=sort_keys))
    n = ordered.num_rows
    rows = ordered.select(keys).to_pylist()
    last = [i == n - 1 or rows[i] != rows[i + 1] for i in range(n)]  # fine in a test: a few rows
    kinds = ordered.column(df.VALUE_KIND).to_pylist()
    keep = [is_last and kind in (df.ROW_KIND_INSERT, df.ROW_KIND_UPDATE_AFTER) for is_last, kind in zip(last, kinds, strict=True)]
    return ordered.filter(pa.array(keep, pa.bool_())).select(schema.names).cast(schema)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=st.sampled_from(sorted(LAYOUTS)), batches=commits, sequence_field=st.booleans(),
       buckets=st.sampled_from(["1", "2"]))
def test_merged_read_matches_the_literal_recipe(layout, batches, sequence_field, buckets):
    options = {"bucket": buckets, "write-only": "true"}
    if sequence_field:
        options["sequence.field"] = "s"
    with tempfile.TemporaryDirectory(prefix="mergeread-") as root:
        _check_merged_read(Catalog(root), layout, batches, sequence_field, options)


def _check_merged_read(catalog: Catalog, layout, batches, sequence_field, options) -> None:
    schema, primary_keys, partition_keys = LAYOUTS[layout]
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema, primary_keys=primary_keys, partition_keys=partition_keys,
                                 options=options)
    for rows in batches:
        table.write(_batch(schema, rows), row_kinds=pa.array([r["kind"] for r in rows]))
    paths = {name: os.path.join(root, name) for root, _, names in os.walk(table.path) for name in names}
    reader = table.split_reader()
    keys = [k for k in primary_keys if k not in partition_keys]
    for split in table.plan():
        for files in (split.files, split.files[::-1]):
            variant = dataclasses.replace(split, files=files)
            expected = _literal_merge([paths[f.file_name] for f in files], schema, keys,
                                      "s" if sequence_field else None)
            got = reader.read_split(variant)
            assert got.schema == schema
            assert got.to_pylist() == expected.to_pylist()  # the same rows, in key order
            projected = reader.read_split(variant, columns=["v", *partition_keys])
            assert projected.to_pylist() == expected.select(["v", *partition_keys]).to_pylist()


def test_a_fully_superseded_file_is_never_needed_for_its_values(tmp_path):
    """A newer file replacing every key of an older one: the older file's rows all lose, and
    the read (which then decodes the values of the newer file only) still returns every key."""
    schema, primary_keys, partition_keys = LAYOUTS["int key, string partition"]
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema, primary_keys=primary_keys, partition_keys=partition_keys,
                                 options={"bucket": "1", "write-only": "true"})
    old = [{"k": k, "p": 0, "v": f"old{k}", "s": 1, "kind": "+I"} for k in range(5)]
    table.write(_batch(schema, old))
    table.write(_batch(schema, [{**r, "v": f"new{r['k']}"} for r in old]))
    table.write(_batch(schema, [old[0]]), row_kinds="-D")
    (split,) = table.plan()
    assert len(split.files) == 3
    assert table.read().to_pylist() == [{"k": k, "p": "part-0", "v": f"new{k}", "s": 1} for k in range(1, 5)]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=commits)
def test_append_read_fills_partition_columns_as_stored(batches):
    """Append files, partition values null included: the partition column filled from the
    split's partition equals the column stored in the files."""
    schema = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.string())])
    with tempfile.TemporaryDirectory(prefix="appendread-") as root:
        _check_append_partition_columns(Catalog(root), schema, batches)


def _check_append_partition_columns(catalog: Catalog, schema: pa.Schema, batches) -> None:
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema, partition_keys=["p"])
    for rows in batches:
        table.write(_batch(schema, rows))
    paths = [os.path.join(root, name) for root, _, names in os.walk(table.path) for name in names
             if name.endswith(".parquet")]
    stored = pa.concat_tables([pq.read_table(p) for p in paths]).cast(schema)
    got = table.read()
    by = [("k", "ascending"), ("p", "ascending"), ("v", "ascending")]
    assert got.schema == schema
    assert got.sort_by(by).to_pylist() == stored.sort_by(by).to_pylist()
    assert table.read(columns=["p"]).column("p").null_count == stored.column("p").null_count
