"""The race with Java's publish: Apache Paimon's Java core (0.9) as a streaming, write-only writer
beside paimonflow's compaction, tag and expiry loop, on one primary-key table on local disk.

Why (DESIGN §1 items 3 and 10): Java's ``LocalFileIO`` publishes ``snapshot-N`` by checking that
it is absent and then renaming a temp file over it; paimonflow creates it atomically
(``os.link``). When both publish snapshot N at nearly the same moment, Java's rename can replace
the snapshot paimonflow has just published. paimonflow must confirm that a published snapshot is
still its own before it reports, tags or builds on it; a replaced publish is a lost race, retried.

The race: a JVM of its own (the session's peer stays free) runs ONE streaming writer and
committer (``PaimonPeer.streamWrite``, ``write-only=true``: Java never compacts or expires) for N
commits, identifiers 1..N, each a few new keys plus updates of older ones. Meanwhile paimonflow
loops until Java is done: a full compaction under the identity (``paimonflow-maintenance``, n),
a tag ``t<n>`` on the snapshot that compaction reported, a snapshot expiry. paimonflow's own local
FileIO is observed (:class:`PublishRecorder`): every snapshot file it publishes, and every
publish it lost because the id was taken.

Checked, every finding collected before the test fails:

* publishes, right after each compaction: the snapshot it reported is the last one it
  published in that call and still holds paimonflow's bytes; an earlier publish of the same
  call was replaced by another writer (a replaced publish, retried), never left as ours; the tag
  made on the reported snapshot holds paimonflow's commit;
* the history, as paimonflow and as Java list it: snapshot ids are contiguous; every retained
  snapshot is Java's APPEND ``(java-streamer, i)`` at the id Java found for commit i, or
  paimonflow's COMPACT ``(paimonflow-maintenance, n)`` at the id compaction n reported; every Java
  commit 1..N got a snapshot, in order, and is retained there or lies below the earliest
  snapshot (expired legitimately); no id was reported by both; every tag ``t<n>`` exists, points
  at the id compaction n reported and holds paimonflow's commit;
* the rows, read by both engines: the latest snapshot, every retained snapshot and every tag
  hold exactly the model's rows after the Java commits below them (a compaction changes no row;
  the model replays what Java was told to write);
* every file a retained snapshot or tag needs exists.

Counts (``build/reliability/results-<tier>.json``): Java commits, compactions, tags, expiries,
publishes paimonflow lost to Java (the race really happened), replaced publishes reported by
the commit (``replaced_publishes``) and observed on storage, rows, snapshots and tags checked.

Replacements in the wild are rare (Java's window is the few microseconds between ``exists`` and
``Files.move`` inside its rename): about one in ten fast-tier runs meets one. So two controls,
without a JVM (paimonflow plays Java's writer), replace paimonflow's snapshot with a forged Java
one deterministically: after ``compact`` returned (the oracle must flag it), and during the
publish itself (paimonflow must notice and retry; a commit that does not confirm its publishes
fails there).
"""

from __future__ import annotations

import bisect
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import FileNotFoundStorageError
from paimonflow.core.fs import LocalFileIO
from paimonflow.core.fs.local import local_path
from paimonflow.core.meta.snapshots import CommitKind, Snapshot
from paimonflow.core.table import Table
from tests.reliability.oracle import missing_needed_files, snapshot_ids_on_storage

from .java_peer import JavaPeer, kinds_of, without_kinds

if TYPE_CHECKING:
    from tests.conftest import Reliability

IDENT = "race.t"
JAVA_USER = "java-streamer"
OUR_USER = "paimonflow-maintenance"
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("java_commit", pa.int64()),
    pa.field("note", pa.string()),
])
RETAIN_MIN, RETAIN_MAX = 4, 8
TABLE_OPTIONS = {
    "bucket": "2",
    "file.format": "parquet",
    "snapshot.num-retained.min": str(RETAIN_MIN),
    "snapshot.num-retained.max": str(RETAIN_MAX),
    # plenty of retries: this test is about replaced publishes, not about giving up
    "commit.max-retries": "300",
    "commit.min-retry-wait": "5 ms",
    "commit.max-retry-wait": "100 ms",
}
RACE_DEADLINE_S = 600.0

Row = tuple[int, int, str]


