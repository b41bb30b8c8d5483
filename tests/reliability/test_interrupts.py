"""Interrupts that clean up (issue 37, item 4): SIGINT and SIGTERM sent for real, at seeded random
moments, to ``paimonflow write`` and ``paimonflow compact``; Ctrl-C sent into the threads of an
in-process ``Table.write`` and into its commit; SIGTERM to a Spark job driver (long tier).

After each interrupted command: exit code 128 + the signal, exactly one line on stderr naming
the interruption (and telling the truth about the commit), an exit within a generous bound of the
signal (measured times are recorded), no file on disk that no snapshot references (the files the
interrupted write created are gone, or its commit landed and references them) and no file a
snapshot references missing. Counts (``signals_sent``, ``files_left``,
``referenced_files_missing``) are printed at the end of the run and written to
``build/reliability/results-<tier>.json``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from paimonflow.core.maintenance.orphans import referenced_files

pytestmark = [pytest.mark.slow, pytest.mark.reliability,
              pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")]

CLI = str(Path(sys.executable).parent / "paimonflow")
ROWS = 2_000_000
EXIT_BOUND_S = 5.0  # asked: within a second; generous for a loaded 2-core machine (times are recorded)
SCHEMA = pa.schema([("id", pa.int64(), False), ("dt", pa.string(), False), ("v", pa.float64()), ("s", pa.string())])
OPTIONS = {"bucket": "8", "target-file-size": "256 kb"}  # hundreds of files per write


@pytest.fixture(autouse=True)
def _python_signal_handlers():
    """Python's own handlers, as a fresh interpreter has them: earlier tests in the same process
    may have left others (PySpark's SparkContext installs its own SIGINT handler)."""
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for signum, handler in previous.items():
        if handler is not None:
            signal.signal(signum, handler)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A Parquet file of ROWS rows over four partitions."""
    rng = np.random.default_rng(37)
    days = np.array([f"2026-11-0{d}" for d in range(1, 5)])
    rows = pa.table({"id": np.arange(ROWS, dtype=np.int64), "dt": days[rng.integers(0, 4, ROWS)],
                     "v": rng.random(ROWS), "s": rng.integers(0, 10**6, ROWS).astype(str)}, schema=SCHEMA)
    path = tmp_path_factory.mktemp("interrupts") / "source.parquet"
    pq.write_table(rows, path)
    return path


def new_table(root: Path, **options: str):
    catalog = Catalog(str(root / "wh"))
    catalog.create_database("db")
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={**OPTIONS, **options})


def files_on_disk(table) -> set[str]:
    """Data, changelog and index files under the table's directory."""
    found = set()
    for directory, _, names in os.walk(table.path):
        if "/bucket-" in directory + "/" or directory.endswith("/index"):
            found.update(os.path.join(directory, name) for name in names)
    return found


def unreferenced(table) -> set[str]:
    """Files on disk that no snapshot references (all of them when there is no snapshot)."""
    on_disk = files_on_disk(table)
    if table.snapshot_manager.latest_id() is None:
        return on_disk
    return on_disk - referenced_files(table)


def missing_referenced(table) -> set[str]:
    """Files some snapshot references that are not on disk (a clean-up that deleted under a commit)."""
    if table.snapshot_manager.latest_id() is None:
        return set()
    return {path for path in referenced_files(table) if not os.path.exists(path)}


def handlers_armed(pid: int) -> bool:
    """The command catches SIGTERM: it is running its verb (paimonflow's handlers are installed)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


def run_command(args: list[str], *, signum: int | None, delay: float) -> tuple[int, str, str, float, float]:
    """Run ``paimonflow args``; ``delay`` seconds after its handlers are armed send ``signum``.
    Returns (exit code, stdout, stderr, seconds from armed to signal or exit, seconds from signal to exit)."""
    proc = subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not handlers_armed(proc.pid):
        assert proc.poll() is None and time.monotonic() < deadline, "the command never started its verb"
        time.sleep(0.002)
    armed = time.monotonic()
    if signum is None:
        out, err = proc.communicate(timeout=300)
        return proc.returncode, out, err, time.monotonic() - armed, 0.0
    time.sleep(delay)
    proc.send_signal(signum)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err, sent - armed, time.monotonic() - sent


def check_outcome(table, before: int | None, signum: int, code: int, out: str, err: str, stop_s: float) -> str:
    """The checks of one interrupted command on a table whose latest snapshot was ``before``;
    returns how it ended: 'aborted', 'committed' or 'finished'."""
    name = signal.Signals(signum).name
    latest = table.snapshot_manager.latest_id()
    if out.strip() and not err:  # the signal came after the verb had ended (its result printed)
        assert code in (0, -signum, 128 + signum), (code, err)
        assert latest != before, (code, out, err)
        return "finished"
    assert code == 128 + signum, (code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"interrupted: {name}"), err
    assert stop_s < EXIT_BOUND_S, f"{stop_s:.2f} s from {name} to exit"
    if latest == before:
        assert "nothing was committed" in lines[0], lines[0]
        return "aborted"
    assert "is committed" in lines[0] and "nothing was committed" not in lines[0], lines[0]
    return "committed"


def removed_count(line: str) -> int:
    return int(line.rsplit("(", 1)[1].split()[0]) if "files removed" in line else 0


def test_cli_write_interrupted_at_random_moments_leaves_no_file(source, tmp_path, reliability):
    rounds = reliability.scale(6, 24)
    rng = random.Random(37)
    baseline_table = new_table(tmp_path / "baseline")
    code, _, err, baseline, _ = run_command(["write", "db.t", "-w", str(tmp_path / "baseline" / "wh"), str(source)],
                                            signum=None, delay=0)
    assert code == 0, err
    assert not unreferenced(baseline_table)
    outcomes, stops, removed = [], [], []
    for i in range(rounds):
        signum = (signal.SIGINT, signal.SIGTERM)[i % 2]
        delay = baseline * 1.1 * (i + rng.random()) / rounds  # spread over the whole write, and past it
        table = new_table(tmp_path / f"round-{i}")
        code, out, err, sent_after, stop_s = run_command(
            ["write", "db.t", "-w", str(tmp_path / f"round-{i}" / "wh"), str(source)], signum=signum, delay=delay)
        outcomes.append(check_outcome(table, None, signum, code, out, err, stop_s))
        left, missing = unreferenced(table), missing_referenced(table)
        reliability.record(signals_sent=1, files_left=len(left), referenced_files_missing=len(missing))
        assert not left, f"round {i}: {len(left)} files no snapshot references, e.g. {sorted(left)[:3]}"
        assert not missing, f"round {i}: {len(missing)} referenced files are gone, e.g. {sorted(missing)[:3]}"
        stops.append(stop_s)
        removed.append(removed_count(err))
        print(f"round {i}: {signal.Signals(signum).name} {sent_after:.2f} s into a {baseline:.2f} s write: "
              f"{outcomes[-1]}, exit after {stop_s:.3f} s, {removed[-1]} files removed")
    reliability.record(interrupted_mid_write=sum(1 for r in removed if r > 0),
                       signals_after_the_command_ended=outcomes.count("finished"),
                       max_signal_to_exit_ms=int(1000 * max(stops)))
    assert any(r > 0 for r in removed), f"no round interrupted the write while it wrote files: {outcomes}"


def test_cli_compact_interrupted_leaves_no_file(source, tmp_path, reliability):
    rng = random.Random(7)
    baseline = 0.0
    signals = reliability.scale((signal.SIGINT, signal.SIGTERM), (signal.SIGINT, signal.SIGTERM, signal.SIGINT))
    for i, signum in enumerate((None, *signals)):  # first: the baseline
        root = tmp_path / f"round-{i}"
        table = new_table(root, **{"write-only": "true"})
        for part in range(3):  # three level-0 runs per bucket to rewrite
            table.write(pq.read_table(source).slice(part * ROWS // 3, ROWS // 3))
        before = table.snapshot_manager.latest_id()
        code, out, err, took, stop_s = run_command(["compact", "db.t", "-w", str(root / "wh")], signum=signum,
                                                   delay=baseline * rng.uniform(0.1, 0.9))
        if signum is None:
            assert code == 0, err
            baseline = took
        else:
            outcome = check_outcome(table, before, signum, code, out, err, stop_s)
            print(f"compact round {i}: {signal.Signals(signum).name}: {outcome}, exit after {stop_s:.3f} s, "
                  f"{removed_count(err)} files removed")
        left, missing = unreferenced(table), missing_referenced(table)
        reliability.record(signals_sent=int(signum is not None), files_left=len(left),
                           referenced_files_missing=len(missing))
        assert not left, f"{len(left)} files no snapshot references, e.g. {sorted(left)[:3]}"
        assert not missing, f"{len(missing)} referenced files are gone, e.g. {sorted(missing)[:3]}"


# -- in-process: Ctrl-C arriving while the writer's threads write ---------------------------------


def _interrupt_main_at(count: int, call):
    """``call``, which on its ``count``-th call (from a writer thread) first sends SIGINT to the
    main thread (Ctrl-C) and then goes on: the threads are mid-write when it lands."""
    calls = {"n": 0}
    lock = threading.Lock()

    def interrupting(*args, **kwargs):
        with lock:
            calls["n"] += 1
            now = calls["n"] == count
        if now:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        return call(*args, **kwargs)

    return interrupting


@pytest.mark.parametrize("publish", [1, 2], ids=["APPEND publish", "COMPACT publish"])
def test_a_signal_during_the_commit_never_deletes_published_files(source, tmp_path, monkeypatch, publish,
                                                                  reliability):
    """A real SIGINT right after a snapshot file is created (the writer's APPEND snapshot, then its
    COMPACT one): the commit is held to its end, then Ctrl-C is raised. Every file a snapshot
    references exists, the table reads whole, and no file is left that no snapshot references."""
    from paimonflow.core.meta.snapshots import SnapshotManager

    table = new_table(tmp_path, **{"full-compaction.delta-commits": "1"})  # APPEND, then COMPACT
    rows = pq.read_table(source).slice(0, 30_000)
    table.write(rows.slice(0, 20_000))  # the interrupted write's compaction rewrites these files with its own
    publish_now, published = SnapshotManager.publish, []

    def publish_then_signal(self, snapshot):
        outcome = publish_now(self, snapshot)
        published.append(snapshot.commit_kind.value)
        if len(published) == publish:
            signal.raise_signal(signal.SIGINT)  # Python runs its handler at once: inside the commit
        return outcome

    monkeypatch.setattr(SnapshotManager, "publish", publish_then_signal)
    with pytest.raises(KeyboardInterrupt):
        table.write(rows.slice(10_000))
    monkeypatch.undo()
    assert published == ["APPEND", "COMPACT"]  # the commit went on to its end
    assert table.delta_stats(table.snapshot_manager.latest_id()).added_files  # the compaction wrote files
    missing, left = missing_referenced(table), unreferenced(table)
    reliability.record(signals_sent=1, files_left=len(left), referenced_files_missing=len(missing))
    assert not missing, f"{len(missing)} files a snapshot references are gone, e.g. {sorted(missing)[:3]}"
    assert not left, f"{len(left)} files no snapshot references, e.g. {sorted(left)[:3]}"
    assert table.read().num_rows == rows.num_rows


def test_signals_deferred_delivers_after_the_block_or_not_at_all():
    from paimonflow.core.cli.interrupts import signals_deferred, signals_interrupt
    from paimonflow.core.errors import Interrupted

    after = []
    with pytest.raises(KeyboardInterrupt), signals_deferred():  # Python's own Ctrl-C handler, after the block
        signal.raise_signal(signal.SIGINT)
        after.append("the block ran to its end")
    assert after and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with signals_interrupt():  # the command lines' handler: Interrupted, with the signal's exit code
        with pytest.raises(Interrupted) as stopped, signals_deferred():
            signal.raise_signal(signal.SIGTERM)
        assert stopped.value.exit_code == 143
    # the block's own error goes on (it tells what became of the commit); the signal is dropped
    with pytest.raises(ValueError, match="the commit's own error"), signals_deferred():
        signal.raise_signal(signal.SIGINT)
        raise ValueError("the commit's own error")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("where", ["background store", "bucket flush"])
def test_table_write_interrupted_mid_write_removes_every_file(source, tmp_path, monkeypatch, where, reliability):
    from paimonflow.core.write.table_write import TableWrite

    table = new_table(tmp_path)
    rows = pq.read_table(source).slice(0, ROWS // 2)
    if where == "background store":
        monkeypatch.setattr(table.file_io, "write_bytes", _interrupt_main_at(40, table.file_io.write_bytes))
    else:
        monkeypatch.setattr(TableWrite, "_flush_group", _interrupt_main_at(12, TableWrite._flush_group))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        table.write(rows)
    time.sleep(0.5)  # nothing may land afterwards either
    left = files_on_disk(table)
    reliability.record(signals_sent=1, files_left=len(left))
    assert table.snapshot_manager.latest_id() is None
    assert not left, f"{len(left)} files left, e.g. {sorted(left)[:3]}"


def test_streaming_writer_abort_keeps_committed_files(source, tmp_path):
    table = new_table(tmp_path)
    rows = pq.read_table(source).slice(0, 200_000)
    writer = table.new_write()
    writer.write(rows.slice(0, 100_000))
    table.new_commit().commit(writer.prepare_commit())
    writer.write(rows.slice(100_000))
    writer.flush()
    assert unreferenced(table)  # the second batch's files, not committed
    assert writer.abort() > 0
    writer.close()
    assert not unreferenced(table)
    assert table.read().num_rows == 100_000


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_job_stopped_by_a_signal_exits_128_plus_the_signal(signum, capsys):
    from paimonflow.core.errors import Interrupted
    from paimonflow.jobs.cli import _run_job

    def stopped_job():
        raise Interrupted(signum)

    assert _run_job("write", stopped_job, (), {}, None) == 128 + signum
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert line["error"] == "JobInterrupted" and signal.Signals(signum).name in line["message"]


# -- the Spark job driver: a real SIGTERM at the end of a write job ---------------------------------

_DRIVER = """
import os, signal, sys
import paimonflow.jobs.write as job
from paimonflow.core.meta.snapshots import SnapshotManager

moment = sys.argv.pop(1)
if moment == "before-commit":  # the tasks' files are written and their messages collected
    job.crash_point = lambda name: os.kill(os.getpid(), signal.SIGTERM) if name.endswith("before-commit") else None
else:  # the snapshot file has just been created: inside the commit
    publish = SnapshotManager.publish

    def publish_then_sigterm(self, snapshot):
        outcome = publish(self, snapshot)
        os.kill(os.getpid(), signal.SIGTERM)
        return outcome

    SnapshotManager.publish = publish_then_sigterm
from paimonflow.jobs.cli import main

main()
"""


@pytest.mark.spark
@pytest.mark.parametrize("moment", ["before-commit", "in-commit"])
def test_spark_driver_stopped_by_sigterm_leaves_no_file(moment, source, tmp_path, reliability):
    """``python -m paimonflow.jobs write`` (local Spark) sent SIGTERM by the process itself at the
    end of the job: after the tasks wrote their files (the driver deletes them: exit 143, one
    JSON line, no snapshot) or right after its snapshot file was created (the commit completes:
    exit 143, the line names the committed snapshot, every referenced file is there)."""
    pytest.importorskip("pyspark")
    table = new_table(tmp_path)
    rows = tmp_path / "rows.parquet"
    pq.write_table(pq.read_table(source).slice(0, 20_000), rows)
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER)
    proc = subprocess.run([sys.executable, str(driver), moment, "write", "-w", str(tmp_path / "wh"), "-t", "db.t",
                           "--path", str(rows), "--master", "local[2]", "--conf", "spark.ui.enabled=false"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr[-3000:]
    line = json.loads(proc.stderr.strip().splitlines()[-1])
    assert line["error"] == "JobInterrupted" and "SIGTERM" in line["message"], line
    missing, left = missing_referenced(table), unreferenced(table)
    reliability.record(signals_sent=1, files_left=len(left), referenced_files_missing=len(missing))
    print(f"spark driver, SIGTERM {moment}: {line['message']}; files left {len(left)}")
    assert not left and not missing, (sorted(left)[:3], sorted(missing)[:3])
    if moment == "before-commit":
        assert table.snapshot_manager.latest_id() is None and "files its tasks had written were removed" in line["message"]
    else:
        assert "is committed" in line["message"] and table.read().num_rows == 20_000


@pytest.mark.spark
@pytest.mark.parametrize("seed", [1, 2])
def test_spark_driver_stopped_by_sigterm_while_its_tasks_write_leaves_no_file(seed, source, tmp_path, reliability):
    """``python -m paimonflow.jobs write`` (local Spark, 2 slots, 16 writer tasks in waves) sent
    SIGTERM at a random moment once its tasks have started writing files: the tasks that finished
    already handed their files to the driver only through the result it was collecting. The
    driver cancels the running tasks (which delete their own files), waits for them to end and
    deletes the finished tasks' files: exit 143, one JSON line, no snapshot, no file left."""
    pytest.importorskip("pyspark")
    table = new_table(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "paimonflow.jobs", "write", "-w", str(tmp_path / "wh"), "-t", "db.t",
                             "--path", str(source), "--parallelism", "16", "--master", "local[2]",
                             "--conf", "spark.ui.enabled=false"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    table_dir = Path(table.path)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None and not any(table_dir.glob("dt=*/bucket-*/data-*")):
        time.sleep(0.02)
    time.sleep(random.Random(seed).uniform(0.0, 3.0))  # some tasks finished, others still writing
    sent_at = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=180)
    took = time.monotonic() - sent_at
    if proc.returncode == 0:  # the job ended before the signal: nothing to check but the commit
        assert table.refresh().read().num_rows == ROWS
        return
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    line = json.loads(stderr.strip().splitlines()[-1])
    assert line["error"] == "JobInterrupted" and "SIGTERM" in line["message"], line
    missing, left = missing_referenced(table), unreferenced(table)
    reliability.record(signals_sent=1, files_left=len(left), referenced_files_missing=len(missing))
    print(f"spark driver, SIGTERM while tasks write (seed {seed}): {line['message']}; exit after {took:.1f} s; "
          f"files left {len(left)}")
    assert not left and not missing, (len(left), sorted(left)[:3], sorted(missing)[:3])
    assert table.snapshot_manager.latest_id() is None


def test_an_interrupt_a_library_turned_into_its_own_error_still_exits_as_an_interrupt(capsys):
    """Py4J catches a KeyboardInterrupt that lands inside a call, shuts that call's socket and the
    next call raises its own error: the job command line still reports the SIGTERM it received
    (exit 143, one JobInterrupted line), not an internal error (a clean-clone run met it)."""
    from paimonflow.jobs import cli

    def job():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt as exc:  # as Py4J's send_command, then its next call
            raise RuntimeError("Answer from Java side is empty") from exc

    assert cli._run_job("write", job, (), {}, None) == 128 + signal.SIGTERM
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert line["error"] == "JobInterrupted" and "SIGTERM" in line["message"] and "RuntimeError" in line["message"]


def test_files_a_write_removed_under_a_library_error_made_of_the_interrupt_are_reported(capsys):
    """The Spark write deletes its tasks' files whatever error the interrupt became (jobs/write.py
    notes the count on it): the JobInterrupted line reports the count for Py4J's error too (a
    clean-clone run on the standalone cluster met the line without it)."""
    from paimonflow.core.errors import note_files_removed
    from paimonflow.jobs import cli

    def job():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt as exc:
            error = RuntimeError("Error while sending or receiving")
            note_files_removed(error, 7)  # as jobs/write.py's _remove_task_files on the way out
            raise error from exc

    assert cli._run_job("write", job, (), {}, None) == 128 + signal.SIGTERM
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert line["error"] == "JobInterrupted", line
    assert "the 7 uncommitted files its tasks had written were removed" in line["message"], line
