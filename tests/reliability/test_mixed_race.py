"""Mixed race (issue 8 item 1, reliability.md A1 extended): upserters, partition OVERWRITE writers
and full compactions, each in its own spawned process, committing into one primary-key table at
the same time, on local disk and on the S3 test server.

Every process logs each acknowledged commit (fsynced) and each typed conflict. The oracle
(``chaos.check_mixed``) then checks: snapshot ids 1..N with N = acknowledged snapshots (I3, I5);
each ``(commit_user, identifier)`` in exactly one snapshot, the one reported, of the kind
expected, and no snapshot nobody acknowledged (I1, I2); a compaction or overwrite that raised
``CommitConflictError`` is in no snapshot; the rows at the latest snapshot and at sampled older
snapshots equal a model built from the logs (upserters own their keys and update their own
earlier keys; each overwriter owns partition ``ow-<o>``, whose content is its acknowledged
overwrite with the highest snapshot id at or below the snapshot read; compactions change no
row); every referenced file exists and no file is left unreferenced (I4, no leaked garbage).
The negative control runs the same workload with a check-then-rename publish; the oracle must
catch the commits it loses.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from pathlib import Path

import pytest

from paimonflow.core import Catalog
from tests.reliability.chaos import (
    MixedSpec,
    check_mixed,
    create_mixed_table,
    mixed_lost_commits,
    mixed_worker,
    open_table,
    read_logs,
)


@pytest.fixture(autouse=True)
def _writers_race(monkeypatch):
    """These tests are about races: the writers' attempts are purely optimistic here (no turns at
    committing, which make the writers of one machine commit one after another)."""
    monkeypatch.setenv("PAIMONFLOW_COMMIT_TURNS", "off")


JOIN_TIMEOUT_S = 600.0


def run_mixed(spec: MixedSpec, *, tolerate_errors: bool = False) -> float:
    """Start every role at once (released by a barrier once all opened the table); writers run
    their commits, compactors run until the writers are done. Returns the race's wall time."""
    ctx = multiprocessing.get_context("spawn")
    roles = ([("upserter", i) for i in range(spec.upserters)] + [("overwriter", i) for i in range(spec.overwriters)]
             + [("compactor", i) for i in range(spec.compactors)])
    start, stop = ctx.Barrier(len(roles)), ctx.Event()
    processes = {(r, i): ctx.Process(target=mixed_worker, args=(spec, r, i, start, stop), name=f"{r}-{i}")
                 for r, i in roles}
    for p in processes.values():
        p.start()
    began = time.monotonic()
    try:
        deadline = began + JOIN_TIMEOUT_S
        for (role, _), p in processes.items():
            if role != "compactor":
                p.join(timeout=max(deadline - time.monotonic(), 0.1))
        stop.set()
        for p in processes.values():
            p.join(timeout=max(deadline - time.monotonic(), 0.1))
    finally:
        stop.set()
        hung = [p for p in processes.values() if p.is_alive()]
        for p in hung:
            p.kill()  # only the processes this test started, by their handle
            p.join(timeout=10)
    elapsed = time.monotonic() - began
    assert not hung, f"seed {spec.seed}: processes hung for more than {JOIN_TIMEOUT_S} s: {[p.name for p in hung]}"
    if not tolerate_errors:
        errors = read_logs(spec.log_dir, "", "error")
        assert not errors, f"seed {spec.seed}: worker failed:\n" + "\n".join(str(e["traceback"]) for e in errors)
        assert all(p.exitcode == 0 for p in processes.values()), \
            f"seed {spec.seed}: exit codes {({p.name: p.exitcode for p in processes.values()})}"
    return elapsed


def new_seed() -> int:
    seed = random.SystemRandom().randrange(2**31)
    print(f"mixed race seed {seed}")
    return seed


def mixed_race(spec: MixedSpec, reliability, *, require_conflicts: bool) -> None:
    elapsed = run_mixed(spec)
    table = open_table(spec.warehouse, spec.storage_options, spec.identifier)
    try:
        counts = check_mixed(table, spec)
    except AssertionError as exc:
        raise AssertionError(f"seed {spec.seed}: {exc}") from exc
    reliability.record(**counts)
    print(f"seed {spec.seed}: {dict(counts)} in {elapsed:.1f} s")
    # The processes really raced (else the test proves nothing).
    assert counts["races"] > 0, f"seed {spec.seed}: no commit ever lost the race for a snapshot id"
    assert counts["compactions"] > 0, f"seed {spec.seed}: no compaction landed during the race"
    if require_conflicts:
        assert counts["conflicts"] > 0, f"seed {spec.seed}: no compaction ever lost a conflict"


def make_spec(tmp_path: Path, warehouse: str, storage_options: dict[str, str], catalog: Catalog, **sizes) -> MixedSpec:
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    return MixedSpec(warehouse=warehouse, storage_options=storage_options, identifier=create_mixed_table(catalog),
                     log_dir=str(log_dir), seed=new_seed(), **sizes)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_mixed_race_local(tmp_path: Path, reliability) -> None:
    warehouse = str(tmp_path / "warehouse")
    spec = make_spec(tmp_path, warehouse, {}, Catalog(warehouse), upserters=reliability.scale(2, 3),
                     overwriters=2, compactors=2, commits=reliability.scale(12, 120))
    mixed_race(spec, reliability, require_conflicts=True)


@pytest.mark.slow
@pytest.mark.s3
@pytest.mark.timeout(900)
def test_mixed_race_s3(tmp_path: Path, s3_bucket: str, s3_storage_options: dict[str, str], reliability) -> None:
    warehouse = f"s3://{s3_bucket}/wh"
    spec = make_spec(tmp_path, warehouse, dict(s3_storage_options), Catalog(warehouse, storage_options=s3_storage_options),
                     upserters=1, overwriters=1, compactors=reliability.scale(1, 2), commits=reliability.scale(5, 40))
    mixed_race(spec, reliability, require_conflicts=False)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_negative_control_mixed_race_check_then_rename(tmp_path: Path, reliability) -> None:
    """The same workload with pypaimon's check-then-rename publish: the oracle must catch the
    acknowledged commits it loses (else the oracle proves nothing)."""
    warehouse = str(tmp_path / "warehouse")
    spec = make_spec(tmp_path, warehouse, {}, Catalog(warehouse), upserters=2, overwriters=1, compactors=1,
                     commits=8, check_then_rename=True)
    run_mixed(spec, tolerate_errors=True)  # a worker may trip over a snapshot replaced under it
    table = open_table(spec.warehouse, spec.storage_options, spec.identifier)
    lost = mixed_lost_commits(table, spec)
    reliability.record(commits=len(read_logs(spec.log_dir, "", "ack")), lost_commits_detected=len(lost))
    assert lost, f"seed {spec.seed}: check-then-rename lost no commit: the race window is too small"
    with pytest.raises(AssertionError):
        check_mixed(table, spec)
