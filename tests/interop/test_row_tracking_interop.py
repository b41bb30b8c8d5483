"""Row tracking and data evolution with pypaimon 2.1.0, both ways: pypaimon's row-tracking
tables read, written and compacted by paimonflow and read back by pypaimon with the same rows
and ``_ROW_ID``s; paimonflow's own row-tracking tables read by pypaimon; whole rows written into
pypaimon's data-evolution tables (partial-column updates and deletes by row id included)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import UnsupportedFeatureError

from .frontier import FrontierOracle, _read_ipc

ROW_ID = "_ROW_ID"


def _rows(table: pa.Table) -> Counter:
    names = sorted(table.column_names)
    return Counter(zip(*(table.column(n).to_pylist() for n in names), strict=True))


def _pypaimon_table(tmp_path: Path, feature: str) -> tuple[Path, str, dict]:
    warehouse, identifier = tmp_path / "wh", f"db.{feature}"
    oracle = FrontierOracle(tmp_path)
    i = oracle.make_frontier_table(warehouse, identifier, feature, external_root=tmp_path / "ext",
                                   out_dir=tmp_path / "out")
    [made] = oracle.run_each()
    assert made.error is None, made.error
    assert i == 0
    return warehouse, identifier, made.value


def _pypaimon_reads(tmp_path: Path, warehouse: Path, identifier: str, *, with_row_id: bool) -> pa.Table:
    oracle = FrontierOracle(tmp_path)
    oracle.read_rows(warehouse, identifier, with_row_id=with_row_id)
    [read] = oracle.run_each()
    assert read.error is None, read.error
    return read.value


@pytest.mark.parametrize("feature", ["append_row_tracking", "append_row_tracking_partitioned"])
def test_we_read_write_and_compact_pypaimons_row_tracking_tables(tmp_path, feature):
    warehouse, identifier, answer = _pypaimon_table(tmp_path, feature)
    theirs = _pypaimon_reads(tmp_path, warehouse, identifier, with_row_id=True)
    table = Catalog(str(warehouse)).get_table(identifier)
    names = [*table.schema.field_names, ROW_ID]
    assert _rows(table.read(columns=names)) == _rows(theirs)
    next_row_id = table.snapshot_manager.latest().next_row_id
    assert next_row_id == max(theirs.column(ROW_ID).to_pylist()) + 1

    fresh = _read_ipc(answer["fresh_ipc"])
    table.write(fresh)
    table = Catalog(str(warehouse)).get_table(identifier)
    compacted = table.compact(full=True)
    if feature == "append_row_tracking":  # every commit's ids follow on: merged
        assert compacted.files_written >= 1 and compacted.files_read > compacted.files_written, compacted
    else:  # a partition's ids jump over the other partition's: no run of files to merge
        assert compacted.files_read == 0, compacted
    table = Catalog(str(warehouse)).get_table(identifier)
    ours = table.read(columns=names)
    after = _pypaimon_reads(tmp_path, warehouse, identifier, with_row_id=True)
    assert _rows(after) == _rows(ours)
    old_ids = Counter(theirs.column(ROW_ID).to_pylist())
    new_ids = Counter(after.column(ROW_ID).to_pylist()) - old_ids
    assert sorted(new_ids) == list(range(next_row_id, next_row_id + fresh.num_rows))
    assert _rows(after.filter(pa.compute.less(after.column(ROW_ID), next_row_id))) == _rows(theirs)


def test_pypaimon_reads_our_row_tracking_table_after_compaction(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])
    table = catalog.create_table("db.t", schema, partition_keys=["dt"],
                                 options={"row-tracking.enabled": "true", "bucket": "-1"})
    for start in (0, 10, 20):
        ids = list(range(start, start + 5))
        table.write(pa.table({"id": ids, "name": [f"n{i}" for i in ids], "dt": ["a", "a", "b", "a", "b"]},
                             schema=schema))
        table = catalog.get_table("db.t")
    table.write(pa.table({"id": [30, 31], "name": ["x", "y"], "dt": ["a", "a"]}, schema=schema))
    table = catalog.get_table("db.t")
    table.compact(full=True)
    table = catalog.get_table("db.t")
    ours = table.read(columns=[*schema.names, ROW_ID])
    assert sorted(ours.column(ROW_ID).to_pylist()) == list(range(17))
    theirs = _pypaimon_reads(tmp_path, tmp_path / "wh", "db.t", with_row_id=True)
    assert _rows(theirs) == _rows(ours)


@pytest.mark.parametrize("feature", ["append_data_evolution", "append_data_evolution_dv", "append_global_index"])
def test_we_read_and_write_pypaimons_data_evolution_tables(tmp_path, feature):
    """pypaimon's tables hold partial-column files (its update API), deletes by row id (with
    deletion vectors) and global indexes; paimonflow reads the rows merged by row id as pypaimon
    does, appends whole rows with the next row ids, which pypaimon reads, and refuses compaction
    in one line without changing a file."""
    from .frontier import file_state

    warehouse, identifier, answer = _pypaimon_table(tmp_path, feature)
    theirs = _pypaimon_reads(tmp_path, warehouse, identifier, with_row_id=True)
    table = Catalog(str(warehouse)).get_table(identifier)
    names = [*table.schema.field_names, ROW_ID]
    assert _rows(table.read(columns=names)) == _rows(theirs)
    assert _rows(pa.Table.from_batches(list(table.to_batches(columns=names)))) == _rows(theirs)
    if feature != "append_global_index":  # snapshot 3 updates a column: only a merge by row id reads it
        with pytest.raises(UnsupportedFeatureError, match="holds only columns"):
            table.read_changes(2, 3)
    before = file_state([warehouse])
    with pytest.raises(UnsupportedFeatureError, match=r"data evolution .* for compaction"):
        table.compact(full=True)
    assert file_state([warehouse]) == before
    next_row_id = table.snapshot_manager.latest().next_row_id
    fresh = _read_ipc(answer["fresh_ipc"])
    table.write(fresh)
    after = _pypaimon_reads(tmp_path, warehouse, identifier, with_row_id=True)
    new = after.filter(pa.compute.greater_equal(after.column(ROW_ID), next_row_id))
    assert _rows(after.filter(pa.compute.less(after.column(ROW_ID), next_row_id))) == _rows(theirs)
    assert sorted(new.column(ROW_ID).to_pylist()) == list(range(next_row_id, next_row_id + fresh.num_rows))
    assert _rows(new.drop_columns([ROW_ID])) == _rows(fresh.select(new.drop_columns([ROW_ID]).column_names))
    assert _rows(Catalog(str(warehouse)).get_table(identifier).read(columns=names)) == _rows(after)