class Commit(NamedTuple):
    """A snapshot's commit identity, as an engine lists it."""

    user: str
    identifier: int
    kind: str

    def __str__(self) -> str:
        return f"{self.user}/{self.identifier} {self.kind}"


# -- what Java writes, and the model ---------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamSpec:
    """What the Java writer is told to write (``PaimonPeer.streamWrite``'s rule), and the model
    built from the same rule: commit i writes ``(key, i, "k<key>@c<i>")`` for its new keys and
    for ``updates_per_commit`` earlier keys."""

    commits: int
    rows_per_commit: int = 4
    updates_per_commit: int = 2
    key_base: int = 1_000
    sleep_ms: int = 20

    def keys(self, i: int) -> list[int]:
        """The keys commit ``i`` writes, in Java's order."""
        first = self.key_base + (i - 1) * self.rows_per_commit
        keys = list(range(first, first + self.rows_per_commit))
        if i > 1:
            span = (i - 1) * self.rows_per_commit
            keys += [self.key_base + (i * 7 + u * 13) % span for u in range(self.updates_per_commit)]
        return keys

    def batch(self, i: int) -> pa.Table:
        """Commit ``i``'s rows as an Arrow table (for paimonflow playing Java's writer)."""
        keys = self.keys(i)
        return pa.table({"id": keys, "java_commit": [i] * len(keys), "note": [note(k, i) for k in keys]},
                        schema=SCHEMA)

    def states(self, points: Iterable[int]) -> dict[int, pa.Table]:
        """The model's rows, sorted by key, after Java commits 1..c, for each c in ``points``: every
        key written so far, with the last commit that wrote it."""
        latest: dict[int, int] = {}
        states: dict[int, pa.Table] = {}
        applied = 0
        for c in sorted(set(points)):
            for i in range(applied + 1, c + 1):
                latest.update(dict.fromkeys(self.keys(i), i))
            applied = max(applied, c)
            keys = sorted(latest)
            commits = [latest[k] for k in keys]
            notes = [note(k, i) for k, i in zip(keys, commits, strict=True)]
            states[c] = pa.table({"id": keys, "java_commit": commits, "note": notes}, schema=SCHEMA)
        return states


def note(key: int, commit: int) -> str:
    return f"k{key}@c{commit}"


# -- paimonflow's publishes, observed ------------------------------------------------------------------

_SNAPSHOT_FILE = re.compile(r"/snapshot/snapshot-(\d+)$")


@dataclass(frozen=True, slots=True)
class Publish:
    """A snapshot file paimonflow created (its ``create_if_absent`` won)."""

    snapshot_id: int
    path: str
    data: bytes


class PublishRecorder(LocalFileIO):
    """paimonflow's own local FileIO, unchanged, recording the ``snapshot-N`` files it publishes
    (:meth:`take`) and how many publishes it lost because the id was taken (:attr:`lost`).

    ``after_publish`` (the negative control) runs right after a publish won, before
    ``create_if_absent`` returns: the moment at which Java's rename can replace the file."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._won: list[Publish] = []
        self.lost = 0
        self.after_publish: Callable[[Publish], None] | None = None

    def create_if_absent(self, path: str, data: bytes) -> bool:
        created = super().create_if_absent(path, data)
        match = _SNAPSHOT_FILE.search(local_path(path))
        if match is None:
            return created
        publish = Publish(int(match[1]), path, data)
        with self._lock:
            if created:
                self._won.append(publish)
            else:
                self.lost += 1
        if created and self.after_publish is not None:
            self.after_publish(publish)
        return created

    def take(self) -> list[Publish]:
        """The publishes won since the last call, in order."""
        with self._lock:
            won, self._won = self._won, []
        return won


def held(file_io: LocalFileIO, path: str) -> bytes | None:
    try:
        return file_io.read_bytes(path)
    except FileNotFoundStorageError:
        return None


def describe(data: bytes | None) -> str:
    if data is None:
        return "nothing (the file is gone)"
    snapshot = Snapshot.from_json(data)
    return f"{snapshot.commit_user}/{snapshot.commit_identifier} {snapshot.commit_kind.value}"


@dataclass(frozen=True, slots=True)
class PublishCheck:
    """The verdict on one compaction's publishes (:func:`check_publishes`)."""

    findings: list[str]
    replaced_retried: int  # earlier publishes of the call that another writer replaced
    replaced_unnoticed: int  # 1 if the snapshot the call reported was replaced (a finding)


