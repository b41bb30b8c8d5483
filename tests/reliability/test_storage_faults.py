"""Storage faults at every step of commits, compactions, expiry, tag operations and orphan removal.

For each operation this harness first runs it on a copy of a prepared table through a recording
:class:`FaultyFileIO` to number its storage operations, and keeps the outcome as the reference.
Then, for every operation index k (every write; reads sampled in the fast tier), on a fresh copy:

1. the operation runs with one fault at step k: ``before`` (nothing happened), ``after`` (the
   write landed, the caller sees an error; for the snapshot publish that is the ambiguous
   outcome) or a failing read. It either succeeds or raises a typed ``PaimonflowError``; any other
   exception fails the test;
2. the table, read through a clean FileIO, is consistent: snapshot ids contiguous and parseable
   (I3), the latest state is the state before or after the operation and nothing in between (I6;
   a rollback may stop at any snapshot it walks back through), every tag reads its own rows;
3. the operation is retried the way a scheduler retries a task (same commit user and identifier,
   ``ignore_if_exists`` for a tag): the final state equals the reference exactly: the same
   snapshots with the same identities (I1, I2: nothing lost, nothing committed twice), the same
   rows at every retained snapshot and tag, and every file they reference exists (I4);
4. orphan removal with no age limit then deletes only leftovers: the state is unchanged and every
   referenced file still exists (I8).

A random tier (Paimon's ``FailingFileIO``): committers on their own threads commit, compact,
expire and tag through a FileIO failing a random 1 % of operations, retrying each step until it
succeeds; the rows must equal a model and every referenced file must exist.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import random
import shutil
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import PaimonflowError, TagNotFoundError
from paimonflow.core.fs import LocalFileIO, get_file_io
from paimonflow.core.table import Table
from tests.reliability import crash_child
from tests.reliability.faulty_io import WRITE, FaultPlan, FaultyFileIO
from tests.reliability.oracle import garbage, missing_needed_files

DB = "faults"
PK_SCHEMA = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                       pa.field("v", pa.string())])
APPEND_SCHEMA = pa.schema([pa.field("p", pa.string()), pa.field("id", pa.int64()), pa.field("v", pa.string())])
# retention large enough that no commit expires anything by itself: the operations decide
QUIET = {"snapshot.num-retained.min": "100", "snapshot.num-retained.max": "100"}


def pk_rows(keys: list[int], tag: str, part: str | None = None) -> pa.Table:
    return pa.table({"p": [part or ("a" if k % 2 else "b") for k in keys], "k": keys,
                     "v": [f"{tag}-{k}" for k in keys]}, schema=PK_SCHEMA)


def append_rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"p": ["a" if i % 2 else "b" for i in ids], "id": ids, "v": [f"{tag}-{i}" for i in ids]},
                    schema=APPEND_SCHEMA)


# ---------------------------------------------------------------------------------------------
# the prepared tables (built once per module, copied for every case)


def build_templates(root: Path | str, storage_options: dict[str, str] | None = None,
                    tables: tuple[str, ...] = ("pk", "lookup", "ap", "expired")) -> None:
    catalog = Catalog(str(root), storage_options=storage_options)
    catalog.create_database(DB)
    if "pk" in tables:
        build_pk(catalog)
    if "lookup" in tables:
        build_lookup(catalog)
    if "ap" in tables:
        build_append(catalog)
    if "expired" in tables:
        build_expired(catalog)


def build_pk(catalog: Catalog) -> None:
    catalog.create_table(f"{DB}.pk", PK_SCHEMA, primary_keys=["p", "k"], partition_keys=["p"],
                         options={"bucket": "2", "changelog-producer": "input", **QUIET})
    pk = catalog.get_table(f"{DB}.pk")
    for i in range(4):
        pk.write(pk_rows(list(range(i * 3, i * 3 + 6)), f"s{i + 1}"), commit_user="base", commit_identifier=i + 1)
    pk.tags.create("t2", snapshot_id=2)
    # leftovers of crashed writers, for orphan removal to find
    pk.file_io.write_bytes(f"{pk.path}/p=a/bucket-0/data-crashed-writer-0.parquet", b"PAR1 half a file")
    pk.file_io.write_bytes(f"{pk.path}/manifest/manifest-crashed-writer-0", b"not avro")


def build_lookup(catalog: Catalog) -> None:
    catalog.create_table(f"{DB}.lookup", PK_SCHEMA, primary_keys=["p", "k"], partition_keys=["p"],
                         options={"bucket": "1", "changelog-producer": "lookup",
                                  "num-sorted-run.compaction-trigger": "2", **QUIET})
    lookup = catalog.get_table(f"{DB}.lookup")
    for i in range(2):
        lookup.write(pk_rows(list(range(i, i + 4)), f"s{i + 1}"), commit_user="base", commit_identifier=i + 1)


def build_append(catalog: Catalog) -> None:
    catalog.create_table(f"{DB}.ap", APPEND_SCHEMA, partition_keys=["p"], options=QUIET)
    ap = catalog.get_table(f"{DB}.ap")
    for i in range(3):
        ap.write(append_rows(list(range(i * 4, i * 4 + 4)), f"s{i + 1}"), commit_user="base", commit_identifier=i + 1)


def build_expired(catalog: Catalog) -> None:
    # the PK table with its first snapshots expired: tag t2 now holds the only reference to files
    catalog.create_table(f"{DB}.expired", PK_SCHEMA, primary_keys=["p", "k"], partition_keys=["p"],
                         options={"bucket": "2", **QUIET})
    expired = catalog.get_table(f"{DB}.expired")
    for i in range(4):
        expired.write(pk_rows(list(range(i * 3, i * 3 + 6)), f"s{i + 1}"), commit_user="base",
                      commit_identifier=i + 1)
    expired.tags.create("t2", snapshot_id=2)
    expired.compact(commit_user="base-compact", commit_identifier=1)
    expired.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)


# ---------------------------------------------------------------------------------------------
# the operations under test


@dataclass(frozen=True)
class Scenario:
    name: str
    table: str
    act: Callable[[Table], object]
    retry: Callable[[Table], object] | None = None  # default: act again
    walks_back: bool = False  # a rollback passes through the snapshots between latest and target
    # A writer that compacts commits APPEND then COMPACT; a failure before the COMPACT lands drops
    # only that optional compaction (the rows are committed, and a retry finds them committed).
    optional_compaction: bool = False

    def run_retry(self, table: Table) -> object:
        return (self.retry or self.act)(table)


def _delete_tag_if_present(table: Table) -> None:
    with contextlib.suppress(TagNotFoundError):
        table.tags.delete("t2")


def _orphans(table: Table) -> object:
    return table.remove_orphan_files(older_than_millis=0)


SCENARIOS = [
    Scenario("append", "ap", lambda t: t.write(append_rows([100, 101, 102], "new"), commit_user="job",
                                               commit_identifier=7)),
    Scenario("upsert", "pk", lambda t: t.write(pk_rows([1, 2, 50, 51], "new"), commit_user="job",
                                               commit_identifier=7), optional_compaction=True),
    Scenario("overwrite", "pk", lambda t: t.write(pk_rows([60, 62], "ow", part="b"), overwrite={"p": "b"},
                                                  commit_user="job", commit_identifier=7)),
    Scenario("writer-compaction", "lookup", lambda t: t.write(pk_rows([2, 3, 9], "new"), commit_user="job",
                                                              commit_identifier=7), optional_compaction=True),
    Scenario("compact", "pk", lambda t: t.compact(commit_user="compactor", commit_identifier=1)),
    Scenario("expire", "pk", lambda t: t.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)),
    Scenario("create-tag", "pk", lambda t: t.tags.create("t4", snapshot_id=4),
             retry=lambda t: t.tags.create("t4", snapshot_id=4, ignore_if_exists=True)),
    Scenario("delete-tag", "expired", lambda t: t.tags.delete("t2"), retry=_delete_tag_if_present),
    Scenario("rollback", "pk", lambda t: t.rollback(tag="t2"), walks_back=True),
    Scenario("remove-orphans", "pk", _orphans),
]


# ---------------------------------------------------------------------------------------------
# the oracle


def rows_of(table: Table, **at: object) -> tuple:
    data = table.read(**at).to_pylist()
    return tuple(sorted(tuple(sorted(r.items())) for r in data))


@dataclass
class State:
    snapshots: list[tuple]
    rows: dict[int, tuple]
    tags: dict[str, tuple]

    def latest_rows(self) -> tuple | None:
        return self.rows[max(self.rows)] if self.rows else None


def state_of(table: Table) -> State:
    """Every retained snapshot (identity and rows) and every tag (snapshot id and rows)."""
    snaps = [(s["snapshot_id"], s["commit_user"], s["commit_identifier"], s["commit_kind"])
             for s in table.system_table("snapshots").to_pylist()]
    return State(snapshots=snaps, rows={s[0]: rows_of(table, snapshot_id=s[0]) for s in snaps},
                 tags={name: (snap.id, rows_of(table, tag=name)) for name, snap in table.tags.list().items()})


def same_outcome(after: State, reference: State, scenario: Scenario) -> bool:
    """The state after a faulted run and its retry equals the reference (a writer's own
    compaction snapshot may be missing where the scenario allows it; rows are compared per commit)."""
    if after == reference:
        return True
    if not scenario.optional_compaction:
        return False

    def by_identity(state: State) -> list[tuple]:
        return [(user, ident, kind, state.rows[sid]) for sid, user, ident, kind in state.snapshots
                if not (user == "job" and kind == "COMPACT")]

    return (by_identity(after) == by_identity(reference) and after.latest_rows() == reference.latest_rows()
            and after.tags == reference.tags)


def check_references_exist(table: Table, context: str) -> None:
    """I4: every file a retained snapshot or tag needs exists."""
    missing = missing_needed_files(table)
    assert not missing, f"{context}: referenced files missing: {missing[:5]}"


def check_consistent(table: Table, allowed_latest: list[tuple], tags_before: dict[str, tuple],
                     context: str) -> None:
    """After a faulted operation: ids contiguous and parseable, the latest state allowed, tags whole."""
    manager = table.snapshot_manager
    ids = manager.list_ids()
    assert ids == list(range(ids[0], ids[-1] + 1)), f"{context}: snapshot ids {ids}"
    for sid in ids:
        manager.snapshot(sid)  # parses (a corrupt file would raise CorruptMetadataError)
    latest = manager.latest()
    assert latest is not None and latest.id == ids[-1], f"{context}: latest {latest} vs ids {ids}"
    assert rows_of(table) in allowed_latest, f"{context}: latest snapshot {latest.id} shows a state in between"
    for name, snap in table.tags.list().items():
        if name in tags_before:
            assert (snap.id, rows_of(table, tag=name)) == tags_before[name], f"{context}: tag {name} changed"


@dataclass
class Prepared:
    root: Path
    reference: dict[str, State] = field(default_factory=dict)
    before: dict[str, State] = field(default_factory=dict)
    operations: dict[str, list] = field(default_factory=dict)


def open_table(root: Path | str, name: str, file_io=None, storage_options: dict[str, str] | None = None) -> Table:
    file_io = file_io or get_file_io(str(root), storage_options)
    return Catalog(str(root), file_io=file_io).get_table(f"{DB}.{name}")


def copy_of(prepared: Prepared, target: Path) -> Path:
    shutil.copytree(prepared.root, target)
    return target


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    root = tmp_path_factory.mktemp("templates") / "wh"
    build_templates(root)
    out = Prepared(root=root)
    for scenario in SCENARIOS:
        work = copy_of(out, tmp_path_factory.mktemp(f"ref-{scenario.name}") / "wh")
        out.before[scenario.name] = state_of(open_table(work, scenario.table))
        recording = FaultyFileIO(LocalFileIO())
        table = open_table(work, scenario.table, recording)
        first = len(recording.operations)
        scenario.act(table)
        out.operations[scenario.name] = recording.operations[first:]
        out.reference[scenario.name] = state_of(open_table(work, scenario.table))
    return out


def cases(scenario: Scenario, operations: list, *, read_every: int) -> list[tuple[int, str]]:
    """(operation offset, fault) pairs: every write before and after it landed, every
    ``read_every``-th read failing."""
    out = []
    reads = 0
    for offset, op in enumerate(operations):
        if op.kind == WRITE:
            out += [(offset, "before"), (offset, "after")]
        else:
            if reads % read_every == 0:
                out.append((offset, "before"))
            reads += 1
    return out


def run_case(prepared: Prepared, scenario: Scenario, offset: int, fault: str, work: Path) -> str:
    """One faulted run + consistency check + retry + final checks. Returns the outcome."""
    context = f"{scenario.name}: {fault} fault at step {offset} ({prepared.operations[scenario.name][offset]})"
    before, reference = prepared.before[scenario.name], prepared.reference[scenario.name]
    if fault.startswith("kill"):
        process = crash_context().Process(target=crash_child.run, args=(str(work), scenario.name, offset, fault))
        process.start()
        process.join(timeout=120)
        assert process.exitcode == -signal.SIGKILL, f"{context}: the child was not killed (exit {process.exitcode})"
        outcome = "killed"
    else:
        faulty = FaultyFileIO(LocalFileIO())
        table = open_table(work, scenario.table, faulty)
        faulty.plan = FaultPlan(at={len(faulty.operations) + offset: fault})
        try:
            scenario.act(table)
            outcome = "succeeded"
        except PaimonflowError:
            outcome = "typed error"
        # Any other exception propagates and fails the test: faults must surface as typed errors.

    try:
        check_after_fault(work, scenario, before, reference, context)
    except PaimonflowError as exc:  # read through a clean FileIO: any error is a broken table
        raise AssertionError(f"{context}: the table is broken: {type(exc).__name__}: {exc}") from exc
    return outcome


def check_after_fault(work: Path, scenario: Scenario, before: State, reference: State, context: str) -> None:
    clean = open_table(work, scenario.table)
    allowed = [before.latest_rows(), reference.latest_rows()]
    if scenario.walks_back:
        allowed += list(before.rows.values())
    check_consistent(clean, allowed, before.tags | reference.tags, context)

    scenario.run_retry(open_table(work, scenario.table))
    clean = open_table(work, scenario.table)
    after = state_of(clean)
    assert same_outcome(after, reference, scenario), \
        f"{context}: after the retry the table differs from a run without faults"
    check_references_exist(clean, context)

    clean.remove_orphan_files(older_than_millis=0)
    clean = open_table(work, scenario.table)
    assert state_of(clean) == after, f"{context}: orphan removal changed the table"
    check_references_exist(clean, context + " (after orphan removal)")
    left = sorted(garbage(clean))
    assert not left, f"{context}: garbage orphan removal cannot collect: {left[:5]}"


@functools.cache
def crash_context() -> multiprocessing.context.BaseContext:
    """A forkserver with the harness imported: a crashing child starts in milliseconds."""
    from tests.reliability import crash_child  # noqa: F401 (imported so the forkserver preloads it)

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.reliability.crash_child"])
    return ctx


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_sigkill_at_every_step(prepared: Prepared, scenario: Scenario, tmp_path: Path, reliability) -> None:
    """SIGKILL before or after a storage operation of the job (a crash at exactly that step),
    then the scheduler's retry; the fast tier kills at a seeded sample of the write steps."""
    operations = prepared.operations[scenario.name]
    points = [(i, kill) for i, op in enumerate(operations) if op.kind == WRITE for kill in ("kill-before", "kill-after")]
    if not reliability.long:
        points = random.Random(scenario.name).sample(points, min(len(points), 4))
    for n, (offset, kill) in enumerate(points):
        run_case(prepared, scenario, offset, kill, copy_of(prepared, tmp_path / f"k{n}"))
        shutil.rmtree(tmp_path / f"k{n}")
    reliability.record(kills=len(points), retries=len(points))


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_fault_at_every_step(prepared: Prepared, scenario: Scenario, tmp_path: Path, reliability) -> None:
    operations = prepared.operations[scenario.name]
    writes = sum(op.kind == WRITE for op in operations)
    assert writes, f"{scenario.name} wrote nothing: the harness would prove nothing"
    todo = cases(scenario, operations, read_every=reliability.scale(4, 1))
    outcomes = []
    for i, (offset, fault) in enumerate(todo):
        outcomes.append(run_case(prepared, scenario, offset, fault, copy_of(prepared, tmp_path / f"c{i}")))
        shutil.rmtree(tmp_path / f"c{i}")
    failed = outcomes.count("typed error")
    # Negative control: injected faults really reached the operation (some of them must fail it).
    assert failed > 0, f"{scenario.name}: no injected fault ever failed the operation"
    reliability.record(faults=len(todo), fault_failures=failed, retries=len(todo), steps=len(operations))


