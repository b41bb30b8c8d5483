"""Row tracking (``row-tracking.enabled``): row ids assigned at commit from the snapshot's
``nextRowId``, ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` readable, and compaction keeping both."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.errors import UnsupportedFeatureError
from paimonflow.core.meta.manifest import FileKind, ManifestEntry
from paimonflow.core.write.messages import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT
from paimonflow.core.write.row_ids import RowTrackingSettings, assign_row_tracking

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
TRACKED = ["id", "v", "dt", "_ROW_ID", "_SEQUENCE_NUMBER"]


def _table(tmp_path, *, partitioned: bool = True, options=None):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    return catalog.create_table("db.t", SCHEMA, partition_keys=["dt"] if partitioned else [],
                                options={"row-tracking.enabled": "true", "bucket": "-1", **(options or {})})


def _rows(ids, dts):
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "dt": dts}, schema=SCHEMA)


def _tracked(t) -> dict[int, tuple[int, int]]:
    got = t.read(columns=TRACKED).to_pydict()
    return {i: (r, s) for i, r, s in zip(got["id"], got["_ROW_ID"], got["_SEQUENCE_NUMBER"], strict=True)}


def _files(t):
    return [f for split in t.plan() for f in split.files]


def test_commits_assign_row_ids_from_next_row_id_grouped_by_partition(tmp_path):
    t = _table(tmp_path)
    t.write(_rows([1, 2, 3, 4], ["a", "b", "a", "b"]))
    assert t.snapshot_manager.latest().next_row_id == 4
    t.write(_rows([5, 6], ["b", "c"]))
    snapshot = t.snapshot_manager.latest()
    assert snapshot.next_row_id == 6
    tracked = _tracked(t)
    # commit 1: partition a's file (ids 1, 3) then b's (2, 4); commit 2 continues at 4
    assert tracked == {1: (0, 1), 3: (1, 1), 2: (2, 1), 4: (3, 1), 5: (4, 2), 6: (5, 2)}
    for f in _files(t):  # the commit gives new files the snapshot id as sequence number
        assert f.first_row_id is not None and f.min_sequence_number == f.max_sequence_number in (1, 2)


def test_row_tracking_columns_read_alone_in_batches_and_as_the_only_column(tmp_path):
    t = _table(tmp_path, partitioned=False)
    t.write(_rows([10, 11, 12], ["a"] * 3))
    assert t.read(columns=["_ROW_ID"]).column("_ROW_ID").to_pylist() == [0, 1, 2]
    batches = pa.Table.from_batches(list(t.to_batches(columns=["_ROW_ID", "id"])))
    assert batches.to_pydict() == {"_ROW_ID": [0, 1, 2], "id": [10, 11, 12]}
    assert t.read().column_names == ["id", "v", "dt"]  # not part of a plain read


def test_a_table_without_row_tracking_has_no_row_id_column(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1"})
    t.write(_rows([1], ["a"]))
    assert t.snapshot_manager.latest().next_row_id is None
    with pytest.raises(Exception, match="unknown columns"):
        t.read(columns=["id", "_ROW_ID"])


def test_a_competing_commit_moves_the_row_ids_of_a_retried_commit(tmp_path):
    """Row ids are assigned inside the retry loop: a commit that loses the race for a snapshot
    takes its ids after the winner's."""
    t = _table(tmp_path, partitioned=False)
    t.write(_rows([1], ["a"]))
    loser_write, winner_write = t.new_write(), t.new_write()
    loser_write.write(_rows([2, 3], ["a", "a"]))
    winner_write.write(_rows([4, 5, 6], ["a"] * 3))
    loser_messages, winner_messages = loser_write.prepare_commit(), winner_write.prepare_commit()
    loser = t.new_commit()
    publish = loser._snapshots.publish
    raced = []

    def publish_after_a_competitor(snapshot):
        if not raced:
            raced.append(snapshot.id)
            t.new_commit().commit(winner_messages)  # takes this snapshot id and ids 1..3
        return publish(snapshot)

    loser._snapshots.publish = publish_after_a_competitor
    result = loser.commit(loser_messages)
    assert result.attempts == 2 and raced == [2]
    assert _tracked(t) == {1: (0, 1), 4: (1, 2), 5: (2, 2), 6: (3, 2), 2: (4, 3), 3: (5, 3)}
    assert t.snapshot_manager.latest().next_row_id == 6


