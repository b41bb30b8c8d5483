"""Clock skew (reliability plan A11, requirement R4): committers, expirers, taggers and the orphan
cleaner each read their own clock, up to an hour off the true time.

The committers' clocks stamp the snapshots (``timeMillis``), so snapshot times are not monotonic;
the expirer's clock decides which snapshots are "old". Whatever the skew:

* expiry never leaves fewer than ``snapshot.num-retained.min`` snapshots (or the explicit
  ``retain_min``), never removes the latest snapshot, never a snapshot a consumer still needs,
  and only removes a snapshot whose *successor* is older than the time retention by the
  expirer's own clock (Paimon's rule);
* every file a retained snapshot, tag or consumer-protected snapshot references exists (I4) and
  every retained snapshot and tag reads exactly the model's rows (I6);
* automatic tags (``process-time``) are never created for a period that has not ended at the
  tagged snapshot's time, nor more than the maximum skew ahead of the true time; there is never
  more than one automatic tag per period or per snapshot, a deleted period is never tagged again,
  and ``tag.num-retained-max`` holds; tag expiry (count and time-to-live, on skewed clocks) never
  deletes a file a retained snapshot or tag needs;
* the orphan cleaner, with its clock off by up to an hour and files whose modification times lie
  hours in the future or the past, never deletes a referenced file and deletes an unreferenced
  one exactly when it is older than ``older_than`` by the cleaner's clock; a negative window
  (a cutoff in the future) or one below the configured safety floor is refused with
  ``InvalidArgumentError`` and nothing is deleted.

Hypothesis runs derandomized with no example database: a failure prints the steps that reproduce
it. ``PAIMONFLOW_RELIABILITY_TIER=long`` runs many more examples and longer histories.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError
from paimonflow.core.maintenance.orphans import referenced_files, remove_orphan_files
from paimonflow.core.maintenance.tags import Tags
from paimonflow.core.options.tagging import AutoTagSettings
from tests.reliability.oracle import missing_needed_files

MINUTE = 60_000
HOUR = 60 * MINUTE
T0 = 1_780_000_000_000  # the true time at the start of every history (2026-05-28, UTC), millis
SKEW = st.integers(-HOUR, HOUR)
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
KEYS = st.lists(st.integers(0, 7), min_size=1, max_size=4, unique=True)
FOREVER = "3650 d"  # manual tags outlive every skewed tag expiry


def state(table, **kw) -> dict[int, str]:
    return {r["k"]: r["v"] for r in table.read(**kw).to_pylist()}


def skew_settings(reliability, *, fast_examples: int, long_examples: int, fast_steps: int,
                  long_steps: int) -> settings:
    return settings(max_examples=reliability.scale(fast_examples, long_examples),
                    stateful_step_count=reliability.scale(fast_steps, long_steps), derandomize=True,
                    database=None, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# ---------------------------------------------------------------------------------------------
# expiry (and automatic tags) under skewed clocks: a state machine against a model


class SkewedClocks(RuleBasedStateMachine):
    """One table; committers with fixed skews, an expirer with a per-run skew, manual tags, a
    consumer, and (``AUTO_TAG``) automatic process-time tags with count and time-to-live retention."""

    AUTO_TAG = False
    root: Path  # set by the test: where the tables go
    counts: Counter  # set by the test: what the histories did
    instances = 0

    def __init__(self) -> None:
        super().__init__()
        type(self).instances += 1
        self.directory = self.root / f"h{type(self).instances}"
        self.now = T0  # the true time, millis
        self.model: dict[int, str] = {}
        self.at: dict[int, dict[int, str]] = {}  # snapshot id -> model when it was committed
        self.times: dict[int, int] = {}  # snapshot id -> the timeMillis its committer wrote
        self.manual_tags: dict[str, int] = {}
        self.consumer: int | None = None
        self.last_id = 0
        self.auto_seen: dict[str, int] = {}  # automatic tag -> period start (millis), every one ever seen
        self.auto_gone: set[str] = set()
        self.checks = 0

    def teardown(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    @initialize(retain_min=st.integers(1, 3), retained=st.sampled_from(["0 ms", "30 min", "1 h", "2 h"]),
                skews=st.lists(SKEW, min_size=2, max_size=3), tag_max=st.integers(1, 3),
                tag_ttl=st.sampled_from([None, "90 min", "3 h"]), delay=st.sampled_from(["0 ms", "10 min"]))
    def create(self, retain_min, retained, skews, tag_max, tag_ttl, delay) -> None:
        self.skews = skews
        self.retain_min = retain_min
        self.retained_ms = {"0 ms": 0, "30 min": 30 * MINUTE, "1 h": HOUR, "2 h": 2 * HOUR}[retained]
        options = {"bucket": "1", "num-sorted-run.compaction-trigger": "3",
                   "snapshot.num-retained.min": str(retain_min), "snapshot.time-retained": retained}
        if self.AUTO_TAG:
            options |= {"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
                        "sink.process-time-zone": "UTC", "tag.num-retained-max": str(tag_max),
                        "tag.creation-delay": delay}
            if tag_ttl is not None:
                options["tag.default-time-retained"] = tag_ttl
        note(f"committer skews (ms) {skews}; options {options}")
        catalog = Catalog(str(self.directory))
        catalog.create_database("db")
        self.table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options=options)
        self.auto = AutoTagSettings.from_options(self.table.schema.options)

    # -- helpers -------------------------------------------------------------------------------

    def ids(self) -> list[int]:
        return self.table.snapshot_manager.list_ids()

    def check_expired(self, before: list[int], after: list[int], *, now: int, retain_min: int,
                      retained_ms: int, consumer: int | None) -> None:
        """The snapshots that went are allowed to go by Paimon's rules, judged on ``now``."""
        assert after, "every snapshot expired"
        assert after == list(range(after[0], after[-1] + 1)), f"ids not contiguous: {after}"
        assert after[-1] == self.last_id, f"the latest snapshot {self.last_id} was expired"
        assert len(after) >= min(retain_min, len(before)), \
            f"{len(after)} snapshots left, fewer than num-retained.min {retain_min} (before: {before})"
        gone = sorted(set(before) - set(after))
        self.counts["expired_snapshots"] += len(gone)
        for sid in gone:
            assert consumer is None or sid < consumer, f"snapshot {sid} expired though consumer needs {consumer}"
            assert self.times[sid + 1] < now - retained_ms, (
                f"snapshot {sid} expired but its successor's time {self.times[sid + 1]} is not older than "
                f"{retained_ms} ms by the expirer's clock {now}")

    # -- rules -----------------------------------------------------------------------------------

    @rule(commits=st.lists(st.tuples(st.integers(0, 2), KEYS, st.booleans(), st.integers(0, 20)), min_size=1,
                           max_size=3))
    def commit_some(self, commits: list[tuple[int, list[int], bool, int]]) -> None:
        """Committers in turn, minutes apart (on the true clock)."""
        for who, keys, delete, minutes in commits:
            self.now += minutes * MINUTE
            self.commit(who, keys, delete)

    def commit(self, who: int, keys: list[int], delete: bool) -> None:
        skew = self.skews[who % len(self.skews)]
        clock_ms = self.now + skew
        before = self.ids()
        first_new = self.last_id + 1
        data = pa.table({"k": keys, "v": [None if delete else f"c{first_new}"] * len(keys)}, schema=SCHEMA)
        with self.table.new_write() as writer:
            writer.write(data, row_kinds="-D" if delete else None)
            messages = writer.prepare_commit()
        result = self.table.new_commit(f"committer-{who}", clock=lambda: clock_ms / 1000).commit(messages)
        assert not result.notes, f"maintenance after the commit failed: {result.notes}"
        for k in keys:
            if delete:
                self.model.pop(k, None)
            else:
                self.model[k] = f"c{first_new}"
        self.last_id = self.table.snapshot_manager.latest_id()
        for sid in range(first_new, self.last_id + 1):  # the APPEND and perhaps the writer's COMPACT
            self.at[sid] = dict(self.model)
            self.times[sid] = clock_ms
            snapshot = self.table.snapshot_manager.try_snapshot(sid)
            assert snapshot is None or snapshot.time_millis == clock_ms, "the committer's clock was not used"
        self.counts["commits"] += 1
        self.counts["skewed_commits"] += skew != 0
        # the commit's own maintenance expired snapshots on the committer's clock
        self.check_expired([*before, *range(first_new, self.last_id + 1)], self.ids(), now=clock_ms,
                           retain_min=self.retain_min, retained_ms=self.retained_ms, consumer=self.consumer)

    @rule(minutes=st.integers(0, 90))
    def advance(self, minutes: int) -> None:
        self.now += minutes * MINUTE

    @precondition(lambda self: self.last_id > 0)
    @rule(skew=SKEW, retain_min=st.one_of(st.none(), st.integers(1, 3)),
          retained=st.one_of(st.none(), st.sampled_from([0, 10 * MINUTE, HOUR, 2 * HOUR])))
    def expire(self, skew: int, retain_min: int | None, retained: int | None) -> None:
        clock_ms = self.now + skew
        before = self.ids()
        self.table.expire_snapshots(retain_min=retain_min, older_than_millis=retained, clock=lambda: clock_ms / 1000)
        self.counts["expiries"] += 1
        self.counts["skews"] += 1
        self.check_expired(before, self.ids(), now=clock_ms,
                           retain_min=self.retain_min if retain_min is None else retain_min,
                           retained_ms=self.retained_ms if retained is None else retained, consumer=self.consumer)

    @precondition(lambda self: self.last_id > 0)
    @rule(name=st.sampled_from(["keep-a", "keep-b"]), pick=st.integers(0, 10))
    def tag(self, name: str, pick: int) -> None:
        if name in self.manual_tags:
            self.table.tags.delete(name)
            del self.manual_tags[name]
            return
        ids = self.ids()
        sid = ids[pick % len(ids)]
        self.table.tags.create(name, snapshot_id=sid, time_retained=FOREVER)
        self.manual_tags[name] = sid
        self.counts["tags_created"] += 1

    @precondition(lambda self: self.last_id > 0)
    @rule(pick=st.integers(0, 10))
    def consume(self, pick: int) -> None:
        if self.consumer is not None and pick % 3 == 0:
            self.table.consumer_manager.delete("reader")
            self.consumer = None
            return
        ids = self.ids()
        self.consumer = ids[pick % len(ids)]
        self.table.consumer_manager.record("reader", self.consumer)
        self.counts["consumers"] += 1

    @precondition(lambda self: self.AUTO_TAG and self.last_id > 0)
    @rule(skew=SKEW)
    def expire_tags(self, skew: int) -> None:
        """Tag expiry by time-to-live on a skewed clock (what a maintenance run on another host does)."""
        self.counts["tag_expiries"] += 1
        Tags(self.table, clock=lambda: (self.now + skew) / 1000).expire()

    # -- invariants ------------------------------------------------------------------------------

    @invariant()
    def everything_retained_reads_right(self) -> None:
        if not hasattr(self, "table"):
            return
        missing = missing_needed_files(self.table)
        assert not missing, f"I4: files referenced by retained snapshots/tags are gone: {missing}"
        ids = self.ids()
        if self.consumer is not None:
            assert self.consumer in ids, f"consumer-protected snapshot {self.consumer} expired"
        # I6: every retained snapshot every few steps (reads are the cost); in between the
        # earliest, the latest, the consumer's and a rotating one (I4 above covers all files)
        self.checks += 1
        chosen = [] if not ids else ids if self.checks % 4 == 0 else sorted({ids[0], ids[-1], ids[self.checks % len(ids)],
                                                          *([self.consumer] if self.consumer else [])})
        for sid in chosen:
            assert state(self.table, snapshot_id=sid) == self.at[sid], f"I6: snapshot {sid} reads wrong"
        tags = self.table.tags.list()
        for name, sid in self.manual_tags.items():
            assert name in tags and tags[name].id == sid, f"manual tag {name} lost"
        for name, snapshot in tags.items():
            assert state(self.table, tag=name) == self.at[snapshot.id], f"I6: tag {name} reads wrong"
        self.counts["reads"] += len(chosen) + len(tags)

    @invariant()
    def automatic_tags_are_sound(self) -> None:
        if not self.AUTO_TAG or not hasattr(self, "table"):
            return
        period = self.auto.period
        current: dict[str, int] = {}
        for name, snapshot in self.table.tags.list().items():
            start = period.start_of(name)
            if start is None:
                continue
            start_ms = (start - datetime(1970, 1, 1)) // timedelta(milliseconds=1)
            end_ms = start_ms + period.millis
            assert end_ms <= snapshot.time_millis, (
                f"tag {name} (period ending {end_ms}) on snapshot {snapshot.id} committed at {snapshot.time_millis}: "
                "a period was tagged before it ended")
            assert end_ms <= self.now + HOUR, f"tag {name} is for a period ending after now + the maximum skew"
            current[name] = snapshot.id
            if name not in self.auto_seen:
                assert name not in self.auto_gone, f"automatic tag {name} was deleted and created again"
                assert all(start_ms > s for s in self.auto_seen.values()), (
                    f"automatic tag {name} created after later periods {sorted(self.auto_seen)}")
                self.auto_seen[name] = start_ms
                self.counts["auto_tags_created"] += 1
        assert len(set(current.values())) == len(current), f"two automatic tags on one snapshot: {current}"
        assert len(current) <= self.auto.num_retained_max, f"more than tag.num-retained-max tags: {current}"
        self.auto_gone |= set(self.auto_seen) - set(current)