# ---------------------------------------------------------------------------------------------
# the negative control: a commit that takes an unknown publish outcome for "not landed"


@pytest.mark.slow
def test_negative_control_a_commit_that_cleans_up_after_an_unknown_outcome_is_caught(
        prepared: Prepared, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reliability) -> None:
    """The harness must catch the classic bug (cleaning up and retrying after an ambiguous
    publish): with it, the snapshot that did land loses its manifests, or the commit lands twice."""
    from paimonflow.core.errors import StorageError
    from paimonflow.core.meta.snapshots import LATEST, Published, SnapshotManager

    def publish_naively(self: SnapshotManager, snapshot) -> Published:
        try:
            created = self.file_io.create_if_absent(self.path(snapshot.id), snapshot.to_json())
        except StorageError:
            return Published.TAKEN  # the bug: "it failed, so it did not land"
        if created:
            self._write_hint(LATEST, snapshot.id)
        return Published.LANDED if created else Published.TAKEN

    scenario = next(s for s in SCENARIOS if s.name == "append")
    publish = [i for i, op in enumerate(prepared.operations[scenario.name]) if op.name == "create_if_absent"]
    assert publish, "the append never published a snapshot"
    monkeypatch.setattr(SnapshotManager, "publish", publish_naively)
    with pytest.raises(AssertionError):
        run_case(prepared, scenario, publish[0], "after", copy_of(prepared, tmp_path / "c"))
    reliability.record(faults=1, negative_controls=1)


