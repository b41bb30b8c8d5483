"""No lost commits: several processes committing into one table at once lose no reported commit.

Each worker process commits ``COMMITS`` small batches into one shared table, every batch with
rows no other batch has (so each commit's rows are identifiable), under its own commit user and
increasing commit identifiers, and appends every *acknowledged* commit (snapshot id, identifier,
row ids) to its own log, fsynced before the next commit starts. Afterwards the parent checks the
invariants of ``reference/reliability.md`` §5.2 against the logs:

* I1 every acknowledged commit's rows are readable from the latest snapshot, exactly once;
* I2 every ``(commit_user, commit_identifier)`` is in exactly one snapshot, the one reported;
* I3 snapshot ids are 1..N, contiguous, every one parses, N = number of acknowledged commits;
* I5 the latest snapshot a reader finds is N (whatever the ``LATEST`` hint says).

Exactly-once retries are exercised twice: inside the race (a worker repeats some commits right
after their success, while others keep committing) and afterwards from fresh processes that
repeat every commit of one worker (an Airflow task retried on another machine).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
import traceback
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.fs import LocalFileIO
from tests.reliability.oracle import snapshot_ids_on_storage


@pytest.fixture(autouse=True)
def _writers_race(monkeypatch):
    """These tests are about races: the writers' attempts are purely optimistic here (no turns at
    committing, which make the writers of one machine commit one after another)."""
    monkeypatch.setenv("PAIMONFLOW_COMMIT_TURNS", "off")


DATABASE = "race"
ROW_ID_STRIDE = 1_000  # row ids: writer * ROW_ID_STRIDE**2 + commit * ROW_ID_STRIDE + j
JOIN_TIMEOUT_S = 120.0
# Plenty of retries: the test is about lost or duplicated commits, not about giving up.
RACE_OPTIONS = {"commit.max-retries": "200", "commit.min-retry-wait": "5 ms", "commit.max-retry-wait": "200 ms"}

APPEND_SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("writer", pa.int32()),
    pa.field("commit", pa.int32()),
    pa.field("payload", pa.string()),
])
PK_SCHEMA = pa.schema([
    pa.field("part", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("writer", pa.int32()),
    pa.field("commit", pa.int32()),
    pa.field("payload", pa.string()),
])


@dataclass(frozen=True, slots=True, kw_only=True)
class RaceSpec:
    """Everything a spawned worker needs (picklable)."""

    warehouse: str
    storage_options: dict[str, str]
    identifier: str
    kind: str  # "append" or "pk"
    writers: int
    commits: int
    log_dir: str
    check_then_rename: bool = False  # the negative control: a publish that is not atomic
    join_timeout_s: float = JOIN_TIMEOUT_S


class CheckThenRenameFileIO(LocalFileIO):
    """Local disk with pypaimon's publish (``exists`` then rename over the target): loses commits.

    The pause between the check and the rename widens the race window so the negative control
    loses commits on every run instead of now and then (reliability.md §1.4 measured 13/500).
    """

    def create_if_absent(self, path: str, data: bytes) -> bool:
        if os.path.exists(path):
            return False
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{time.monotonic_ns()}.tmp"
        with open(tmp, "wb") as out:
            out.write(data)
        time.sleep(0.01)
        os.replace(tmp, path)  # silently replaces a snapshot another writer published meanwhile
        return True


def open_catalog(spec: RaceSpec) -> Catalog:
    if spec.check_then_rename:
        return Catalog(spec.warehouse, file_io=CheckThenRenameFileIO())
    return Catalog(spec.warehouse, storage_options=spec.storage_options or None)


# ---------------------------------------------------------------------------------------------
# rows


def commit_user(writer: int) -> str:
    return f"racer-{writer}"


def rows_of(writer: int, commit: int) -> list[int]:
    """The row ids of one commit: 1..3 rows, distinct across all (writer, commit) pairs."""
    base = writer * ROW_ID_STRIDE * ROW_ID_STRIDE + commit * ROW_ID_STRIDE
    return [base + j for j in range(1 + commit % 3)]


def batch_of(kind: str, writer: int, commit: int) -> pa.Table:
    ids = rows_of(writer, commit)
    columns: dict[str, list[object]] = {
        "id": ids,
        "writer": [writer] * len(ids),
        "commit": [commit] * len(ids),
        "payload": [f"w{writer}c{commit}r{j}" for j in range(len(ids))],
    }
    if kind == "pk":
        columns = {"part": [f"p{i % 2}" for i in ids], **columns}
        return pa.table(columns, schema=PK_SCHEMA)
    return pa.table(columns, schema=APPEND_SCHEMA)


# ---------------------------------------------------------------------------------------------
# the worker (runs in a spawned process)


def _append_log(path: str, record: Mapping[str, object]) -> None:
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
        log.flush()
        os.fsync(log.fileno())


def race_worker(spec: RaceSpec, writer: int, start: Barrier) -> None:
    """Commit ``spec.commits`` batches as ``commit_user(writer)``; log each acknowledged commit.

    Every fourth commit is immediately repeated with the same identity: the repeat must commit
    nothing and report the snapshot of the first attempt.
    """
    log_path = os.path.join(spec.log_dir, f"writer-{writer}.jsonl")
    try:
        table = open_catalog(spec).get_table(spec.identifier)
        user = commit_user(writer)
        start.wait(timeout=60)
        for commit in range(spec.commits):
            identifier = commit + 1
            data = batch_of(spec.kind, writer, commit)
            result = table.write(data, commit_user=user, commit_identifier=identifier)
            _append_log(log_path, {
                "event": "ack", "writer": writer, "commit": commit, "identifier": identifier,
                "snapshot_id": result.snapshot_id, "already_committed": result.already_committed,
                "commit_user": result.commit_user, "added_rows": result.added_rows,
                "attempts": result.attempts, "rows": rows_of(writer, commit),
            })
            if commit % 4 == 3:
                again = table.write(data, commit_user=user, commit_identifier=identifier)
                _append_log(log_path, {
                    "event": "repeat", "writer": writer, "commit": commit, "identifier": identifier,
                    "snapshot_id": again.snapshot_id, "already_committed": again.already_committed,
                    "added_rows": again.added_rows,
                })
    except BaseException:
        _append_log(log_path, {"event": "error", "writer": writer, "traceback": traceback.format_exc()})
        raise


def repeat_worker(spec: RaceSpec, writer: int, start: Barrier) -> None:
    """A retried task in a fresh process: repeat every commit of ``writer`` with its identity."""
    log_path = os.path.join(spec.log_dir, f"repeat-{writer}.jsonl")
    try:
        table = open_catalog(spec).get_table(spec.identifier)
        start.wait(timeout=60)
        for commit in range(spec.commits):
            result = table.write(batch_of(spec.kind, writer, commit), commit_user=commit_user(writer),
                                 commit_identifier=commit + 1)
            _append_log(log_path, {
                "event": "repeat", "writer": writer, "commit": commit, "identifier": commit + 1,
                "snapshot_id": result.snapshot_id, "already_committed": result.already_committed,
                "added_rows": result.added_rows,
            })
    except BaseException:
        _append_log(log_path, {"event": "error", "writer": writer, "traceback": traceback.format_exc()})
        raise


# ---------------------------------------------------------------------------------------------
# driving processes


def run_processes(target, spec: RaceSpec, writers: list[int]) -> None:
    """Start one spawned process per writer, release them together (once all have opened the
    table), wait, and fail on any error."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(len(writers))
    processes = [ctx.Process(target=target, args=(spec, w, start), name=f"{target.__name__}-{w}") for w in writers]
    for p in processes:
        p.start()
    try:
        deadline = time.monotonic() + spec.join_timeout_s
        for p in processes:
            p.join(timeout=max(deadline - time.monotonic(), 0.1))
    finally:
        hung = [p for p in processes if p.is_alive()]
        for p in hung:
            p.kill()  # only the processes this test started, by their handle
            p.join(timeout=10)
    errors = read_logs(Path(spec.log_dir), event="error")
    assert not errors, "worker failed:\n" + "\n".join(str(e["traceback"]) for e in errors)
    assert not hung, f"workers hung for more than {spec.join_timeout_s} s: {[p.name for p in hung]}"
    assert all(p.exitcode == 0 for p in processes), {p.name: p.exitcode for p in processes}