def check_publishes(file_io: LocalFileIO, identifier: int, reported: int | None,
                    publishes: Sequence[Publish]) -> PublishCheck:
    """Check one compaction right after it returned.

    The snapshot it reported must be the last one it published and must still hold its bytes;
    every earlier publish of the same call must hold another writer's snapshot (it was replaced
    and the commit retried), else the compaction landed twice."""
    findings: list[str] = []
    ids = [p.snapshot_id for p in publishes]
    if reported is None:
        if publishes:
            findings.append(f"compaction {identifier} reported no snapshot but published {ids}")
        return PublishCheck(findings, 0, 0)
    if not publishes or ids[-1] != reported:
        findings.append(f"compaction {identifier} reported snapshot {reported} but published {ids}")
    retried = unnoticed = 0
    for publish in publishes:
        now = held(file_io, publish.path)
        if publish.snapshot_id == reported:
            if now != publish.data:
                unnoticed += 1
                findings.append(f"compaction {identifier} reported snapshot {reported} as its own, but it "
                                f"holds {describe(now)}: a replaced publish was reported as committed")
        elif now == publish.data:
            findings.append(f"compaction {identifier} published snapshot {publish.snapshot_id} and then "
                            f"{reported} too: it landed twice")
        else:
            retried += 1
    return PublishCheck(findings, retried, unnoticed)


# -- paimonflow's maintenance loop -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction:
    """A compaction that committed: its identity, what it reported and what it published."""

    identifier: int
    snapshot_id: int
    tag: str
    published: tuple[int, ...]
    replaced_observed: int  # earlier publishes of the call found replaced on storage (retried)
    replaced_reported: int | None  # the result's ``replaced_publishes``; None while the core has none
    replaced_unnoticed: int  # 1 if the snapshot it reported was found replaced (a finding)


@dataclass(slots=True)
class MaintenanceLog:
    """What paimonflow's loop did, and the findings of its per-round checks."""

    compactions: list[Compaction] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    idle_rounds: int = 0
    expiries: int = 0
    expired_snapshots: int = 0


def maintenance_round(table: Table, recorder: PublishRecorder, log: MaintenanceLog, identifier: int, *,
                      after_compact: Callable[[int], None] | None = None) -> None:
    """One round: full compaction as ``(OUR_USER, identifier)``, its publishes checked, a tag
    ``t<identifier>`` on the snapshot it reported (which must hold our commit), then an expiry
    (tags protect what they need). A round with nothing to compact only counts as idle.
    ``after_compact(snapshot_id)`` runs right after ``compact`` returned (negative control)."""
    result = table.compact(full=True, commit_user=OUR_USER, commit_identifier=identifier)
    if result.snapshot_id is not None and after_compact is not None:
        after_compact(result.snapshot_id)
    publishes = recorder.take()
    check = check_publishes(recorder, identifier, result.snapshot_id, publishes)
    log.findings += check.findings
    if result.snapshot_id is None:
        log.idle_rounds += 1
        return
    tag = f"t{identifier}"
    tagged = table.tags.create(tag, snapshot_id=result.snapshot_id)
    if Commit(tagged.commit_user, tagged.commit_identifier, tagged.commit_kind.value) != ours(identifier):
        log.findings.append(f"tag {tag} made on snapshot {result.snapshot_id}, reported by compaction "
                            f"{identifier}, holds {describe(tagged.to_json())}")
    reported = getattr(result, "replaced_publishes", None)
    if reported not in (None, check.replaced_retried):
        log.findings.append(f"compaction {identifier} reports {reported} replaced publishes; "
                            f"{check.replaced_retried} were observed on storage")
    log.compactions.append(Compaction(
        identifier=identifier, snapshot_id=result.snapshot_id, tag=tag,
        published=tuple(p.snapshot_id for p in publishes), replaced_observed=check.replaced_retried,
        replaced_reported=reported, replaced_unnoticed=check.replaced_unnoticed))
    expired = table.expire_snapshots(retain_min=RETAIN_MIN, retain_max=RETAIN_MAX, older_than_millis=0)
    log.expiries += 1
    log.expired_snapshots += expired.expired_snapshots


