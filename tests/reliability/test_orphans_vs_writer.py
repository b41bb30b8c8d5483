"""The orphan cleaner racing a slow writer (reliability plan A10, requirement R5, invariants I4, I8).

A **writer** (spawned process) writes its data files, tells the test, pauses ``d`` seconds (a slow
task, a long checkpoint) and only then commits. Meanwhile the test process runs the **orphan
cleaner** in a loop with ``older_than = d * k``: to the cleaner the writer's files are
unreferenced until the commit lands, so only their age protects them. Each round also plants old
leftovers of a crashed writer, which the cleaner must remove (proof that it is really cleaning).

* ``k >= 2`` (the cleaner's window is longer than the writer's pause): the commit lands, every
  file it references exists (I4), the table reads the model's rows (I6), the old leftovers are
  gone (I8), and a cleaning after the commit deletes nothing referenced.
* **Negative control**, ``k < 1``: the cleaner deletes the in-flight files during the pause, and the
  damage shows as a typed ``FileNotFoundStorageError`` on read (or a failed commit) and missing
  referenced files. The test asserts that the breakage happens, so the harness is proven able to
  see it.
* Refusals: ``older_than`` in the future (a negative window) and a window below the configured
  safety floor (``min_older_than_millis``, set above the writer's pause) raise
  ``InvalidArgumentError`` before anything is deleted; with the floor set at ``2 d`` the negative
  control's configuration cannot run at all.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import (
    CorruptMetadataError,
    FileNotFoundStorageError,
    InvalidArgumentError,
    OrphanCleanAbortedError,
    PaimonflowError,
)
from paimonflow.core.maintenance.orphans import referenced_files, remove_orphan_files

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
IDENTIFIER = "db.t"
WAIT_SECONDS = 60
CONTROL_DIRS = {"snapshot", "schema", "tag", "consumer", "changelog", "branch", "manifest"}


def rows_of(table) -> list[tuple[int, str]]:
    return sorted((r["k"], r["v"]) for r in table.to_pylist())


def writer_main(conn, warehouse: str, keys: list[int], value: str, pause: float) -> None:
    """Write the files, report, pause, commit, report ("committed", id) or ("error", ...)."""
    try:
        table = Catalog(warehouse).get_table(IDENTIFIER)
        started = time.time()  # before the first data file exists
        with table.new_write() as writer:
            writer.write(pa.table({"k": keys, "v": [value] * len(keys)}, schema=SCHEMA))
            messages = writer.prepare_commit()
        conn.send(("written", time.time()))
        time.sleep(pause)
        try:
            result = table.new_commit("slow-writer").commit(messages)
            conn.send(("committed", result.snapshot_id, time.time() - started))
        except PaimonflowError as exc:
            conn.send(("error", type(exc).__name__, str(exc)))
    except BaseException:
        conn.send(("crash", traceback.format_exc()))


def data_files(root: str) -> set[str]:
    """Every file under the table's data directories (what a writer writes before committing)."""
    out = set()
    for directory, subdirs, names in os.walk(root):
        if directory == root:
            subdirs[:] = [d for d in subdirs if d not in CONTROL_DIRS]
            continue
        out |= {os.path.join(directory, n) for n in names if not n.startswith(".")}
    return out


def plant_leftovers(table_path: str, n: int, tag: str) -> list[str]:
    """Files a crashed writer left a day ago: orphans any sane window removes."""
    out = []
    for i in range(n):
        path = os.path.join(table_path, f"bucket-{i % 2}", f"data-crashed-{tag}-{i}.parquet")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_bytes(b"PAR1 half a file")
        old = time.time() - 86_400
        os.utime(path, (old, old))
        out.append(path)
    return out


