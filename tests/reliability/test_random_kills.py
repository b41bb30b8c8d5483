"""SIGKILL at random times (reliability.md A6, R1): W writer processes, one compactor and one
expirer work on one append table while a seeded driver kills random ones with SIGKILL at random
moments and restarts them at once.

Writers commit batches under stable identities ``(writer-<w>, k)`` and log ``begin k`` before and
``ack k`` after each commit (fsynced). A restarted writer first commits its last begun but
unacknowledged batch again with the same identity: the identity must make that exactly once.
The compactor runs full compactions under its own identities; the expirer expires with
``snapshot.num-retained.min`` 2 and a short ``snapshot.time-retained``.

After K kills every process is told to stop (a writer still finishes its pending batch), then:

* I1: every acknowledged batch's rows are in the latest snapshot with their content, and
  nothing else is (each identity's rows exactly once: an identity committed twice would show
  as rows read twice, even after the snapshots that carried it expired: I2 through the rows);
* I2: no identity in two retained snapshots; each acknowledged snapshot, if retained, holds
  the identity reported for it;
* I3: snapshot ids contiguous from the earliest to the latest, each one parses;
* I4: every file a retained snapshot references exists (snapshot -> manifest lists ->
  manifests -> data files);
* I5: the latest/earliest snapshots a reader finds are the max/min ids on storage;
* retained snapshots (a seeded sample of 40, plus the earliest and latest) read a prefix of every writer's batches consistent with the
  identities of the snapshots around it;
* I8: orphan removal with ``older_than`` 0 (nothing runs any more) removes exactly the garbage the
  kills left (unreferenced data/manifest files, temp files anywhere), and afterwards I1-I5 still
  hold and no garbage is left.

Exactly-once needs the first attempt's snapshot to be retained when the restarted writer looks
it up. The time rule guarantees that while the restart takes less than ``snapshot.time-retained``
since the first ``begin`` (the snapshot after ours is younger than that); a recovery slower than
that is counted as unprotected, and only its identity may show twice (none was seen in
development; the count is recorded).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from paimonflow.core import Catalog
from paimonflow.core.table import Table
from tests.reliability.chaos import create_kill_table, kill_batch_rows, open_table, read_log, writer_user
from tests.reliability.oracle import (
    garbage,
    is_temp,
    missing_needed_files,
    needed_files,
    snapshot_ids_on_storage,
)

REPO = Path(__file__).resolve().parents[2]
TIME_RETAINED_S = 8
STOP_TIMEOUT_S = 180.0
SNAPSHOT_READS = 40  # retained snapshots read and checked per state check (seeded sample)


@dataclass(slots=True)
class Worker:
    name: str
    argv: list[str]
    log_dir: Path
    popen: subprocess.Popen | None = None
    starts: int = 0
    kills: int = 0
    output: list = field(default_factory=list)

    def start(self) -> None:
        out = open(self.log_dir / f"{self.name}.out", "ab")  # noqa: SIM115 (closed in close())
        self.output.append(out)
        self.popen = subprocess.Popen(self.argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                      env={**os.environ, "PYTHONFAULTHANDLER": "1"})
        self.starts += 1

    def ready(self) -> bool:
        """Running and has opened the table (kills before that would only test Python's start-up)."""
        if self.popen is None or self.popen.poll() is not None:
            return False
        try:
            return (self.log_dir / f"{self.name}.ready").read_text(encoding="utf-8") == str(self.popen.pid)
        except FileNotFoundError:
            return False

    def kill(self) -> None:
        assert self.popen is not None
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait()
        self.kills += 1

    def tail(self) -> str:
        text = (self.log_dir / f"{self.name}.out").read_text(encoding="utf-8", errors="replace")
        return text[-4000:]

    def close(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()  # only the processes this test started, by their handle
            self.popen.wait()
        for out in self.output:
            out.close()


def drive(workers: list[Worker], kills: int, rng: random.Random, seed: int, *, max_life_s: float) -> None:
    """SIGKILL workers at random moments, ``kills`` times, restarting each at once: a worker that
    has opened the table is killed after a random ``uniform(0, max_life_s)`` seconds."""
    for w in workers:
        w.start()
    deadlines: dict[str, float] = {}
    done = 0
    while done < kills:
        time.sleep(0.01)
        now = time.monotonic()
        for w in workers:
            code = w.popen.poll() if w.popen is not None else None
            if code is not None:
                raise AssertionError(f"seed {seed}: {w.name} exited by itself with {code}:\n{w.tail()}")
            if w.name not in deadlines:
                if w.ready():
                    deadlines[w.name] = now + rng.uniform(0.0, max_life_s)
            elif now >= deadlines[w.name] and done < kills:
                w.kill()
                w.start()
                del deadlines[w.name]
                done += 1


def stop(workers: list[Worker], log_dir: Path, seed: int) -> None:
    (log_dir / "STOP").write_text("stop", encoding="utf-8")
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for w in workers:
        assert w.popen is not None
        try:
            code = w.popen.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"seed {seed}: {w.name} did not stop within {STOP_TIMEOUT_S} s:\n{w.tail()}") from None
        assert code == 0, f"seed {seed}: {w.name} failed with exit code {code}:\n{w.tail()}"


# -- the oracle ----------------------------------------------------------------------------------


def acknowledged(log_dir: Path, writers: int) -> dict[int, dict[int, list[dict[str, object]]]]:
    """writer -> identifier -> its ack records (a batch may be acknowledged again after a torn ack)."""
    out: dict[int, dict[int, list[dict[str, object]]]] = {}
    for w in range(writers):
        for r in read_log(log_dir / f"writer-{w}.jsonl"):
            if r["event"] == "ack":
                out.setdefault(w, {}).setdefault(int(r["identifier"]), []).append(r)
    return out


def check_state(table: Table, acks: dict[int, dict[int, list[dict[str, object]]]], unprotected: set[tuple[int, int]],
                seed: int, context: str) -> Counter[str]:
    """I1-I5 and per-snapshot consistency against the acknowledgements; raises AssertionError."""
    def fail(message: str) -> AssertionError:
        return AssertionError(f"seed {seed} ({context}): {message}")

    counts: Counter[str] = Counter()
    # I3: ids contiguous from the earliest to the latest, each one parses (try_snapshot parses).
    ids = snapshot_ids_on_storage(table)
    if not ids or ids != list(range(ids[0], ids[-1] + 1)):
        raise fail(f"snapshot ids not contiguous: {ids}")
    snapshots = {}
    for sid in ids:
        snap = table.snapshot_manager.try_snapshot(sid)
        if snap is None:
            raise fail(f"snapshot-{sid} listed but unreadable")
        snapshots[sid] = snap
    # I5: what a reader finds.
    manager = table.snapshot_manager
    if (manager.latest_id(), manager.earliest_id()) != (ids[-1], ids[0]):
        raise fail(f"reader finds latest {manager.latest_id()} / earliest {manager.earliest_id()}, "
                   f"storage has {ids[0]}..{ids[-1]}")
    # I2 in the retained snapshots; every acknowledged, still retained snapshot holds its identity.
    identities = Counter((s.commit_user, s.commit_identifier, s.commit_kind.value) for s in snapshots.values())
    twice = {k: n for k, n in identities.items() if n > 1}
    if twice:
        raise fail(f"identities in more than one retained snapshot: {twice}")
    writers_of = {writer_user(w): w for w in acks}
    for w, by_k in acks.items():
        for k, records in by_k.items():
            for r in records:
                sid = int(r["snapshot_id"])
                if r["already_committed"]:
                    continue  # reports the user's latest snapshot, which covers k
                if sid in snapshots and (snapshots[sid].commit_user, snapshots[sid].commit_identifier) \
                        != (writer_user(w), k):
                    raise fail(f"writer {w} batch {k} was acknowledged as snapshot {sid}, which holds "
                               f"{snapshots[sid].commit_user}/{snapshots[sid].commit_identifier}")
    # I4: every file a retained snapshot references exists.
    missing = missing_needed_files(table)
    if missing:
        raise fail(f"{len(missing)} files referenced by retained snapshots are missing, e.g. {missing[:3]}")

    # I1 (+ I2 through the rows): the latest snapshot holds every acknowledged batch exactly once.
    def batches_in(rows: list[dict[str, object]]) -> dict[int, set[int]]:
        seen = Counter(r["id"] for r in rows)
        doubled = {i: n for i, n in seen.items() if n > 1}
        doubled_batches = {(i // 10_000_000, (i % 10_000_000) // 10) for i in doubled}
        if doubled_batches - unprotected:
            raise fail(f"rows read more than once (a batch committed twice): {sorted(doubled_batches)[:5]}")
        out: dict[int, set[int]] = {}
        for r in rows:
            w, k = int(r["writer"]), int(r["k"])
            expected = {x["id"]: x for x in kill_batch_rows(w, k)}
            if r["id"] not in expected or r != expected[r["id"]]:
                raise fail(f"row {r} is not what writer {w} wrote in batch {k}")
            out.setdefault(w, set()).add(k)
        return out

    rows = table.read().to_pylist()
    latest_batches = batches_in(rows)
    expected_batches = {w: set(by_k) for w, by_k in acks.items()}
    for w in expected_batches:
        if expected_batches[w] != set(range(1, len(expected_batches[w]) + 1)):
            raise fail(f"writer {w} acknowledged batches {sorted(expected_batches[w])[:10]}..., not 1..n")
        if latest_batches.get(w, set()) != expected_batches[w]:
            lost = sorted(expected_batches[w] - latest_batches.get(w, set()))
            extra = sorted(latest_batches.get(w, set()) - expected_batches[w])
            raise fail(f"writer {w}: acknowledged batches missing from the latest snapshot {lost[:10]}, "
                       f"unacknowledged batches present {extra[:10]}")
    expected_rows = sum(len(kill_batch_rows(w, k)) for w, ks in expected_batches.items() for k in ks)
    # an unprotected recovery (slower than the retention) may have committed its batch a second time
    expected_rows += sum(n - 1 for i, n in Counter(r["id"] for r in rows).items()
                         if n > 1 and (i // 10_000_000, (i % 10_000_000) // 10) in unprotected)
    if len(rows) != expected_rows or snapshots[ids[-1]].total_record_count != len(rows):
        raise fail(f"{len(rows)} rows read, {expected_rows} acknowledged, latest snapshot says "
                   f"{snapshots[ids[-1]].total_record_count}")
    counts["rows"] = len(rows)

    # Retained snapshots read, for each writer, a prefix 1..m of its batches, with m at least
    # the writer's newest identity at or before it and below its next identity after it.
    picked = sorted({ids[0], ids[-1], *random.Random(seed).sample(ids, min(SNAPSHOT_READS, len(ids)))})
    for sid in picked:  # a seeded sample of the retained snapshots, always the earliest and latest
        at = batches_in(table.read(snapshot_id=sid).to_pylist())
        for w in acks:
            got = at.get(w, set())
            m = max(got, default=0)
            if got != set(range(1, m + 1)):
                raise fail(f"snapshot {sid} holds batches {sorted(got)[:20]} of writer {w}: not a prefix")
            mine_before = [s.commit_identifier for i, s in snapshots.items()
                           if i <= sid and writers_of.get(s.commit_user) == w]
            mine_after = [s.commit_identifier for i, s in snapshots.items()  # (a second landing of an
                          if i > sid and writers_of.get(s.commit_user) == w   # unprotected one excepted)
                          and (w, s.commit_identifier) not in unprotected]
            if (mine_before and m < max(mine_before)) or (mine_after and m >= min(mine_after)):
                raise fail(f"snapshot {sid} holds writer {w}'s batches 1..{m}, but the snapshots around it "
                           f"carry its identities {mine_before[-3:]} / {mine_after[:3]}")
        counts["snapshot_reads"] += 1
    counts["retained_snapshots"] = len(ids)
    return counts


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_random_sigkills_keep_every_acknowledged_commit(tmp_path: Path, reliability) -> None:
    seed = int(os.environ.get("PAIMONFLOW_CHAOS_SEED") or random.SystemRandom().randrange(2**31))
    print(f"random kills seed {seed} (rerun with PAIMONFLOW_CHAOS_SEED={seed}; kill timing still varies)")
    rng = random.Random(seed)
    writers, kills = 3, reliability.scale(40, 1000)
    warehouse = str(tmp_path / "warehouse")
    catalog = Catalog(warehouse)
    identifier = create_kill_table(catalog, time_retained=f"{TIME_RETAINED_S} s")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()

    def argv(role: str, **extra: object) -> list[str]:
        cfg = {"warehouse": warehouse, "identifier": identifier, "log_dir": str(log_dir), **extra}
        return [sys.executable, "-m", "tests.reliability.chaos", role, json.dumps(cfg)]

    workers = [Worker(f"writer-{w}", argv("writer", index=w), log_dir) for w in range(writers)]
    workers += [Worker("compactor", argv("compactor"), log_dir), Worker("expirer", argv("expirer"), log_dir)]
    started = time.monotonic()
    try:
        drive(workers, kills, rng, seed, max_life_s=3.0)
        stop(workers, log_dir, seed)
    finally:
        for w in workers:
            w.close()
    elapsed = time.monotonic() - started

    acks = acknowledged(log_dir, writers)
    recoveries = [(w, k, r) for w, by_k in acks.items() for k, rs in by_k.items() for r in rs if r["recovery"]]
    unprotected = {(w, k) for w, k, r in recoveries
                   if float(r["t"]) - float(r["first_begin"]) >= TIME_RETAINED_S * 0.9}
    compactions = [r for r in read_log(log_dir / "compactor.jsonl") if r["event"] == "ack"]
    expiries = [r for r in read_log(log_dir / "expirer.jsonl") if r["event"] == "expired"]
    table = open_table(warehouse, None, identifier)
    counts = check_state(table, acks, unprotected, seed, "after the kills")

    # I8: the kills left garbage; the cleaner removes it (older_than 0: nothing runs any more)
    # without touching a referenced file, and the table still holds the model. Garbage: files no
    # retained snapshot references outside the metadata directories, and temp files of
    # interrupted writes (``.<name>.<hex>.tmp``) anywhere.
    garbage_before = garbage(table)
    needed, _ = needed_files(table)
    plan = table.remove_orphan_files(older_than_millis=0)
    removed = set(plan.orphans)
    assert not removed & needed, f"seed {seed}: orphan removal listed referenced files {sorted(removed & needed)[:3]}"
    after = check_state(open_table(warehouse, None, identifier), acks, unprotected, seed, "after orphan removal")
    assert after["rows"] == counts["rows"], f"seed {seed}: orphan removal changed the rows"
    left = garbage(table)
    assert not left, f"seed {seed}: garbage left after orphan removal: {sorted(left)[:5]}"
    assert garbage_before == removed, f"seed {seed}: orphan removal removed {sorted(removed - garbage_before)[:3]} " \
                                      f"beyond the garbage found, and left {sorted(garbage_before - removed)[:3]}"
    temps = sum(1 for p in garbage_before if is_temp(p))

    by_role = {w.name: w.kills for w in workers}
    commits = sum(len(ks) for ks in acks.values())
    deduplicated = sum(1 for _, _, r in recoveries if r["already_committed"])
    reliability.record(kills=sum(by_role.values()), commits=commits, recoveries=len(recoveries),
                       deduplicated_retries=deduplicated, unprotected_recoveries=len(unprotected),
                       compactions=sum(1 for r in compactions if r["snapshot_id"] is not None and
                                       not r["already_committed"]),
                       expired_snapshots=sum(int(r["snapshots"]) for r in expiries),
                       orphans_removed=len(removed), temp_files_removed=temps,
                       snapshot_reads=after["snapshot_reads"])
    print(f"seed {seed}: {sum(by_role.values())} kills {by_role} in {elapsed:.1f} s; {commits} batches, "
          f"{len(recoveries)} recoveries ({deduplicated} found already committed, {len(unprotected)} unprotected), "
          f"{len(compactions)} compactions, {sum(int(r['snapshots']) for r in expiries)} snapshots expired, "
          f"{len(removed)} orphans removed ({temps} temp files), {after['retained_snapshots']} retained")
    # The harness did what it claims (else it proves nothing).
    assert sum(by_role.values()) == kills
    assert recoveries, f"seed {seed}: no writer was ever killed with a batch in flight"
    # expiry was due if, at the end, snapshots beyond the two retained had been older than the
    # retention for a whole further retention period (on a loaded machine few batches commit)
    manager = table.snapshot_manager
    retained = [s for s in map(manager.try_snapshot, manager.list_ids()) if s is not None]
    due = [s.id for s in retained[:-2] if s.time_millis < (time.time() - 2 * TIME_RETAINED_S) * 1000]
    assert sum(int(r["snapshots"]) for r in expiries) > 0 or not due, \
        f"seed {seed}: the expirer never expired anything, though snapshots {due} were due"
