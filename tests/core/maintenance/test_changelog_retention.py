"""Decoupled changelog lifecycle: expired snapshots become changelog/changelog-<id>, their changes
stay readable, changelog expiry follows the changelog.* options, and no file a retained snapshot,
changelog, tag or consumer needs ever goes."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError
from paimonflow.core.maintenance.changelog_expire import expire_changelogs
from paimonflow.core.meta.changelogs import ChangelogManager
from paimonflow.core.read.stream import StreamingScan

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def make(tmp_path, name: str, **options):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db", ignore_if_exists=True)
    return c.create_table(f"db.{name}", SCHEMA, primary_keys=["id"],
                          options={"bucket": "1", "snapshot.num-retained.min": "2", "changelog.num-retained.min": "30",
                                   **options})


def changes(table, start: int, end: int, mode: str) -> list[tuple]:
    got = table.read_changes(start, end, mode=mode)
    return sorted(zip(got.column("rowkind").to_pylist(), got.column("id").to_pylist(), got.column("v").to_pylist(),
                      strict=True))


def missing_files(table) -> list[str]:
    from paimonflow.core.maintenance.orphans import referenced_files

    return [p for p in referenced_files(table) if not table.file_io.exists(p)]


def write_rounds(t, n: int) -> None:
    for i in range(n):
        t.write(pa.table({"id": [i % 3, 10 + i], "v": [f"r{i}", f"n{i}"]}, schema=SCHEMA))


@pytest.mark.parametrize("producer,mode", [("input", "changelog"), ("lookup", "changelog"), ("none", "delta")])
def test_expired_snapshots_become_changelogs_that_still_read(tmp_path, producer, mode):
    t = make(tmp_path, "t", **{"changelog-producer": producer})
    write_rounds(t, 6)
    latest = t.snapshot_manager.latest_id()
    before = changes(t, 0, latest, mode)
    done = t.expire_snapshots(older_than_millis=0)
    expired = done.plan.snapshot_ids
    assert expired and set(done.plan.to_changelog) == set(expired)
    manager = ChangelogManager(t.file_io, t.path)
    assert manager.list_ids() == list(expired) and not any(t.snapshot_manager.exists(s) for s in expired)
    assert manager.earliest_id() == expired[0] and manager.latest_id() == expired[-1]
    assert changes(t, 0, latest, mode) == before  # read through changelog-<id> below the earliest snapshot
    scan = StreamingScan(t, mode="from-snapshot", snapshot_id=1)
    streamed = scan.poll(max_snapshots=100)
    assert streamed.first_snapshot == 1 and streamed.rows.num_rows == sum(1 for _ in before)
    assert missing_files(t) == []
    assert t.remove_orphan_files(older_than_millis=0, dry_run=True).orphans == ()


def test_changelog_expiry_by_count_time_and_consumer(tmp_path):
    t = make(tmp_path, "t", **{"changelog-producer": "input"})
    write_rounds(t, 8)
    t.expire_snapshots(older_than_millis=0)
    manager = ChangelogManager(t.file_io, t.path)
    ids = manager.list_ids()
    latest_s = t.snapshot_manager.latest_id()
    # by time nothing is old enough yet: only what lies beyond retain_max goes (whatever its age)
    assert expire_changelogs(t, retain_min=1, retain_max=30).changelog_ids == ()
    # a consumer that has not read changelog 3 protects it
    t.consumer_manager.record("reader", 3)
    done = expire_changelogs(t, retain_min=1, retain_max=4, older_than_millis=0)
    assert done.changelog_ids == tuple(i for i in ids if i < 3)
    assert manager.list_ids()[0] == 3
    t.consumer_manager.reset("reader", None)
    # by count with a long time-to-live: only what lies beyond retain_max goes
    plan = expire_changelogs(t, retain_min=1, retain_max=4, older_than_millis=3_600_000, dry_run=True)
    assert plan.dry_run and plan.changelog_ids == tuple(i for i in manager.list_ids() if i < latest_s - 4 + 1)
    # all old enough: everything but the latest changelog goes (retain_min counts from the latest snapshot)
    expire_changelogs(t, retain_min=1, retain_max=4, older_than_millis=0)
    remaining = manager.list_ids()
    assert remaining == [ids[-1]] and manager.earliest_id() == remaining[0]
    assert missing_files(t) == []
    assert changes(t, remaining[0] - 1, latest_s, "changelog")  # still readable from the new earliest
    # the orphan job finds nothing: changelog expiry deleted exactly what it freed
    assert t.remove_orphan_files(older_than_millis=0, dry_run=True).orphans == ()


def test_limit_and_the_latest_changelog_stays(tmp_path):
    t = make(tmp_path, "t", **{"changelog-producer": "input"})
    write_rounds(t, 8)
    t.expire_snapshots(older_than_millis=0)
    manager = ChangelogManager(t.file_io, t.path)
    first = manager.list_ids()
    assert len(expire_changelogs(t, retain_min=1, retain_max=1, older_than_millis=0, max_deletes=2)
               .changelog_ids) == 2
    expire_changelogs(t, retain_min=1, retain_max=1, older_than_millis=0, max_deletes=100)
    assert manager.list_ids() == [first[-1]]  # never the latest changelog


def test_retain_max_alone_overrides_the_default_retain_min(tmp_path):
    """``retain_max`` alone keeps that many changelog ids whatever ``changelog.num-retained.min``
    (here 30) says, as Paimon's ``expire_changelogs`` procedure does (its omitted ``retain_min`` is
    1 and its time-to-live infinite); contradicting bounds given together stay one typed error."""
    t = make(tmp_path, "t", **{"changelog-producer": "input"})
    write_rounds(t, 8)
    t.expire_snapshots(older_than_millis=0)
    manager = ChangelogManager(t.file_io, t.path)
    ids, latest_s = manager.list_ids(), t.snapshot_manager.latest_id()
    done = expire_changelogs(t, retain_max=4)  # every changelog is young: only the count applies
    assert done.changelog_ids == tuple(i for i in ids if i < latest_s - 4 + 1) != ()
    assert missing_files(t) == []
    with pytest.raises(InvalidArgumentError, match=r"retain_max \(4\) must be at least retain_min \(5\)"):
        expire_changelogs(t, retain_min=5, retain_max=4)


def test_delete_all_and_snapshot_expiry_runs_changelog_expiry(tmp_path):
    import time

    t = make(tmp_path, "t", **{"changelog-producer": "input", "snapshot.num-retained.min": "1",
                               "snapshot.num-retained.max": "3", "changelog.num-retained.min": "1",
                               "changelog.num-retained.max": "5"})
    write_rounds(t, 9)
    later = time.time() + 7200  # two hours on: every snapshot and changelog is old enough
    done = t.expire_snapshots(clock=lambda: later)
    assert done.plan.to_changelog and done.expired_changelogs > 0  # manual expiry honours changelog.*
    manager = ChangelogManager(t.file_io, t.path)
    # all old enough, so every changelog but the latest went (the latest one always stays)
    assert manager.list_ids() == [t.snapshot_manager.earliest_id() - 1]
    gone = expire_changelogs(t, delete_all=True)
    assert gone.deleted_all and manager.list_ids() == []
    assert t.remove_orphan_files(older_than_millis=0).orphans  # their files, unreferenced now
    assert missing_files(t) == []
    assert t.read().num_rows == len({r["id"] for r in t.read().to_pylist()})


def test_delete_all_refuses_changelogs_that_overlap_snapshots(tmp_path):
    t = make(tmp_path, "t", **{"changelog-producer": "input"})
    write_rounds(t, 4)
    t.expire_snapshots(older_than_millis=0)
    manager = ChangelogManager(t.file_io, t.path)
    manager.publish(t.latest_snapshot())  # a changelog at the latest snapshot: not a leftover
    with pytest.raises(InvalidArgumentError, match="not older than the earliest snapshot"):
        expire_changelogs(t, delete_all=True)


def test_producer_none_keeps_append_files_until_their_changelog_goes(tmp_path):
    t = make(tmp_path, "t", **{"write-only": "true"})
    write_rounds(t, 5)
    t.compact(full=True)  # deletes every APPEND file: only the changelog (delta) still needs them
    write_rounds(t, 2)
    latest = t.snapshot_manager.latest_id()
    before = changes(t, 0, latest, "delta")
    t.expire_snapshots(older_than_millis=0)
    assert changes(t, 0, latest, "delta") == before
    assert missing_files(t) == []
    expire_changelogs(t, retain_min=1, retain_max=2, older_than_millis=0)
    assert missing_files(t) == [] and t.remove_orphan_files(older_than_millis=0, dry_run=True).orphans == ()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.sampled_from(["write", "write", "compact", "expire", "expire_changelog", "tag", "jump",
                                     "expire_by_options", "consume"]), min_size=3, max_size=16),
       producer=st.sampled_from(["input", "none"]))
def test_property_nothing_needed_is_ever_missing(tmp_path_factory, ops, producer):
    import time

    t = make(tmp_path_factory.mktemp("p"), "t", **{"changelog-producer": producer, "write-only": "true",
                                                   "changelog.num-retained.min": "1", "changelog.num-retained.max": "5",
                                                   "changelog.time-retained": "3 h"})
    manager = ChangelogManager(t.file_io, t.path)
    mode = "changelog" if producer != "none" else "delta"
    n, offset, consumed = 0, 0.0, None

    def clock() -> float:
        return time.time() + offset

    for op in ["write", *ops]:
        if op == "write":
            t.write(pa.table({"id": [n % 4], "v": [f"w{n}"]}, schema=SCHEMA))
            n += 1
        elif op == "compact":
            t.compact(full=True)
        elif op == "expire":
            t.expire_snapshots(retain_min=1, older_than_millis=0)
        elif op == "expire_changelog":
            expire_changelogs(t, retain_min=1, retain_max=3, older_than_millis=0)
        elif op == "jump":  # the expiry clock leaps an hour and a half ahead of the commit times
            offset += 5400
        elif op == "expire_by_options":  # snapshot.* then changelog.* by the table's options, on the clock
            t.expire_snapshots(clock=clock)
        elif op == "consume":
            consumed = t.snapshot_manager.latest_id()
            t.consumer_manager.record("reader", consumed)
        elif op == "tag" and t.latest_snapshot() is not None:
            t.tags.create(f"t{n}-{len(t.tags.list())}", snapshot_id=t.snapshot_manager.latest_id())
        assert missing_files(t) == []
        ids = manager.list_ids()
        assert ids == list(range(ids[0], ids[-1] + 1)) if ids else True
        snaps = t.snapshot_manager.list_ids()
        assert snaps == list(range(snaps[0], snaps[-1] + 1))
        if ids:  # contiguous with the snapshots, and every change since the earliest changelog reads
            assert ids[-1] == snaps[0] - 1
            t.read_changes(ids[0] - 1, snaps[-1], mode=mode)
        if consumed is not None:  # the consumer's next snapshot is still there, as snapshot or changelog
            assert consumed in snaps or consumed in ids
        for sid in snaps:
            t.read(snapshot_id=sid)


def test_changelog_options_are_typed_and_default_to_the_snapshot_ones(tmp_path):
    from paimonflow.core.errors import InvalidOptionError
    from paimonflow.core.options.core import CoreOptions

    plain = CoreOptions.from_map({"snapshot.num-retained.min": "3", "snapshot.time-retained": "2 h"})
    assert (plain.changelog_num_retained_min, plain.changelog_time_retained_millis) == (3, 7_200_000)
    assert not plain.changelog_decoupled and not plain.consumer_changelog_only
    assert CoreOptions.from_map({"changelog.time-retained": "2 h"}).changelog_decoupled  # above the 1 h default
    assert CoreOptions.from_map({"changelog.num-retained.max": "50", "snapshot.num-retained.max": "40"}).changelog_decoupled
    assert not CoreOptions.from_map({"changelog.num-retained.min": "5"}).changelog_decoupled  # below the 10 default
    with pytest.raises(InvalidOptionError, match=r"changelog\.num-retained\.min"):
        make(tmp_path, "bad", **{"changelog.num-retained.min": "zero"})


def test_consumer_changelog_only_lets_snapshots_expire_but_protects_changelogs(tmp_path):
    t = make(tmp_path, "t", **{"changelog-producer": "input"})
    write_rounds(t, 6)
    t.consumer_manager.record("reader", 2)
    t.expire_snapshots(retain_min=1, older_than_millis=0)
    assert t.snapshot_manager.earliest_id() == 2  # the consumer protects snapshots by default

    c = make(tmp_path, "c", **{"changelog-producer": "input", "consumer.changelog-only": "true"})
    write_rounds(c, 6)
    c.consumer_manager.record("reader", 2)
    c.expire_snapshots(retain_min=1, older_than_millis=0)
    latest = c.snapshot_manager.latest_id()
    assert c.snapshot_manager.earliest_id() == latest  # ... but not with consumer.changelog-only
    manager = ChangelogManager(c.file_io, c.path)
    assert manager.list_ids() == list(range(1, latest))
    expire_changelogs(c, retain_min=1, retain_max=1, older_than_millis=0)
    assert manager.list_ids() == list(range(2, latest))  # the changelogs the consumer has not read stay
    assert changes(c, 1, latest, "changelog") and missing_files(c) == []


def test_watch_follows_changelogs_below_the_earliest_snapshot(tmp_path):
    from paimonflow.core.read.watch import Observation, watch

    for name, decoupled in (("d", True), ("p", False)):
        options = {"changelog-producer": "input"} if decoupled else {"changelog.num-retained.min": "2"}
        t = make(tmp_path, name, **options)
        write_rounds(t, 1)
        seen = Observation.of(t.latest_snapshot())
        write_rounds(t, 5)
        t.expire_snapshots(retain_min=1, older_than_millis=0)
        result = watch(t.snapshot_manager, seen)
        latest = t.snapshot_manager.latest_id()
        assert result.new_range == (2, latest)
        assert result.expired_past is not decoupled
        assert result.missing == (0 if decoupled else latest - 2)


def test_producer_none_append_files_expire_with_the_changelog_that_deleted_them(tmp_path):
    t = make(tmp_path, "t", **{"write-only": "true"})
    write_rounds(t, 4)  # APPEND files, still live when their changelogs expire
    t.expire_snapshots(retain_min=1, older_than_millis=0)
    expire_changelogs(t, retain_min=1, retain_max=1, older_than_millis=0)
    assert missing_files(t) == [] and t.remove_orphan_files(older_than_millis=0, dry_run=True).orphans == ()
    t.compact(full=True)  # now a delta deletes them: its changelog takes them when it goes
    write_rounds(t, 2)
    t.expire_snapshots(retain_min=1, older_than_millis=0)
    assert missing_files(t) == []
    expire_changelogs(t, retain_min=1, retain_max=1, older_than_millis=0)
    assert missing_files(t) == []
    assert t.remove_orphan_files(older_than_millis=0, dry_run=True).orphans == ()  # nothing leaked
    assert t.read().num_rows == len({r["id"] for r in t.read().to_pylist()})


def test_a_compaction_kept_as_a_long_lived_changelog_keeps_no_compacted_away_file(tmp_path):
    """Found by the property above (write, write, compact, write, compact, expire; producer none):
    the expired compaction's output, rewritten by the later compaction, was still counted as needed
    by its long-lived changelog, which in delta mode reads APPEND files only."""
    t = make(tmp_path, "t", **{"changelog-producer": "none", "write-only": "true",
                               "changelog.num-retained.min": "1", "changelog.num-retained.max": "5",
                               "changelog.time-retained": "3 h"})
    for step in ("write", "write", "compact", "write", "compact"):
        if step == "write":
            t.write(pa.table({"id": [0], "v": [step]}, schema=SCHEMA))
        else:
            t.compact(full=True)
    latest = t.snapshot_manager.latest_id()
    before = changes(t, 0, latest, "delta")
    t.expire_snapshots(retain_min=1, older_than_millis=0)
    assert t.snapshot_manager.list_ids() == [latest]
    assert missing_files(t) == []
    assert changes(t, 0, latest, "delta") == before  # the long-lived changelogs still read