def read_logs(log_dir: Path, *, event: str, prefix: str = "") -> list[dict[str, object]]:
    records = []
    for path in sorted(log_dir.glob(f"{prefix}*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["event"] == event:
                records.append(record)
    return records


def create_race_table(catalog: Catalog, kind: str) -> str:
    identifier = f"{DATABASE}.{kind}_race"
    catalog.create_database(DATABASE, ignore_if_exists=True)
    if kind == "pk":
        # write-only: one snapshot per commit (compacting writers race in test_write_path.py)
        catalog.create_table(identifier, PK_SCHEMA, primary_keys=["part", "id"], partition_keys=["part"],
                             options={"bucket": "2", "write-only": "true", **RACE_OPTIONS})
    else:
        catalog.create_table(identifier, APPEND_SCHEMA, options=RACE_OPTIONS)
    return identifier


# ---------------------------------------------------------------------------------------------
# the oracle


def lost_acknowledged_commits(catalog: Catalog, spec: RaceSpec) -> list[dict[str, object]]:
    """Acknowledged commits whose identity is not in the snapshot that was reported for them."""
    table = catalog.get_table(spec.identifier)
    landed = {(s["commit_user"], s["commit_identifier"], s["snapshot_id"])
              for s in table.system_table("snapshots").to_pylist()}
    return [a for a in read_logs(Path(spec.log_dir), event="ack", prefix="writer-")
            if (a["commit_user"], a["identifier"], a["snapshot_id"]) not in landed]


def check_no_lost_commits(catalog: Catalog, spec: RaceSpec) -> None:
    table = catalog.get_table(spec.identifier)
    acks = read_logs(Path(spec.log_dir), event="ack", prefix="writer-")
    expected_acks = spec.writers * spec.commits
    assert len(acks) == expected_acks, f"{len(acks)} acknowledged commits, expected {expected_acks}"
    lost = lost_acknowledged_commits(catalog, spec)
    assert not lost, f"{len(lost)} acknowledged commits lost, e.g. {lost[:3]}"
    assert not any(a["already_committed"] for a in acks), "a first attempt was reported as already committed"

    # I3: ids 1..N contiguous, on storage and through the reader; N = acknowledged commits.
    on_storage = snapshot_ids_on_storage(table)
    assert on_storage == list(range(1, expected_acks + 1)), f"snapshot files {on_storage}"
    snapshots = table.system_table("snapshots").to_pylist()
    assert [s["snapshot_id"] for s in snapshots] == on_storage
    latest = table.latest_snapshot()
    assert latest is not None and latest.id == expected_acks  # I5

    # I2: every (user, identifier) in exactly one snapshot, the one that was reported.
    identities = Counter((s["commit_user"], s["commit_identifier"]) for s in snapshots)
    duplicated = {k: n for k, n in identities.items() if n > 1}
    assert not duplicated, f"commits in more than one snapshot: {duplicated}"
    snapshot_of = {(s["commit_user"], s["commit_identifier"]): s for s in snapshots}
    for a in acks:
        key = (commit_user(int(a["writer"])), a["identifier"])
        assert a["commit_user"] == key[0]
        assert key in snapshot_of, f"acknowledged commit {key} (snapshot {a['snapshot_id']}) is in no snapshot"
        snap = snapshot_of[key]
        assert snap["snapshot_id"] == a["snapshot_id"], f"{key} reported {a['snapshot_id']}, is {snap['snapshot_id']}"
        assert snap["commit_kind"] == "APPEND"
        assert snap["delta_record_count"] == len(a["rows"]) == a["added_rows"]
    # Each writer's commits landed in the order it made them.
    for writer in range(spec.writers):
        ids = [a["snapshot_id"] for a in sorted(acks, key=lambda r: r["commit"]) if a["writer"] == writer]
        assert ids == sorted(ids)
    totals = [s["total_record_count"] for s in snapshots]
    deltas = [s["delta_record_count"] for s in snapshots]
    assert totals == [sum(deltas[: i + 1]) for i in range(len(deltas))]

    # I1: every acknowledged row readable exactly once, with the content written; nothing else.
    rows = table.read().to_pylist()
    ids = Counter(r["id"] for r in rows)
    assert not {i: n for i, n in ids.items() if n > 1}, "rows read more than once"
    expected = {i: (int(a["writer"]), int(a["commit"])) for a in acks for i in a["rows"]}
    assert set(ids) == set(expected), (
        f"lost rows {sorted(set(expected) - set(ids))[:10]}, unexpected rows {sorted(set(ids) - set(expected))[:10]}"
    )
    assert len(rows) == sum(len(a["rows"]) for a in acks) == latest.total_record_count
    for r in rows:
        writer, commit = expected[r["id"]]
        assert (r["writer"], r["commit"]) == (writer, commit)
        assert r["payload"] == f"w{writer}c{commit}r{r['id'] % ROW_ID_STRIDE}"
        if spec.kind == "pk":
            assert r["part"] == f"p{r['id'] % 2}"

    # Repeats inside the race committed nothing and reported the original snapshot.
    reported = {(a["writer"], a["identifier"]): a["snapshot_id"] for a in acks}
    repeats = read_logs(Path(spec.log_dir), event="repeat", prefix="writer-")
    assert len(repeats) == spec.writers * (spec.commits // 4)
    for r in repeats:
        assert r["already_committed"] is True and r["added_rows"] == 0, r
        assert r["snapshot_id"] == reported[(r["writer"], r["identifier"])], r


def check_retried_task_commits_nothing(catalog: Catalog, spec: RaceSpec, writers: list[int]) -> None:
    table = catalog.get_table(spec.identifier)
    before_ids = snapshot_ids_on_storage(table)
    before_rows = table.read().sort_by("id")
    run_processes(repeat_worker, spec, writers)
    repeats = read_logs(Path(spec.log_dir), event="repeat", prefix="repeat-")
    assert len(repeats) == len(writers) * spec.commits
    assert all(r["already_committed"] is True and r["added_rows"] == 0 for r in repeats), repeats
    # The latest commit of each writer is reported exactly (older identifiers are covered by it).
    acks = read_logs(Path(spec.log_dir), event="ack", prefix="writer-")
    last = {a["writer"]: a["snapshot_id"] for a in acks if a["identifier"] == spec.commits}
    for r in repeats:
        if r["identifier"] == spec.commits:
            assert r["snapshot_id"] == last[r["writer"]], r
    assert snapshot_ids_on_storage(table) == before_ids
    assert table.read().sort_by("id").equals(before_rows)


def race(catalog: Catalog, spec: RaceSpec, reliability) -> None:
    started = time.monotonic()
    run_processes(race_worker, spec, list(range(spec.writers)))
    raced = time.monotonic() - started
    check_no_lost_commits(catalog, spec)
    acks = read_logs(Path(spec.log_dir), event="ack", prefix="writer-")
    lost_races = sum(int(a["attempts"]) - 1 for a in acks)
    # Negative control: the writers really raced (else this test proves nothing).
    assert lost_races > 0, "no commit ever lost the race for a snapshot id: the writers did not overlap"
    check_retried_task_commits_nothing(catalog, spec, [0, spec.writers - 1])
    reliability.record(commits=len(acks), races=lost_races)
    print(f"{spec.kind}: {spec.writers} writers x {spec.commits} commits raced in {raced:.1f} s, "
          f"{lost_races} lost races")


# ---------------------------------------------------------------------------------------------
# tests


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("kind", ["append", "pk"])
def test_no_lost_commits_local(tmp_path: Path, kind: str, reliability) -> None:
    """Fast tier: 6 writers x 20 commits; long tier: 8 x 150."""
    warehouse = str(tmp_path / "warehouse")
    catalog = Catalog(warehouse)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    spec = RaceSpec(warehouse=warehouse, storage_options={}, identifier=create_race_table(catalog, kind),
                    kind=kind, writers=reliability.scale(6, 8), commits=reliability.scale(20, 150),
                    log_dir=str(log_dir), join_timeout_s=reliability.scale(JOIN_TIMEOUT_S, 1200.0))
    race(catalog, spec, reliability)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_negative_control_check_then_rename_loses_commits(tmp_path: Path, reliability) -> None:
    """The oracle must catch lost commits when the publish is not atomic (else it proves nothing)."""
    warehouse = str(tmp_path / "warehouse")
    catalog = Catalog(warehouse)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    spec = RaceSpec(warehouse=warehouse, storage_options={}, identifier=create_race_table(catalog, "append"),
                    kind="append", writers=4, commits=10, log_dir=str(log_dir), check_then_rename=True)
    run_processes(race_worker, spec, list(range(spec.writers)))
    lost = lost_acknowledged_commits(catalog, spec)
    reliability.record(commits=len(read_logs(log_dir, event="ack", prefix="writer-")), lost_commits_detected=len(lost))
    assert lost, "check-then-rename lost no commit: the race window is too small"
    with pytest.raises(AssertionError):
        check_no_lost_commits(catalog, spec)


@pytest.mark.slow
@pytest.mark.s3
@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["append", "pk"])
def test_no_lost_commits_s3(tmp_path: Path, s3_bucket: str, s3_storage_options: dict[str, str], kind: str,
                            reliability) -> None:
    warehouse = f"s3://{s3_bucket}/wh"
    catalog = Catalog(warehouse, storage_options=s3_storage_options)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    spec = RaceSpec(warehouse=warehouse, storage_options=dict(s3_storage_options),
                    identifier=create_race_table(catalog, kind), kind=kind, writers=4, commits=8,
                    log_dir=str(log_dir))
    race(catalog, spec, reliability)


def test_repeated_commit_identity_commits_nothing_in_one_process(tmp_path: Path) -> None:
    """The same exactly-once rule without processes (fast): a repeat reports the first snapshot."""
    catalog = Catalog(str(tmp_path / "warehouse"))
    table = catalog.get_table(create_race_table(catalog, "pk"))
    first = table.write(batch_of("pk", 0, 0), commit_user="job-a", commit_identifier=7)
    other = table.write(batch_of("pk", 1, 0), commit_user="job-b", commit_identifier=7)
    again = table.write(batch_of("pk", 0, 0), commit_user="job-a", commit_identifier=7)
    assert (first.snapshot_id, other.snapshot_id) == (1, 2)
    assert not first.already_committed and not other.already_committed
    assert again.already_committed and again.snapshot_id == 1 and again.added_rows == 0
    older = table.write(batch_of("pk", 0, 1), commit_user="job-a", commit_identifier=3)
    assert older.already_committed and older.added_rows == 0
    assert snapshot_ids_on_storage(table) == [1, 2]
    assert sorted(table.read().column("id").to_pylist()) == sorted(rows_of(0, 0) + rows_of(1, 0))
    data_files = [p for p in Path(table.path).rglob("data-*") if p.is_file()]
    assert len(data_files) == 2, "the repeated commits wrote data files"
