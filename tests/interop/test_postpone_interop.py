"""Postpone-bucket tables (``bucket = -2``) both ways with pypaimon 2.1.0: rows in the postpone
bucket are invisible to both readers until a postpone compaction gives them real buckets; then
both read the merged rows (updates and deletes applied in write order)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

from .oracle import Oracle, canonical

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("op", pa.string())])
OPTIONS = {"bucket": "-2", "postpone.default-bucket-num": "3", "rowkind.field": "op"}
COLUMNS = ["id", "dt", "v"]


def _batch(ids, dt, tag, op="+I"):
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids], "op": [op] * len(ids)},
                    schema=SCHEMA)


COMMITS = [
    pa.concat_tables([_batch(list(range(0, 40)), "a", "x"), _batch(list(range(0, 25)), "b", "x")]),
    _batch(list(range(10, 30)), "a", "y", "+U"),  # updates, and new keys past 40
    _batch([0, 1, 2, 3], "a", "z", "-D"),
    _batch([5, 6, 7], "b", "w", "+U"),
]


def _expected() -> list[tuple]:
    rows: dict[tuple, tuple] = {}
    for batch in COMMITS:
        for r in batch.to_pylist():
            key = (r["id"], r["dt"])
            if r["op"] == "-D":
                rows.pop(key, None)
            else:
                rows[key] = (r["id"], r["dt"], r["v"])
    return sorted(rows.values(), key=repr)


def _bucket_counts(table) -> set[int]:
    return {e.total_buckets for e in table.manifest_io.live_entries(table.latest_snapshot())}


def test_we_compact_what_pypaimon_postponed_and_pypaimon_reads_it(tmp_path):
    warehouse, oracle = tmp_path / "wh", Oracle(tmp_path)
    oracle.create_table(warehouse, "db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                        options=OPTIONS)
    for batch in COMMITS:
        oracle.write(warehouse, "db.t", batch)
    oracle.read(warehouse, "db.t")
    (before,) = oracle.run()
    table = Catalog(str(warehouse)).get_table("db.t")
    assert before.num_rows == 0 and table.read().num_rows == 0  # all of it waits in bucket-postpone
    assert {p.name for p in (warehouse / "db.db" / "t" / "dt=a").iterdir()} == {"bucket-postpone"}

    result = table.compact()
    table = table.refresh()
    assert table.latest_snapshot().commit_kind.value == "COMPACT"
    assert result.files_read == 5  # every postpone file (one per partition and commit) was replayed
    assert _bucket_counts(table) == {3}  # no postpone entry left; bucket count recorded per file
    oracle.read(warehouse, "db.t")
    (after,) = oracle.run()
    assert canonical(table.read(), COLUMNS) == canonical(after, COLUMNS) == _expected()


def test_pypaimon_sees_nothing_we_postponed_until_we_compact(tmp_path):
    warehouse, oracle = tmp_path / "wh", Oracle(tmp_path)
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=OPTIONS)
    for batch in COMMITS:
        table.write(batch)
    names = [p.name for p in (warehouse / "db.db" / "t" / "dt=a" / "bucket-postpone").iterdir()]
    assert len(names) == 3 and all(n.startswith("data--u-") and "-s-" in n and "-w-" in n and n.endswith(".avro")
                                   for n in names)
    oracle.read(warehouse, "db.t")
    (before,) = oracle.run()
    assert before.num_rows == 0 and table.read().num_rows == 0

    table.compact()
    # pypaimon appends more postponed rows to what we compacted; we compact again into the
    # partitions' existing 3 buckets, and both readers agree
    extra = _batch([100, 101, 5], "a", "p", "+U")
    oracle.read(warehouse, "db.t")
    oracle.write(warehouse, "db.t", extra)
    oracle.read(warehouse, "db.t")
    compacted, still = oracle.run()
    assert canonical(compacted, COLUMNS) == canonical(still, COLUMNS) == _expected()
    table = table.refresh()
    table.compact()
    COMMITS.append(extra)
    try:
        oracle.read(warehouse, "db.t")
        (final,) = oracle.run()
        assert canonical(table.refresh().read(), COLUMNS) == canonical(final, COLUMNS) == _expected()
        assert _bucket_counts(table.refresh()) == {3}
    finally:
        COMMITS.pop()
