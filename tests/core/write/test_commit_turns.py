"""Turns at committing (``core/write/commit_turns.py``): one writer of a local table at a time on
a machine, the lock file gone when no one holds it, and a writer that cannot get its turn in time
going ahead without it."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import pytest

from paimonflow.core.fs import LocalFileIO
from paimonflow.core.write.commit_turns import commit_turn, turn_file


def _hold(table: str, held, release) -> None:
    with commit_turn(LocalFileIO(), table, "main", wait_seconds=5) as taken:
        assert taken
        held.set()
        release.wait(10)


def test_threads_take_turns_and_leave_no_lock_file(tmp_path):
    """A read-modify-write of a counter under the turn by 4 threads × 40 turns loses no increment,
    though the lock file is removed and made again at every turn (a waiter that locked a removed
    file must notice and wait on the new one)."""
    table, counter = str(tmp_path / "t"), tmp_path / "counter"
    counter.write_text("0")
    taken: list[bool] = []

    def work() -> None:
        for _ in range(40):
            with commit_turn(LocalFileIO(), table, "main", wait_seconds=30) as turn:
                taken.append(turn)
                value = int(counter.read_text())
                time.sleep(0.0005)
                counter.write_text(str(value + 1))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert int(counter.read_text()) == 160 and all(taken) and len(taken) == 160
    assert not os.path.exists(turn_file(table, "main"))


def test_another_process_waits_for_the_turn_and_gives_up_after_its_wait(tmp_path):
    table = str(tmp_path / "t")
    ctx = multiprocessing.get_context("spawn")
    held, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(table, held, release))
    holder.start()
    try:
        assert held.wait(30)
        started = time.monotonic()
        with commit_turn(LocalFileIO(), table, "main", wait_seconds=0.2) as taken:
            assert not taken  # no turn in time: the attempt runs optimistically
        assert time.monotonic() - started >= 0.2
        with commit_turn(LocalFileIO(), table, "other-branch", wait_seconds=0.2) as taken:
            assert taken  # each branch has its own turns
        threading.Timer(0.3, release.set).start()
        started = time.monotonic()
        with commit_turn(LocalFileIO(), table, "main", wait_seconds=10) as taken:
            assert taken and time.monotonic() - started >= 0.25  # after the holder let go
    finally:
        release.set()
        holder.join(10)
    assert holder.exitcode == 0


@pytest.mark.parametrize("file_io", [None, object()])
def test_other_stores_commit_without_turns(tmp_path, file_io):
    with commit_turn(file_io, str(tmp_path / "t"), "main", wait_seconds=1) as taken:
        assert taken is False
    assert not os.path.exists(turn_file(str(tmp_path / "t"), "main"))


def test_a_commit_inside_a_threads_own_turn_does_not_wait_for_itself(tmp_path):
    table = str(tmp_path / "t")
    with commit_turn(LocalFileIO(), table, "main", wait_seconds=5) as outer:
        started = time.monotonic()
        with commit_turn(LocalFileIO(), table, "main", wait_seconds=5) as inner:
            assert outer and inner is False and time.monotonic() - started < 1
        assert os.path.exists(turn_file(table, "main"))  # still the outer turn's
    assert not os.path.exists(turn_file(table, "main"))


def test_turns_can_be_switched_off_for_a_writer(tmp_path, monkeypatch):
    monkeypatch.setenv("PAIMONFLOW_COMMIT_TURNS", "off")
    with commit_turn(LocalFileIO(), str(tmp_path / "t"), "main", wait_seconds=1) as taken:
        assert taken is False
    assert not os.path.exists(turn_file(str(tmp_path / "t"), "main"))


def _take_as_nobody(turns_parent: str, table: str, wait_seconds: float, result) -> None:
    import tempfile
    os.setgid(65534)
    os.setuid(65534)
    tempfile.tempdir = turns_parent
    started = time.monotonic()
    with commit_turn(LocalFileIO(), table, "main", wait_seconds=wait_seconds) as taken:
        result.put((taken, time.monotonic() - started))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a second user's process")
def test_users_share_the_turns_directory_like_tmp(tmp_path, monkeypatch):
    """The turns directory is made sticky and writable by all (as ``/tmp``), and a lock file one
    user made is waited on by another (opened read-only: ``flock`` needs no write access)."""
    import shutil
    import tempfile
    parent = tempfile.mkdtemp(prefix="turns-users-")  # (tmp_path's parents are root's alone)
    os.chmod(parent, 0o755)
    monkeypatch.setattr(tempfile, "tempdir", parent)
    try:
        _share_turns(parent, str(tmp_path / "t"))
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def _share_turns(parent: str, table: str) -> None:
    import stat
    with commit_turn(LocalFileIO(), table, "main", wait_seconds=5) as taken:
        assert taken
        mode = os.stat(os.path.dirname(turn_file(table, "main"))).st_mode
        assert stat.S_IMODE(mode) == 0o1777
        ctx = multiprocessing.get_context("spawn")
        result = ctx.Queue()
        child = ctx.Process(target=_take_as_nobody, args=(parent, table, 0.3, result))
        child.start()
        taken_by_nobody, waited = result.get(timeout=60)
        child.join(10)
    assert taken_by_nobody is False and waited >= 0.3  # it waited on root's file, then went ahead
    child = ctx.Process(target=_take_as_nobody, args=(parent, table, 5, result))
    child.start()
    taken_by_nobody, _ = result.get(timeout=60)
    child.join(10)
    assert taken_by_nobody is True and child.exitcode == 0
