"""Snapshot expiry: Paimon's range rules, exactly the unreferenced files deleted, tags and
consumers protecting what they reference, dry runs, limits and reruns."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError, PaimonflowError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def rows(ids, v) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "v": [v] * len(ids)}, schema=SCHEMA)


def state(table, **kw) -> dict:
    return {r["id"]: r["v"] for r in table.read(**kw).to_pylist()}


def all_files(root) -> set[str]:
    out = set()
    for d, _, names in os.walk(root):
        out |= {os.path.join(d, n) for n in names}
    return out


def referenced_files_exist(table) -> None:
    """Every file a retained snapshot or tag needs is on storage."""
    from paimonflow.core.meta.references import metadata_files

    keepers = [table.snapshot_manager.snapshot(i) for i in table.snapshot_manager.list_ids()]
    keepers += list(table.tag_manager.list_tags().values())
    for snap in keepers:
        for path in metadata_files(table, snap):
            assert table.file_io.exists(path), path
        for split in table.plan(snapshot_id=snap.id, all_levels=True) if table.snapshot_manager.exists(snap.id) \
                else []:
            for f in split.files:
                assert table.file_io.exists(f"{table.path}/bucket-{split.bucket}/{f.file_name}")


def make(catalog, name="t", **options):
    return catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["id"],
                                options={"bucket": "1", "num-sorted-run.compaction-trigger": "3", **options})


def test_expiry_keeps_retain_min_and_deletes_only_unreferenced_files(catalog):
    t = make(catalog)
    history = {}
    for i in range(12):
        t.write(rows(range(i, i + 5), f"c{i}"))
        for sid in t.snapshot_manager.list_ids():  # the APPEND and the writer's COMPACT read alike
            history.setdefault(sid, state(t))
    latest = t.latest_snapshot().id
    before = all_files(t.path)
    result = t.expire_snapshots(retain_min=4, older_than_millis=0)
    assert t.snapshot_manager.list_ids() == list(range(latest - 3, latest + 1))
    assert result.expired_snapshots == latest - 4 and result.plan.end == latest - 3
    assert t.snapshot_manager.earliest_id() == latest - 3
    for sid in t.snapshot_manager.list_ids():  # every retained snapshot still reads the same
        assert state(t, snapshot_id=sid) == history[sid]
    referenced_files_exist(t)
    gone = before - all_files(t.path)
    assert gone and all("snapshot-" in p or "/manifest/" in p or "/bucket-" in p for p in gone)
    assert t.expire_snapshots(retain_min=4, older_than_millis=0).expired_snapshots == 0  # idempotent


def test_time_rule_looks_at_the_successor_and_dry_run_deletes_nothing(catalog):
    t = make(catalog, "time")
    for i in range(6):
        t.write(rows([i], f"c{i}"))
    times = [t.snapshot_manager.snapshot(i).time_millis for i in t.snapshot_manager.list_ids()]
    ids = t.snapshot_manager.list_ids()
    # now = 1 h after the 4th snapshot: a snapshot may go once its successor is more than 1 h old
    cutoff = times[3] + 1
    clock = lambda: (cutoff + 3_600_000) / 1000  # noqa: E731
    expected = []
    for i in range(len(ids) - 1):
        if times[i + 1] >= cutoff:
            break
        expected.append(ids[i])
    assert expected and len(expected) < len(ids) - 1
    files = all_files(t.path)
    plan = t.expire_snapshots(retain_min=1, dry_run=True, clock=clock)
    assert plan.dry_run and plan.plan.snapshot_ids == tuple(expected) and all_files(t.path) == files
    assert t.expire_snapshots(retain_min=1, clock=clock).expired_snapshots == len(expected)
    assert t.snapshot_manager.list_ids() == ids[len(expected):]


def test_retain_max_and_expire_limit(catalog):
    t = make(catalog, "max")
    for i in range(10):
        t.write(rows([i], "x"))
    n = len(t.snapshot_manager.list_ids())
    # far in the future nothing is young; retain_max keeps 6, the limit takes 2 per run
    assert t.expire_snapshots(retain_min=1, retain_max=6, max_deletes=2, clock=lambda: 1e10).expired_snapshots == 2
    assert t.expire_snapshots(retain_min=1, retain_max=6, clock=lambda: 1e10,
                              older_than_millis=10**15).expired_snapshots == n - 6 - 2
    assert len(t.snapshot_manager.list_ids()) == 6
    with pytest.raises(InvalidArgumentError):
        t.expire_snapshots(retain_min=0)


def test_tags_and_consumers_protect_their_snapshots(catalog):
    t = make(catalog, "prot")
    for i in range(8):
        t.write(rows(range(i, i + 3), f"c{i}"))
        if i == 1:
            tagged_state, tagged_id = state(t), t.latest_snapshot().id
            t.tag_manager.create("keep", t.latest_snapshot())
    t.consumer_manager.record("reader", 5)
    t.expire_snapshots(retain_min=1, older_than_millis=0)
    assert t.snapshot_manager.earliest_id() == 5  # the consumer still needs snapshot 5
    t.consumer_manager.delete("reader")
    t.expire_snapshots(retain_min=1, older_than_millis=0)
    assert t.snapshot_manager.list_ids() == [t.latest_snapshot().id]
    assert not t.snapshot_manager.exists(tagged_id)
    assert state(t, tag="keep") == tagged_state  # the tag's files survived the expiry of its snapshot
    referenced_files_exist(t)


def test_reading_an_expired_snapshot_is_a_clear_error(catalog):
    t = make(catalog, "gone")
    for i in range(4):
        t.write(rows([i], "x"))
    t.expire_snapshots(retain_min=1, older_than_millis=0)
    with pytest.raises(PaimonflowError, match="snapshot"):
        t.read(snapshot_id=1)


OPS = st.lists(st.one_of(
    st.tuples(st.just("write"), st.lists(st.integers(0, 9), min_size=1, max_size=4)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 9), min_size=1, max_size=3)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("tag"), st.integers(0, 3)),
    st.tuples(st.just("untag"), st.integers(0, 3)),
    st.tuples(st.just("expire"), st.integers(1, 4)),
    st.tuples(st.just("rollback"), st.integers(0, 3)),
), min_size=1, max_size=14)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_maintenance_interleaved_with_commits_matches_a_model(tmp_path_factory, ops):
    """Commits, compactions, tag creation and deletion, expiries and rollbacks in any order: every
    retained snapshot and tag reads as the model says, no file they need is missing, and the
    snapshot ids from EARLIEST to LATEST have no gaps."""
    catalog = Catalog(str(tmp_path_factory.mktemp("expmodel")))
    catalog.create_database("db")
    t = make(catalog, "m", **{"bucket": "2", "num-sorted-run.compaction-trigger": "2"})
    model: dict[int, str] = {}
    at: dict[int, dict] = {}  # snapshot id -> the model when it was committed
    tags: dict[str, tuple[int, dict]] = {}

    def record() -> None:
        for sid in t.snapshot_manager.list_ids():
            at.setdefault(sid, dict(model))

    for step, (op, arg) in enumerate(ops):
        if op == "write":
            t.write(rows(arg, f"s{step}"))
            model.update({k: f"s{step}" for k in arg})
        elif op == "delete":
            t.write(rows(arg, None), row_kinds="-D")
            for k in arg:
                model.pop(k, None)
        elif op == "compact":
            t.compact(full=arg)
        elif op == "tag" and t.latest_snapshot() is not None and f"t{arg}" not in tags:
            t.tags.create(f"t{arg}")
            tags[f"t{arg}"] = (t.latest_snapshot().id, dict(model))
        elif op == "untag" and f"t{arg}" in tags:
            t.tags.delete(f"t{arg}")
            del tags[f"t{arg}"]
        elif op == "expire":
            t.expire_snapshots(retain_min=arg, older_than_millis=0)
        elif op == "rollback":
            ids = t.snapshot_manager.list_ids()
            if len(ids) > 1:
                target = ids[arg % len(ids)]
                t.rollback(snapshot_id=target)
                model = dict(at[target])
                at = {sid: m for sid, m in at.items() if sid <= target}
                tags = {n: v for n, v in tags.items() if v[0] <= target}
        record()
        ids = t.snapshot_manager.list_ids()
        assert not ids or ids == list(range(ids[0], ids[-1] + 1))
        assert not ids or t.snapshot_manager.earliest_id() == ids[0]
        assert state(t) == model
        for sid in ids:
            assert state(t, snapshot_id=sid) == at[sid]
        for name, (_, expected) in tags.items():
            assert state(t, tag=name) == expected
        referenced_files_exist(t)


@pytest.mark.parametrize("protected", [True, False])
def test_expiry_racing_a_reader_that_planned_a_read(catalog, protected):
    from paimonflow.core.errors import FileNotFoundStorageError

    t = make(catalog, f"race{int(protected)}", **{"write-only": "true"})
    for i in range(3):
        t.write(rows(range(10), f"c{i}"))
    planned_at = t.latest_snapshot().id
    expected = state(t)
    splits = t.plan()  # the reader has planned; it reads later
    if protected:
        t.consumer_manager.record("reader", planned_at)
    t.compact(full=True)
    t.write(rows(range(10), "new"))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, older_than_millis=0)
    reader = t.split_reader()
    if protected:
        got = reader.read(splits)
        assert {r["id"]: r["v"] for r in got.to_pylist()} == expected
    else:  # the files are gone: a clear, typed error, never wrong rows
        with pytest.raises(FileNotFoundStorageError, match="no such file"):
            reader.read(splits)


def test_a_bound_given_alone_overrides_the_other_bounds_default(catalog):
    """``retain_max`` alone keeps that many whatever ``snapshot.num-retained.min`` (10) says, and
    ``retain_min`` alone above ``snapshot.num-retained.max`` keeps that many; two given bounds that
    contradict each other are one typed error."""
    t = make(catalog, "alone")
    for i in range(14):
        t.write(rows([i], "x"))
    latest = t.snapshot_manager.latest_id()
    plan = t.expire_snapshots(retain_max=3, dry_run=True)  # every snapshot is young: only the count applies
    assert plan.plan.end == latest - 2
    assert t.expire_snapshots(retain_max=3).expired_snapshots == latest - 3
    assert t.snapshot_manager.list_ids() == [latest - 2, latest - 1, latest]
    capped = make(catalog, "capped", **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
                                        "write-only": "true"})  # no expiry after each commit
    for i in range(6):
        capped.write(rows([i], "x"))
    top = capped.snapshot_manager.latest_id()
    capped.expire_snapshots(retain_min=4, older_than_millis=0)
    assert capped.snapshot_manager.list_ids() == list(range(top - 3, top + 1))
    with pytest.raises(InvalidArgumentError, match=r"retain_max \(3\) must be at least retain_min \(4\)"):
        t.expire_snapshots(retain_min=4, retain_max=3)
    with pytest.raises(InvalidArgumentError, match="retain_max must be at least 1"):
        t.expire_snapshots(retain_max=0)


def test_a_commit_with_nothing_to_expire_neither_lists_the_snapshots_nor_writes_a_marker(catalog, monkeypatch):
    """Post-commit expiry under default options (keep an hour) on a table with a long history:
    it decides from the hints and a snapshot file, without listing ``snapshot/`` (on a local disk
    even a prefix listing reads every name) and without writing a marker, so a commit costs the
    same at 1 and 10,000 retained snapshots. The publish's look for another writer's pending
    rename onto its snapshot follows the directory's changes (``fs/dir_watch.py``) instead of
    reading its names; tag expiry by time-to-live reads no tag file and lists no tag directory that
    has not changed."""
    from paimonflow.core.fs.local import LocalFileIO

    t = catalog.create_table("db.long", pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "1"})
    for i in range(40):
        t.write(rows([i % 7], f"v{i}"))
    for i in range(30):
        t.tags.create(f"kept-{i}", snapshot_id=i + 1)
    old = time.time() - 60  # the tag directory's last change is long past (not in the clock tick of a listing)
    os.utime(f"{t.path}/tag", (old, old))
    t.write(rows([99], "warm"))  # this process learns the tags' times-to-live once
    read: list[str] = []
    real_read = LocalFileIO.read_bytes
    monkeypatch.setattr(LocalFileIO, "read_bytes", lambda self, path: read.append(path) or real_read(self, path))
    listed: list[tuple[str, str]] = []
    written: list[str] = []
    real_dir, real_files, real_write = LocalFileIO.list_dir, LocalFileIO.list_files, LocalFileIO.write_bytes
    monkeypatch.setattr(LocalFileIO, "list_dir", lambda self, path: listed.append((path, "*")) or real_dir(self, path))
    monkeypatch.setattr(LocalFileIO, "list_files",
                        lambda self, path, prefix: listed.append((path, prefix)) or real_files(self, path, prefix))
    looked: list[tuple[str, str]] = []
    real_hidden = LocalFileIO.list_hidden
    monkeypatch.setattr(LocalFileIO, "list_hidden",
                        lambda self, path, prefix: looked.append((path, prefix)) or real_hidden(self, path, prefix))
    names_read: list[str] = []
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path=".": names_read.append(os.fspath(path)) or real_listdir(path))
    monkeypatch.setattr(LocalFileIO, "write_bytes",
                        lambda self, path, data: written.append(path) or real_write(self, path, data))
    table = catalog.get_table("db.long")
    before = table.snapshot_manager.latest_id()
    for i in range(3):
        assert table.write(rows([100 + i], "new")).snapshot_id is not None  # post-commit maintenance runs
    after = table.snapshot_manager.latest_id()
    snapshot_dir = f"{table.path}/snapshot"
    # the publish's look for a pending rename, once per snapshot, follows the directory's changes:
    # no listing of its names (on an object store it is a prefix listing)
    assert [prefix for path, prefix in looked if path.rstrip("/") == snapshot_dir] == \
        [f".snapshot-{sid}." for sid in range(before + 1, after + 1)]
    assert not [p for p in listed if p[0].rstrip("/") == snapshot_dir]
    assert not [p for p in names_read if p.rstrip("/") == snapshot_dir]
    assert not [p for p in written if "/snapshot/EXPIRING-" in p]
    assert not [p for p in listed if p[0].rstrip("/") == f"{table.path}/tag"]
    assert not [p for p in read if "/tag/" in p]
    assert len(table.snapshot_manager.list_ids()) >= 43  # nothing expired: all are younger than an hour
