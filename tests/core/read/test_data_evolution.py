"""Data-evolution reads: files grouped by row id, each column from the newest file holding it,
deletion vectors of the group's anchor. (pypaimon's own tables, updated through its update API
and deleted from by row id, are read in tests/interop/test_row_tracking_interop.py.)"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from paimonflow.core.errors import UnsupportedFeatureError
from paimonflow.core.meta.manifest import DataFileMeta, SimpleStats
from paimonflow.core.read.data_evolution import anchor_of, merge_group, row_id_groups

EMPTY = SimpleStats(min_values=b"", max_values=b"", null_counts=())
FIELDS = {"id": pa.field("id", pa.int64()), "v": pa.field("v", pa.string()), "w": pa.field("w", pa.int32()),
          "_ROW_ID": pa.field("_ROW_ID", pa.int64()), "_SEQUENCE_NUMBER": pa.field("_SEQUENCE_NUMBER", pa.int64())}


def _file(name, first, rows, seq, cols=None) -> DataFileMeta:
    return DataFileMeta(file_name=name, file_size=1, row_count=rows, min_key=b"", max_key=b"", key_stats=EMPTY,
                        value_stats=EMPTY, min_sequence_number=seq, max_sequence_number=seq, schema_id=0, level=0,
                        file_source=0, first_row_id=first, write_cols=cols)


BASE = _file("base", 10, 3, 1)
V_UPDATE = _file("v-update", 10, 3, 2, ("v",))
V_AGAIN = _file("v-again", 10, 3, 4, ("v",))
NEXT = _file("next", 13, 2, 3)
CONTENT = {
    "base": pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}),
    "v-update": pa.table({"v": ["A", "B", "C"]}),
    "v-again": pa.table({"v": ["AA", "BB", "CC"]}),
}


def _read(f, names):
    return CONTENT[f.file_name].select(names)


def _holds(f):
    return set(CONTENT[f.file_name].column_names)


def test_files_are_grouped_by_first_row_id_newest_first():
    groups = row_id_groups([NEXT, BASE, V_AGAIN, V_UPDATE], table="db.t")
    assert [[f.file_name for f in g] for g in groups] == [["v-again", "v-update", "base"], ["next"]]
    assert anchor_of(groups[0]) is BASE


def test_overlapping_ranges_and_different_counts_are_refused():
    with pytest.raises(UnsupportedFeatureError, match="overlap"):
        row_id_groups([BASE, _file("straddles", 12, 2, 5)], table="db.t")
    with pytest.raises(UnsupportedFeatureError, match="different row counts"):
        row_id_groups([BASE, _file("short", 10, 2, 5, ("v",))], table="db.t")


def test_each_column_comes_from_the_newest_file_holding_it():
    [group, _] = row_id_groups([BASE, V_UPDATE, V_AGAIN, NEXT], table="db.t")
    merged = merge_group(group, ["id", "v", "w", "_ROW_ID", "_SEQUENCE_NUMBER"], holds=_holds, read=_read,
                         field_of=FIELDS.__getitem__, keep=None)
    assert merged.to_pydict() == {"id": [1, 2, 3], "v": ["AA", "BB", "CC"], "w": [None, None, None],
                                  "_ROW_ID": [10, 11, 12], "_SEQUENCE_NUMBER": [4, 4, 4]}


def test_the_anchors_deletion_vector_drops_rows_after_merging():
    [group] = row_id_groups([BASE, V_UPDATE], table="db.t")
    merged = merge_group(group, ["v", "_ROW_ID"], holds=_holds, read=_read, field_of=FIELDS.__getitem__,
                         keep=np.array([True, False, True]))
    assert merged.to_pydict() == {"v": ["A", "C"], "_ROW_ID": [10, 12]}
