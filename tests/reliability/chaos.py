"""Workers and oracles shared by the chaos harnesses (``test_mixed_race.py``, ``test_random_kills.py``).

Everything a worker acknowledges goes to its own append-only JSON-lines log, fsynced before the
next step, so the parent can check the invariants of ``reference/reliability.md`` §5.2 against
what was promised, whatever happened to the worker afterwards. A log line torn by a SIGKILL in
the middle of a write is ignored (that acknowledgement was never complete).

Roles (each runs in its own process):

* mixed race (``multiprocessing`` spawn, no kills): ``upserter`` (primary-key upserts into the
  shared ``up-*`` partitions, updating its own earlier keys), ``overwriter`` (OVERWRITE of the
  partition it owns), ``compactor`` (full compaction, of the table or of one partition, until
  told to stop; a lost conflict must be a :class:`CommitConflictError` that commits nothing);
* random kills (``python -m tests.reliability.chaos <role> <json>``, killed with SIGKILL and
  restarted): ``writer`` (append, exactly-once identity ``(writer-<w>, k)``; after a restart it
  first commits its last unacknowledged batch again), ``compactor``, ``expirer``.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from paimonflow.core import Catalog
from paimonflow.core.errors import CommitConflictError
from paimonflow.core.table import Table
from tests.reliability.oracle import garbage, missing_needed_files, snapshot_ids_on_storage

DATABASE = "chaos"
# Plenty of retries: these harnesses are about lost or duplicated commits, not about giving up.
RACE_OPTIONS = {"commit.max-retries": "300", "commit.min-retry-wait": "5 ms", "commit.max-retry-wait": "200 ms"}

# -- logs ---------------------------------------------------------------------------------------


def append_log(path: str | Path, record: Mapping[str, object]) -> None:
    """Append one JSON line and fsync it: once this returns, the record survives a SIGKILL."""
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
        log.flush()
        os.fsync(log.fileno())


def read_log(path: str | Path) -> list[dict[str, object]]:
    """The complete records of one log; a torn last line (killed mid-write) is dropped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        return []
    records = []
    # Every record is written with its newline in one write: the text after the last newline is
    # a record torn by a kill (never acknowledged), and every line before it must be whole.
    for i, line in enumerate(lines[:-1]):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"{path}: line {i + 1} is corrupt but not the last one: {line!r}") from None
    return records


def repair_log(path: str | Path) -> None:
    """Cut a record torn by a kill off the end of a log, so the next record starts a new line."""
    try:
        with open(path, "rb+") as log:
            data = log.read()
            if data and not data.endswith(b"\n"):
                log.truncate(data.rfind(b"\n") + 1)
                log.flush()
                os.fsync(log.fileno())
    except FileNotFoundError:
        pass


def read_logs(log_dir: str | Path, prefix: str, event: str | None = None) -> list[dict[str, object]]:
    out = []
    for path in sorted(Path(log_dir).glob(f"{prefix}*.jsonl")):
        out += [r for r in read_log(path) if event is None or r["event"] == event]
    return out


# -- storage views (listed directly, not through the snapshot manager) -----------------------------


def open_table(warehouse: str, storage_options: Mapping[str, str] | None, identifier: str,
               check_then_rename: bool = False) -> Table:
    if check_then_rename:
        from tests.core.write.test_concurrent_commits import CheckThenRenameFileIO

        return Catalog(warehouse, file_io=CheckThenRenameFileIO()).get_table(identifier)
    return Catalog(warehouse, storage_options=dict(storage_options) if storage_options else None).get_table(identifier)


# =================================================================================================
# Mixed race: upserters, partition overwriters and compactors in spawned processes, no kills
# =================================================================================================

