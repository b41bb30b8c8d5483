"""The row-tracking columns a read of a row-tracking table can ask for: ``_ROW_ID`` and
``_SEQUENCE_NUMBER``, as Apache Paimon's readers expose them (``SpecialFields``).

* ``_ROW_ID``: the value a file stores in its own ``_ROW_ID`` column (a compacted file, whose
  ``write_cols`` name it), else the file's ``first_row_id`` plus the row's position in the file
  (null when the file has no ``first_row_id``);
* ``_SEQUENCE_NUMBER``: the stored value, else the file's ``max_sequence_number`` (the id of the
  snapshot that committed the row).

Positions count every row of the file, deleted ones included, so ids survive deletion vectors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedFeatureError
from ..meta.manifest import DataFileMeta

ROW_ID = "_ROW_ID"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
TRACKING_COLUMNS = (ROW_ID, SEQUENCE_NUMBER)


def tracking_fields(options: Mapping[str, str]) -> dict[str, pa.Field]:
    """The row-tracking columns a read may name (none unless ``row-tracking.enabled``)."""
    if options.get("row-tracking.enabled", "").strip().lower() != "true":
        return {}
    return {name: pa.field(name, pa.int64()) for name in TRACKING_COLUMNS}


def stored_tracking_columns(f: DataFileMeta) -> list[str]:
    """The row-tracking columns ``f`` stores itself (Paimon's compaction writes both)."""
    return [c for c in TRACKING_COLUMNS if f.write_cols is not None and c in f.write_cols]


def tracking_column(name: str, f: DataFileMeta, positions: pa.Array | pa.ChunkedArray,
                    stored: pa.Array | pa.ChunkedArray | None) -> pa.Array | pa.ChunkedArray:
    """``name`` (``_ROW_ID`` or ``_SEQUENCE_NUMBER``) for rows of ``f`` at ``positions`` in the
    file, from the ``stored`` column when the file has one (its non-null values win)."""
    if name == ROW_ID:
        derived = (pa.nulls(len(positions), pa.int64()) if f.first_row_id is None
                   else pc.add(positions, pa.scalar(f.first_row_id, pa.int64())))
    else:
        derived = pa.array(np.full(len(positions), f.max_sequence_number, dtype=np.int64))
    if stored is None:
        return derived
    return pc.coalesce(stored.cast(pa.int64()), derived)


def with_tracking_columns(values: pa.Table, f: DataFileMeta, columns: Sequence[str], *, position_column: str,
                          keep_positions: bool) -> pa.Table:
    """``values`` (data columns, the stored tracking columns and ``position_column``) as
    ``columns`` in order, the tracking ones computed (plus ``position_column`` if kept)."""
    positions = values.column(position_column)
    out = {}
    for name in columns:
        if name in TRACKING_COLUMNS:
            stored = values.column(name) if name in values.column_names else None
            out[name] = tracking_column(name, f, positions, stored)
        else:
            out[name] = values.column(name)
    if keep_positions:
        out[position_column] = positions
    return pa.table(out)


def require_whole_rows(f: DataFileMeta, field_names: Sequence[str], *, table: str) -> None:
    """Refuse to read ``f`` as whole rows unless its ``write_cols`` are every column of its
    schema followed by the row-tracking columns (what Paimon's row-tracking compaction writes):
    a partial-column file must be merged by row id (data evolution)."""
    if f.write_cols is not None and tuple(f.write_cols) != (*field_names, *TRACKING_COLUMNS):
        raise UnsupportedFeatureError(table=table, feature="data evolution (data-evolution.enabled)",
                                      operation="read",
                                      detail=f"file {f.file_name} holds only columns {list(f.write_cols)}")
