"""Property-based: commits, compactions, tags, expiries, rollbacks and fast-forwards on the main
branch and on a branch made from one of its tags, in any order. Every snapshot and tag of both
branches reads as a plain dictionary model says, every file any of them references exists, and
snapshot ids of each branch have no gaps."""

from __future__ import annotations

import os
import shutil
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError
from paimonflow.core.maintenance.orphans import referenced_files

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())])
keys = st.lists(st.integers(0, 15), min_size=1, max_size=8, unique=True)
branches = st.sampled_from(["main", "dev"])


class Branches(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="branchmodel-")
        self.catalog = Catalog(self.root)
        self.catalog.create_database("db")
        self.catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                                  options={"bucket": "2", "num-sorted-run.compaction-trigger": "3"})
        # per branch: the snapshot models {id: rows} and the tags {name: (snapshot id, rows)}
        self.snapshots: dict[str, dict[int, dict]] = {"main": {}}
        self.tags: dict[str, dict[str, tuple[int, dict]]] = {"main": {}}
        self.counter = 0

    @initialize(ks=keys)
    def first_commit_and_tag(self, ks):
        self.write("main", ks)
        self.tag("main")

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def table(self, branch: str):
        return self.catalog.get_table("db.t" if branch == "main" else f"db.t$branch_{branch}")

    def latest(self, branch: str) -> dict:
        snaps = self.snapshots[branch]
        return dict(snaps[max(snaps)]) if snaps else {}

    def record(self, branch: str, model: dict) -> None:
        """Snapshots the last commit added read as ``model`` (a compacting writer adds two)."""
        t = self.table(branch)
        latest = t.snapshot_manager.latest_id() or 0
        known = max(self.snapshots[branch], default=0)
        for sid in range(known + 1, latest + 1):
            self.snapshots[branch][sid] = dict(model)

    @rule(branch=branches, ks=keys)
    def write(self, branch, ks):
        if branch not in self.snapshots:
            return
        self.counter += 1
        value = f"{branch}{self.counter}"
        self.table(branch).write(pa.table({"k": ks, "v": [value] * len(ks)}, schema=SCHEMA))
        self.record(branch, {**self.latest(branch), **dict.fromkeys(ks, value)})

    @rule(branch=branches)
    def compact(self, branch):
        if self.snapshots.get(branch):
            self.table(branch).compact(full=True)
            self.record(branch, self.latest(branch))

    @rule(branch=branches)
    def tag(self, branch):
        if self.snapshots.get(branch):
            self.counter += 1
            name = f"tag{self.counter}"
            t = self.table(branch)
            t.tags.create(name)
            sid = t.snapshot_manager.latest_id()
            self.tags[branch][name] = (sid, self.snapshots[branch][sid])

    @rule(branch=branches, data=st.data())
    def delete_tag(self, branch, data):
        if self.tags.get(branch):
            name = data.draw(st.sampled_from(sorted(self.tags[branch])))
            self.table(branch).tags.delete(name)
            del self.tags[branch][name]

    @rule(branch=branches, retain=st.integers(1, 3))
    def expire(self, branch, retain):
        if branch in self.snapshots:
            result = self.table(branch).expire_snapshots(retain_min=retain, older_than_millis=0)
            for sid in result.plan.snapshot_ids:
                self.snapshots[branch].pop(sid, None)

    @precondition(lambda self: "dev" not in self.snapshots and self.tags["main"])
    @rule(data=st.data())
    def create_branch(self, data):
        name = data.draw(st.sampled_from(sorted(self.tags["main"])))
        b = self.table("main").branches.create("dev", tag=name)
        sid, model = self.tags["main"][name]
        assert b.snapshot_manager.list_ids() == [sid]
        self.snapshots["dev"] = {sid: dict(model)}
        self.tags["dev"] = {name: (sid, dict(model))}

    @precondition(lambda self: "dev" in self.snapshots)
    @rule()
    def delete_branch(self):
        self.table("main").branches.delete("dev")
        del self.snapshots["dev"], self.tags["dev"]

    @precondition(lambda self: len(self.snapshots["main"]) > 1)
    @rule(data=st.data())
    def rollback(self, data):
        target = data.draw(st.sampled_from(sorted(self.snapshots["main"])[:-1]))
        self.table("main").rollback(snapshot_id=target)
        self.snapshots["main"] = {s: m for s, m in self.snapshots["main"].items() if s <= target}
        self.tags["main"] = {n: (s, m) for n, (s, m) in self.tags["main"].items() if s <= target}

    @precondition(lambda self: "dev" in self.snapshots and self.snapshots["dev"])
    @rule()
    def fast_forward(self):
        first = min(self.snapshots["dev"])
        if first - 1 > max(self.snapshots["main"], default=0):
            # the branch's first snapshots expired (or main was rolled back below its start): main's ids
            # would have a gap, so it is refused with one line and nothing changes
            with pytest.raises(InvalidArgumentError, match="would have a gap"):
                self.table("main").branches.fast_forward("dev")
            return
        self.table("main").branches.fast_forward("dev")
        main = {s: m for s, m in self.snapshots["main"].items() if s < first}
        main.update(self.snapshots["dev"])
        self.snapshots["main"] = main
        kept = {n: (s, m) for n, (s, m) in self.tags["main"].items() if s < first}
        self.tags["main"] = {**kept, **self.tags["dev"]}

    @invariant()
    def every_snapshot_and_tag_reads_like_the_model(self):
        for branch, snaps in self.snapshots.items():
            t = self.table(branch)
            ids = t.snapshot_manager.list_ids()
            assert ids == sorted(snaps)
            assert ids == list(range(ids[0], ids[-1] + 1)) if ids else True
            for sid in ids:
                assert {r["k"]: r["v"] for r in t.read(snapshot_id=sid).to_pylist()} == snaps[sid]
            assert set(t.tags.list()) == set(self.tags[branch])
            for name, (_, model) in self.tags[branch].items():
                assert {r["k"]: r["v"] for r in t.read(tag=name).to_pylist()} == model

    @invariant()
    def no_referenced_file_is_missing(self):
        t = self.table("main")
        assert [p for p in referenced_files(t) if not t.file_io.exists(p)] == []


Branches.TestCase.settings = settings(max_examples=int(os.environ.get("PAIMONFLOW_MODEL_EXAMPLES", 30)),
                                      stateful_step_count=15, deadline=None,
                                      suppress_health_check=[HealthCheck.too_slow])
test_branches_match_the_model = Branches.TestCase
