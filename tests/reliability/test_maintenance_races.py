"""Maintenance racing maintenance: snapshot expiry beside tag deletion and tag creation (issue 15,
part 2; invariants I4 and I6 of docs/reliability.md).

The interleavings are driven deterministically: the expirer's storage goes through the
reliability programme's :class:`FaultyFileIO`, whose plan ``hook`` runs the other actor's whole
operation (through its own, plain storage, as another process would) at one exact step of the
expiry. No storage operation is mocked; every file operation happens on the real table.

* **Tag deleted while expiry plans** (the "seed 23" interleaving): expiry lists the tags, then,
  just before it reads the tag's manifest list, the tag is deleted with the files only it held.
  Expiry must not fail: a tag that vanished protects nothing, and the plan is made again.
* **Tag created while expiry deletes**: expiry has planned (its tag listing cannot see the new
  tag); just before its first deletion, a tag is created on a snapshot inside the expired range
  and one on the latest snapshot. The first must fail with ``TagTargetExpiringError`` and leave
  no tag; the second must keep all its files. Every remaining tag then reads completely.
* **Replace and rename** keep the same guarantee at the same point.

Each test checks that its interleaving really happened (the hook fired at the intended step), so
a harness whose hook never fires fails instead of passing silently.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import TagTargetExpiringError
from paimonflow.core.fs import get_file_io, join
from tests.reliability.faulty_io import READ, WRITE, FaultPlan, FaultyFileIO, Operation
from tests.reliability.oracle import missing_needed_files

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
IDENTIFIER = "db.t"
KEEP_ALL = {"snapshot.num-retained.min": "100", "snapshot.num-retained.max": "100", "bucket": "1"}


def rows(table, **at) -> list[tuple[int, str]]:
    return sorted((r["k"], r["v"]) for r in table.read(**at).to_pylist())


def build(root: Path, commits: int) -> tuple[object, dict[int, list[tuple[int, str]]]]:
    """A primary-key table with ``commits`` snapshots, each rewriting keys 0..3 (so every
    snapshot's files are deleted by the next one: expiry really deletes data files). Returns the
    table (plain storage) and the model: snapshot id -> rows."""
    catalog = Catalog(str(root))
    catalog.create_database("db")
    table = catalog.create_table(IDENTIFIER, SCHEMA, primary_keys=["k"], options=KEEP_ALL)
    model = {}
    for i in range(1, commits + 1):
        table.write(pa.table({"k": [0, 1, 2, 3], "v": [f"c{i}"] * 4}, schema=SCHEMA))
        model[table.snapshot_manager.latest_id()] = [(k, f"c{i}") for k in range(4)]
        table.compact(full=True)
        model[table.snapshot_manager.latest_id()] = [(k, f"c{i}") for k in range(4)]
    return catalog.get_table(IDENTIFIER), model


def expirer_table(root: Path, hook) -> tuple[object, FaultyFileIO]:
    """The table as the expiring process sees it: every storage step passes ``hook`` first."""
    faulty = FaultyFileIO(get_file_io(str(root)), FaultPlan(hook=hook))
    return Catalog(str(root), file_io=faulty).get_table(IDENTIFIER), faulty


def other_process(root: Path):
    """The table as another process sees it (its own, plain storage)."""
    return Catalog(str(root)).get_table(IDENTIFIER)


def assert_tags_whole(root: Path, model: dict[int, list[tuple[int, str]]], context: str) -> None:
    """I4 for every retained snapshot and tag, and I6 for every tag: it reads its model rows."""
    table = other_process(root)
    missing = missing_needed_files(table)
    assert not missing, f"{context}: I4: referenced files missing: {missing[:5]}"
    for name, tag in table.tags.list().items():
        assert rows(table, tag=name) == model[tag.id], f"{context}: tag {name} does not read its snapshot"


@pytest.mark.reliability
def test_tag_deleted_while_expiry_plans_does_not_fail_the_expiry(tmp_path: Path) -> None:
    """Seed 23: the tag is deleted (with the manifest list only it held) between expiry's tag
    listing and its reading of the tag's files. Before the fix: ``SnapshotNotFoundError: snapshot 3
    references a manifest list that no longer exists (expired?)``."""
    table, model = build(tmp_path, 7)
    tagged = sorted(model)[2]
    table.tags.create("t", snapshot_id=tagged)
    retain = table.snapshot_manager.latest_id() - tagged
    table.expire_snapshots(retain_min=retain, retain_max=retain, older_than_millis=0)  # only the tag holds it now
    table = other_process(tmp_path)
    assert not table.snapshot_manager.exists(tagged)
    tag = table.tags.get("t")
    tag_list = join(table.manifest_io.manifest_dir, tag.base_manifest_list)
    fired: list[Operation] = []

    def delete_the_tag_first(op: Operation) -> None:
        if not fired and op.kind == READ and op.path == tag_list:  # expiry listed the tag, now reads it
            fired.append(op)
            deletion = other_process(tmp_path).tags.delete("t")
            assert tag_list in deletion.freed_files  # the deletion really takes the tag's files away

    expirer, faulty = expirer_table(tmp_path, delete_the_tag_first)
    latest = expirer.snapshot_manager.latest_id()
    result = expirer.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)

    assert fired, "the interleaving never happened: expiry did not read the tag's manifest list"
    listed = [o.index for o in faulty.operations if o.kind == READ and o.path.endswith("/tag/tag-t")]
    assert listed and listed[0] < fired[0].index, "the tag was not listed before it was deleted"
    assert result.expired_snapshots == latest - (tagged + 1)
    table = other_process(tmp_path)
    assert table.snapshot_manager.list_ids() == [latest]
    assert table.tags.list() == {}
    assert rows(table) == model[latest]
    assert_tags_whole(tmp_path, model, "after the expiry")
    assert table.snapshot_manager.expiring_markers() == {}  # the run removed its marker


@pytest.mark.reliability
def test_tag_created_on_a_snapshot_being_expired_fails_typed_and_leaves_nothing(tmp_path: Path) -> None:
    """A tag is created after expiry planned (its listing cannot see it) and before it deletes:
    on a snapshot inside the expired range it must fail typed and leave no tag; on the latest
    snapshot it must succeed and keep its files. Before the fix: tag "doomed" was created and
    pointed at deleted files (an I4 violation)."""
    table, model = build(tmp_path, 5)
    latest = table.snapshot_manager.latest_id()
    doomed_snapshot = latest - 2  # expiry with retain_min=1 deletes it
    outcome: dict[str, object] = {}

    def tag_after_planning(op: Operation) -> None:
        if not outcome and op.kind == WRITE and op.name == "delete":  # planned; the first deletion
            outcome["at"] = op
            other = other_process(tmp_path)
            try:
                other.tags.create("doomed", snapshot_id=doomed_snapshot)
                outcome["doomed"] = "created"
            except TagTargetExpiringError as exc:
                outcome["doomed"] = exc
            outcome["kept"] = other.tags.create("kept", snapshot_id=latest).id

    expirer, _ = expirer_table(tmp_path, tag_after_planning)
    result = expirer.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)

    assert "at" in outcome, "the interleaving never happened: the expiry deleted nothing"
    assert doomed_snapshot in result.plan.snapshot_ids
    assert_tags_whole(tmp_path, model, "after the expiry")  # whatever tags exist are whole (I4, I6)
    assert isinstance(outcome["doomed"], TagTargetExpiringError), (
        f"a tag on snapshot {doomed_snapshot}, which the running expiry deletes, was {outcome['doomed']}")
    assert outcome["kept"] == latest
    table = other_process(tmp_path)
    assert sorted(table.tags.list()) == ["kept"]  # nothing left behind
    # the failure is retryable: the same tag on the latest snapshot now succeeds
    assert table.tags.create("doomed").id == latest
    assert_tags_whole(tmp_path, model, "after the retry")


@pytest.mark.reliability
@pytest.mark.parametrize("verb", ["replace", "rename"])
def test_tag_replace_and_rename_during_expiry_never_leave_a_broken_tag(tmp_path: Path, verb: str) -> None:
    """``replace`` onto a snapshot being expired fails typed and the tag keeps its old snapshot;
    ``rename`` of a tag that expiry protects keeps it whole under the new name."""
    table, model = build(tmp_path, 5)
    latest = table.snapshot_manager.latest_id()
    table.tags.create("t", snapshot_id=sorted(model)[-2] if verb == "rename" else latest)
    outcome: dict[str, object] = {}

    def act_after_planning(op: Operation) -> None:
        if not outcome and op.kind == WRITE and op.name == "delete":
            outcome["at"] = op
            other = other_process(tmp_path)
            try:
                if verb == "replace":
                    other.tags.replace("t", snapshot_id=latest - 2)
                else:
                    other.tags.rename("t", "t2")
                outcome["result"] = "done"
            except TagTargetExpiringError as exc:
                outcome["result"] = exc

    expirer, _ = expirer_table(tmp_path, act_after_planning)
    expirer.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)

    assert "at" in outcome, "the interleaving never happened"
    table = other_process(tmp_path)
    if verb == "replace":
        assert isinstance(outcome["result"], TagTargetExpiringError), outcome["result"]
        assert table.tags.get("t").id == latest
    else:
        assert outcome["result"] == "done"
        assert sorted(table.tags.list()) == ["t2"] and table.tags.get("t2").id == sorted(model)[-2]
    assert_tags_whole(tmp_path, model, f"after {verb}")


@pytest.mark.reliability
@pytest.mark.parametrize("first", ["creator", "deleter"])
def test_tag_copied_from_a_tag_being_deleted_never_loses_its_files(tmp_path: Path, first: str) -> None:
    """An expired snapshot held only by tag ``t`` is tagged again as ``copy`` (found through
    ``t``) while ``t`` is deleted with the files only it held. ``creator``: the copy is created
    completely just before the deletion removes ``t``'s file; it must keep every file. ``deleter``:
    the deletion runs completely after the creator found the snapshot through ``t`` and before it
    writes the copy; the copy must fail typed and leave nothing. No tag points at deleted files."""
    table, model = build(tmp_path, 5)
    held = sorted(model)[1]
    table.tags.create("t", snapshot_id=held)
    retain = table.snapshot_manager.latest_id() - held
    table.expire_snapshots(retain_min=retain, retain_max=retain, older_than_millis=0)
    tag_file, copy_file = table.tag_manager.tag_path("t"), table.tag_manager.tag_path("copy")
    outcome: dict[str, object] = {}

    def create_copy(tags) -> None:
        try:
            outcome["copy"] = tags.create("copy", snapshot_id=held).id
        except TagTargetExpiringError as exc:
            outcome["copy"] = exc

    def at(path: str, action) -> object:
        def hook(op: Operation) -> None:
            if "at" not in outcome and op.kind == WRITE and op.path == path:
                outcome["at"] = op
                action()
        return hook

    if first == "creator":  # the deleter has planned; the whole creation runs before t's file goes
        deleter, _ = expirer_table(tmp_path, at(tag_file, lambda: create_copy(other_process(tmp_path).tags)))
        deletion = deleter.tags.delete("t")
    else:  # the creator found snapshot `held` through t; the whole deletion runs before its write
        creator, _ = expirer_table(tmp_path, at(copy_file, lambda: outcome.setdefault(
            "deletion", other_process(tmp_path).tags.delete("t"))))
        create_copy(creator.tags)
        deletion = outcome["deletion"]

    assert "at" in outcome, "the interleaving never happened"
    assert_tags_whole(tmp_path, model, f"{first} first")
    table = other_process(tmp_path)
    if first == "creator":
        assert outcome["copy"] == held and sorted(table.tags.list()) == ["copy"]
        assert deletion.freed_files == ()  # the copy keeps them
    else:
        assert deletion.freed_files  # the deletion really took the snapshot's files
        assert isinstance(outcome["copy"], TagTargetExpiringError), outcome["copy"]
        assert table.tags.list() == {}


# -- the same races between real processes (the 6-round reproduction) -----------------------


def tagger_main(root: str, stop, stats, errors) -> None:
    """Tag the latest snapshot, read the tag whole, delete it again (every third tag is kept)."""
    import traceback

    try:
        table = other_process(Path(root))
        i = 0
        while not stop.is_set():
            i += 1
            try:
                table.tags.create(f"loop-{i}")
            except TagTargetExpiringError:
                with stats.get_lock():
                    stats[1] += 1
                continue
            table.read(tag=f"loop-{i}")  # a tag that is there reads completely (I4, I6)
            with stats.get_lock():
                stats[0] += 1
            if i % 3:
                table.tags.delete(f"loop-{i}")
    except BaseException:
        errors.put(traceback.format_exc())


def expirer_main(root: str, stop, stats, errors) -> None:
    import traceback

    try:
        table = other_process(Path(root))
        while not stop.is_set():
            stats[2] += table.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0).expired_snapshots
    except BaseException:
        errors.put(traceback.format_exc())


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tagger_expirer_and_writer_processes_never_leave_a_broken_tag(tmp_path: Path, reliability) -> None:
    """A process tags the latest snapshot and deletes the tag again in a loop, another expires with
    the most aggressive retention, the test commits: no process fails untyped, and every tag left
    reads its snapshot's rows with every file present (I4, I6)."""
    import multiprocessing
    import time

    ctx = multiprocessing.get_context("spawn")
    totals = {"commits": 0, "tags": 0, "refused": 0, "expired": 0}
    for r in range(reliability.scale(2, 6)):
        root = tmp_path / f"r{r}"
        table, model = build(root, 2)
        stop, stats, errors = ctx.Event(), ctx.Array("q", 3), ctx.Queue()
        actors = [ctx.Process(target=main, args=(str(root), stop, stats, errors)) for main in (tagger_main, expirer_main)]
        for actor in actors:
            actor.start()
        try:
            for i in range(reliability.scale(25, 60)):
                table.write(pa.table({"k": [0, 1, 2, 3], "v": [f"r{r}c{i}"] * 4}, schema=SCHEMA))
                model[table.snapshot_manager.latest_id()] = [(k, f"r{r}c{i}") for k in range(4)]
                table.compact(full=True)
                model[table.snapshot_manager.latest_id()] = [(k, f"r{r}c{i}") for k in range(4)]
                totals["commits"] += 1
                time.sleep(0.01)
        finally:
            stop.set()
            for actor in actors:
                actor.join(60)
                if actor.is_alive():
                    actor.kill()
                    actor.join()
        assert errors.empty(), f"round {r}: an actor failed:\n{errors.get()}"
        assert all(actor.exitcode == 0 for actor in actors)
        assert_tags_whole(root, model, f"round {r}")
        assert stats[0] > 0, f"round {r}: the tagger never created a tag"
        totals["tags"] += stats[0]
        totals["refused"] += stats[1]
        totals["expired"] += stats[2]
    print(totals)
    reliability.record(commits=totals["commits"], tags_created=totals["tags"], tags_refused=totals["refused"],
                       expired_snapshots=totals["expired"])