# ---------------------------------------------------------------------------------------------
# random faults, several committers, retries until success (Paimon's FailingFileIO + TestCommitThread)


MAX_FAULTS = 150


def retried(call: Callable[[], object], faults: FaultyFileIO, what: str, attempts: int = 200) -> object:
    """Run ``call`` until it succeeds, as a scheduler retries a task; typed errors only."""
    for _ in range(attempts):
        try:
            return call()
        except PaimonflowError:
            continue
    raise AssertionError(f"{what} still failing after {attempts} attempts ({len(faults.faults)} faults injected)")


def committer(root: Path | str, storage_options: dict[str, str] | None, name: str, worker: int, steps: int,
              seed: int, probability: float, model: dict, lock: threading.Lock, stats: dict, errors: list) -> None:
    try:
        # At most MAX_FAULTS faults per committer (Paimon's FailingFileIO caps them too): an
        # operation touching thousands of files would otherwise fail on every attempt.
        faulty = FaultyFileIO(get_file_io(str(root), storage_options),
                              FaultPlan(probability=probability, seed=seed, max_faults=MAX_FAULTS))
        table = retried(lambda: open_table(root, name, faulty), faulty, "open")
        rng = random.Random(seed)
        for step in range(steps):
            keys = [(worker + 1) * 10_000 + rng.randrange(40) for _ in range(rng.randint(1, 4))]
            if name == "ap":
                keys = [(worker + 1) * 10_000 + step * 10 + j for j in range(len(keys))]
                batch = append_rows(keys, f"w{worker}s{step}")
            else:
                keys = sorted(set(keys))
                batch = pk_rows(keys, f"w{worker}s{step}")
            retried(lambda b=batch, s=step: table.write(b, commit_user=f"w{worker}", commit_identifier=s + 1),
                    faulty, f"worker {worker} commit {step}")
            with lock:
                for row in batch.to_pylist():
                    model[(row["p"], row["k"] if "k" in row else row["id"])] = row
            if worker == 0 and step % 4 == 3:
                retried(lambda s=step: table.compact(commit_user="compactor", commit_identifier=s + 1), faulty,
                        "compaction")
                retried(lambda s=step: table.tags.create(f"t{s}", ignore_if_exists=True), faulty, "tag")
            if worker == 1 and step % 5 == 4:
                retried(lambda: table.expire_snapshots(retain_min=2, retain_max=3, older_than_millis=0), faulty,
                        "expiry")
        stats[worker] = len(faulty.faults)
    except BaseException as exc:  # reported by the test thread
        errors.append(exc)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", ["ap", "pk", "lookup"])