class SkewedAutoTags(SkewedClocks):
    AUTO_TAG = True


def run_machine(machine: type[SkewedClocks], tmp_path: Path, reliability, **sizes) -> Counter:
    counts: Counter = Counter()
    machine.root, machine.counts, machine.instances = tmp_path, counts, 0
    run_state_machine_as_test(machine, settings=skew_settings(reliability, **sizes))
    counts["examples"] = machine.instances
    return counts


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_expiry_under_clock_skew_keeps_what_is_retained(tmp_path, reliability):
    counts = run_machine(SkewedClocks, tmp_path, reliability, fast_examples=15, long_examples=150,
                         fast_steps=20, long_steps=40)
    reliability.record(**counts)
    assert counts["expired_snapshots"] > 0 and counts["skewed_commits"] > 0, counts  # the harness did expire


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_automatic_tags_and_tag_expiry_under_clock_skew(tmp_path, reliability):
    counts = run_machine(SkewedAutoTags, tmp_path, reliability, fast_examples=15, long_examples=150,
                         fast_steps=20, long_steps=40)
    reliability.record(**counts)
    assert counts["auto_tags_created"] > 0 and counts["expired_snapshots"] > 0, counts


# ---------------------------------------------------------------------------------------------
# orphan removal: the cleaner's clock and the files' modification times are both off