MIXED_SCHEMA = pa.schema([
    pa.field("part", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("writer", pa.string()),
    pa.field("commit", pa.int32()),
    pa.field("v", pa.string()),
])
KEY_STRIDE = 1_000_000  # upserter keys: u * KEY_STRIDE + commit * 10 + j; overwriter rows: 5e8 + ...


@dataclass(frozen=True, slots=True, kw_only=True)
class MixedSpec:
    """Everything a mixed-race worker needs (picklable)."""

    warehouse: str
    storage_options: dict[str, str]
    identifier: str
    log_dir: str
    upserters: int
    overwriters: int
    compactors: int
    commits: int  # per upserter and per overwriter
    seed: int
    check_then_rename: bool = False  # the negative control
    max_compactions: int = 10_000  # a compactor stops after this many attempts even if not told to


def create_mixed_table(catalog: Catalog, name: str = "mixed") -> str:
    identifier = f"{DATABASE}.{name}"
    catalog.create_database(DATABASE, ignore_if_exists=True)
    # write-only: writers make one snapshot per commit and never compact; the compactors do.
    catalog.create_table(identifier, MIXED_SCHEMA, primary_keys=["part", "id"], partition_keys=["part"],
                         options={"bucket": "2", "write-only": "true", **RACE_OPTIONS})
    return identifier


def upsert_user(u: int) -> str:
    return f"upserter-{u}"


def overwrite_user(o: int) -> str:
    return f"overwriter-{o}"


def compactor_user(c: int) -> str:
    return f"compactor-{c}"


def upsert_rows(u: int, commit: int) -> list[dict[str, object]]:
    """Two new keys (in both ``up-*`` partitions), and from the second commit on an update of the
    first key of commit ``commit // 2`` (an earlier commit of the same upserter)."""
    ids = [u * KEY_STRIDE + commit * 10 + j for j in range(2)]
    if commit >= 1:
        ids.append(u * KEY_STRIDE + (commit // 2) * 10)
    return [{"part": f"up-{i % 2}", "id": i, "writer": upsert_user(u), "commit": commit, "v": f"u{u}c{commit}k{i}"}
            for i in ids]


def overwrite_rows(o: int, commit: int) -> list[dict[str, object]]:
    """The new content of partition ``ow-<o>``: 1..3 rows no other commit has."""
    ids = [500_000_000 + o * KEY_STRIDE + commit * 10 + j for j in range(1 + commit % 3)]
    return [{"part": f"ow-{o}", "id": i, "writer": overwrite_user(o), "commit": commit, "v": f"o{o}c{commit}k{i}"}
            for i in ids]


def _ack(result, **extra) -> dict[str, object]:
    return {"event": "ack", "snapshot_id": result.snapshot_id, "already_committed": result.already_committed,
            "attempts": getattr(result, "attempts", 0), **extra}


def mixed_worker(spec: MixedSpec, role: str, index: int, start, stop) -> None:
    """One mixed-race process; ``start`` is a Barrier, ``stop`` an Event (compactors stop on it)."""
    log = os.path.join(spec.log_dir, f"{role}-{index}.jsonl")
    try:
        table = open_table(spec.warehouse, spec.storage_options, spec.identifier, spec.check_then_rename)
        rng = random.Random(f"{spec.seed}-{role}-{index}")
        start.wait(timeout=120)
        if role == "upserter":
            for commit in range(spec.commits):
                data = pa.Table.from_pylist(upsert_rows(index, commit), schema=MIXED_SCHEMA)
                result = table.write(data, commit_user=upsert_user(index), commit_identifier=commit + 1)
                append_log(log, _ack(result, user=upsert_user(index), identifier=commit + 1, commit=commit,
                                     kind="APPEND"))
                time.sleep(rng.uniform(0, 0.01))
        elif role == "overwriter":
            for commit in range(spec.commits):
                data = pa.Table.from_pylist(overwrite_rows(index, commit), schema=MIXED_SCHEMA)
                try:
                    result = table.write(data, overwrite={"part": f"ow-{index}"}, commit_user=overwrite_user(index),
                                         commit_identifier=commit + 1)
                except CommitConflictError as exc:  # allowed, if typed; must commit nothing
                    append_log(log, {"event": "conflict", "user": overwrite_user(index), "identifier": commit + 1,
                                     "commit": commit, "error": str(exc)})
                    continue
                append_log(log, _ack(result, user=overwrite_user(index), identifier=commit + 1, commit=commit,
                                     kind="OVERWRITE"))
                time.sleep(rng.uniform(0, 0.01))
        elif role == "compactor":
            identifier, settled = 0, False
            # Until the writers are done, then until one full compaction finishes without a conflict
            # (a short race on a slow store may give the compactor no window; the harness must still
            # see a compaction land).
            while identifier < spec.max_compactions and not settled:
                identifier += 1
                partitions = None if stop.is_set() or rng.random() < 0.6 else [{"part": rng.choice(
                    ["up-0", "up-1", *(f"ow-{o}" for o in range(spec.overwriters))])}]
                try:
                    result = table.compact(full=True, partitions=partitions, commit_user=compactor_user(index),
                                           commit_identifier=identifier)
                except CommitConflictError as exc:
                    append_log(log, {"event": "conflict", "user": compactor_user(index), "identifier": identifier,
                                     "error": str(exc)})
                    continue
                append_log(log, _ack(result, user=compactor_user(index), identifier=identifier, kind="COMPACT",
                                     partitions=partitions, files_read=result.files_read))
                settled = stop.is_set() and partitions is None
                time.sleep(rng.uniform(0, 0.02))
        else:
            raise ValueError(role)
    except BaseException:
        append_log(log, {"event": "error", "role": role, "index": index, "traceback": traceback.format_exc()})
        raise


@dataclass(slots=True)
class MixedModel:
    """The table content the acknowledgements promise, at any snapshot id."""

    upserts: list[tuple[int, list[dict[str, object]]]] = field(default_factory=list)  # (snapshot, rows)
    overwrites: dict[str, list[tuple[int, list[dict[str, object]]]]] = field(default_factory=dict)

    def rows_at(self, snapshot_id: int) -> dict[tuple[str, int], dict[str, object]]:
        state: dict[tuple[str, int], dict[str, object]] = {}
        for sid, rows in sorted(self.upserts, key=lambda t: t[0]):
            if sid <= snapshot_id:
                state.update({(r["part"], r["id"]): r for r in rows})
        for versions in self.overwrites.values():
            landed = [(sid, rows) for sid, rows in versions if sid <= snapshot_id]
            if landed:
                state.update({(r["part"], r["id"]): r for r in max(landed, key=lambda t: t[0])[1]})
        return state


def mixed_model(spec: MixedSpec) -> MixedModel:
    model = MixedModel()
    for u in range(spec.upserters):
        for a in read_log(os.path.join(spec.log_dir, f"upserter-{u}.jsonl")):
            if a["event"] == "ack":
                model.upserts.append((int(a["snapshot_id"]), upsert_rows(u, int(a["commit"]))))
    for o in range(spec.overwriters):
        for a in read_log(os.path.join(spec.log_dir, f"overwriter-{o}.jsonl")):
            if a["event"] == "ack":
                model.overwrites.setdefault(f"ow-{o}", []).append((int(a["snapshot_id"]),
                                                                    overwrite_rows(o, int(a["commit"]))))
    return model


def rows_by_key(table: pa.Table) -> dict[tuple[str, int], dict[str, object]]:
    rows = table.to_pylist()
    keyed = {(r["part"], r["id"]): r for r in rows}
    assert len(keyed) == len(rows), f"{len(rows) - len(keyed)} primary keys read more than once"
    return keyed


def mixed_lost_commits(table: Table, spec: MixedSpec) -> list[dict[str, object]]:
    """Acknowledged commits whose identity is not in the snapshot reported for them."""
    landed = {}
    for sid in snapshot_ids_on_storage(table):
        s = table.snapshot_manager.try_snapshot(sid)
        if s is not None:
            landed[(s.commit_user, s.commit_identifier)] = s.id
    return [a for a in read_logs(spec.log_dir, "", "ack")
            if a["snapshot_id"] is not None and landed.get((a["user"], a["identifier"])) != a["snapshot_id"]]


def check_mixed(table: Table, spec: MixedSpec, *, time_travel: int = 40) -> Counter[str]:
    """The mixed-race oracle (I1, I2, I3, I5; rows against the model at the latest and at sampled
    older snapshots; conflicts committed nothing; no garbage). Returns counts; raises AssertionError."""
    counts: Counter[str] = Counter()
    errors = read_logs(spec.log_dir, "", "error")
    assert not errors, "worker failed:\n" + "\n".join(str(e["traceback"]) for e in errors)
    acks = read_logs(spec.log_dir, "", "ack")
    conflicts = read_logs(spec.log_dir, "", "conflict")
    writer_acks = [a for a in acks if a["kind"] != "COMPACT"]
    assert len(writer_acks) + len([c for c in conflicts if c["user"].startswith("overwriter")]) == \
        (spec.upserters + spec.overwriters) * spec.commits, "a writer did not acknowledge all its commits"
    assert not any(a["already_committed"] for a in acks), "a first attempt was reported as already committed"
    landed_acks = [a for a in acks if a["snapshot_id"] is not None]
    counts.update(commits=len(writer_acks), compactions=len(landed_acks) - len(writer_acks),
                  empty_compactions=len(acks) - len(landed_acks), conflicts=len(conflicts),
                  races=sum(max(int(a["attempts"]) - 1, 0) for a in landed_acks))

    # I3 / I5: ids 1..N on storage, every one parses, N = acknowledged snapshots, latest found = N.
    ids = snapshot_ids_on_storage(table)
    n = len(landed_acks)
    assert ids == list(range(1, n + 1)), f"snapshot files {ids[:5]}..{ids[-5:]}, expected 1..{n}"
    snapshots = {sid: table.snapshot_manager.snapshot(sid) for sid in ids}
    latest = table.snapshot_manager.latest()
    assert latest is not None and latest.id == n, f"latest found {latest.id if latest else None}, expected {n}"

    # I2: each identity in exactly one snapshot, the reported one, of the right kind; conflicts in none.
    identities = Counter((s.commit_user, s.commit_identifier) for s in snapshots.values())
    duplicated = {k: c for k, c in identities.items() if c > 1}
    assert not duplicated, f"commit identities in more than one snapshot: {duplicated}"
    where = {(s.commit_user, s.commit_identifier): s for s in snapshots.values()}
    for a in landed_acks:
        key = (a["user"], a["identifier"])
        assert key in where, f"acknowledged commit {key} (snapshot {a['snapshot_id']}) is in no snapshot: lost"
        s = where[key]
        assert s.id == a["snapshot_id"], f"{key} reported snapshot {a['snapshot_id']}, is in {s.id}"
        assert s.commit_kind.value == a["kind"], f"{key} is a {s.commit_kind.value} snapshot, expected {a['kind']}"
    assert set(where) == {(a["user"], a["identifier"]) for a in landed_acks}, \
        f"snapshots nobody acknowledged: {sorted(set(where) - {(a['user'], a['identifier']) for a in landed_acks})}"
    for c in conflicts:
        assert (c["user"], c["identifier"]) not in where, f"a commit that raised a conflict landed: {c}"
    for a in acks:  # each process's commits land in the order it made them
        same = [b["snapshot_id"] for b in landed_acks if b["user"] == a["user"]]
        assert same == sorted(same), f"{a['user']}'s commits landed out of order: {same}"

    # I1: the rows at the latest snapshot (and at sampled older ones) are the model's.
    model = mixed_model(spec)
    actual = rows_by_key(table.read())
    expected = model.rows_at(n)
    lost = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    assert not lost and not extra, f"lost rows {lost[:5]} ({len(lost)}), unexpected rows {extra[:5]} ({len(extra)})"
    wrong = [(k, actual[k], expected[k]) for k in expected if actual[k] != expected[k]]
    assert not wrong, f"{len(wrong)} rows differ from the model, e.g. {wrong[:3]}"
    rng = random.Random(spec.seed)
    sample = sorted(rng.sample(ids, min(time_travel, len(ids))))
    for sid in sample:
        at = rows_by_key(table.read(snapshot_id=sid))
        assert at == model.rows_at(sid), f"the table read at snapshot {sid} ({snapshots[sid].commit_kind.value}) " \
                                         f"differs from the model: {len(at)} rows vs {len(model.rows_at(sid))}"
    counts["time_travel_reads"] += len(sample)

    # I4 and no garbage: nothing crashed, so every file of the table is referenced by a snapshot.
    missing = missing_needed_files(table)
    assert not missing, f"files referenced by retained snapshots are missing: {missing[:5]}"
    stray = sorted(garbage(table))
    assert not stray, f"{len(stray)} files no snapshot references (leaked by a lost race or conflict): {stray[:5]}"
    return counts


# =================================================================================================
# Random SIGKILLs: writer / compactor / expirer processes started with ``python -m``
# =================================================================================================

KILL_SCHEMA = pa.schema([
    pa.field("part", pa.string()),
    pa.field("id", pa.int64()),
    pa.field("writer", pa.int32()),
    pa.field("k", pa.int64()),
    pa.field("payload", pa.string()),
])
WRITER_STRIDE = 10_000_000


def create_kill_table(catalog: Catalog, *, time_retained: str, name: str = "killed") -> str:
    identifier = f"{DATABASE}.{name}"
    catalog.create_database(DATABASE, ignore_if_exists=True)
    # An append table: a batch committed twice would be read twice, so duplicates show in the rows
    # even after the snapshots that carried them expired. write-only: writers neither compact nor
    # expire; the dedicated compactor and expirer processes do.
    catalog.create_table(identifier, KILL_SCHEMA, partition_keys=["part"],
                         options={"write-only": "true", "snapshot.num-retained.min": "2",
                                  "snapshot.time-retained": time_retained, **RACE_OPTIONS})
    return identifier


def writer_user(w: int) -> str:
    return f"writer-{w}"


def kill_batch_rows(w: int, k: int) -> list[dict[str, object]]:
    return [{"part": f"p{k % 2}", "id": w * WRITER_STRIDE + k * 10 + j, "writer": w, "k": k,
             "payload": f"w{w}k{k}r{j}"} for j in range(1 + k % 3)]


def _mark_ready(cfg: Mapping[str, object], name: str) -> None:
    """Tell the driver this process has opened the table (it kills only ready processes)."""
    path = os.path.join(str(cfg["log_dir"]), f"{name}.ready")
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(str(os.getpid()))
    os.replace(tmp, path)


def _stopping(cfg: Mapping[str, object]) -> bool:
    return os.path.exists(os.path.join(str(cfg["log_dir"]), "STOP"))


def _pending(records: list[dict[str, object]]) -> tuple[int, float | None]:
    """``(next identifier, first begin time of it if it was begun before)`` from a role's own log."""
    acked = max((int(r["identifier"]) for r in records if r["event"] == "ack"), default=0)
    begun = [r for r in records if r["event"] == "begin" and int(r["identifier"]) == acked + 1]
    return acked + 1, (min(float(r["t"]) for r in begun) if begun else None)


def run_writer(cfg: Mapping[str, object], w: int) -> None:
    name = f"writer-{w}"
    log = os.path.join(str(cfg["log_dir"]), f"{name}.jsonl")
    repair_log(log)
    table = open_table(str(cfg["warehouse"]), None, str(cfg["identifier"]))
    k, first_begin = _pending(read_log(log))
    recovering = first_begin is not None
    append_log(log, {"event": "start", "pid": os.getpid(), "t": time.time(), "next": k, "recovering": recovering})
    _mark_ready(cfg, name)
    # Exactly once through the identity: a batch begun before (maybe landed) is committed again
    # with the same (user, identifier) before anything else, even when told to stop.
    while recovering or not _stopping(cfg):
        begin = time.time()
        append_log(log, {"event": "begin", "identifier": k, "t": begin})
        data = pa.Table.from_pylist(kill_batch_rows(w, k), schema=KILL_SCHEMA)
        result = table.write(data, commit_user=writer_user(w), commit_identifier=k)
        append_log(log, {"event": "ack", "identifier": k, "snapshot_id": result.snapshot_id,
                         "already_committed": result.already_committed, "attempts": result.attempts,
                         "recovery": recovering, "first_begin": first_begin if recovering else begin,
                         "t": time.time()})
        k, recovering = k + 1, False


def run_compactor(cfg: Mapping[str, object]) -> None:
    log = os.path.join(str(cfg["log_dir"]), "compactor.jsonl")
    repair_log(log)
    table = open_table(str(cfg["warehouse"]), None, str(cfg["identifier"]))
    n, first_begin = _pending(read_log(log))
    recovering = first_begin is not None
    append_log(log, {"event": "start", "pid": os.getpid(), "t": time.time(), "next": n, "recovering": recovering})
    _mark_ready(cfg, "compactor")
    while recovering or not _stopping(cfg):
        append_log(log, {"event": "begin", "identifier": n, "t": time.time()})
        result = table.compact(full=True, commit_user="compactor", commit_identifier=n)
        append_log(log, {"event": "ack", "identifier": n, "snapshot_id": result.snapshot_id,
                         "already_committed": result.already_committed, "files_read": result.files_read,
                         "recovery": recovering, "t": time.time()})
        n, recovering = n + 1, False
        time.sleep(0.05)


def run_expirer(cfg: Mapping[str, object]) -> None:
    log = os.path.join(str(cfg["log_dir"]), "expirer.jsonl")
    repair_log(log)
    table = open_table(str(cfg["warehouse"]), None, str(cfg["identifier"]))
    append_log(log, {"event": "start", "pid": os.getpid(), "t": time.time()})
    _mark_ready(cfg, "expirer")
    runs = 0
    while runs == 0 or not _stopping(cfg):  # at least one whole run per start: finishes a killed one
        result = table.expire_snapshots()
        runs += 1
        append_log(log, {"event": "expired", "snapshots": result.expired_snapshots,
                         "files": result.deleted_files, "t": time.time()})
        time.sleep(0.02)


def main(argv: list[str]) -> None:
    role, cfg = argv[0], json.loads(argv[1])
    if role == "writer":
        run_writer(cfg, int(cfg["index"]))
    elif role == "compactor":
        run_compactor(cfg)
    elif role == "expirer":
        run_expirer(cfg)
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
