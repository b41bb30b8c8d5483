"""File indexes and pypaimon 2.1.0, which neither writes nor reads them: it reads the tables
paimonflow writes with indexes (embedded in manifests and in ``.index`` files) row for row, and
the files it appends without an index are never skipped by paimonflow's index pruning."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog, col

from .oracle import Oracle, canonical

pytestmark = [pytest.mark.interop]

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.int64())])
FILES, ROWS = 3, 40
PLACEMENTS = {"separate": "1 b", "embedded": "1 mb"}


def batch(i: int, *, offset: int = 0) -> pa.Table:
    ids = [n + offset for n in range(i, FILES * ROWS, FILES)]
    return pa.table({"id": ids, "name": [f"user-{n:05d}" for n in ids], "score": [n % 7 for n in ids]},
                    schema=SCHEMA)


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_pypaimon_reads_indexed_tables_and_its_files_are_never_skipped(tmp_path: Path, placement, primary_key):
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    options = {"bucket": "1" if primary_key else "-1", "file-index.bloom-filter.columns": "name",
               "file-index.bitmap.columns": "score", "file-index.in-manifest-threshold": PLACEMENTS[placement]}
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"] if primary_key else [], options=options)
    for i in range(FILES):
        table.write(batch(i))
    indexed = [f for s in table.plan() for f in s.files]
    assert all(f.embedded_index is not None or f.extra_files for f in indexed)
    extra = batch(0, offset=10_000)
    oracle = Oracle(tmp_path)
    first = oracle.read(wh, "db.t")
    oracle.write(wh, "db.t", extra)
    second = oracle.read(wh, "db.t")
    tables = oracle.run()
    written = pa.concat_tables([batch(i) for i in range(FILES)])
    assert canonical(tables[first].select(SCHEMA.names)) == canonical(written)
    assert canonical(tables[second].select(SCHEMA.names)) == canonical(pa.concat_tables([written, extra]))
    table = catalog.get_table("db.t")
    theirs = [f for s in table.plan() for f in s.files if f.embedded_index is None and not f.extra_files]
    assert len(theirs) == 1  # pypaimon wrote its file without an index
    wanted = extra.column("name")[3].as_py()
    assert table.read(filter=col("name") == wanted).column("id").to_pylist() == [extra.column("id")[3].as_py()]
    if not primary_key:
        assert sum(len(s.files) for s in table.plan(filter=col("name") == wanted)) == 1  # only theirs