def _entry(kind=FileKind.ADD, *, rows=10, source=FILE_SOURCE_APPEND, first=None, seq=(0, 0), cols=None,
           partition=b"p"):
    from paimonflow.core.meta.manifest import DataFileMeta, SimpleStats

    empty = SimpleStats(min_values=b"", max_values=b"", null_counts=())
    f = DataFileMeta(file_name=f"f{rows}{partition!r}", file_size=1, row_count=rows, min_key=b"", max_key=b"",
                     key_stats=empty, value_stats=empty, min_sequence_number=seq[0], max_sequence_number=seq[1],
                     schema_id=0, level=0, file_source=source, first_row_id=first, write_cols=cols)
    return ManifestEntry(kind=kind, partition=partition, bucket=0, total_buckets=-1, file=f)


def test_assignment_follows_paimons_rules():
    settings = RowTrackingSettings(enabled=True)
    new = _entry(rows=3)
    half = _entry(rows=4, seq=(7, 0), partition=b"q")
    compacted = _entry(rows=5, source=FILE_SOURCE_COMPACT, first=None, seq=(2, 9))
    stored = _entry(rows=6, cols=("id", "_ROW_ID"), partition=b"q")
    deleted = _entry(FileKind.DELETE, rows=2, first=None, seq=(0, 0))
    done = assign_row_tracking([new, half, compacted, stored, deleted], snapshot_id=12, next_row_id=100,
                               settings=settings)
    by_rows = {e.file.row_count: e.file for e in done.entries}
    assert (by_rows[3].first_row_id, by_rows[3].min_sequence_number, by_rows[3].max_sequence_number) == (100, 12, 12)
    assert (by_rows[4].first_row_id, by_rows[4].min_sequence_number, by_rows[4].max_sequence_number) == (103, 7, 12)
    assert by_rows[5] == compacted.file  # a compaction's file keeps what it carries
    assert by_rows[6].first_row_id is None  # stores its own row ids
    assert by_rows[2] == deleted.file
    assert done.next_row_id == 107
    # grouped by partition in first-seen order: p's files, then q's
    assert [e.partition for e in done.entries] == [b"p", b"p", b"p", b"q", b"q"]
    ungrouped = assign_row_tracking([new, half, compacted], snapshot_id=1, next_row_id=0,
                                    settings=dataclasses.replace(settings, partition_group_on_commit=False))
    assert [e.partition for e in ungrouped.entries] == [b"p", b"q", b"p"]


def test_compaction_keeps_row_ids_and_sequence_numbers(tmp_path):
    t = _table(tmp_path, partitioned=False)
    for start in (1, 4, 7):
        t.write(_rows([start, start + 1, start + 2], ["a"] * 3))
    before = _tracked(t)
    result = t.compact(full=True)
    assert result.files_read == 3 and result.files_written == 1
    assert _tracked(t) == before
    [f] = _files(t)
    assert f.write_cols == ("id", "v", "dt", "_ROW_ID", "_SEQUENCE_NUMBER") and f.file_source == FILE_SOURCE_COMPACT
    assert (f.first_row_id, f.min_sequence_number, f.max_sequence_number) == (0, 1, 3)
    assert f.value_stats_cols == ("id", "v", "dt")
    t.write(_rows([20], ["a"]))  # ids continue after compaction
    assert _tracked(t)[20] == (9, 5) and t.snapshot_manager.latest().next_row_id == 10
    assert t.read(columns=["id"], filter=None).num_rows == 10


def test_compaction_rewrites_only_files_whose_row_ids_follow_on(tmp_path):
    """Each new file holds one range of ids, so that first_row_id + position is every row's id
    (pypaimon 2.1.0 reads no stored _ROW_ID): files of a partition with other partitions' ids
    between them are not merged."""
    t = _table(tmp_path)
    t.write(_rows([1, 2], ["a", "b"]))  # a: 0, b: 1
    t.write(_rows([3, 4], ["a", "a"]))  # a: 2..3 (follows on nothing of a's: 0 then a gap at 1)
    t.write(_rows([5], ["a"]))  # a: 4 follows on 2..3
    before = _tracked(t)
    t.compact(full=True)
    assert _tracked(t) == before
    ranges = sorted((f.first_row_id, f.row_count, f.file_source) for f in _files(t))
    assert ranges == [(0, 1, FILE_SOURCE_APPEND), (1, 1, FILE_SOURCE_APPEND), (2, 3, FILE_SOURCE_COMPACT)]