def maintain_until(done: Callable[[], bool], table: Table, recorder: PublishRecorder) -> MaintenanceLog:
    """Maintenance rounds until ``done()`` (the Java writer finished)."""
    log = MaintenanceLog()
    deadline = time.monotonic() + RACE_DEADLINE_S
    identifier = 0
    while not done():
        assert time.monotonic() < deadline, f"the Java writer ran for more than {RACE_DEADLINE_S} s"
        identifier += 1
        idle = log.idle_rounds
        maintenance_round(table, recorder, log, identifier)
        if log.idle_rounds > idle:
            time.sleep(0.005)
    return log


def ours(identifier: int) -> Commit:
    return Commit(OUR_USER, identifier, CommitKind.COMPACT.value)


def java(identifier: int) -> Commit:
    return Commit(JAVA_USER, identifier, CommitKind.APPEND.value)


# -- the oracle ----------------------------------------------------------------------------------------


def history_of(table: Table) -> dict[int, Commit]:
    """Snapshot id -> commit identity, as paimonflow reads the snapshot files listed on storage."""
    history = {}
    for sid in snapshot_ids_on_storage(table):
        s = table.snapshot_manager.snapshot(sid)
        history[sid] = Commit(s.commit_user, s.commit_identifier, s.commit_kind.value)
    return history


def java_history(peer: JavaPeer, warehouse: Path) -> dict[int, Commit]:
    """Snapshot id -> commit identity, as Java lists the snapshots."""
    peer.snapshots(warehouse, IDENT)
    peer.run()
    return {s["id"]: Commit(s["commit_user"], s["commit_identifier"], s["kind"])
            for s in peer.last_results[0]["snapshots"]}


def history_findings(engine: str, history: Mapping[int, Commit], *, java_ids: Sequence[int],
                     compactions: Sequence[Compaction]) -> list[str]:
    """Check one engine's view of the history against what both writers reported.

    ``java_ids[i - 1]`` is the snapshot Java found for its commit i; ``compactions`` are
    paimonflow's, each with the snapshot it reported."""
    findings: list[str] = []
    ids = sorted(history)
    if not ids:
        return [f"{engine}: the table has no snapshot"]
    if ids != list(range(ids[0], ids[-1] + 1)):
        findings.append(f"{engine}: snapshot ids have gaps: {ids}")
    earliest = ids[0]
    java_at = {sid: i for i, sid in enumerate(java_ids, 1)}
    ours_at = {c.snapshot_id: c.identifier for c in compactions}
    lost = [i for i, sid in enumerate(java_ids, 1) if sid < 1]
    if lost:
        findings.append(f"{engine}: Java found no snapshot of its commits {lost}")
    if any(b <= a for a, b in pairwise(sid for sid in java_ids if sid >= 1)):
        findings.append(f"{engine}: Java's commits got snapshot ids out of order: {list(java_ids)}")
    for sid in sorted(set(java_at) & set(ours_at)):
        findings.append(f"{engine}: snapshot {sid} was reported by Java's commit {java_at[sid]} and by "
                        f"compaction {ours_at[sid]}: one of them was replaced")
    for sid in ids:
        commit = history[sid]
        if commit.user == JAVA_USER:
            if commit != java(java_at.get(sid, -1)):
                findings.append(f"{engine}: snapshot {sid} holds {commit}, which Java did not report there")
        elif commit.user == OUR_USER:
            if commit != ours(ours_at.get(sid, -1)):
                findings.append(f"{engine}: snapshot {sid} holds {commit}, which no compaction reported "
                                "there")
        else:
            findings.append(f"{engine}: snapshot {sid} holds {commit}, a commit of nobody in this race")
    for i, sid in enumerate(java_ids, 1):
        if sid >= earliest and history.get(sid) != java(i):
            findings.append(f"{engine}: Java's commit {i} reported snapshot {sid}, which holds "
                            f"{history.get(sid)}")
    for c in compactions:
        if c.snapshot_id >= earliest and history.get(c.snapshot_id) != ours(c.identifier):
            findings.append(f"{engine}: compaction {c.identifier} reported snapshot {c.snapshot_id}, "
                            f"which holds {history.get(c.snapshot_id)}")
    return findings


