"""The feature frontier of Paimon's Java era (0.9): Apache Paimon's Java core writes one table per
kind of table it wrote then (file indexes kept in separate ``.index`` files and embedded in the
manifests, deletion vectors, each changelog producer, dynamic buckets, a branch from a tag, a
changelog Java's own expiry removed under a tag, table statistics), each over several commits
with updates, a delete and tag ``t1`` on a middle snapshot; every paimonflow operation of
``frontier.py`` (core API and CLI) runs on a fresh copy of each; then Java must read the rows the
operation leaves and tag ``t1`` as before (and every file the snapshots and tags reference must
still be there, as the manifests name them, ``.index`` extra files included), or paimonflow must
have refused in one typed line and changed no file.

Java runs twice in all (one batch of ops to write every table and read its baseline, one to read
every table after the operations); missing files are listed with fastavro (pypaimon 2.1 cannot
read Java 0.9's manifests, which lack ``_VALUE_STATS_COLS``). The matrix goes to
``build/frontier/java-matrix.md``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from paimonflow.core.meta.capabilities import REFUSED as GATE_REFUSED
from paimonflow.core.meta.capabilities import Feature as GatedFeature
from paimonflow.core.meta.capabilities import features_of

from .frontier import (
    DATABASE,
    NEW_TAG,
    OPERATIONS,
    REFUSED,
    SUPPORTED,
    TAG,
    Cell,
    Expect,
    FrontierTable,
    Matrix,
    Operation,
    check_doc_section,
    one_line,
    rows_after_write,
    run_cell,
    same_rows,
)
from .java_peer import JavaPeer, JavaPeerError
from .oracle import REPO

pytestmark = [pytest.mark.interop, pytest.mark.java, pytest.mark.slow]

REPORT = REPO / "build" / "frontier" / "java-matrix.md"
BRANCH = "b1"
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.int64())])
SEPARATE_INDEX = {"file-index.in-manifest-threshold": "1 b"}  # every index in its own .index file


@dataclass(frozen=True, slots=True)
class JavaKind:
    """One kind of table Java 0.9 writes. ``compact_after``: the commits (1-based) after which
    Java fully compacts; ``branch``: a branch ``b1`` from tag ``t1``; ``expire``: Java's expiry
    with retain 1/1 at the end (tag ``t1``'s snapshot and its changelog go); ``analyze``: table
    statistics committed at the end; ``skips_level0``: Java's batch reads skip level-0 files."""

    name: str
    options: dict[str, str]
    primary_key: bool = True
    compact_after: tuple[int, ...] = ()
    branch: bool = False
    expire: bool = False
    analyze: bool = False
    skips_level0: bool = False

    @property
    def file_index(self) -> bool:
        return any(key.startswith("file-index.") and key.endswith(".columns") for key in self.options)


KINDS: tuple[JavaKind, ...] = (
    # Java 0.9 writes file indexes for append tables only: its primary-key tables take the options
    # (which the gate sees) but no index
    JavaKind("pk_file_index_options", {"bucket": "2", "file-index.bloom-filter.columns": "name",
                                       "file-index.bitmap.columns": "score", **SEPARATE_INDEX}, compact_after=(3,)),
    JavaKind("append_file_index_files", {"bucket": "-1", "file-index.bloom-filter.columns": "name",
                                         "file-index.bitmap.columns": "score", **SEPARATE_INDEX},
             primary_key=False),  # unaware-bucket appends compact through a coordinator, not the peer
    JavaKind("append_file_index_embedded", {"bucket": "-1", "file-index.bloom-filter.columns": "name",
                                            "file-index.bitmap.columns": "score",
                                            "file-index.in-manifest-threshold": "1 mb"}, primary_key=False),
    JavaKind("pk_deletion_vectors", {"bucket": "2", "deletion-vectors.enabled": "true"}, skips_level0=True),
    JavaKind("pk_changelog_input", {"bucket": "2", "changelog-producer": "input"}),
    JavaKind("pk_changelog_lookup", {"bucket": "2", "changelog-producer": "lookup"}),
    JavaKind("pk_changelog_full_compaction", {"bucket": "2", "changelog-producer": "full-compaction"},
             compact_after=(2, 4)),
    JavaKind("pk_dynamic_bucket", {"bucket": "-1"}),
    JavaKind("pk_branch", {"bucket": "2"}, branch=True),
    JavaKind("pk_changelog_expired", {"bucket": "2", "changelog-producer": "input"}, expire=True),
    JavaKind("pk_statistics", {"bucket": "2"}, analyze=True),
)


def _rows(versions: Sequence[tuple[int, int]]) -> pa.Table:
    return pa.table({"id": [i for i, _ in versions], "name": [f"n{i}v{v}" for i, v in versions],
                     "score": [i * 10 + v for i, v in versions]}, schema=SCHEMA)


def _commits(kind: JavaKind) -> list[tuple[pa.Table, list[str] | None]]:
    """Four commits: inserts; inserts and updates (tag t1 follows); an insert, an update and a
    delete; inserts and an update. Append tables get inserts only."""
    if not kind.primary_key:
        return [(_rows([(i, 0) for i in ids]), None) for ids in (range(1, 9), range(9, 13), (13, 14), (15, 16))]
    return [(_rows([(i, 0) for i in range(1, 9)]), None),
            (_rows([(i, 0) for i in range(9, 13)] + [(2, 1), (3, 1)]), None),
            (_rows([(13, 0), (4, 1), (5, 0)]), ["+I", "+I", "-D"]),
            (_rows([(14, 0), (15, 0), (1, 1)]), None)]


def _model(kind: JavaKind, commits: list[tuple[pa.Table, list[str] | None]]) -> pa.Table:
    """What reading after ``commits`` must show (last row per key on primary-key tables)."""
    if not kind.primary_key:
        return pa.concat_tables([data for data, _ in commits])
    rows: dict[int, dict] = {}
    for data, kinds in commits:
        for n, row in enumerate(data.to_pylist()):
            if kinds and kinds[n] == "-D":
                rows.pop(row["id"], None)
            else:
                rows[row["id"]] = row
    return pa.Table.from_pylist(list(rows.values()), schema=SCHEMA)


def _rows_of(read: pa.Table) -> pa.Table:
    """Java's rows without their row kinds, as :data:`SCHEMA` (Java reads keys as not null)."""
    return read.select(SCHEMA.names).cast(SCHEMA)


def _branch_identifier(name: str) -> str:
    return f"{DATABASE}.{name}$branch_{BRANCH}"


# -- building the tables ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JavaTable:
    """A Java-written table and what Java read from it right after writing it."""

    kind: JavaKind
    table: FrontierTable
    branch_rows: pa.Table | None


def build_java_tables(peer: JavaPeer, workdir: Path) -> dict[str, JavaTable]:
    """Every kind's table in ``workdir/base/wh``, written and read back by Java in one round;
    raises when Java does not read its own table as the commits say."""
    warehouse = workdir / "base" / "wh"
    reads: dict[str, tuple[int, ...]] = {}
    for kind in KINDS:
        identifier = f"{DATABASE}.{kind.name}"
        peer.create_table(warehouse, identifier, SCHEMA, primary_keys=["id"] if kind.primary_key else [],
                          options=kind.options)
        for n, (data, kinds) in enumerate(_commits(kind), start=1):
            peer.write(warehouse, identifier, data, kinds=kinds)
            if n in kind.compact_after:
                peer.compact(warehouse, identifier, full=True)
            if n == 2:
                peer.create_tag(warehouse, identifier, TAG)
        if kind.branch:
            peer.create_branch(warehouse, identifier, BRANCH, tag=TAG)
        if kind.expire:
            peer.expire_snapshots(warehouse, identifier, retain_min=1, retain_max=1)
        if kind.analyze:
            peer.analyze(warehouse, identifier)
        reads[kind.name] = (peer.read(warehouse, identifier), peer.read(warehouse, identifier, tag=TAG),
                            *([peer.read(warehouse, _branch_identifier(kind.name))] if kind.branch else []))
    tables = peer.run()
    built = {}
    for kind in KINDS:
        commits = _commits(kind)
        latest, tagged, *branch = (_rows_of(tables[i]) for i in reads[kind.name])
        for what, got, want in (("latest", latest, _model(kind, commits)), ("tag", tagged, _model(kind, commits[:2])),
                                *((("branch", branch[0], _model(kind, commits[:2])),) if branch else ())):
            if problem := same_rows(got, want):
                raise AssertionError(f"Java does not read its own {kind.name} ({what}) as written: {problem}")
        path = warehouse / f"{DATABASE}.db" / kind.name
        index_files = sorted(path.glob("bucket-*/*.index"))
        separate = kind.file_index and not kind.primary_key and SEPARATE_INDEX.items() <= kind.options.items()
        if bool(index_files) != separate:
            raise AssertionError(f"{kind.name}: Java wrote {len(index_files)} separate .index files")
        fresh = _rows([(i, 0) for i in (1001, 1002, 1003)])
        frontier = FrontierTable(
            feature=kind.name, warehouse=warehouse, identifier=f"{DATABASE}.{kind.name}",
            path=path, external_dirs=(), row_tracking=False,
            skips_level0=kind.skips_level0, latest=latest, tagged=tagged, batch=latest, tagged_batch=tagged,
            fresh=fresh, postponed=None)
        built[kind.name] = JavaTable(kind, frontier, branch[0] if branch else None)
    return built


# -- judging with Java -------------------------------------------------------------------------


@dataclass(slots=True)
class JavaCell:
    cell: Cell
    kind: JavaKind
    branch_rows: pa.Table | None
    reads: dict[str, int] = field(default_factory=dict)


def _queue_reads(peer: JavaPeer, c: JavaCell) -> None:
    t = c.cell.table
    c.reads = {"latest": peer.read(t.warehouse, t.identifier), "tag": peer.read(t.warehouse, t.identifier, tag=TAG)}
    if c.cell.operation.expect is Expect.NEW_TAG:
        c.reads["new_tag"] = peer.read(t.warehouse, t.identifier, tag=NEW_TAG)
    if c.kind.branch:
        c.reads["branch"] = peer.read(t.warehouse, _branch_identifier(c.kind.name))


def java_reads(peer: JavaPeer, cells: Sequence[JavaCell]) -> dict[int, dict[str, pa.Table] | str]:
    """Java's reads after each cell's operation, in one round; when Java fails one (it stops at
    the first failure), each cell again in a round of its own, so that one broken table is one
    failed cell. Cell index → its reads, or Java's error in one line."""
    for c in cells:
        _queue_reads(peer, c)
    try:
        tables = peer.run()
    except JavaPeerError:
        found: dict[int, dict[str, pa.Table] | str] = {}
        for n, c in enumerate(cells):
            _queue_reads(peer, c)
            try:
                tables = peer.run()
            except JavaPeerError as exc:
                found[n] = f"Java cannot {exc.op} after it: {exc.error_type}: {one_line(exc.java_message, 160)}"
                continue
            found[n] = {what: _rows_of(tables[i]) for i, what in enumerate(c.reads)}
        return found
    return {n: {what: _rows_of(tables[i]) for what, i in c.reads.items()} for n, c in enumerate(cells)}


def _avro(path: Path) -> list[dict]:
    with path.open("rb") as f:
        return list(fastavro.reader(f))


def missing_files(table: Path) -> list[str]:
    """Files a snapshot or tag of ``table`` (of any branch) references that are gone, read with
    fastavro alone (pypaimon 2.1 cannot read Java 0.9's manifests): manifest lists, manifests,
    the data files each snapshot holds with their extra files (``.index`` file indexes), the
    snapshots' changelog files (a tag keeps no changelog: Paimon's expiry deletes an expired
    snapshot's changelog, tagged or not), index files and statistics. Unpartitioned tables only."""
    manifests = table / "manifest"
    holders = [*table.glob("snapshot/snapshot-*"), *table.glob("tag/tag-*"),
               *table.glob("branch/*/snapshot/snapshot-*"), *table.glob("branch/*/tag/tag-*")]
    lost: list[str] = []
    for holder in sorted(holders):
        snapshot = json.loads(holder.read_text())
        where = str(holder.relative_to(table))
        lists = [snapshot["baseManifestList"], snapshot["deltaManifestList"]]
        changelog = snapshot.get("changelogManifestList") if "/tag/" not in f"/{where}" else None
        gone = [f"{where}: manifest/{name}" for name in [*lists, changelog, snapshot.get("indexManifest")]
                if name and not (manifests / name).exists()]
        if stats := snapshot.get("statistics"):
            gone += [f"{where}: statistics/{stats}"] if not (table / "statistics" / stats).exists() else []
        if gone:
            lost += gone
            continue
        live: dict[tuple, dict] = {}
        files = []
        for n, name in enumerate([*lists, *([changelog] if changelog else [])]):
            for meta in _avro(manifests / name):
                if not (manifests / meta["_FILE_NAME"]).exists():
                    lost.append(f"{where}: manifest/{meta['_FILE_NAME']}")
                    continue
                for entry in _avro(manifests / meta["_FILE_NAME"]):
                    key = (entry["_PARTITION"], entry["_BUCKET"], entry["_FILE"]["_FILE_NAME"])
                    if n == 2:  # the changelog
                        files.append((entry["_BUCKET"], entry["_FILE"]))
                    elif entry["_KIND"] == 0:
                        live[key] = entry
                    else:
                        live.pop(key, None)
        files += [(entry["_BUCKET"], entry["_FILE"]) for entry in live.values()]
        for bucket, meta in files:
            for name in [meta["_FILE_NAME"], *(meta.get("_EXTRA_FILES") or [])]:
                if not (table / f"bucket-{bucket}" / name).exists():
                    lost.append(f"{where}: bucket-{bucket}/{name}")
        if snapshot.get("indexManifest"):
            lost += [f"{where}: index/{entry['_FILE_NAME']}" for entry in _avro(manifests / snapshot["indexManifest"])
                     if entry["_KIND"] == 0 and not (table / "index" / entry["_FILE_NAME"]).exists()]
    return lost


def judge_java(c: JavaCell, reads: dict[str, pa.Table] | str, missing: list[str]) -> str:
    """The outcome of a cell whose operation ran, from Java's reads and the missing files."""
    t, expect = c.cell.table, c.cell.operation.expect
    if missing:
        return f"FAILED: {len(missing)} referenced file(s) gone, e.g. {one_line(missing[0], 160)}"
    if isinstance(reads, str):
        return f"FAILED: {reads}"
    problems = {f"tag {TAG}": same_rows(reads["tag"], t.tagged)}
    latest = reads["latest"]
    if expect is Expect.FRESH:
        # Java's batch reads of a deletion-vector table show level-0 files only once compacted
        waiting = t.skips_level0 and not same_rows(latest, t.latest)
        problems["after the write"] = "" if waiting else rows_after_write(latest, t)
    elif expect is Expect.TAG_AS_LATEST:
        problems["latest"] = same_rows(latest, t.tagged)
    else:
        problems["latest"] = same_rows(latest, t.latest)
    if "new_tag" in reads:
        problems[f"tag {NEW_TAG}"] = same_rows(reads["new_tag"], t.latest)
    if "branch" in reads and c.branch_rows is not None:
        problems[f"branch {BRANCH}"] = same_rows(reads["branch"], c.branch_rows)
    found = [f"{what}: {problem}" for what, problem in problems.items() if problem]
    return f"FAILED: {'; '.join(found)}" if found else SUPPORTED


def run_java_frontier(peer: JavaPeer, workdir: Path, operations: Sequence[Operation] = OPERATIONS) -> Matrix:
    """Java writes every kind, each operation runs on its own copy of each table (CLI ones in
    parallel with the in-process ones), Java reads every table the operations left and
    :func:`missing_files` lists what the snapshots and tags reference that is gone."""
    start = time.perf_counter()
    phases: dict[str, float] = {}

    def lap(phase: str) -> None:
        phases[phase] = round(time.perf_counter() - start - sum(phases.values()), 1)

    workdir = Path(tempfile.mkdtemp(dir=workdir, prefix="java-frontier-"))
    tables = build_java_tables(peer, workdir)
    lap("build (Java)")
    cells = [JavaCell(Cell(t.table.copy_to(workdir / "cells" / op.name / "wh"), op), t.kind, t.branch_rows)
             for t in tables.values() for op in operations]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        running = [pool.submit(run_cell, c.cell) for c in cells if c.cell.operation.cli]
        for c in cells:
            if not c.cell.operation.cli and not c.cell.operation.engines:
                run_cell(c.cell)
        for future in running:
            future.result()
    for c in cells:  # DuckDB and Polars once no CLI cell starts a process (Operation.engines)
        if c.cell.operation.engines:
            run_cell(c.cell)
    lap("operations")
    ran = [c for c in cells if not c.cell.outcome]
    reads = java_reads(peer, ran)
    for n, c in enumerate(ran):
        c.cell.outcome = judge_java(c, reads[n], missing_files(c.cell.table.path))
    lap("judge (Java)")
    return Matrix(features=tuple(k.name for k in KINDS), operations=tuple(op.name for op in operations),
                  outcomes={(c.kind.name, c.cell.operation.name): c.cell.outcome for c in cells},
                  seconds=time.perf_counter() - start, phases=phases)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory, java_peer: JavaPeer) -> Matrix:
    found = run_java_frontier(java_peer, Path(tmp_path_factory.mktemp("java-frontier")))
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(found.report())
    print(f"\nJava frontier matrix ({found.seconds:.0f} s, {found.phases}): {found.counts()} -> {REPORT}")
    for line in found.failures():
        print(f"  FAILED {line}")
    return found


