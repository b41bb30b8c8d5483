"""File indexes across implementations: Apache Paimon's Java core (0.9) prunes with the bloom
filters and bitmaps paimonflow writes, and paimonflow prunes with Java's, both embedded in the
manifest and in separate ``.index`` files.

Java 0.9 skips files by an embedded index when it plans a scan and by a separate ``.index`` file
when it opens the file; in both cases the rows of a skipped file do not come back, and the rows
of every kept file do (its append reads do not filter rows). So the rows Java returns for
``column = value`` show which files it skipped: exactly those without the value."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog, col

from .java_peer import JavaPeer, peer_available

pytestmark = [pytest.mark.interop, pytest.mark.java,
              pytest.mark.skipif(not peer_available(), reason="make java-peer builds the Java peer")]

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.int64())])
FILES, ROWS = 4, 50
INDEXES = {"bucket": "-1", "file-index.bloom-filter.columns": "name", "file-index.bitmap.columns": "score"}
PLACEMENTS = {"separate": {"file-index.in-manifest-threshold": "1 b"},
              "embedded": {"file-index.in-manifest-threshold": "1 mb"}}


def batch(i: int) -> pa.Table:
    """Every batch spans the same name and score ranges (statistics prune nothing) with its own values."""
    ids = list(range(i, FILES * ROWS, FILES))
    return pa.table({"id": ids, "name": [f"user-{n:05d}" for n in ids],
                     "score": [(n % FILES) * 1000 + n // 10 for n in ids]}, schema=SCHEMA)


def ids_of(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_paimonflow_prunes_with_indexes_java_wrote(java_peer: JavaPeer, tmp_path: Path, placement: str):
    wh = tmp_path / "wh"
    java_peer.create_table(wh, "db.t", SCHEMA, options={**INDEXES, **PLACEMENTS[placement]})
    for i in range(FILES):
        java_peer.write(wh, "db.t", batch(i))
    java_peer.run()
    table = Catalog(str(wh)).get_table("db.t")
    files = [f for s in table.plan() for f in s.files]
    assert len(files) == FILES
    if placement == "separate":
        assert all(f.extra_files and f.embedded_index is None for f in files)
    else:
        assert all(f.embedded_index is not None and not f.extra_files for f in files)
    wanted = batch(2).column("name")[7].as_py()
    assert sum(len(s.files) for s in table.plan(filter=col("name") == wanted)) == 1
    assert table.read(filter=col("name") == wanted).column("name").to_pylist() == [wanted]
    assert sum(len(s.files) for s in table.plan(filter=col("name") == "user-00100x")) == 0
    score = batch(3).column("score")[5].as_py()
    assert sum(len(s.files) for s in table.plan(filter=col("score") == score)) == 1
    assert sum(len(s.files) for s in table.plan(filter=col("score") == 999_999)) == 0
    assert ids_of(table.read(filter=col("score") == score)) == \
        ids_of(batch(3).filter(pa.compute.field("score") == score))


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_java_prunes_with_indexes_paimonflow_wrote(java_peer: JavaPeer, tmp_path: Path, placement: str):
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, options={**INDEXES, **PLACEMENTS[placement]})
    for i in range(FILES):
        table.write(batch(i))
    name = batch(1).column("name")[9].as_py()
    score = batch(2).column("score")[4].as_py()
    reads = [java_peer.read(wh, "db.t"), java_peer.read(wh, "db.t", equal=("name", name)),
             java_peer.read(wh, "db.t", equal=("name", "user-00100x")), java_peer.read(wh, "db.t", equal=("score", score))]
    everything, by_name, by_absent_name, by_score = java_peer.run()
    results = [r for r in java_peer.last_results if r.get("files") is not None]
    assert ids_of(everything) == list(range(FILES * ROWS))
    assert ids_of(by_name) == ids_of(batch(1))  # the one file holding the name, whole
    assert by_absent_name.num_rows == 0
    assert ids_of(by_score) == ids_of(batch(2))
    if placement == "embedded":  # Java 0.9 tests embedded indexes while planning
        assert [r["files"] for r in results] == [FILES, 1, 0, 1]
    assert len(reads) == 4
