"""Branches both ways with pypaimon 2.1.0: it reads branches we create and write, we read and
fast-forward branches it creates and writes, and each reads the main branch the other
fast-forwarded."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

from .oracle import Oracle, canonical

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def batch(ids, v) -> pa.Table:
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def test_pypaimon_reads_our_branches_and_our_fast_forward(tmp_path):
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write(batch(range(5), "a"))
    t.tags.create("base")
    t.write(batch([1, 2], "main"))
    dev = t.branches.create("dev", tag="base")
    dev.write(batch([3, 8], "dev"))
    dev.compact(full=True)
    t.branches.create("empty")
    oracle = Oracle(tmp_path)
    oracle.read(wh, "db.t$branch_dev")
    oracle.read(wh, "db.t")
    oracle.read(wh, "db.t$branch_empty")
    on_dev, on_main, on_empty = oracle.run()
    assert canonical(on_dev) == canonical(dev.read())
    assert canonical(on_main) == canonical(t.read())
    assert on_empty.num_rows == 0

    t.branches.fast_forward("dev")
    oracle.read(wh, "db.t")
    (after,) = oracle.run()
    assert canonical(after) == canonical(dev.read()) == canonical(catalog.get_table("db.t").read())


def test_we_read_pypaimon_branches_and_fast_forward_them(tmp_path):
    wh = tmp_path / "wh"
    oracle = Oracle(tmp_path)
    oracle.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    oracle.write(wh, "db.t", batch(range(4), "a"))
    oracle.create_tag(wh, "db.t", "base")
    oracle.write(wh, "db.t", batch([0], "main"))
    oracle.create_branch(wh, "db.t", "dev", tag="base")
    oracle.write(wh, "db.t$branch_dev", batch([2, 9], "dev"))
    oracle.read(wh, "db.t$branch_dev")
    (theirs_dev,) = oracle.run()
    catalog = Catalog(str(wh))
    t = catalog.get_table("db.t")
    assert t.branches.list() == ["dev"]
    dev = catalog.get_table("db.t$branch_dev")
    assert canonical(dev.read()) == canonical(theirs_dev)
    assert {r["id"]: r["v"] for r in dev.read().to_pylist()} == {0: "a", 1: "a", 2: "dev", 3: "a", 9: "dev"}
    # our writes to their branch, then their fast-forward of main to it
    dev.write(batch([5], "ours"))
    oracle.fast_forward(wh, "db.t", "dev")
    oracle.read(wh, "db.t")
    (theirs_main,) = oracle.run()
    assert canonical(theirs_main) == canonical(catalog.get_table("db.t").read()) == canonical(dev.read())