def tag_findings(table: Table, compactions: Sequence[Compaction]) -> list[str]:
    """Every tag ``t<n>`` exists, points at the snapshot compaction n reported, holds its commit,
    and no other tag exists."""
    tags = table.tags.list()
    made = {c.tag for c in compactions}
    findings = [f"tag {name} was made by nobody in this race" for name in sorted(set(tags) - made)]
    for c in compactions:
        tag = tags.get(c.tag)
        if tag is None:
            findings.append(f"tag {c.tag} (compaction {c.identifier}) is missing")
            continue
        got = Commit(tag.commit_user, tag.commit_identifier, tag.commit_kind.value)
        if tag.id != c.snapshot_id or got != ours(c.identifier):
            findings.append(f"tag {c.tag} holds snapshot {tag.id} ({got}); compaction {c.identifier} "
                            f"reported snapshot {c.snapshot_id}")
    return findings


@dataclass(frozen=True, slots=True)
class ReadPoint:
    """Where to read (``{}``: the latest snapshot; else ``snapshot_id=`` or ``tag=``) and how many
    Java commits the rows there contain."""

    name: str
    where: Mapping[str, Any]
    java_commits: int


def read_points(history: Mapping[int, Commit], java_ids: Sequence[int], compactions: Sequence[Compaction],
                commits: int, tags: Iterable[str]) -> list[ReadPoint]:
    """The latest snapshot (every Java commit), every retained snapshot (the Java commits at or
    below it) and every existing tag of a compaction (the Java commits below the compaction: its
    rows are its parent's). A missing tag is :func:`tag_findings`' finding, not a read."""
    existing = set(tags)
    done = sorted(sid for sid in java_ids if sid >= 1)
    points = [ReadPoint("latest", {}, commits)]
    points += [ReadPoint(f"snapshot {sid}", {"snapshot_id": sid}, bisect.bisect_right(done, sid))
               for sid in sorted(history)]
    points += [ReadPoint(f"tag {c.tag}", {"tag": c.tag}, bisect.bisect_left(done, c.snapshot_id))
               for c in compactions if c.tag in existing]
    return points


def sorted_rows(table: pa.Table) -> pa.Table:
    """The table's rows in the model's shape: its columns, sorted by key."""
    return table.select(SCHEMA.names).sort_by("id").cast(SCHEMA)


def rows_of(table: pa.Table) -> list[Row]:
    columns = [table.column(name).to_pylist() for name in SCHEMA.names]
    return sorted(zip(*columns, strict=True))


def row_findings(engine: str, point: ReadPoint, got: pa.Table, expected: pa.Table) -> list[str]:
    """Nothing if ``got`` holds exactly the ``expected`` rows; else what is missing and unexpected."""
    if sorted_rows(got).equals(expected):
        return []
    read, model = set(rows_of(got)), set(rows_of(expected))
    missing, unexpected = sorted(model - read), sorted(read - model)
    return [f"{engine} read {point.name} (after Java commit {point.java_commits}): {got.num_rows} rows, "
            f"expected {expected.num_rows}; missing {missing[:5]}, unexpected {unexpected[:5]}"]


def check_rows(table: Table, peer: JavaPeer, warehouse: Path, spec: StreamSpec,
               points: Sequence[ReadPoint]) -> tuple[list[str], int]:
    """Read every point with both engines against the model: ``(findings, rows checked)``."""
    states = spec.states(p.java_commits for p in points)
    for point in points:
        peer.read(warehouse, IDENT, **point.where)
    java_tables = peer.run()
    findings: list[str] = []
    checked = 0
    for point, theirs in zip(points, java_tables, strict=True):
        expected = states[point.java_commits]
        findings += row_findings("paimonflow", point, table.read(**point.where), expected)
        kinds = set(kinds_of(theirs))
        if kinds - {"+I"}:
            findings.append(f"Java read {point.name} with row kinds {sorted(kinds)}")
        findings += row_findings("Java", point, without_kinds(theirs), expected)
        checked += 2 * expected.num_rows
    return findings, checked


# -- plumbing ------------------------------------------------------------------------------------------


def new_table(warehouse: Path) -> tuple[Table, PublishRecorder]:
    recorder = PublishRecorder()
    catalog = Catalog(str(warehouse), file_io=recorder)
    catalog.create_database(IDENT.split(".")[0], ignore_if_exists=True)
    catalog.create_table(IDENT, SCHEMA, primary_keys=["id"], options=TABLE_OPTIONS)
    return catalog.get_table(IDENT), recorder


