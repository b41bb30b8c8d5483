"""Automatic tags (periods, formatters, delay, watermarks and time zones, completion,
tag.num-retained-max, batch mode, restore) and the maintenance commits run after them."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from paimonflow.core import Catalog
from paimonflow.core.cli import app
from paimonflow.core.errors import InvalidOptionError
from paimonflow.core.maintenance.post_commit import maintain
from paimonflow.core.meta.schema_changes import SetOption
from paimonflow.core.options.tagging import AutoTagSettings

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
HOUR = 3600


def utc(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def make(tmp_path, options: dict[str, str], *, primary_key: bool = True, partition: bool = False, name="db.t"):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db", ignore_if_exists=True)
    schema = SCHEMA if not partition else pa.schema([*SCHEMA, pa.field("dt", pa.string(), nullable=False)])
    keys = (["id", "dt"] if partition else ["id"]) if primary_key else None
    return catalog.create_table(name, schema, primary_keys=keys or (), partition_keys=["dt"] if partition else (),
                                options={"bucket": "1" if primary_key else "-1", **options})


def commit_at(table, when: float, rows: int = 1, *, overwrite: bool = False, first_id: int = 0):
    """Commit ``rows`` rows with the commit (and maintenance) clock at ``when`` seconds."""
    data = {"id": list(range(first_id, first_id + rows)), "v": [str(when)] * rows}
    if "dt" in table.partition_keys:
        data["dt"] = ["2020-01-01"] * rows
    with table.new_write(overwrite=overwrite) as writer:
        writer.write(pa.table(data, schema=table.arrow_schema))
        messages = writer.prepare_commit()
    from paimonflow.core.write.commit import OverwriteSpec

    return table.new_commit(clock=lambda: when).commit(messages, overwrite=OverwriteSpec() if overwrite else None)


def tag_ids(table) -> dict[str, int]:
    return {name: snap.id for name, snap in sorted(table.tags.list().items())}


PROCESS_UTC = {"tag.automatic-creation": "process-time", "sink.process-time-zone": "UTC"}


# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("period", "formatter", "name"), [
    ("daily", "with_dashes", "2024-03-05"),
    ("daily", "without_dashes", "20240305"),
    ("daily", "without_dashes_and_spaces", "20240305"),
    ("hourly", "with_dashes", "2024-03-05 07"),
    ("hourly", "without_dashes", "20240305 07"),
    ("hourly", "without_dashes_and_spaces", "2024030507"),
    ("two-hours", "with_dashes", "2024-03-05 06"),
    ("two-hours", "without_dashes", "2024-03-05 06"),  # two-hours always names yyyy-MM-dd HH
    ("two-hours", "without_dashes_and_spaces", "2024-03-05 06"),
])
def test_every_period_and_formatter_names_the_previous_period(tmp_path, period, formatter, name):
    t = make(tmp_path, {**PROCESS_UTC, "tag.creation-period": period, "tag.period-formatter": formatter})
    length = {"daily": 24, "hourly": 1, "two-hours": 2}[period] * HOUR
    start = datetime(2024, 3, 5, 7, tzinfo=UTC) if period == "hourly" else \
        datetime(2024, 3, 5, 6, tzinfo=UTC) if period == "two-hours" else datetime(2024, 3, 5, tzinfo=UTC)
    commit_at(t, start.timestamp() + length + 1)  # first snapshot, in the period after ``start``
    assert tag_ids(t) == {name: 1}
    settings_ = AutoTagSettings.from_options(t.schema.options)
    assert settings_.period.start_of(name) == start.replace(tzinfo=None)  # names parse back (restore)
    assert t.read(tag=name).num_rows == 1


def test_custom_period_duration_names_use_minutes(tmp_path):
    t = make(tmp_path, {**PROCESS_UTC, "tag.creation-period-duration": "90 min"})
    commit_at(t, utc(2024, 3, 5, 3, 10))  # periods are aligned to 1970-01-01 00:00: 03:00-04:30
    assert tag_ids(t) == {"202403050130": 1}
    commit_at(t, utc(2024, 3, 5, 4, 29))
    assert list(tag_ids(t)) == ["202403050130"]
    commit_at(t, utc(2024, 3, 5, 4, 30))
    assert tag_ids(t) == {"202403050130": 1, "202403050300": 3}


def test_daily_names_also_parse_with_an_hour_part_as_paimon_does():
    period = AutoTagSettings.from_options({"tag.automatic-creation": "process-time"}).period
    assert period.start_of("2024-01-02 11") == datetime(2024, 1, 2)
    assert period.start_of("2024-13-02") is None and period.start_of("v1") is None
    assert period.start_of("2024-1-02") is None  # fixed widths, as Java's strict formatter


# -- delay, time zones, watermarks ---------------------------------------------------------------


def test_delay_waits_after_the_period_end(tmp_path):
    t = make(tmp_path, {**PROCESS_UTC, "tag.creation-delay": "10 min"})
    commit_at(t, utc(2024, 1, 1, 12))  # first snapshot: tags the day before at once
    assert list(tag_ids(t)) == ["2023-12-31"]
    commit_at(t, utc(2024, 1, 2, 0, 9))
    assert list(tag_ids(t)) == ["2023-12-31"]  # 2024-01-01 ended, but the delay has not passed
    commit_at(t, utc(2024, 1, 2, 0, 10))
    assert tag_ids(t) == {"2023-12-31": 1, "2024-01-01": 3}
    # the tag holds the first snapshot at or after the period end + delay (with its bit of the next day)
    assert t.read(tag="2024-01-01").column("v").to_pylist() == [str(utc(2024, 1, 2, 0, 10))]


def test_delay_must_be_shorter_than_a_period(tmp_path):
    with pytest.raises(InvalidOptionError) as info:
        make(tmp_path, {**PROCESS_UTC, "tag.creation-period": "hourly", "tag.creation-delay": "1 h"})
    assert info.value.key == "tag.creation-delay"
    t = make(tmp_path, {**PROCESS_UTC, "tag.creation-period": "hourly", "write-only": "true"})
    t = t.alter([SetOption("tag.creation-delay", "2 h")])  # set alone: checked when used
    commit_at(t, utc(2024, 1, 1))
    with pytest.raises(InvalidOptionError) as info:
        t.run_auto_tag()
    assert info.value.key == "tag.creation-delay"


def test_process_time_zone_decides_the_day(tmp_path):
    when = utc(2024, 1, 1, 16, 30)  # 2024-01-02 00:30 in Shanghai
    t = make(tmp_path, {"tag.automatic-creation": "process-time", "sink.process-time-zone": "Asia/Shanghai"})
    commit_at(t, when)
    assert list(tag_ids(t)) == ["2024-01-01"]
    u = make(tmp_path, {**PROCESS_UTC}, name="db.u")
    commit_at(u, when)
    assert list(tag_ids(u)) == ["2023-12-31"]


def with_watermark(table, snapshot_id: int, watermark: int | None) -> None:
    """Give a committed snapshot a watermark (as a Flink writer would have)."""
    manager = table.snapshot_manager
    snapshot = dataclasses.replace(manager.snapshot(snapshot_id), watermark=watermark)
    table.file_io.write_bytes(manager.path(snapshot_id), snapshot.to_json())


def test_watermark_mode_uses_watermarks_in_their_time_zone(tmp_path):
    t = make(tmp_path, {"tag.automatic-creation": "watermark", "sink.watermark-time-zone": "GMT-08:00",
                        "tag.creation-period": "hourly", "write-only": "true"})
    commit_at(t, utc(2030, 1, 1))  # commit times are irrelevant in watermark mode
    commit_at(t, utc(2030, 1, 1))
    commit_at(t, utc(2030, 1, 1))
    with_watermark(t, 1, None)  # no watermark: skipped
    with_watermark(t, 2, int(utc(2024, 5, 1, 10, 30) * 1000))  # 02:30 at GMT-8
    with_watermark(t, 3, int(utc(2024, 5, 1, 11, 0) * 1000))  # 03:00 at GMT-8
    done = t.run_auto_tag(clock=lambda: utc(2030, 1, 1))
    assert done.created == (("2024-05-01 01", 2), ("2024-05-01 02", 3))
    assert t.run_auto_tag().created == ()  # idempotent


def test_a_java_long_min_watermark_means_none(tmp_path):
    t = make(tmp_path, {"tag.automatic-creation": "watermark", "write-only": "true"})
    commit_at(t, utc(2030, 1, 1))
    with_watermark(t, 1, -(2**63))
    assert t.run_auto_tag().created == ()


@pytest.mark.parametrize(("key", "value"), [
    ("tag.automatic-creation", "sometimes"), ("tag.creation-period", "weekly"), ("tag.period-formatter", "x"),
    ("tag.creation-delay", "soon"), ("tag.num-retained-max", "-1"), ("tag.automatic-completion", "yes"),
    ("tag.time-expire-enabled", "1"), ("tag.creation-period-duration", "0 s"), ("sink.process-time-zone", "Mars/Base"),
    ("sink.watermark-time-zone", "GMT+99:00"), ("consumer.expiration-time", "forever"),
    ("tag.default-time-retained", "a week"), ("tag.batch.customized-name", "a/b"),
    ("partition.expiration-check-interval", "often"),
])
def test_bad_values_name_the_key(tmp_path, key, value):
    with pytest.raises(InvalidOptionError) as info:
        make(tmp_path, {key: value})
    assert info.value.key == key


# -- completion, retention, restore ----------------------------------------------------------------


def test_completion_fills_gaps_one_tag_per_snapshot(tmp_path):
    t = make(tmp_path, {**PROCESS_UTC, "tag.automatic-completion": "true"})
    commit_at(t, utc(2024, 1, 1, 5))
    commit_at(t, utc(2024, 1, 5, 5))  # 01, 02, 03 and 04 ended: fills 01 only
    assert tag_ids(t) == {"2023-12-31": 1, "2024-01-01": 2}
    commit_at(t, utc(2024, 1, 5, 6))
    commit_at(t, utc(2024, 1, 5, 7))
    assert tag_ids(t) == {"2023-12-31": 1, "2024-01-01": 2, "2024-01-02": 3, "2024-01-03": 4}
    u = make(tmp_path, {**PROCESS_UTC}, name="db.u")  # without completion the gap stays
    commit_at(u, utc(2024, 1, 1, 5))
    commit_at(u, utc(2024, 1, 5, 5))
    commit_at(u, utc(2024, 1, 5, 6))
    assert tag_ids(u) == {"2023-12-31": 1, "2024-01-04": 2}


def test_num_retained_max_counts_only_auto_tags_and_frees_files(tmp_path):
    t = make(tmp_path, {**PROCESS_UTC, "tag.num-retained-max": "2", "snapshot.num-retained.min": "1",
                        "snapshot.num-retained.max": "1"}, primary_key=False)
    commit_at(t, utc(2024, 1, 1, 1), overwrite=True)
    t.tags.create("manual")  # on snapshot 1
    data_files = lambda: {f for f in files(t.path) if "/bucket-" in f}  # noqa: E731
    first_files = data_files()
    for day in (2, 3, 4):
        commit_at(t, utc(2024, 1, day, 1), overwrite=True)
    # auto tags 2023-12-31 (snapshot 1), 01-01 (2), 01-02 (3), 01-03 (4): the two oldest went
    assert tag_ids(t) == {"2024-01-02": 3, "2024-01-03": 4, "manual": 1}
    assert t.snapshot_manager.list_ids() == [4]
    assert first_files <= data_files()  # the manual tag still holds snapshot 1's file
    t.tags.delete("manual")
    assert not first_files & data_files()
    assert t.read(tag="2024-01-02").column("v").to_pylist() == [str(utc(2024, 1, 3, 1))]


def files(root) -> set[str]:
    return {os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns}


def test_file_of_a_trimmed_auto_tag_is_freed(tmp_path):
    t = make(tmp_path, {**PROCESS_UTC, "tag.num-retained-max": "1", "snapshot.num-retained.min": "1",
                        "snapshot.num-retained.max": "1"}, primary_key=False)
    commit_at(t, utc(2024, 1, 1, 1), overwrite=True)
    first = {f for f in files(t.path) if "/bucket-" in f}
    commit_at(t, utc(2024, 1, 2, 1), overwrite=True)
    assert tag_ids(t) == {"2024-01-01": 2}
    assert not first & files(t.path)


def test_restore_after_restart_continues_from_the_newest_auto_tag(tmp_path):
    options = {**PROCESS_UTC, "tag.creation-period": "hourly", "tag.automatic-completion": "true"}
    t = make(tmp_path, options)
    commit_at(t, utc(2024, 1, 1, 10, 5))
    commit_at(t, utc(2024, 1, 1, 11, 5))
    assert tag_ids(t) == {"2024-01-01 09": 1, "2024-01-01 10": 2}
    reopened = Catalog(str(tmp_path / "wh")).get_table("db.t")  # a new process: nothing in memory
    commit_at(reopened, utc(2024, 1, 1, 14, 5))
    assert tag_ids(reopened) == {"2024-01-01 09": 1, "2024-01-01 10": 2, "2024-01-01 11": 3}
    assert reopened.run_auto_tag().created == ()


def test_restore_reads_only_snapshots_after_the_newest_auto_tag(tmp_path):
    t = make(tmp_path, {**PROCESS_UTC, "write-only": "true"})
    for hour in range(4):
        commit_at(t, utc(2024, 1, 1, hour))
    t.tags.create("2023-12-31", snapshot_id=3)  # an automatic tag made earlier
    for old in (1, 2):  # history before the tag must not be read: reading these would fail
        with open(t.snapshot_manager.path(old), "w") as f:
            f.write("garbage")
    assert t.run_auto_tag().created == ()  # snapshot 4 (01-01 03:00) is still in 2024-01-01
    commit_at(t, utc(2024, 1, 2, 0, 1))
    assert t.run_auto_tag().created == (("2024-01-01", 5),)


def test_expired_snapshots_are_skipped(tmp_path):
    t = make(tmp_path, {**PROCESS_UTC, "write-only": "true"})
    commit_at(t, utc(2024, 1, 1, 1))
    assert t.run_auto_tag().created == (("2023-12-31", 1),)
    commit_at(t, utc(2024, 1, 2, 1))
    commit_at(t, utc(2024, 1, 3, 1))
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.snapshot_manager.list_ids() == [3]
    assert t.run_auto_tag().created == (("2024-01-02", 3),)  # jumped over the expired snapshot 2


# -- batch mode ------------------------------------------------------------------------------


def test_batch_tag_is_recreated_on_the_latest_snapshot(tmp_path):
    t = make(tmp_path, {"tag.automatic-creation": "batch", "sink.process-time-zone": "UTC"})
    when = datetime.now(UTC)
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    name = f"batch-write-{when:%Y-%m-%d}"
    latest = t.snapshot_manager.latest_id()
    assert tag_ids(t) in ({name: latest}, {f"batch-write-{datetime.now(UTC):%Y-%m-%d}": latest})
    assert t.read(tag=next(iter(tag_ids(t)))).num_rows == 2


def test_batch_customized_name_and_retention_counting_all_tags(tmp_path):
    t = make(tmp_path, {"tag.automatic-creation": "batch", "tag.batch.customized-name": "nightly",
                        "tag.num-retained-max": "2"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t.tags.create("manual-1")
    t.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    assert tag_ids(t) == {"manual-1": 1, "nightly": 2}
    t.tags.create("manual-2")
    t.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    assert tag_ids(t) == {"manual-2": 2, "nightly": 3}  # the oldest tag went, manual or not
    result = t.run_auto_tag()
    assert result.created == (("nightly", 3),)


def test_batch_mode_creates_nothing_after_commits_or_on_an_empty_table(tmp_path):
    t = make(tmp_path, {"tag.automatic-creation": "batch"})
    assert t.run_auto_tag().created == ()
    commit_at(t, utc(2024, 1, 1))  # through new_commit: maintenance only, no batch tag
    assert tag_ids(t) == {}


# -- maintenance after commits ------------------------------------------------------------------


def test_snapshots_expire_after_commits_by_the_table_options(tmp_path):
    t = make(tmp_path, {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3"}, primary_key=False)
    for i in range(6):
        t.write(pa.table({"id": [i], "v": ["x"]}, schema=SCHEMA))
    assert t.snapshot_manager.list_ids() == [4, 5, 6]
    assert t.read().num_rows == 6


def test_default_expiry_keeps_young_snapshots(tmp_path):
    t = make(tmp_path, {"snapshot.num-retained.min": "1"}, primary_key=False)
    for i in range(4):
        t.write(pa.table({"id": [i], "v": ["x"]}, schema=SCHEMA))
    assert t.snapshot_manager.list_ids() == [1, 2, 3, 4]  # younger than snapshot.time-retained (1 h)
    commit_at(t, utc(2099, 1, 1))  # 1-3 were replaced long before 2099; 4 only just now
    assert t.snapshot_manager.list_ids() == [4, 5]


def test_write_only_skips_maintenance_but_dedicated_compaction_runs_it(tmp_path):
    t = make(tmp_path, {"write-only": "true", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
                        **PROCESS_UTC})
    for i in range(3):
        t.write(pa.table({"id": [i], "v": ["x"]}, schema=SCHEMA))
    assert t.snapshot_manager.list_ids() == [1, 2, 3] and tag_ids(t) == {}
    result = t.compact()
    assert t.snapshot_manager.list_ids() == [result.snapshot_id]
    assert len(tag_ids(t)) == 1


def test_a_failing_maintenance_step_leaves_the_commit_committed_with_a_note(tmp_path, caplog):
    t = make(tmp_path, {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    os.makedirs(t.consumer_manager.directory, exist_ok=True)
    with open(os.path.join(t.consumer_manager.directory, "consumer-broken"), "w") as f:
        f.write("not json")  # snapshot expiry must read consumers: it fails
    with caplog.at_level(logging.WARNING, logger="paimonflow.core.write.commit"):
        result = t.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    assert result.snapshot_id == 2 and t.snapshot_manager.latest_id() == 2
    assert len(result.notes) == 1 and "maintenance after commit failed: CorruptMetadataError" in result.notes[0]
    assert "maintenance after it failed" in caplog.text
    assert t.read().num_rows == 2


def test_a_failing_maintenance_after_compaction_is_a_note_too(tmp_path):
    t = make(tmp_path, {"write-only": "true", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    os.makedirs(t.consumer_manager.directory, exist_ok=True)
    with open(os.path.join(t.consumer_manager.directory, "consumer-broken"), "w") as f:
        f.write("{")
    result = t.compact()
    assert result.snapshot_id == 3 == t.snapshot_manager.latest_id()
    assert len(result.notes) == 1 and "CorruptMetadataError" in result.notes[0]
    assert result.to_dict()["notes"] == list(result.notes)


def test_commit_without_a_snapshot_runs_no_maintenance(tmp_path):
    t = make(tmp_path, {**PROCESS_UTC})
    result = t.new_commit(clock=lambda: utc(2024, 1, 2)).commit([])
    assert result.snapshot_id is None and tag_ids(t) == {}


def test_tag_ttl_partition_and_consumer_expiry_after_commits(tmp_path):
    t = make(tmp_path, {"tag.default-time-retained": "1 h", "partition.expiration-time": "1 d",
                        "partition.expiration-check-interval": "0 s", "consumer.expiration-time": "1 h"},
             partition=True)
    now = datetime.now().timestamp()
    t.write(pa.table({"id": [1], "v": ["a"], "dt": ["2999-01-01"]}, schema=t.arrow_schema))
    t.tags.create("short")
    tag_json = t.file_io.read_bytes(t.tag_manager.tag_path("short"))
    assert b"tagCreateTime" in tag_json and b"tagTimeRetained" in tag_json
    t.consumer_manager.record("reader", 1)
    os.utime(t.consumer_manager.path("reader"), (now - 2 * HOUR, now - 2 * HOUR))
    commit_at(t, now + 2 * HOUR)  # a row of partition 2020-01-01: expired at once
    assert tag_ids(t) == {}
    assert t.consumer_manager.ids() == []
    assert t.read().column("dt").to_pylist() == ["2999-01-01"]
    report = maintain(t, clock=lambda: now + 2 * HOUR)
    assert report.partitions_expired == () and report.snapshots_expired == 0


def test_tag_ttl_expiry_can_be_disabled(tmp_path):
    t = make(tmp_path, {"tag.default-time-retained": "1 h", "tag.time-expire-enabled": "false"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t.tags.create("short")
    commit_at(t, datetime.now().timestamp() + 2 * HOUR)
    assert "short" in tag_ids(t)


def test_partition_check_interval_limits_checks_per_process(tmp_path):
    t = make(tmp_path, {"partition.expiration-time": "1 d"}, partition=True)
    t.write(pa.table({"id": [1], "v": ["a"], "dt": ["2020-01-01"]}, schema=t.arrow_schema))
    assert t.read().num_rows == 1  # the first commit of a process starts the interval, as in Paimon
    now = datetime.now().timestamp()
    assert maintain(t, clock=lambda: now + 1800).partition_check_skipped
    report = maintain(t, clock=lambda: now + 3700)
    assert not report.partition_check_skipped and report.partitions_expired == ({"dt": "2020-01-01"},)
    assert maintain(t, clock=lambda: now + 3800).partition_check_skipped
    assert t.read().num_rows == 0


def test_cli_auto_tag(tmp_path):
    t = make(tmp_path, {**PROCESS_UTC, "write-only": "true"})
    commit_at(t, utc(2024, 1, 1, 1))
    result = CliRunner().invoke(app, ["auto-tag", "db.t", "-w", str(tmp_path / "wh")], catch_exceptions=False)
    assert result.exit_code == 0
    assert "created" in result.output and "2023-12-31" in result.output and "1 created, 0 deleted" in result.output
    commit_at(t, utc(2024, 1, 2, 1))
    result = CliRunner().invoke(app, ["--json", "auto-tag", "db.t", "-w", str(tmp_path / "wh")],
                                catch_exceptions=False)
    assert json.loads(result.output) == {"created": [{"tag": "2024-01-01", "snapshot_id": 2}], "deleted": [],
                                         "freed_files": 0}


# -- the property --------------------------------------------------------------------------------


def model(times: list[int], period: int, delay: int, completion: bool) -> dict[str, int]:
    """Paimon's rule, stated on plain numbers: the first snapshot tags the period before its own;
    after a tag of period P, the first snapshot whose time minus the delay reaches the end of
    P's next period tags that next period (completion) or the period before its own."""
    out: dict[str, int] = {}
    last: int | None = None  # start of the last tagged period
    for snapshot_id, when in enumerate(times, start=1):
        if last is not None and when - delay < last + 2 * period:
            continue
        last = last + period if completion and last is not None else (when // period - 1) * period
        out[datetime.fromtimestamp(last, UTC).strftime("%Y-%m-%d %H")] = snapshot_id
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gaps=st.lists(st.integers(min_value=0, max_value=5 * HOUR), min_size=1, max_size=10),
       delay_min=st.integers(min_value=0, max_value=59), completion=st.booleans())
