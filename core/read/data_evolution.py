"""Reads of data-evolution tables (``data-evolution.enabled``): rows merged from files that hold
only some columns (``write_cols``), by row id, as Apache Paimon's ``DataEvolutionSplitRead``
and pypaimon 2.1.0 do.

* A bucket's files are grouped by ``first_row_id``: files with the same one describe the same
  rows (an update of some columns, pypaimon's ``update_by_arrow_with_row_id``, writes a file for
  the whole range of the file it updates); files with overlapping but different ranges are
  refused, and so are files of one group with different row counts.
* Within a group each column comes from the newest file (greatest ``max_sequence_number``)
  holding it; a column no file holds is null. ``_ROW_ID`` is ``first_row_id`` plus the position,
  ``_SEQUENCE_NUMBER`` the newest file's.
* Deletion vectors of a group are those of its anchor, the oldest whole-row file (least
  ``max_sequence_number``, then name), addressed by position in the group's range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from ..errors import UnsupportedFeatureError
from ..meta.manifest import DataFileMeta
from .row_tracking import ROW_ID, SEQUENCE_NUMBER, tracking_column

FEATURE = "data evolution (data-evolution.enabled)"


def is_data_evolution(options: Mapping[str, str]) -> bool:
    return options.get("data-evolution.enabled", "").strip().lower() == "true"


def row_id_groups(files: Sequence[DataFileMeta], *, table: str) -> list[list[DataFileMeta]]:
    """``files`` grouped by ``first_row_id`` (ascending), each group newest file first; a file
    without row ids is a group of its own. Raises :class:`UnsupportedFeatureError` on files
    whose ranges overlap without being the same."""
    untracked = [[f] for f in files if f.first_row_id is None]
    tracked = sorted((f for f in files if f.first_row_id is not None),
                     key=lambda f: (f.first_row_id, -f.max_sequence_number, f.file_name))
    groups: list[list[DataFileMeta]] = []
    for f in tracked:
        if groups and groups[-1][0].first_row_id == f.first_row_id:
            if f.row_count != groups[-1][0].row_count:
                raise UnsupportedFeatureError(table=table, feature=FEATURE, operation="read",
                                              detail=f"files {groups[-1][0].file_name} and {f.file_name} describe "
                                                     "the same rows with different row counts")
            groups[-1].append(f)
            continue
        if groups and (groups[-1][0].first_row_id or 0) + groups[-1][0].row_count > (f.first_row_id or 0):
            raise UnsupportedFeatureError(table=table, feature=FEATURE, operation="read",
                                          detail=f"row ids of {groups[-1][0].file_name} and {f.file_name} overlap")
        groups.append([f])
    return untracked + groups


def anchor_of(group: Sequence[DataFileMeta]) -> DataFileMeta:
    """The file whose deletion vector a group's rows use: the oldest whole-row file (else the
    oldest file)."""
    whole = [f for f in group if f.write_cols is None] or list(group)
    return min(whole, key=lambda f: (f.max_sequence_number, f.file_name))


def merge_group(group: Sequence[DataFileMeta], columns: Sequence[str], *,
                holds: Callable[[DataFileMeta], set[str]],
                read: Callable[[DataFileMeta, list[str]], pa.Table],
                field_of: Callable[[str], pa.Field],
                keep: np.ndarray | None) -> pa.Table:
    """One group's rows as ``columns``: each data column read from the newest file holding it
    (``holds``: the current names of a file's columns; ``read``: a file's columns, every row),
    then only the rows ``keep`` marks (by position; None: every row)."""
    newest = group[0]
    rows = newest.row_count
    taken: dict[DataFileMeta, list[str]] = {}
    source: dict[str, DataFileMeta] = {}
    for name in columns:
        if name in (ROW_ID, SEQUENCE_NUMBER):
            continue
        f = next((f for f in group if name in holds(f)), None)
        if f is not None:
            taken.setdefault(f, []).append(name)
            source[name] = f
    decoded: dict[str, pa.ChunkedArray | pa.Array] = {}
    for f, names in taken.items():
        part = read(f, names)
        if part.num_rows != rows:
            raise UnsupportedFeatureError(table=f.file_name, feature=FEATURE, operation="read",
                                          detail=f"file has {part.num_rows} rows, its metadata {rows}")
        decoded.update((n, part.column(n)) for n in names)
    positions = pa.array(np.arange(rows, dtype=np.int64))
    out = {}
    for name in columns:
        if name in (ROW_ID, SEQUENCE_NUMBER):
            out[name] = tracking_column(name, newest, positions, None)
        elif name in decoded:
            out[name] = decoded[name]
        else:
            out[name] = pa.nulls(rows, field_of(name).type)
    table = pa.table(out, schema=pa.schema([field_of(n) for n in columns]))
    return table if keep is None else table.filter(pa.array(keep))