def run_java_writer(peer: JavaPeer, warehouse: Path, spec: StreamSpec) -> dict[str, Any]:
    """Java's whole streaming write (blocks until its last commit); the op's result."""
    peer.stream_write(warehouse, IDENT, commit_user=JAVA_USER, commits=spec.commits, key_base=spec.key_base,
                      rows_per_commit=spec.rows_per_commit, updates_per_commit=spec.updates_per_commit,
                      sleep_ms=spec.sleep_ms)
    peer.run()
    return peer.last_results[0]


def write_as_java(table: Table, spec: StreamSpec, i: int) -> int:
    """paimonflow playing Java's commit ``i`` (the negative controls): its snapshot id."""
    result = table.write(spec.batch(i), commit_user=JAVA_USER, commit_identifier=i)
    assert result.snapshot_id is not None
    return result.snapshot_id


def forge_java_commit(table: Table, snapshot_id: int, identifier: int) -> bytes:
    """Java's commit ``identifier`` as the snapshot JSON it would publish at ``snapshot_id``,
    built on the snapshot before it (same files: it adds no row)."""
    parent = table.snapshot_manager.snapshot(snapshot_id - 1)
    forged = replace(parent, id=snapshot_id, uuid=None, commit_user=JAVA_USER, commit_identifier=identifier,
                     commit_kind=CommitKind.APPEND, time_millis=int(time.time() * 1000))
    return forged.to_json()


def rename_over(path: str, data: bytes) -> None:
    """What Java's LocalFileIO does once its existence check passed: rename a temp file over the target."""
    target = local_path(path)
    directory, name = os.path.split(target)
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4()}.tmp")  # Java's temp file name
    Path(tmp).write_bytes(data)
    os.replace(tmp, target)


# -- the race ------------------------------------------------------------------------------------------


@pytest.mark.interop
@pytest.mark.java
@pytest.mark.slow
@pytest.mark.reliability
@pytest.mark.timeout(1800)
def test_java_streaming_writer_beside_paimonflow_maintenance(java_peer: JavaPeer, tmp_path: Path,
                                                             reliability: Reliability) -> None:
    """The race, then the whole oracle (module docstring); fails on any replaced publish that
    paimonflow reported, tagged or built on, and on any row or commit lost by either engine."""
    spec = StreamSpec(commits=reliability.scale(300, 1500))
    warehouse = tmp_path / "wh"
    table, recorder = new_table(warehouse)
    racer = JavaPeer(tmp_path / "race-jvm")
    began = time.monotonic()
    try:
        java_history(racer, warehouse)  # the JVM is up and sees the table before the race starts
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="java-writer") as pool:
            writer = pool.submit(run_java_writer, racer, warehouse, spec)
            log = maintain_until(writer.done, table, recorder)
            java_result = writer.result()
    finally:
        racer.close()
    raced = time.monotonic() - began

    checking = time.monotonic()
    java_ids: list[int] = java_result["snapshot_ids"]
    assert java_result["commit_user"] == JAVA_USER and len(java_ids) == spec.commits, java_result
    ours_history = history_of(table)
    findings = list(log.findings)
    findings += history_findings("paimonflow", ours_history, java_ids=java_ids, compactions=log.compactions)
    findings += history_findings("Java", java_history(java_peer, warehouse), java_ids=java_ids,
                                 compactions=log.compactions)
    findings += tag_findings(table, log.compactions)
    points = read_points(ours_history, java_ids, log.compactions, spec.commits, table.tags.list())
    found, rows_checked = check_rows(table, java_peer, warehouse, spec, points)
    findings += found
    findings += [f"needed file missing: {path}" for path in missing_needed_files(table)]

    counts = {
        "java_commits": spec.commits,
        "compactions": len(log.compactions),
        "idle_compaction_rounds": log.idle_rounds,
        "tags": len(log.compactions),
        "expiries": log.expiries,
        "expired_snapshots": log.expired_snapshots,
        "publishes_lost_to_java": recorder.lost,
        "replaced_publishes_retried": sum(c.replaced_reported or 0 for c in log.compactions),
        "replaced_publishes_observed": sum(c.replaced_observed for c in log.compactions),
        "replaced_publishes_reported_as_ours": sum(c.replaced_unnoticed for c in log.compactions),
        "rows_checked": rows_checked,
        "snapshots_checked": len(ours_history),
        "tags_checked": len(log.compactions),
    }
    reliability.record(**counts)
    print(f"java writer race ({reliability.tier} tier): race {raced:.1f} s (Java's writer "
          f"{java_result['elapsed_ms'] / 1000:.1f} s), checks {time.monotonic() - checking:.1f} s: "
          f"{json.dumps(counts)}")
    assert not findings, f"{len(findings)} findings:\n" + "\n".join(findings[:50])
    # the two writers really raced (else the test proves nothing)
    interleaved = [c for c in log.compactions if java_ids[0] < c.snapshot_id < java_ids[-1]]
    assert len(interleaved) >= 3, f"only {len(interleaved)} compactions landed between Java's commits"
    assert recorder.lost > 0, "paimonflow never lost a publish to Java: the writers did not race"