def test_every_kind_and_operation_has_a_cell(matrix: Matrix) -> None:
    """Java wrote every kind (the file-index kinds meant to keep separate ``.index`` files did,
    the others embedded them: ``build_java_tables`` checks) and every operation ran or was
    refused on each."""
    assert len(matrix.outcomes) == len(KINDS) * len(OPERATIONS)
    assert all(matrix.outcomes.values())


def test_no_cell_failed(matrix: Matrix) -> None:
    """Each cell is ``supported`` (Java reads what Paimon's rules say, every referenced file is
    there) or ``refused`` (one typed line, no file changed); the message lists every failed cell."""
    failures = matrix.failures()
    assert not failures, f"{len(failures)} of {len(matrix.outcomes)} Java frontier cells failed:\n" + \
        "\n".join(failures)


def test_only_the_gate_refuses(matrix: Matrix) -> None:
    """Refusals come only where the capability gate says so: tables with file index types
    paimonflow does not write refuse writes and compactions (so Java's index files are never
    dropped); every other cell is supported (bloom-filter and bitmap indexes are written)."""
    refused_gates = GATE_REFUSED[GatedFeature.FILE_INDEX]
    by_name = {op.name: op for op in OPERATIONS}
    unexpected = []
    for kind in KINDS:
        for name in matrix.operations:
            gated = GatedFeature.FILE_INDEX in features_of(kind.options)  # bloom-filter and bitmap are written
            want = REFUSED if gated and by_name[name].gate in refused_gates else SUPPORTED
            got = matrix.outcomes[kind.name, name]
            if not got.startswith("FAILED") and got != want:
                unexpected.append(f"{kind.name} × {name}: {got}, expected {want}")
    assert not unexpected, "\n".join(unexpected)


def test_the_docs_show_the_matrix(matrix: Matrix) -> None:
    """docs/format.md's Java frontier section is this run's table and counts
    (``PAIMONFLOW_UPDATE_DOCS=1`` rewrites it)."""
    check_doc_section(REPO / "docs" / "format.md", "<!-- Java frontier matrix: generated by "
                      "tests/interop/test_java_frontier.py -->", "<!-- end of the Java frontier matrix -->",
                      matrix.markdown())