def test_random_faults_with_retries_lose_and_duplicate_nothing(prepared: Prepared, tmp_path: Path, name: str,
                                                              reliability) -> None:
    random_faults(str(copy_of(prepared, tmp_path / "wh")), None, name, reliability)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_random_faults_on_s3(s3_bucket: str, s3_storage_options: dict[str, str], reliability) -> None:
    warehouse = f"s3://{s3_bucket}/wh"
    build_templates(warehouse, s3_storage_options, tables=("pk",))
    # the test server handles one request at a time: fewer steps than on local disk
    random_faults(warehouse, s3_storage_options, "pk", reliability, steps=reliability.scale(4, 24))


def random_faults(warehouse: str, storage_options: dict[str, str] | None, name: str, reliability,
                  steps: int | None = None) -> None:
    seed = reliability.scale(1, random.randrange(1 << 30))
    steps, workers = steps or reliability.scale(12, 60), 3
    base = open_table(warehouse, name, storage_options=storage_options).read().to_pylist()
    model = {(r["p"], r["k"] if "k" in r else r["id"]): r for r in base}
    lock, stats, errors = threading.Lock(), {}, []
    threads = [threading.Thread(target=committer, args=(warehouse, storage_options, name, w, steps, seed * 31 + w,
                                                        0.01, model, lock, stats, errors)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, f"seed {seed}: {errors[0]!r}"
    table = open_table(warehouse, name, storage_options=storage_options)
    rows = table.read().to_pylist()
    key = (lambda r: (r["p"], r["k"])) if name != "ap" else (lambda r: (r["p"], r["id"]))
    assert len(rows) == len({key(r) for r in rows}), f"seed {seed}: a row was read twice"
    assert {key(r): r for r in rows} == model, f"seed {seed}: the rows differ from the model"
    snaps = table.system_table("snapshots").to_pylist()
    ids = [s["snapshot_id"] for s in snaps]
    assert ids == list(range(ids[0], ids[-1] + 1)), f"seed {seed}: snapshot ids {ids}"
    appends = [(s["commit_user"], s["commit_identifier"]) for s in snaps if s["commit_kind"] == "APPEND"]
    assert len(appends) == len(set(appends)), f"seed {seed}: a commit landed twice"
    assert not missing_needed_files(table), f"seed {seed}: {missing_needed_files(table)[:3]}"
    table.remove_orphan_files(older_than_millis=0)
    table = open_table(warehouse, name, storage_options=storage_options)
    assert {key(r): r for r in table.read().to_pylist()} == model
    assert not missing_needed_files(table)
    injected = sum(stats.values())
    assert injected > 0, f"seed {seed}: no fault was injected: the harness proved nothing"
    reliability.record(commits=workers * steps, faults=injected)