def test_property_auto_tags_are_the_expected_periods(tmp_path_factory, gaps, delay_min, completion):
    t = make(tmp_path_factory.mktemp("prop"), {
        **PROCESS_UTC, "tag.creation-period": "hourly", "tag.creation-delay": f"{delay_min} min",
        "tag.automatic-completion": str(completion).lower(), "write-only": "true"})
    times, now = [], int(utc(2024, 6, 1))
    for gap in gaps:
        now += gap
        times.append(now)
        commit_at(t, now)
    t.run_auto_tag()
    tags = tag_ids(t)
    assert tags == model(times, HOUR, delay_min * 60, completion)
    by_snapshot = sorted((snapshot_id, name) for name, snapshot_id in tags.items())
    assert by_snapshot[0][0] == 1  # the first snapshot always tags the period before its own
    for (previous_id, previous), (snapshot_id, _) in itertools.pairwise(by_snapshot):
        # each later tag is on the first snapshot after the previous tag's at/after the end of
        # the period following the previous tag, plus the delay
        due = datetime.strptime(previous, "%Y-%m-%d %H").replace(tzinfo=UTC).timestamp() + 2 * HOUR + delay_min * 60
        assert times[snapshot_id - 1] >= due
        assert all(times[i - 1] < due for i in range(previous_id + 1, snapshot_id))
    if completion:  # completion tags consecutive periods
        starts = [datetime.strptime(n, "%Y-%m-%d %H") for _, n in by_snapshot]
        assert all(b - a == timedelta(hours=1) for a, b in itertools.pairwise(starts))
