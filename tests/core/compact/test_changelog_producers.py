"""When the ``lookup`` and ``full-compaction`` changelog producers emit a change, after Paimon's
``LookupChangelogMergeFunctionWrapper`` and ``FullChangelogMergeFunctionWrapper``.

A key with level-0 rows (lookup) or with rows besides its top-level one (full compaction) is
compared before and after: no state before → ``+I``; retracted after → ``-D``; otherwise ``-U``
and ``+U``, left out only with ``changelog-producer.row-deduplicate`` when the values are equal.
An unchanged merged sequence number is no reason to emit nothing: with ``sequence.field`` a late
record can change the merged values (an aggregate) without becoming the newest record.

Every test also replays the changelog and checks that it rebuilds the table.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.read.stream import StreamingScan

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("c", pa.string()), ("sq", pa.int64())])

PRODUCERS = {
    "lookup": {"changelog-producer": "lookup"},
    "full-compaction": {"changelog-producer": "full-compaction", "full-compaction.delta-commits": "1"},
    "lookup-dv": {"changelog-producer": "lookup", "deletion-vectors.enabled": "true"},
}


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def table(catalog, producer: str, **options):
    return catalog.create_table(f"db.t_{producer.replace('-', '_')}", SCHEMA, primary_keys=["k"],
                                options={"bucket": "1", **PRODUCERS[producer], **options})


def write(t, kind: str, k: int, c: str | None, sq: int | None) -> None:
    t.write(pa.table({"k": [k], "c": [c], "sq": [sq]}, schema=SCHEMA), row_kinds=pa.array([kind]))


def changes(t) -> list[tuple]:
    return [(r["rowkind"], r["k"], r["c"], r["sq"]) for r in t.read_changes(0, t.latest_snapshot().id).to_pylist()]


def streamed(t) -> list[tuple]:
    scan = StreamingScan(t, mode="from-snapshot", snapshot_id=1)
    out = []
    while (batch := scan.poll()) is not None:
        out += [(r["rowkind"], r["k"], r["c"], r["sq"]) for r in batch.rows.to_pylist()]
    return out


def replay(rows: list[tuple]) -> dict:
    state: dict = {}
    for kind, k, *values in rows:
        if kind in ("+I", "+U"):
            state[k] = tuple(values)
        else:
            assert state.pop(k) == tuple(values), f"{kind} of a row the changelog never produced"
    return state


def assert_replays(t) -> None:
    rows = changes(t)
    assert replay(rows) == {r["k"]: (r["c"], r["sq"]) for r in t.read().to_pylist()}
    assert sorted(streamed(t), key=repr) == sorted(rows, key=repr)


@pytest.mark.parametrize("producer", list(PRODUCERS))
def test_aggregate_changed_by_a_late_record_is_an_update(catalog, producer):
    t = table(catalog, producer, **{"merge-engine": "aggregation", "fields.c.aggregate-function": "max",
                                    "sequence.field": "sq"})
    write(t, "+U", 2, "a b", 2)
    write(t, "+I", 2, "zz", 1)  # older by sq, yet max(c) changes
    assert [(r["c"], r["sq"]) for r in t.read().to_pylist()] == [("zz", 2)]
    assert changes(t) == [("+I", 2, "a b", 2), ("-U", 2, "a b", 2), ("+U", 2, "zz", 2)]
    assert_replays(t)


@pytest.mark.parametrize("producer", list(PRODUCERS))
def test_partial_update_with_a_late_record_emits_the_unchanged_row_again(catalog, producer):
    t = table(catalog, producer, **{"merge-engine": "partial-update", "sequence.field": "sq"})
    write(t, "+U", 2, "a b", 2)
    write(t, "+I", 2, "zz", 1)
    assert changes(t) == [("+I", 2, "a b", 2), ("-U", 2, "a b", 2), ("+U", 2, "a b", 2)]
    assert_replays(t)


@pytest.mark.parametrize("producer", list(PRODUCERS))
@pytest.mark.parametrize("row_deduplicate", [False, True])
@pytest.mark.parametrize("second_sq", [2, 1], ids=["same-row-again", "late-record"])
def test_deduplicate_emits_an_identical_update_unless_row_deduplicate(catalog, producer, row_deduplicate,
                                                                      second_sq):
    t = table(catalog, producer, **{"changelog-producer.row-deduplicate": str(row_deduplicate).lower(),
                                    "sequence.field": "sq"})
    write(t, "+U", 2, "a b", 2)
    write(t, "+I", 2, "a b" if second_sq == 2 else "older", second_sq)  # the key keeps ("a b", 2)
    expected = [("+I", 2, "a b", 2)]
    if not row_deduplicate:
        expected += [("-U", 2, "a b", 2), ("+U", 2, "a b", 2)]
    assert changes(t) == expected
    assert_replays(t)


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_deduplicate_with_a_late_record_and_deletes(catalog, producer):
    t = table(catalog, producer, **{"sequence.field": "sq"})
    write(t, "+I", 1, "a", 5)
    write(t, "+I", 1, "late", 3)  # older: the row stays, and is emitted again
    write(t, "-D", 1, "a", 6)
    write(t, "+I", 1, "back", 7)
    assert changes(t) == [("+I", 1, "a", 5), ("-U", 1, "a", 5), ("+U", 1, "a", 5), ("-D", 1, "a", 5),
                          ("+I", 1, "back", 7)]
    assert_replays(t)


def test_full_compaction_leaves_keys_only_on_the_top_level_alone(catalog):
    t = table(catalog, "full-compaction")
    t.write(pa.table({"k": [1, 2], "c": ["a", "b"], "sq": [1, 1]}, schema=SCHEMA))
    write(t, "+I", 2, "b", 1)  # key 1 sits alone on the top level: no change for it
    assert changes(t) == [("+I", 1, "a", 1), ("+I", 2, "b", 1), ("-U", 2, "b", 1), ("+U", 2, "b", 1)]
    assert_replays(t)


def test_diff_mode_sees_an_aggregate_changed_by_a_late_record(catalog):
    t = catalog.create_table("db.diff", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.c.aggregate-function": "max", "sequence.field": "sq"})
    write(t, "+U", 2, "a b", 2)
    first = t.latest_snapshot().id
    write(t, "+I", 2, "zz", 1)
    rows = [(r["rowkind"], r["c"]) for r in t.read_changes(first, t.latest_snapshot().id, mode="diff").to_pylist()]
    assert rows == [("-U", "a b"), ("+U", "zz")]