@pytest.fixture(scope="module")
def orphan_table(tmp_path_factory):
    """A table with snapshots (some expired), a tag and compactions, and its rows per snapshot/tag."""
    catalog = Catalog(str(tmp_path_factory.mktemp("orphan-skew")))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "2", "num-sorted-run.compaction-trigger": "2", "write-only": "true"})
    for i in range(6):
        t.write(pa.table({"k": [i, i + 1, i + 2], "v": [f"c{i}"] * 3}, schema=SCHEMA))
        if i == 2:
            t.tags.create("t2")
        if i % 2:
            t.compact(full=True)
    t.expire_snapshots(retain_min=3, older_than_millis=0)
    expected = {sid: state(t, snapshot_id=sid) for sid in t.snapshot_manager.list_ids()}
    expected["t2"] = state(t, tag="t2")
    return t, expected


ORPHAN_PLACES = ("bucket-0/data-orphan-{}.parquet", "bucket-1/changelog-orphan-{}.parquet",
                 "manifest/manifest-orphan-{}", "index/index-orphan-{}")
WINDOWS = [0, 10 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 24 * HOUR]


def test_orphan_removal_under_clock_skew(orphan_table, reliability):
    table, expected = orphan_table
    counts: Counter = Counter()
    referenced = sorted(referenced_files(table))

    @settings(max_examples=reliability.scale(40, 600), derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(cleaner_skew=SKEW, older_than=st.sampled_from(WINDOWS), floor=st.sampled_from([0, HOUR]),
           referenced_ages=st.lists(st.integers(-3 * 3600, 3 * 3600), min_size=1, max_size=6),
           orphan_ages=st.lists(st.integers(-3 * 3600, 3 * 3600), min_size=1, max_size=6),
           negative=st.booleans())
    def example(cleaner_skew, older_than, floor, referenced_ages, orphan_ages, negative):
        """Ages in seconds relative to the true now: negative = modified in the future."""
        now = time.time()
        for i, path in enumerate(referenced):
            when = now - referenced_ages[i % len(referenced_ages)]
            os.utime(path, (when, when))
        cutoff = (now * 1000 + cleaner_skew) - older_than
        # away from the boundary (file system time resolution)
        assume(all(abs((now - age) * 1000 - cutoff) > 5000 for age in orphan_ages))
        orphans = {}
        for i, age in enumerate(orphan_ages):
            mtime_ms = (now - age) * 1000
            path = os.path.join(table.path, ORPHAN_PLACES[i % len(ORPHAN_PLACES)].format(i))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            Path(path).write_bytes(b"orphan")
            os.utime(path, (now - age, now - age))
            orphans[path] = mtime_ms < cutoff
        window = -older_than - 1 if negative else older_than
        counts["examples"] += 1
        counts["skews"] += cleaner_skew != 0
        try:
            if negative or window < floor:
                with pytest.raises(InvalidArgumentError):
                    remove_orphan_files(table, older_than_millis=window, clock=lambda: now + cleaner_skew / 1000,
                                        min_older_than_millis=floor)
                assert all(os.path.exists(p) for p in orphans), "a refused run deleted files"
                counts["refused"] += 1
                return
            plan = remove_orphan_files(table, older_than_millis=window, clock=lambda: now + cleaner_skew / 1000,
                                       min_older_than_millis=floor)
            counts["cleanings"] += 1
            assert sorted(plan.orphans) == sorted(p for p, old in orphans.items() if old), (
                f"cleaner at skew {cleaner_skew} ms, window {window} ms deleted {plan.orphans}")
            for path, old in orphans.items():
                assert os.path.exists(path) != old, f"{path}: old={old} but exists={os.path.exists(path)}"
            counts["orphans_deleted"] += len(plan.orphans)
            counts["young_orphans_kept"] += sum(not old for old in orphans.values())
            missing = missing_needed_files(table)
            assert not missing, f"I4: the cleaner deleted referenced files {missing}"
            for key, rows in expected.items():
                got = state(table, tag=key) if isinstance(key, str) else state(table, snapshot_id=key)
                assert got == rows, f"I6: {key} reads wrong after cleaning"
                counts["reads"] += 1
        finally:
            for path in orphans:
                if os.path.exists(path):
                    os.remove(path)

    example()
    reliability.record(**counts)
    assert counts["orphans_deleted"] > 0 and counts["young_orphans_kept"] > 0 and counts["refused"] > 0, counts
