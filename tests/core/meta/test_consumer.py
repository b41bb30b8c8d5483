"""Consumers: file format, listing, the minimum expiry must keep, expiry by age, reset and clear."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from paimonflow.core.errors import CorruptMetadataError, InvalidArgumentError, InvalidNameError
from paimonflow.core.fs import LocalFileIO, get_file_io
from paimonflow.core.meta.consumers import Consumer, ConsumerManager

# What Java's JsonSerdeUtil.toJson (Jackson default pretty printer) writes for Consumer(5).
JAVA_BYTES = b'{\n  "nextSnapshot" : 5\n}'


@pytest.fixture
def table(tmp_path: Path) -> Path:
    return tmp_path / "db.db" / "t"


@pytest.fixture
def manager(table: Path) -> ConsumerManager:
    return ConsumerManager(LocalFileIO(), str(table))


def _set_mtime(path: Path, millis: int) -> None:
    os.utime(path, ns=(millis * 1_000_000, millis * 1_000_000))


# -- format ---------------------------------------------------------------------------------------


def test_record_and_get_round_trip(manager: ConsumerManager, table: Path) -> None:
    assert manager.get("job") is None
    manager.record("job", 5)
    assert manager.get("job") == Consumer(next_snapshot=5)
    assert (table / "consumer" / "consumer-job").read_bytes() == JAVA_BYTES
    manager.record("job", 7)  # overwrite
    assert manager.get("job") == Consumer(next_snapshot=7)
    assert [p.name for p in (table / "consumer").iterdir()] == ["consumer-job"]  # no temp file left


@pytest.mark.parametrize("text", [
    b'{"nextSnapshot": 9}',                        # pypaimon's json.dumps
    b'{\n  "nextSnapshot" : 9\n}',                 # Java
    b'{"nextSnapshot": 9, "somethingNew": "x"}',   # unknown fields are ignored, like Java
])
def test_reads_every_spelling(text: bytes) -> None:
    assert Consumer.from_json(text) == Consumer(next_snapshot=9)


@pytest.mark.parametrize(("text", "reason"), [
    (b"", "not valid JSON"),
    (b'{"nextSnapshot": ', "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    (b"[5]", "expected a JSON object"),
    (b"{}", "missing"),
    (b'{"nextSnapshot": "5"}', "64-bit integer"),
    (b'{"nextSnapshot": 5.5}', "64-bit integer"),
    (b'{"nextSnapshot": true}', "64-bit integer"),
    (b'{"nextSnapshot": null}', "64-bit integer"),
    (b'{"nextSnapshot": 9223372036854775808}', "64-bit integer"),
])
def test_corrupt_file_raises_with_path(manager: ConsumerManager, table: Path, text: bytes, reason: str) -> None:
    path = table / "consumer" / "consumer-bad"
    path.parent.mkdir(parents=True)
    path.write_bytes(text)
    with pytest.raises(CorruptMetadataError) as info:
        manager.get("bad")
    assert info.value.path == str(path) and reason in info.value.reason
    with pytest.raises(CorruptMetadataError):
        manager.list()
    with pytest.raises(CorruptMetadataError):
        manager.min_next_snapshot()  # never guess what expiry may delete


# -- ids ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "../x", "a/b", "a\\b", ".", "..", ".hidden", "a b", "x\x00", "a:b", "*"])
def test_bad_ids_are_refused_everywhere(manager: ConsumerManager, table: Path, bad: str) -> None:
    for call in (lambda: manager.get(bad), lambda: manager.record(bad, 1), lambda: manager.delete(bad),
                 lambda: manager.reset(bad, 1), lambda: manager.reset(bad, None), lambda: manager.path(bad)):
        with pytest.raises(InvalidNameError):
            call()
    assert not table.exists()


@pytest.mark.parametrize("value", [-1, True, 1.0, "3", None, 2**63])
def test_bad_next_snapshot_is_refused(manager: ConsumerManager, value: object) -> None:
    with pytest.raises(InvalidArgumentError):
        manager.record("job", value)  # type: ignore[arg-type]
    assert manager.get("job") is None


def test_branch_consumers_live_under_the_branch(table: Path) -> None:
    branch = ConsumerManager(LocalFileIO(), str(table), branch="dev")
    branch.record("job", 3)
    assert (table / "branch" / "branch-dev" / "consumer" / "consumer-job").exists()
    assert ConsumerManager(LocalFileIO(), str(table)).get("job") is None
    with pytest.raises(InvalidNameError):
        ConsumerManager(LocalFileIO(), str(table), branch="../x")


# -- listing and the minimum -----------------------------------------------------------------------


def test_list_ids_and_min(manager: ConsumerManager, table: Path) -> None:
    assert manager.list() == {} and manager.ids() == [] and manager.min_next_snapshot() is None
    manager.record("b", 12)
    manager.record("a", 4)
    manager.record("c", 30)
    directory = table / "consumer"
    (directory / ".consumer-a.1234.tmp").write_bytes(b"partial")  # a crashed writer's temp file
    (directory / "notes").write_bytes(b"not a consumer")
    (directory / "consumer-subdir").mkdir()
    assert manager.ids() == ["a", "b", "c"]
    assert manager.list() == {"a": Consumer(next_snapshot=4), "b": Consumer(next_snapshot=12),
                              "c": Consumer(next_snapshot=30)}
    assert manager.min_next_snapshot() == 4
    assert manager.delete("a") is True
    assert manager.delete("a") is False
    assert manager.min_next_snapshot() == 12


def test_files_with_ids_we_would_refuse_still_count(manager: ConsumerManager, table: Path) -> None:
    # Java accepts any consumer id; expiry must still be protected by it, and clear must reach it.
    directory = table / "consumer"
    directory.mkdir(parents=True)
    (directory / "consumer-flink job:1").write_bytes(b'{"nextSnapshot": 2}')
    manager.record("job", 8)
    assert manager.list() == {"flink job:1": Consumer(next_snapshot=2), "job": Consumer(next_snapshot=8)}
    assert manager.min_next_snapshot() == 2
    assert manager.clear("flink.*") == ["flink job:1"]
    assert manager.ids() == ["job"]


# -- expiry ---------------------------------------------------------------------------------------


def test_expire_by_modification_time(manager: ConsumerManager, table: Path) -> None:
    now = 1_700_000_000_000
    hour = 3_600_000
    for consumer_id, age in (("old", 3 * hour), ("edge", hour), ("young", hour - 1), ("fresh", 0)):
        manager.record(consumer_id, 1)
        _set_mtime(table / "consumer" / f"consumer-{consumer_id}", now - age)
    assert manager.expire(hour, now, dry_run=True) == ["old"]
    assert manager.ids() == ["edge", "fresh", "old", "young"]
    assert manager.expire(hour, now) == ["old"]  # exactly at the cut-off is kept, like Java's isAfter
    assert manager.ids() == ["edge", "fresh", "young"]
    assert manager.expire(hour, now) == []  # idempotent
    assert manager.expire(0, now + 1) == ["edge", "fresh", "young"]
    assert manager.list() == {}


def test_expire_rechecks_before_deleting(table: Path) -> None:
    class RecordsDuringExpiry(LocalFileIO):
        """Someone records the consumer between the listing and the delete."""

        def status(self, path: str):  # type: ignore[no-untyped-def]
            _set_mtime(Path(path), 2_000)
            return super().status(path)

    manager = ConsumerManager(RecordsDuringExpiry(), str(table))
    manager.record("job", 1)
    _set_mtime(table / "consumer" / "consumer-job", 1_000)
    assert manager.expire(500, 2_000) == []
    assert manager.ids() == ["job"]


def test_expire_default_clock_and_bad_duration(manager: ConsumerManager) -> None:
    manager.record("job", 1)
    assert manager.expire(3_600_000) == []
    with pytest.raises(InvalidArgumentError):
        manager.expire(-1)
    assert manager.expire(0, 2**62) == ["job"]


def test_expire_without_directory(manager: ConsumerManager) -> None:
    assert manager.expire(0, 10**15) == []


# -- reset and clear --------------------------------------------------------------------------------


def test_reset_sets_or_deletes(manager: ConsumerManager) -> None:
    manager.reset("job", 10)
    assert manager.get("job") == Consumer(next_snapshot=10)
    manager.reset("job", 3)  # moving back is allowed (re-reading)
    assert manager.get("job") == Consumer(next_snapshot=3)
    manager.reset("job", None)
    assert manager.get("job") is None
    manager.reset("job", None)  # idempotent


@pytest.mark.parametrize(("including", "excluding", "cleared"), [
    (".*", None, ["flink-1", "flink-2", "spark-1", "spark-10"]),
    ("flink-.*", None, ["flink-1", "flink-2"]),
    ("spark-1", None, ["spark-1"]),              # whole-id match: spark-10 stays (Java's matches())
    ("flink", None, []),                          # a prefix is not a match
    (".*", "spark-.*", ["flink-1", "flink-2"]),
    (".*-1", "flink.*", ["spark-1"]),
    (".*", ".*", []),
])
def test_clear_by_regex(manager: ConsumerManager, including: str, excluding: str | None,
                        cleared: list[str]) -> None:
    everyone = ["flink-1", "flink-2", "spark-1", "spark-10"]
    for consumer_id in everyone:
        manager.record(consumer_id, 1)
    assert manager.clear(including, excluding) == cleared
    assert manager.ids() == [c for c in everyone if c not in cleared]


def test_clear_refuses_bad_patterns(manager: ConsumerManager) -> None:
    manager.record("job", 1)
    with pytest.raises(InvalidArgumentError):
        manager.clear("(")
    with pytest.raises(InvalidArgumentError):
        manager.clear(".*", "[")
    assert manager.ids() == ["job"]


# -- S3 -------------------------------------------------------------------------------------------


def test_consumers_on_s3(s3_bucket: str, s3_storage_options: dict[str, str]) -> None:
    table = f"s3://{s3_bucket}/wh/db.db/t"
    file_io = get_file_io(table, s3_storage_options)
    manager = ConsumerManager(file_io, table)
    assert manager.list() == {} and manager.min_next_snapshot() is None
    manager.record("a", 5)
    manager.record("b", 3)
    manager.record("b", 4)
    assert file_io.read_bytes(f"{table}/consumer/consumer-a") == JAVA_BYTES
    assert manager.get("b") == Consumer(next_snapshot=4)
    assert manager.list() == {"a": Consumer(next_snapshot=5), "b": Consumer(next_snapshot=4)}
    assert manager.min_next_snapshot() == 4
    assert manager.expire(3_600_000) == []  # just written
    assert manager.clear("a") == ["a"]
    file_io.write_bytes(f"{table}/consumer/consumer-bad", b"{")
    with pytest.raises(CorruptMetadataError):
        manager.min_next_snapshot()
    assert manager.delete("bad") is True
    assert manager.expire(0, 2**62) == ["b"]
    assert manager.list() == {}