# -- negative controls (no JVM) ------------------------------------------------------------------------


@pytest.mark.interop
@pytest.mark.reliability
def test_oracle_flags_a_snapshot_replaced_after_compact_returned(tmp_path: Path) -> None:
    """Java's rename lands right after ``compact`` returned snapshot N: the per-round publish
    check, both tag checks and the history check must each flag it."""
    spec = StreamSpec(commits=4)
    table, recorder = new_table(tmp_path / "wh")
    java_ids = [write_as_java(table, spec, i) for i in range(1, 4)]
    recorder.take()
    replaced: list[int] = []

    def java_renames_over(snapshot_id: int) -> None:
        rename_over(table.snapshot_manager.path(snapshot_id), forge_java_commit(table, snapshot_id, 4))
        replaced.append(snapshot_id)

    log = MaintenanceLog()
    maintenance_round(table, recorder, log, 1, after_compact=java_renames_over)
    (n,) = replaced
    java_ids.append(n)
    replaced_by_java = f"{JAVA_USER}/4 APPEND"
    flagged = f"reported snapshot {n} as its own, but it holds {replaced_by_java}"
    assert any(flagged in f for f in log.findings), log.findings
    assert any(f.startswith("tag t1 made on snapshot") for f in log.findings), log.findings
    history = history_findings("paimonflow", history_of(table), java_ids=java_ids,
                               compactions=log.compactions)
    assert any(f"snapshot {n} was reported by Java's commit 4 and by compaction 1" in f for f in history), \
        history
    assert any(f"compaction 1 reported snapshot {n}, which holds {replaced_by_java}" in f for f in history), \
        history
    assert any("tag t1 holds snapshot" in f for f in tag_findings(table, log.compactions))


@pytest.mark.interop
@pytest.mark.reliability
def test_a_publish_replaced_during_compaction_is_detected_and_retried(tmp_path: Path) -> None:
    """Java's rename lands between paimonflow's ``os.link`` of snapshot N and the end of its
    publish (the real race, made deterministic): the compaction must notice that N is no longer
    its own, retry, and report only a snapshot that holds its commit (DESIGN §1 item 10). A
    commit that does not confirm its publishes fails here: it reports, tags and records N."""
    spec = StreamSpec(commits=4)
    table, recorder = new_table(tmp_path / "wh")
    java_ids = [write_as_java(table, spec, i) for i in range(1, 4)]
    recorder.take()
    replaced: list[int] = []

    def java_renames_over(publish: Publish) -> None:
        if not replaced:
            replaced.append(publish.snapshot_id)
            rename_over(publish.path, forge_java_commit(table, publish.snapshot_id, 4))

    recorder.after_publish = java_renames_over
    log = MaintenanceLog()
    maintenance_round(table, recorder, log, 1)
    (n,) = replaced
    java_ids.append(n)
    history = history_findings("paimonflow", history_of(table), java_ids=java_ids,
                               compactions=log.compactions)
    findings = [*log.findings, *tag_findings(table, log.compactions), *history]
    assert not findings, "\n".join(findings)
    (compaction,) = log.compactions
    assert compaction.snapshot_id > n and compaction.replaced_observed == 1, compaction
    assert compaction.replaced_reported in (None, 1), compaction
    assert sorted_rows(table.read()).equals(spec.states([3])[3])
