"""Expiry racing a paused batch reader (reliability plan A9, requirements R4, invariants I4, I6).

Three processes per round:

* a **reader** (spawned) picks the latest snapshot ``s``, protects it (a consumer id, or a tag as
  Paimon's ``scan.plan-auto-tag-for-read`` does, or nothing), plans its read, tells the test and
  waits;
* an **expirer** (spawned) loops ``expire_snapshots(retain_min=1, older_than_millis=0)`` the whole
  time: the most aggressive retention there is;
* the test process **writes**: new commits that replace every row of ``s`` (a full compaction of
  the primary-key table, or an overwrite of the append table), so every data file of ``s`` is
  deleted by a later snapshot and becomes expirable.

When expiry has overtaken ``s`` (every snapshot before the latest expired, or with a consumer,
everything up to ``s``), the reader reads the splits it planned, while expiry and commits go on.

* Protected by a consumer or a tag: the read returns exactly the model rows of ``s`` (I6); the
  consumer kept snapshot ``s`` itself, the tag kept its files; all of ``s``'s files existed just
  before the read (I4), and afterwards every file a retained snapshot or tag references exists.
* **Negative control**, unprotected: expiry deletes ``s``'s files before the read, and the read
  fails with ``FileNotFoundStorageError``, never with wrong or partial rows. The test asserts that
  this failure happens, so a harness that could not see a deletion would fail.
"""

from __future__ import annotations