def run_round(root: Path, kind: str, pause: float, k: float, seed: int, counts: Counter) -> None:
    catalog = Catalog(str(root))
    catalog.create_database("db")
    options = {"bucket": "2"} if kind == "pk" else {"bucket": "-1"}
    table = catalog.create_table(IDENTIFIER, SCHEMA, primary_keys=["k"] if kind == "pk" else (), options=options)
    table.write(pa.table({"k": [100, 101], "v": ["base", "base"]}, schema=SCHEMA))
    keys = list(range(seed % 5, seed % 5 + 6))
    expected = sorted([(100, "base"), (101, "base")] + [(key, f"w{seed}") for key in keys])
    leftovers = plant_leftovers(table.path, 3, str(seed))
    window_ms = int(pause * k * 1000)

    # refusals first: nothing may be deleted by a refused run
    with pytest.raises(InvalidArgumentError):
        remove_orphan_files(table, older_than_millis=-1)  # a cutoff in the future
    floor = int(2 * pause * 1000)
    if window_ms < floor:
        with pytest.raises(InvalidArgumentError, match="safety floor"):
            remove_orphan_files(table, older_than_millis=window_ms, min_older_than_millis=floor)
        counts["refused"] += 1
    assert all(os.path.exists(p) for p in leftovers), "a refused cleaning deleted files"
    counts["refused"] += 1

    before = data_files(table.path)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    writer = ctx.Process(target=writer_main, args=(child, str(root), keys, f"w{seed}", pause), name="slow-writer")
    writer.start()
    try:
        assert parent.poll(WAIT_SECONDS), "the writer never wrote"
        message = parent.recv()
        assert message[0] == "written", message
        in_flight = data_files(table.path) - before
        assert in_flight, "the writer wrote no data files"
        deleted_in_flight: set[str] = set()
        while not parent.poll(0.05):  # the cleaner loops while the writer pauses
            plan = remove_orphan_files(table, older_than_millis=window_ms,
                                       min_older_than_millis=floor if window_ms >= floor else 0)
            counts["cleanings"] += 1
            deleted_in_flight |= set(plan.orphans) & in_flight
            counts["orphans_deleted"] += len(plan.orphans)
            assert writer.is_alive() or parent.poll(), "the writer died"
        answer = parent.recv()
        assert answer[0] != "crash", answer[1]
    finally:
        writer.join(WAIT_SECONDS)
        if writer.is_alive():
            writer.kill()
            writer.join()
    assert writer.exitcode == 0
    assert not any(os.path.exists(p) for p in leftovers), "the cleaner never removed the old leftovers (I8)"
    table = catalog.get_table(IDENTIFIER)
    counts["commits"] += answer[0] == "committed"
    if k >= 2:
        assert answer[0] == "committed", f"seed {seed}: the commit failed: {answer}"
        assert not deleted_in_flight, (f"seed {seed}: k={k}: the cleaner deleted in-flight files {deleted_in_flight}; "
                                       f"the writer's files were uncommitted for {answer[2]:.2f} s, window "
                                       f"{window_ms} ms")
        # a cleaning after the commit: referenced files stay whatever their age
        remove_orphan_files(table, older_than_millis=window_ms)
        missing = sorted(p for p in referenced_files(table) if not os.path.exists(p))
        assert not missing, f"seed {seed}: I4: {missing}"
        assert rows_of(table.read()) == expected, f"seed {seed}: I6"
        counts["reads"] += 1
        counts["commits_intact"] += 1
        return
    # the negative control: the cleaner must have broken the in-flight commit, visibly and typed
    assert deleted_in_flight, (f"seed {seed}: k={k}: the cleaner never deleted the writer's in-flight files: "
                               "the harness cannot see the race it is meant to catch")
    if answer[0] == "committed":
        # the damage takes one of its typed forms: a data file the snapshot names is gone, or one
        # of its manifests is (then listing what it references stops, typed, as orphan removal does)
        try:
            missing = sorted(p for p in referenced_files(table) if not os.path.exists(p))
        except (OrphanCleanAbortedError, FileNotFoundStorageError, CorruptMetadataError):
            counts["negative_control_lost_manifest"] += 1
        else:
            assert missing, f"seed {seed}: files were deleted but the committed snapshot misses none"
        with pytest.raises((FileNotFoundStorageError, CorruptMetadataError)):
            rows = table.read()
            pytest.fail(f"seed {seed}: a read of a snapshot with deleted files returned {rows.num_rows} rows")
        counts["reads"] += 1
    counts["negative_control_breaks"] += 1


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("k", [3.0, 2.0, 0.5, 0.0])
def test_orphan_cleaner_never_deletes_a_slow_writers_files(tmp_path, reliability, k):
    counts: Counter = Counter()
    cases = reliability.scale([("pk", 1.5)], [("pk", 1.0), ("append", 1.0), ("pk", 2.5), ("append", 2.5)])
    for r, (kind, pause) in enumerate(cases * reliability.scale(1, 2)):
        seed = 100 * r + int(k * 10)
        print(f"round {r}: kind={kind} pause={pause}s k={k} seed={seed}")
        run_round(tmp_path / f"r{r}", kind, pause, k, seed, counts)
        counts["examples"] += 1
    reliability.record(**counts)
