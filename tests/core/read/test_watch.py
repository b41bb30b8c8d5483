"""The snapshot watch (core/read/watch.py) against real tables on local disk."""

from __future__ import annotations

import tempfile
import uuid
from dataclasses import replace

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.errors import CorruptMetadataError, InvalidArgumentError
from paimonflow.core.fs import join
from paimonflow.core.meta.snapshots import EARLIEST, LATEST, CommitKind
from paimonflow.core.read.watch import Observation, WatchResult, watch

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
A, C, OW, Z = CommitKind.APPEND, CommitKind.COMPACT, CommitKind.OVERWRITE, CommitKind.ANALYZE


def new_table(warehouse: str):
    catalog = Catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    # write-only: no compaction after a write, so each write is exactly one snapshot
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})


@pytest.fixture
def table(tmp_path):
    return new_table(str(tmp_path / "wh"))


def append(table, *ids: int) -> int:
    ids = ids or (1,)
    return table.write(pa.table({"id": list(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)).snapshot_id


def overwrite(table) -> int:
    return table.write(pa.table({"id": [7], "v": ["o"]}, schema=SCHEMA), overwrite=True).snapshot_id


def compact(table) -> int:
    table.compact(full=True)
    return table.snapshot_manager.latest_id()


def analyze(table) -> int:
    """An ANALYZE snapshot (no API makes one yet): the latest snapshot re-published as ANALYZE."""
    sm = table.snapshot_manager
    latest = sm.latest()
    assert sm.try_publish(replace(latest, id=latest.id + 1, commit_kind=Z, uuid=str(uuid.uuid4())))
    return latest.id + 1


def observe(table) -> Observation:
    return Observation.of(table.snapshot_manager.latest())


def counts(result: WatchResult) -> dict[CommitKind, int]:
    return {kind: n for kind, n in result.kind_counts.items() if n}


def write_hint(table, name: str, text: str) -> None:
    sm = table.snapshot_manager
    sm.file_io.write_bytes(join(sm.directory, name), text.encode("ascii"))


def delete_snapshot(table, snapshot_id: int) -> None:
    sm = table.snapshot_manager
    assert sm.file_io.delete(sm.path(snapshot_id))


# -- ranges and kinds ---------------------------------------------------------------------------


def test_empty_table_has_nothing_to_report(table):
    result = watch(table.snapshot_manager, None)
    assert result.new_range is None and result.next_observation is None
    assert not (result.rolled_back or result.expired_past or result.truncated or result.has_data_changes)


def test_first_watch_reports_every_retained_snapshot(table):
    append(table, 1)
    append(table, 2)
    result = watch(table.snapshot_manager, None)
    assert result.new_range == (1, 2) and counts(result) == {A: 2}
    assert result.has_data_changes and not result.expired_past
    assert result.next_observation == observe(table)


def test_new_commits_appear_as_a_range_with_their_kinds(table):
    append(table, 1)
    seen = observe(table)
    append(table, 2)
    compact(table)
    overwrite(table)
    analyze(table)
    result = watch(table.snapshot_manager, seen)
    assert result.new_range == (2, 5) and result.first_new_id == 2 and result.latest_id == 5
    assert counts(result) == {A: 1, C: 1, OW: 1, Z: 1}
    assert result.new_snapshot_count == 4 and result.counted_from_id == 2
    assert result.has_data_changes and not (result.rolled_back or result.expired_past or result.truncated)
    assert result.next_observation == Observation(snapshot_id=5, identity=table.snapshot_manager.snapshot(5).uuid)


def test_compaction_only_is_not_a_data_change(table):
    append(table, 1)
    append(table, 1)
    seen = observe(table)
    compact(table)
    analyze(table)
    result = watch(table.snapshot_manager, seen)
    assert result.new_range == (3, 4) and counts(result) == {C: 1, Z: 1}
    assert not result.has_data_changes


def test_no_change_is_empty_and_keeps_the_observation(table):
    append(table, 1)
    seen = observe(table)
    result = watch(table.snapshot_manager, seen)
    assert result.new_range is None and result.first_new_id is None and result.latest_id is None
    assert counts(result) == {} and not result.has_data_changes
    assert result.next_observation == seen
    assert not (result.rolled_back or result.expired_past)


def test_a_long_range_is_read_only_up_to_max_reads(table):
    append(table, 1)
    seen = observe(table)
    append(table, 2)
    for _ in range(4):
        analyze(table)
    result = watch(table.snapshot_manager, seen, max_reads=3)
    assert result.new_range == (2, 6) and result.truncated
    assert result.counted_from_id == 4 and counts(result) == {Z: 3}
    assert result.has_data_changes  # conservative: the unread snapshots may change data
    full = watch(table.snapshot_manager, seen)
    assert not full.truncated and counts(full) == {A: 1, Z: 4}
    with pytest.raises(InvalidArgumentError):
        watch(table.snapshot_manager, seen, max_reads=0)


def test_default_bound_is_a_thousand_reads(table):
    append(table, 1)
    seen = observe(table)
    sm = table.snapshot_manager
    base = sm.latest()
    for sid in range(2, 1003):  # cheap synthetic ANALYZE snapshots
        assert sm.try_publish(replace(base, id=sid, commit_kind=Z, uuid=str(uuid.uuid4())))
    result = watch(sm, seen)
    assert result.new_range == (2, 1002) and result.truncated
    assert result.counted_from_id == 3 and counts(result) == {Z: 1000}


# -- rollback ------------------------------------------------------------------------------------


def test_rollback_then_reused_id_is_detected(table):
    append(table, 1)
    append(table, 2)
    append(table, 3)
    seen = observe(table)
    delete_snapshot(table, 3)  # rolled back to 2; LATEST still says 3
    assert append(table, 4) == 3  # the id is reused by another commit
    result = watch(table.snapshot_manager, seen)
    assert result.rolled_back and not result.expired_past
    assert result.new_range == (1, 3)  # position lost: restart from the earliest retained snapshot
    assert result.next_observation == observe(table) != seen


def test_rollback_below_the_observed_id_is_detected(table):
    for i in range(4):
        append(table, i)
    seen = observe(table)
    delete_snapshot(table, 4)
    delete_snapshot(table, 3)
    result = watch(table.snapshot_manager, seen)
    assert result.rolled_back and result.latest_id == 2
    for _ in range(2):
        append(table, 9)  # reuses 3 and 4: still not the observed snapshot 4
    assert watch(table.snapshot_manager, seen).rolled_back


def test_rollback_without_uuid_uses_user_identifier_and_time(table):
    sm = table.snapshot_manager
    append(table, 1)
    base = sm.latest()
    assert sm.try_publish(replace(base, id=2, uuid=None, time_millis=base.time_millis + 1))
    seen = observe(table)
    assert seen.identity == (base.commit_user, base.commit_identifier, base.time_millis + 1)
    assert not watch(sm, seen).rolled_back
    delete_snapshot(table, 2)
    assert sm.try_publish(replace(base, id=2, uuid=None, time_millis=base.time_millis + 2))
    assert watch(sm, seen).rolled_back


def test_every_snapshot_gone_is_a_rollback(table):
    append(table, 1)
    seen = observe(table)
    delete_snapshot(table, 1)
    result = watch(table.snapshot_manager, seen)
    assert result.rolled_back and result.new_range is None and result.next_observation is None


# -- expiry --------------------------------------------------------------------------------------


def expire_up_to(table, last_deleted: int) -> None:
    for sid in range(1, last_deleted + 1):
        delete_snapshot(table, sid)
    table.snapshot_manager.write_earliest_hint(last_deleted + 1)


def test_expired_snapshots_the_watcher_never_saw(table):
    append(table, 1)
    seen = observe(table)
    for i in range(2, 6):
        append(table, i)
    expire_up_to(table, 3)  # 2 and 3 expired unseen
    result = watch(table.snapshot_manager, seen)
    assert result.expired_past and not result.rolled_back
    assert result.new_range == (2, 5) and result.missing == 2 and counts(result) == {A: 2}


def test_expiry_of_seen_snapshots_only_is_not_reported(table):
    for i in range(3):
        append(table, i)
    seen = observe(table)
    append(table, 5)
    expire_up_to(table, 3)  # expired the observed snapshot itself, but nothing unseen
    result = watch(table.snapshot_manager, seen)
    assert not result.expired_past and not result.rolled_back  # the observed identity is unverifiable
    assert result.new_range == (4, 4) and result.missing == 0


def test_expiry_is_found_even_without_the_earliest_hint(table):
    append(table, 1)
    seen = observe(table)
    for i in range(2, 5):
        append(table, i)
    for sid in (1, 2, 3):
        delete_snapshot(table, sid)
    write_hint(table, EARLIEST, "1")  # stale: snapshot-1 is gone, so the manager lists
    assert watch(table.snapshot_manager, seen).expired_past


def test_first_watch_after_expiry_is_not_expired_past(table):
    for i in range(4):
        append(table, i)
    expire_up_to(table, 2)
    result = watch(table.snapshot_manager, None)
    assert result.new_range == (3, 4) and not result.expired_past


# -- hints are only hints ------------------------------------------------------------------------


@pytest.mark.parametrize("hint", ["1", "2", "99", "", "garbage", "0"])
def test_stale_or_broken_latest_hint_gives_the_same_answer(table, hint):
    append(table, 1)
    seen = observe(table)
    append(table, 2)
    append(table, 3)
    expected = watch(table.snapshot_manager, seen)
    write_hint(table, LATEST, hint)
    result = watch(table.snapshot_manager, seen)
    assert result == expected and result.new_range == (2, 3)


def test_latest_hint_naming_a_deleted_snapshot_falls_back_to_listing(table):
    append(table, 1)
    seen = observe(table)
    append(table, 2)
    append(table, 3)
    delete_snapshot(table, 3)  # LATEST still says 3
    result = watch(table.snapshot_manager, seen)
    assert result.new_range == (2, 2) and not result.rolled_back


# -- corruption and cursors ----------------------------------------------------------------------


@pytest.mark.parametrize("which", [2, 3])
def test_corrupt_snapshot_file_raises_typed_error(table, which):
    append(table, 1)
    seen = observe(table)
    append(table, 2)
    append(table, 3)
    sm = table.snapshot_manager
    sm.file_io.write_bytes(sm.path(which), b'{"id": ')
    with pytest.raises(CorruptMetadataError):
        watch(sm, seen)


def test_observation_cursor_round_trip(table):
    append(table, 1)
    seen = observe(table)
    assert Observation.from_cursor(seen.to_cursor()) == seen
    tuple_identity = Observation(snapshot_id=3, identity=("user", 5, 1700000000000))
    assert Observation.from_cursor(tuple_identity.to_cursor()) == tuple_identity
    for bad in ["", "{", "[]", '{"snapshot_id": 0, "identity": "u"}', '{"snapshot_id": 1, "identity": [1]}',
                '{"snapshot_id": true, "identity": "u"}']:
        with pytest.raises(InvalidArgumentError):
            Observation.from_cursor(bad)


def test_result_to_dict_is_json_ready(table):
    append(table, 1)
    doc = watch(table.snapshot_manager, None).to_dict()
    assert doc["kind_counts"] == {"APPEND": 1, "COMPACT": 0, "OVERWRITE": 0, "ANALYZE": 0}
    assert doc["has_data_changes"] is True and doc["next_observation"]["snapshot_id"] == 1


# -- property: consecutive watches cover every id exactly once -----------------------------------

OPS = st.lists(st.tuples(st.sampled_from(["append", "compact", "overwrite", "analyze"]), st.booleans()),
               min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, max_reads=st.integers(1, 4))
def test_consecutive_watches_cover_every_snapshot_once(ops, max_reads):
    with tempfile.TemporaryDirectory() as tmp:
        table = new_table(tmp)
        do = {"append": lambda: append(table, 1), "compact": lambda: compact(table),
              "overwrite": lambda: overwrite(table), "analyze": lambda: analyze(table) if
              table.snapshot_manager.latest() else append(table, 2)}
        cursor: Observation | None = None
        covered: list[int] = []
        kinds: dict[int, CommitKind] = {}
        for op, watch_now in [*ops, ("none", True)]:
            if op != "none":
                do[op]()
            if not watch_now:
                continue
            result = watch(table.snapshot_manager, cursor, max_reads=max_reads)
            assert not (result.rolled_back or result.expired_past or result.missing)
            if result.new_range is not None:
                first, last = result.new_range
                covered.extend(range(first, last + 1))
                counted = {kind: n for kind, n in result.kind_counts.items() if n}
                expected: dict[CommitKind, int] = {}
                for sid in range(result.counted_from_id, last + 1):
                    kind = table.snapshot_manager.snapshot(sid).commit_kind
                    expected[kind] = expected.get(kind, 0) + 1
                assert counted == expected
                assert result.truncated == (last - first + 1 > max_reads)
            if result.next_observation is not None:
                cursor = result.next_observation
            for sid in table.snapshot_manager.list_ids():
                kinds[sid] = table.snapshot_manager.snapshot(sid).commit_kind
        assert covered == table.snapshot_manager.list_ids() == sorted(kinds)


def test_cli_watch_prints_the_result_and_the_next_cursor(tmp_path):
    import json

    from typer.testing import CliRunner

    from paimonflow.core.cli import app

    wh = str(tmp_path / "wh")
    table = new_table(wh)
    append(table, 1)
    run = CliRunner().invoke(app, ["watch", "db.t", "-w", wh], catch_exceptions=False)
    assert run.exit_code == 0, run.output
    first = json.loads(run.output)
    assert first["first_new_id"] == 1 and first["kind_counts"]["APPEND"] == 1
    append(table, 2)
    cursor = json.dumps(first["next_observation"])
    again = json.loads(CliRunner().invoke(app, ["watch", "db.t", "-w", wh, "--cursor", cursor]).output)
    assert (again["first_new_id"], again["latest_id"]) == (2, 2) and not again["rolled_back"]
    bad = CliRunner().invoke(app, ["watch", "db.t", "-w", wh, "--cursor", "{"])
    assert bad.exit_code == 2 and "InvalidArgumentError" in bad.output