import multiprocessing
import random
import time
import traceback
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import FileNotFoundStorageError, PaimonflowError
from paimonflow.core.maintenance.orphans import referenced_files
from paimonflow.core.meta.references import entry_path_resolver

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
IDENTIFIER = "db.t"
AGGRESSIVE = {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms", "write-only": "true"}
WAIT_SECONDS = 60


def rows_of(table_or_rows) -> list[tuple[int, str]]:
    rows = table_or_rows.to_pylist() if hasattr(table_or_rows, "to_pylist") else table_or_rows
    return sorted((r["k"], r["v"]) for r in rows)


# -- the spawned actors -------------------------------------------------------------------------


def reader_main(conn, warehouse: str, protection: str, reader_id: str) -> None:
    """Plan a read of the latest snapshot under ``protection``, wait for "go", read the planned
    splits and report ("rows", rows) or ("error", type, typed?, message)."""
    try:
        table = Catalog(warehouse).get_table(IDENTIFIER)
        snapshot_id = table.snapshot_manager.latest_id()
        if protection == "consumer":
            table.consumer_manager.record(reader_id, snapshot_id)
        elif protection == "tag":
            table.tags.create(reader_id, snapshot_id=snapshot_id)
        splits = table.plan(snapshot_id=snapshot_id)  # planned; the files are read later
        conn.send(("planned", snapshot_id))
        assert conn.recv() == "go"
        try:
            rows = table.split_reader().read(splits)
            conn.send(("rows", rows_of(rows)))
        except PaimonflowError as exc:
            conn.send(("error", type(exc).__name__, isinstance(exc, FileNotFoundStorageError), str(exc)))
        finally:  # release the protection, as a reader does when done
            if protection == "consumer":
                table.consumer_manager.delete(reader_id)
            elif protection == "tag":
                table.tags.delete(reader_id)
    except BaseException:
        conn.send(("crash", traceback.format_exc()))


def expirer_main(warehouse: str, stop, runs, expired, errors) -> None:
    """Expire with the most aggressive retention until told to stop."""
    try:
        table = Catalog(warehouse).get_table(IDENTIFIER)
        while not stop.is_set():
            result = table.expire_snapshots(retain_min=1, older_than_millis=0)
            with runs.get_lock():
                runs.value += 1
            with expired.get_lock():
                expired.value += result.expired_snapshots
            time.sleep(0.005)
    except BaseException:
        errors.put(traceback.format_exc())


# -- the test -----------------------------------------------------------------------------------


def make_table(root: Path, kind: str):
    catalog = Catalog(str(root))
    catalog.create_database("db")
    if kind == "pk":
        return catalog.create_table(IDENTIFIER, SCHEMA, primary_keys=["k"],
                                    options={"bucket": "2", "num-sorted-run.compaction-trigger": "10", **AGGRESSIVE})
    return catalog.create_table(IDENTIFIER, SCHEMA, options={"bucket": "-1", **AGGRESSIVE})


def data_files(table, snapshot_id: int) -> list[str]:
    snapshot = table.snapshot_manager.snapshot(snapshot_id)
    path_of = entry_path_resolver(table)
    return sorted(path_of(e) for e in table.manifest_io.live_entries(snapshot))


class Writer:
    """The test's writer: every commit replaces all rows; the model maps snapshot id -> rows."""

    def __init__(self, table, kind: str, rng: random.Random) -> None:
        self.table, self.kind, self.rng = table, kind, rng
        self.rows: dict[int, str] = {}  # primary-key table
        self.appended: list[tuple[int, str]] = []  # append table
        self.model: dict[int, list[tuple[int, str]]] = {}
        self.commits = 0

    def commit(self, keys: list[int] | None = None) -> None:
        self.commits += 1
        tag = f"c{self.commits}"
        if self.kind == "pk":
            keys = keys if keys is not None else list(range(12))
            self.table.write(pa.table({"k": keys, "v": [tag] * len(keys)}, schema=SCHEMA))
            self.rows.update({k: tag for k in keys})
            self.remember()
            if len(keys) == 12:  # a full rewrite: the compaction deletes every older file
                self.table.compact(full=True)
                self.remember()
        else:  # an append table keeps every row; a full write overwrites the table
            overwrite = keys is None
            keys = keys if keys is not None else list(range(12))
            self.table.write(pa.table({"k": keys, "v": [tag] * len(keys)}, schema=SCHEMA), overwrite=overwrite)
            self.appended = ([] if overwrite else self.appended) + [(k, tag) for k in keys]
            self.remember()

    def remember(self) -> None:
        latest = self.table.snapshot_manager.latest_id()
        self.model.setdefault(latest, sorted(self.rows.items()) if self.kind == "pk" else sorted(self.appended))


def run_round(root: Path, kind: str, protection: str, seed: int, commits_after: int, counts: Counter) -> None:
    rng = random.Random(seed)
    table = make_table(root, kind)
    writer = Writer(table, kind, rng)
    for _ in range(rng.randint(2, 4)):  # several files per bucket at snapshot s
        writer.commit(sorted(rng.sample(range(12), rng.randint(3, 8))))
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    stop, runs, expired, errors = ctx.Event(), ctx.Value("i", 0), ctx.Value("i", 0), ctx.Queue()
    reader = ctx.Process(target=reader_main, args=(child, str(root), protection, f"reader-{seed}"), name="reader")
    expirer = ctx.Process(target=expirer_main, args=(str(root), stop, runs, expired, errors), name="expirer")
    reader.start()
    try:
        assert parent.poll(WAIT_SECONDS), "the reader never planned"
        message = parent.recv()
        assert message[0] == "planned", message
        s = message[1]
        expected = writer.model[s]
        files_of_s = data_files(table, s)
        assert files_of_s
        expirer.start()
        for _ in range(commits_after):
            writer.commit()
        deadline = time.monotonic() + WAIT_SECONDS
        while True:  # until expiry has overtaken s
            ids = table.snapshot_manager.list_ids()
            if protection == "consumer":
                assert ids[0] <= s, f"snapshot {s} expired though the reader's consumer protects it"
                caught_up = ids[0] == s and runs.value >= 3
            else:
                caught_up = ids[0] == ids[-1] and runs.value >= 3
            if protection == "none":
                caught_up = caught_up and not any(Path(p).exists() for p in files_of_s)
            if caught_up:
                break
            assert errors.empty(), errors.get()
            assert time.monotonic() < deadline, f"expiry never overtook snapshot {s}: ids {ids}, runs {runs.value}"
            time.sleep(0.02)
        if protection != "none":  # I4 for the protected snapshot, just before the read
            gone = [p for p in files_of_s if not Path(p).exists()]
            assert not gone, f"I4: protected snapshot {s} lost files {gone}"
        parent.send("go")
        writer.commit()  # commits and expiry go on while the reader reads
        assert parent.poll(WAIT_SECONDS), "the reader never answered"
        answer = parent.recv()
        counts["reads"] += 1
        counts["commits"] += writer.commits
        counts["expiries"] += runs.value
        counts["expired_snapshots"] += expired.value
        assert answer[0] != "crash", answer[1]
        if protection == "none":
            # the negative control: the read must fail, typed, and never return rows
            assert answer[0] == "error", (f"seed {seed}: an unprotected read of expired snapshot {s} returned "
                                          f"rows {'equal to' if answer[1] == expected else 'DIFFERENT from'} the "
                                          "model: the harness did not see the expiry")
            assert answer[2], f"seed {seed}: untyped failure {answer[1]}: {answer[3]}"
            counts["negative_control_failures"] += 1
        else:
            assert answer[0] == "rows", f"seed {seed}: protected read of snapshot {s} failed: {answer}"
            assert answer[1] == expected, f"seed {seed}: I6: snapshot {s} read {answer[1]}, model {expected}"
            counts["protected_reads_ok"] += 1
    finally:
        stop.set()
        for process in (reader, expirer):
            if process.pid is not None:
                process.join(WAIT_SECONDS)
                if process.is_alive():
                    process.kill()
                    process.join()
    assert errors.empty(), f"seed {seed}: the expirer failed:\n{errors.get()}"
    assert reader.exitcode == 0 and expirer.exitcode == 0, (reader.exitcode, expirer.exitcode)
    # after everything: every retained snapshot and tag reads right and has its files (I4, I6)
    table = Catalog(str(root)).get_table(IDENTIFIER)
    missing = sorted(p for p in referenced_files(table) if not Path(p).exists())
    assert not missing, f"seed {seed}: I4: {missing}"
    for sid in table.snapshot_manager.list_ids():
        if sid in writer.model:
            assert rows_of(table.read(snapshot_id=sid)) == writer.model[sid]
    assert table.tags.list() == {} and table.consumer_manager.ids() == []  # the reader released them


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", ["pk", "append"])
@pytest.mark.parametrize("protection", ["consumer", "tag", "none"])
def test_expiry_never_pulls_files_from_under_a_protected_reader(tmp_path, reliability, kind, protection):
    counts: Counter = Counter()
    rounds = reliability.scale(1, 6)
    for r in range(rounds):
        seed = 1000 * r + len(kind) * 10 + len(protection)
        print(f"round {r}: kind={kind} protection={protection} seed={seed}")
        run_round(tmp_path / f"r{r}", kind, protection, seed, commits_after=reliability.scale(2, 2 + r), counts=counts)
        counts["examples"] += 1
    reliability.record(**counts)
