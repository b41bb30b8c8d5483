"""A commit reads what it writes, not the table's history: writers restore only their buckets,
conflict checks read only the partitions a commit changes, filtered plans only the partitions
they touch, and the exactly-once look-up only the snapshots since the user's last commit.

The proofs are made with real files: manifest blocks of the other partitions are damaged on
disk, and the operations that must not read them still succeed (while a whole-table read fails);
snapshot reads are counted by a local file system that counts what it opens.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import CorruptMetadataError
from paimonflow.core.fs import LocalFileIO
from paimonflow.core.meta import manifest_blocks as mb
from paimonflow.core.meta.snapshots import COMMIT_USER_PREFIX
from paimonflow.core.predicate import col

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.float64())])
DAYS = [f"2026-11-{d:02d}" for d in range(1, 9)]


def _rows(day: str, ids) -> pa.Table:
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"id": ids, "dt": [day] * len(ids), "v": ids * 1.5}, schema=SCHEMA)


def _table(tmp_path, options=None, file_io=None):
    catalog = Catalog(str(tmp_path / "wh"), file_io=file_io) if file_io else Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    return catalog, catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                         options={"bucket": "4", "manifest.merge-min-count": "3", **(options or {})})


def _damage_blocks_without(table, keep_partition: bytes) -> int:
    """Overwrite, inside every data manifest of the latest snapshot, the blocks that hold no entry
    of ``keep_partition`` (manifests with no such entry are damaged whole). Returns how many."""
    damaged = 0
    for meta in table.manifest_io.data_manifests(table.latest_snapshot()):
        path = f"{table.manifest_io.manifest_dir}/{meta.file_name}"
        data = bytearray(table.file_io.read_bytes(path))
        blocks = mb.parse_blocks(bytes(data))
        assert blocks is not None, "paimonflow writes every data manifest with a block index"
        for info, (start, end) in zip(blocks.infos, blocks.spans, strict=True):
            if keep_partition not in info.partitions:
                data[start + 4:end - 16] = b"\xff" * (end - 16 - start - 4)  # the compressed records
                damaged += 1
        table.file_io.write_bytes(path, bytes(data))
    return damaged


def _partition_bytes(table, day: str) -> bytes:
    from paimonflow.core.data.binary_row import serialize_row

    return serialize_row([day], [pa.string()])


def test_a_writer_reads_only_the_manifest_blocks_of_the_partition_it_writes(tmp_path):
    catalog, table = _table(tmp_path)
    for n, day in enumerate(DAYS):  # a history over 8 partitions, merged into shared manifests
        for k in range(3):
            table.write(_rows(day, range(n * 1000 + k * 100, n * 1000 + k * 100 + 100)))
    before = table.read(filter=col("dt") == DAYS[-1])
    assert _damage_blocks_without(table, _partition_bytes(table, DAYS[-1])) > 0
    table = catalog.get_table("db.t")
    with pytest.raises(CorruptMetadataError):
        table.read()  # the other partitions' metadata really is unreadable now
    # an update of the last day: restore (sequence numbers, files to compact), conflict check,
    # the writer's own compaction and the commit touch only that partition
    update = _rows(DAYS[-1], range(7000, 7050)).set_column(2, "v", pa.array(np.full(50, -1.0)))
    table.write(update)
    after = table.read(filter=col("dt") == DAYS[-1]).sort_by("id")
    assert after.num_rows == before.num_rows
    # the newest rows won (sequence numbers continued from the restored files); the rest is as it was
    values = dict(zip(after.column("id").to_pylist(), after.column("v").to_pylist(), strict=True))
    assert all(values[i] == -1.0 for i in range(7000, 7050))
    assert all(values[r["id"]] == r["v"] for r in before.to_pylist() if r["id"] >= 7050)
    result = table.compact(partitions=[{"dt": DAYS[-1]}])  # a dedicated compaction of that day too
    assert result.snapshot_id is not None
    assert table.read(filter=col("dt") == DAYS[-1]).num_rows == before.num_rows


def test_restored_buckets_match_the_whole_live_set(tmp_path):
    _, table = _table(tmp_path, {"write-only": "true"})
    rng = np.random.default_rng(3)
    for _ in range(25):
        day = DAYS[int(rng.integers(0, len(DAYS)))]
        table.write(_rows(day, rng.integers(0, 5000, 40)))
    snapshot = table.latest_snapshot()
    everything = table.manifest_io.live_entries(snapshot)
    for day in DAYS[:4]:
        partition = _partition_bytes(table, day)
        for bucket in range(4):
            expected = sorted(e.file.file_name for e in everything if (e.partition, e.bucket) == (partition, bucket))
            got = table.manifest_io.live_entries(snapshot, buckets={partition: [bucket]})
            assert sorted(e.file.file_name for e in got) == expected
        got = table.manifest_io.live_entries(snapshot, partitions=[partition])
        assert sorted(e.file.file_name for e in got) == sorted(
            e.file.file_name for e in everything if e.partition == partition)


def test_the_sequence_of_an_updated_bucket_continues_after_its_restore(tmp_path):
    _, table = _table(tmp_path, {"write-only": "true"})
    for day in DAYS:
        table.write(_rows(day, range(100)))
    table.write(_rows(DAYS[0], range(100)).set_column(2, "v", pa.array(np.full(100, -1.0))))
    got = table.read(filter=col("dt") == DAYS[0])
    assert got.num_rows == 100 and set(got.column("v").to_pylist()) == {-1.0}
    assert table.read(filter=col("dt") == DAYS[1]).column("v").to_pylist() != [-1.0] * 100


class CountingFileIO(LocalFileIO):
    """The local file system, counting the snapshot files it reads."""

    snapshot_reads = 0

    def read_bytes(self, path: str) -> bytes:
        if path.rsplit("/", 1)[-1].startswith("snapshot-"):
            CountingFileIO.snapshot_reads += 1
        return super().read_bytes(path)


def _lookups(table, user: str, identifier: int) -> tuple[object, int]:
    CountingFileIO.snapshot_reads = 0
    found = table.new_commit(user).already_committed(identifier)
    return found, CountingFileIO.snapshot_reads


def test_exactly_once_reads_only_the_snapshots_since_the_users_last_commit(tmp_path):
    _, table = _table(tmp_path, {"write-only": "true"}, file_io=CountingFileIO())
    for i in range(60):
        user = "daily" if i == 20 else "hourly"
        table.write(_rows(DAYS[i % 8], [i]), commit_user=user, commit_identifier=i + 1)
    # the retry of the last commit: the latest snapshot only
    found, reads = _lookups(table, "hourly", 60)
    assert found is not None and found.id == 60 and reads == 1
    # a user whose last commit is 40 snapshots back: those 40 and its own
    found, reads = _lookups(table, "daily", 21)
    assert found is not None and found.id == 21 and reads == 40
    found, _ = _lookups(table, "daily", 22)
    assert found is None  # identifier 22 is new for that user
    # a user that never committed reads every snapshot, as without hints (and as Paimon does)
    found, reads = _lookups(table, "nobody", 1)
    assert found is None and reads == 60


def test_a_wrong_or_lost_user_hint_never_changes_the_answer(tmp_path):
    _, table = _table(tmp_path, {"write-only": "true"}, file_io=CountingFileIO())
    for i in range(12):
        table.write(_rows(DAYS[0], [i]), commit_user="a" if i % 2 else "b", commit_identifier=i + 1)
    hint = f"{table.snapshot_manager.directory}/{COMMIT_USER_PREFIX}a"
    assert table.file_io.read_bytes(hint) == b"12"
    for content in (b"3", b"11", b"99", b"garbage", b""):  # stale, another user's, past the end, unreadable
        table.file_io.write_bytes(hint, content)
        found, _ = _lookups(table, "a", 12)
        assert found is not None and found.id == 12 and found.commit_user == "a"
    table.file_io.delete(hint)
    found, _ = _lookups(table, "a", 12)
    assert found is not None and found.id == 12
    # after a rollback below the user's last commit, the hint points past the end, then at another
    # user's snapshot: the answer is still the user's newest remaining snapshot
    table.write(_rows(DAYS[0], [99]), commit_user="a", commit_identifier=13)
    table.rollback(snapshot_id=9)
    newest = table.snapshot_manager.latest_of_user("a")
    assert newest is not None and newest.id == 8 and newest.commit_identifier == 8
    for i in range(5):
        table.write(_rows(DAYS[0], [200 + i]), commit_user="b", commit_identifier=100 + i)
    newest = table.snapshot_manager.latest_of_user("a")  # the hint (13) now names one of b's
    assert newest is not None and newest.id == 8
    found, _ = _lookups(table, "a", 13)
    assert found is None  # a's identifier 13 was rolled back: committing it again is right
    assert table.write(_rows(DAYS[0], [300]), commit_user="a", commit_identifier=13).already_committed is False


@pytest.mark.s3
def test_the_look_up_walks_an_object_store_in_parallel_windows(s3_bucket, s3_storage_options):
    """On S3 a walk reads snapshots 16 at a time; the answers are those of the local walk."""
    catalog = Catalog(f"s3://{s3_bucket}/wh", storage_options=s3_storage_options)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2", "write-only": "true"})
    for i in range(40):
        table.write(_rows(DAYS[i % 2], [i]), commit_user="early" if i == 3 else "hourly", commit_identifier=i + 1)
    table.file_io.delete(f"{table.snapshot_manager.directory}/{COMMIT_USER_PREFIX}early")  # no hint: a full walk
    early = table.new_commit("early").already_committed(4)
    assert early is not None and early.id == 4
    assert table.new_commit("early").already_committed(5) is None
    assert table.new_commit("nobody").already_committed(1) is None
    latest = table.new_commit("hourly").already_committed(40)
    assert latest is not None and latest.id == 40
