"""Both peers read tables whose manifests paimonflow sorted, indexed and merged by copying blocks.

paimonflow writes manifest entries in (partition, bucket) order with a block index in the Avro
header, and its minor merges copy the blocks no DELETE touches into new manifests without
decoding them (``core/meta/manifest_blocks.py``). A table gets many commits over many
partitions, with compactions (DELETE entries), and small ``manifest.merge-min-count`` so merges
happen all the time; pypaimon 2.1.0 and Apache Paimon's Java core 0.9 then read it at several
snapshots, and both must agree with a plain model of the rows.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.meta import manifest_blocks as mb

from .java_peer import without_kinds
from .oracle import Oracle

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
DAYS = [f"2026-10-{d:02d}" for d in range(1, 13)]


def _grow(table, rng: random.Random, model: dict, commits: int) -> list[int]:
    """Commits of rows over every day (many files per commit: blocks big enough to be copied), a
    compaction of one day now and then; the snapshot ids to read at."""
    points = []
    for n in range(commits):
        ids = [rng.randrange(4000) for _ in range(300)]
        rows = [(i, DAYS[i % len(DAYS)], f"v{n}-{i}") for i in ids]
        for i, day, v in rows:
            model[(i, day)] = v
        table.write(pa.table({"id": [r[0] for r in rows], "dt": [r[1] for r in rows], "v": [r[2] for r in rows]},
                             schema=SCHEMA))
        if n % 4 == 3:
            table.compact(partitions=[{"dt": DAYS[rng.randrange(len(DAYS))]}])
        if n % 5 == 4:
            points.append((table.latest_snapshot().id, dict(model)))
    return points


def _copied_blocks(table) -> int:
    """How many block bodies appear in more than one manifest file (copied by a merge)."""
    seen: dict[bytes, set[str]] = {}
    directory = table.manifest_io.manifest_dir
    for status in table.file_io.list_dir(directory):
        name = status.path.rstrip("/").rsplit("/", 1)[-1]
        if not name.startswith("manifest-") or name.startswith("manifest-list-"):
            continue
        data = table.file_io.read_bytes(f"{directory}/{name}")
        blocks = mb.parse_blocks(data)
        for i in range(len(blocks.infos) if blocks else 0):
            seen.setdefault(blocks.body(data, i), set()).add(name)
    return sum(1 for names in seen.values() if len(names) > 1)


def _expected(model: dict) -> list:
    return sorted((i, day, v) for (i, day), v in model.items())


def _rows(table: pa.Table) -> list:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "dt", "v")), strict=True))


@pytest.fixture()
def grown(tmp_path):
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "8", "write-only": "true", "manifest.merge-min-count": "3"})
    points = _grow(table, random.Random(21), {}, 20)
    assert _copied_blocks(table) > 0, "the merges copied blocks (the path these tests are about)"
    return wh, table, points


def test_pypaimon_reads_merged_block_indexed_manifests(tmp_path, grown):
    wh, table, points = grown
    oracle = Oracle(tmp_path)
    for sid, _ in points:
        oracle.read(wh, "db.t", snapshot_id=sid)
    answers = oracle.run()
    for (sid, model), answer in zip(points, answers, strict=True):
        assert _rows(answer) == _expected(model), f"pypaimon at snapshot {sid}"
        assert _rows(table.read(snapshot_id=sid)) == _expected(model), f"paimonflow at snapshot {sid}"


@pytest.mark.java
def test_java_reads_merged_block_indexed_manifests(java_peer, grown):
    wh, _, points = grown
    for sid, _ in points:
        java_peer.read(wh, "db.t", snapshot_id=sid)
    answers = java_peer.run()
    for (sid, model), answer in zip(points, answers, strict=True):
        assert _rows(without_kinds(answer)) == _expected(model), f"Java at snapshot {sid}"