def test_a_file_holding_only_some_columns_is_refused_by_reads(tmp_path):
    from paimonflow.core.read.row_tracking import require_whole_rows

    t = _table(tmp_path, partitioned=False)
    t.write(_rows([1], ["a"]))
    [f] = _files(t)
    require_whole_rows(f, ["id", "v", "dt"], table="db.t")
    require_whole_rows(dataclasses.replace(f, write_cols=("id", "v", "dt", "_ROW_ID", "_SEQUENCE_NUMBER")),
                       ["id", "v", "dt"], table="db.t")
    with pytest.raises(UnsupportedFeatureError, match="holds only columns"):
        require_whole_rows(dataclasses.replace(f, write_cols=("v", "_ROW_ID", "_SEQUENCE_NUMBER")), ["id", "v", "dt"],
                           table="db.t")


def test_a_data_evolution_table_takes_and_reads_whole_rows_but_refuses_compaction(tmp_path):
    t = _table(tmp_path, partitioned=False, options={"data-evolution.enabled": "true"})
    t.write(_rows([1, 2], ["a", "a"]))
    t.write(_rows([3], ["a"]))
    assert t.snapshot_manager.latest().next_row_id == 3
    assert sorted(f.first_row_id for f in _files_unchecked(t)) == [0, 2]
    assert _tracked(t) == {1: (0, 1), 2: (1, 1), 3: (2, 2)}
    with pytest.raises(UnsupportedFeatureError, match=r"data evolution .* for compaction"):
        t.compact(full=True)


def _files_unchecked(t):
    return [e.file for e in t.manifest_io.live_entries(t.snapshot_manager.latest())]


def test_the_cli_reads_row_ids(tmp_path):
    import json

    from typer.testing import CliRunner

    from paimonflow.core.cli import app

    t = _table(tmp_path, partitioned=False)
    t.write(_rows([7, 8], ["a", "a"]))
    result = CliRunner().invoke(app, ["--json", "read", "db.t", "-w", str(tmp_path / "wh"), "--column", "id",
                                      "--column", "_ROW_ID", "--column", "_SEQUENCE_NUMBER"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"id": 7, "_ROW_ID": 0, "_SEQUENCE_NUMBER": 1},
                                         {"id": 8, "_ROW_ID": 1, "_SEQUENCE_NUMBER": 1}]


_STEP = st.one_of(
    st.tuples(st.just("write"), st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=4)),
    st.tuples(st.just("compact"), st.booleans()),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_STEP, min_size=1, max_size=6))
def test_row_ids_never_change_and_never_repeat(tmp_path_factory, steps):
    """Random writes and compactions (full or minor): every row keeps the id and sequence number
    its commit gave it, ids are 0..n-1 in commit order, and nextRowId is n."""
    t = _table(tmp_path_factory.mktemp("model"), options={"compaction.min.file-num": "2"})
    model: dict[int, tuple[int, int]] = {}
    for kind, arg in steps:
        if kind == "write":
            start = len(model)
            ids = list(range(start, start + len(arg)))
            result = t.write(_rows(ids, arg))
            # grouped by partition, first-seen order: a's rows first if a came first
            order = sorted(range(len(arg)), key=lambda i: [*dict.fromkeys(arg)].index(arg[i]))
            model.update({ids[i]: (start + rank, result.snapshot_id) for rank, i in enumerate(order)})
        else:
            t.compact(full=arg)
        assert _tracked(t) == model
        latest = t.snapshot_manager.latest()
        assert (latest.next_row_id if latest is not None else 0) == len(model)


@pytest.mark.parametrize(("keys", "options", "message"), [
    (["id"], {"row-tracking.enabled": "true"}, r"cannot have a primary key \(it has \['id'\]\)"),
    ([], {"row-tracking.enabled": "true", "bucket": "2", "bucket-key": "id"}, "needs bucket = -1, not 2"),
    ([], {"data-evolution.enabled": "true"}, "data-evolution.enabled needs row-tracking.enabled"),
])
def test_tables_paimon_forbids_are_refused_at_creation(tmp_path, keys, options, message):
    """Paimon's schema rules for row ids: once such a table was created, then refused writes."""
    from paimonflow.core.errors import SchemaError

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    with pytest.raises(SchemaError, match=message):
        catalog.create_table("db.t", schema, primary_keys=keys, options=options)
    assert catalog.list_tables("db") == []
