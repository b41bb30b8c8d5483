"""The hidden names of a local directory followed by ``inotify`` (``core/fs/dir_watch.py``): always
what a listing would say, through random changes, a full event queue, a directory replaced at its
path and a fork; None where changes may not reach this machine's ``inotify``."""

from __future__ import annotations

import os
import random
import sys

import pytest

from paimonflow.core.fs import dir_watch
from paimonflow.core.fs.dir_watch import hidden_names
from paimonflow.core.fs.local import LocalFileIO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def _listed(directory) -> set[str]:
    return {name for name in os.listdir(directory) if name.startswith(".")}


def test_follows_random_changes_like_a_listing(tmp_path):
    directory = tmp_path / "snapshot"
    directory.mkdir()
    (directory / ".snapshot-1.a.tmp").write_text("before the first look")  # found by the first listing
    assert hidden_names(str(directory)) == {".snapshot-1.a.tmp"}
    rng = random.Random(5)
    names = [f".snapshot-{i}.{j}.tmp" for i in range(6) for j in range(3)] + [f"snapshot-{i}" for i in range(6)]
    for step in range(600):
        name = rng.choice(names)
        path = directory / name
        action = rng.random()
        if action < 0.45:
            path.write_text("x")
        elif action < 0.75:
            path.unlink(missing_ok=True)
        elif path.exists():
            os.replace(path, directory / rng.choice(names))  # a rename within (a publish's)
        if step % 7 == 0:
            assert hidden_names(str(directory)) == _listed(directory)
    outside = tmp_path / ".moved-out"
    for name in list(_listed(directory))[:3]:
        os.replace(directory / name, outside)  # renamed out of the directory
    (tmp_path / ".moved-in").write_text("x")
    os.replace(tmp_path / ".moved-in", directory / ".moved-in")
    assert hidden_names(str(directory)) == _listed(directory)


def test_a_directory_replaced_at_its_path_is_listed_again(tmp_path):
    directory = tmp_path / "t" / "snapshot"
    directory.mkdir(parents=True)
    (directory / ".old.tmp").write_text("x")
    assert hidden_names(str(directory)) == {".old.tmp"}
    os.rename(tmp_path / "t", tmp_path / "renamed")  # the table moved: no event on the directory itself
    directory.mkdir(parents=True)  # a new table at the old path
    (directory / ".new.tmp").write_text("x")
    assert hidden_names(str(directory)) == {".new.tmp"}
    assert hidden_names(str(tmp_path / "renamed" / "snapshot")) == {".old.tmp"}


def test_a_full_event_queue_starts_over_from_a_listing(tmp_path):
    """More changes than the kernel queues (``max_queued_events``) between two looks: the events
    are lost, and the next look lists the directory again."""
    directory = tmp_path / "snapshot"
    directory.mkdir()
    assert hidden_names(str(directory)) == set()
    with open("/proc/sys/fs/inotify/max_queued_events") as f:
        limit = int(f.read())
    for i in range(limit + 100):  # each create is an event
        os.close(os.open(directory / f".t{i}", os.O_CREAT | os.O_WRONLY, 0o644))
    for i in range(0, limit + 100, 2):
        os.unlink(directory / f".t{i}")
    assert hidden_names(str(directory)) == _listed(directory)
    (directory / ".after.tmp").write_text("x")
    assert ".after.tmp" in hidden_names(str(directory))


def test_a_forked_child_does_not_take_its_parents_events(tmp_path):
    directory = tmp_path / "snapshot"
    directory.mkdir()
    assert hidden_names(str(directory)) == set()
    pid = os.fork()
    if pid == 0:  # the child: its own look must not read the parent's queue
        code = 1
        try:
            (directory / ".child.tmp").write_text("x")
            code = 0 if hidden_names(str(directory)) == {".child.tmp"} else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    (directory / ".parent.tmp").write_text("x")
    assert hidden_names(str(directory)) == {".child.tmp", ".parent.tmp"}


def test_unfollowable_directories_are_listed_by_the_caller(tmp_path):
    assert hidden_names("/proc") is None  # not a disk's file system: changes need not reach inotify
    assert hidden_names(str(tmp_path / "missing")) is None
    io = LocalFileIO()
    assert io.list_hidden(str(tmp_path / "missing"), ".snapshot-1.") == []


def test_list_hidden_answers_as_list_files(tmp_path):
    io, directory = LocalFileIO(), tmp_path / "snapshot"
    directory.mkdir()
    for name in (".snapshot-1.a.tmp", ".snapshot-1.b.tmp", ".snapshot-10.c.tmp", "snapshot-1", ".LATEST.x.tmp"):
        (directory / name).write_text(name)
    (directory / ".snapshot-1.dir").mkdir()
    for prefix in (".snapshot-1.", ".snapshot-10.", ".", ".none"):
        assert io.list_hidden(f"file://{directory}", prefix) == io.list_files(f"file://{directory}", prefix)
    assert dir_watch.hidden_names(str(directory)) is not None  # answered by the watch, not a listing
