"""Compaction of row-tracking append tables: every row keeps its ``_ROW_ID`` and its
``_SEQUENCE_NUMBER``.

Apache Paimon's append compaction of a row-tracking table writes both as columns of the new
files (its compaction writers use ``SpecialFields.rowTypeWithRowTracking``): ``write_cols`` are
the table's columns followed by ``_ROW_ID`` and ``_SEQUENCE_NUMBER``, ``file_source`` is
COMPACT, the sequence bounds are the least and greatest stored sequence numbers (the commit
keeps them), and ``first_row_id`` is null. Java's readers take the stored ids; pypaimon 2.1.0,
the reference peer, ignores them and reads null row ids from a file without ``first_row_id``.

paimonflow writes the same layout and, so that both read the same ids, also sets
``first_row_id``: it compacts only runs of files whose row ids follow each other (ordered by
``first_row_id``), writes rows in row-id order, and starts a new file wherever deleted rows left
a gap, so every new file holds one contiguous range of ids (``first_row_id`` + position equals
the stored id). Files without ``first_row_id`` (Java's compactions) are left as they are.
Statistics cover the table's columns and are named by ``value_stats_cols``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..errors import UnsupportedFeatureError
from ..meta.manifest import DataFileMeta
from ..read.row_tracking import ROW_ID, SEQUENCE_NUMBER
from ..read.scan import Split, SplitReader


def contiguous_runs(files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
    """``files`` with row ids, ordered by ``first_row_id``, cut where ids do not follow on;
    files without ``first_row_id`` are not part of any run."""
    tracked = sorted((f for f in files if f.first_row_id is not None), key=lambda f: f.first_row_id or 0)
    runs: list[list[DataFileMeta]] = []
    for f in tracked:
        last = runs[-1][-1] if runs else None
        if last is not None and (last.first_row_id or 0) + last.row_count == f.first_row_id:
            runs[-1].append(f)
        else:
            runs.append([f])
    return runs


def _id_breaks(ids: np.ndarray) -> list[int]:
    """Positions where sorted ``ids`` stop following on (gaps), with 0 and the end."""
    return [0, *(np.flatnonzero(np.diff(ids) != 1) + 1).tolist(), len(ids)]


def rewrite_keeping_row_ids(reader: SplitReader, writer, split: Split, columns: Sequence[str],
                            *, table: str) -> tuple[DataFileMeta, ...]:
    """Rewrite ``split``'s files (one contiguous run, see :func:`contiguous_runs`) into level-0
    files storing each row's ``_ROW_ID`` and ``_SEQUENCE_NUMBER``, each file one range of ids."""
    values = reader.read_split(split, columns=[*columns, ROW_ID, SEQUENCE_NUMBER])
    if values.column(ROW_ID).null_count:
        raise UnsupportedFeatureError(table=table, feature="row tracking (row-tracking.enabled)",
                                      operation="compaction", detail="rows without row ids")
    stored = pa.schema([*(values.schema.field(c) for c in columns),
                        pa.field(ROW_ID, pa.int64(), nullable=False),
                        pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False)])
    values = values.select([*columns, ROW_ID, SEQUENCE_NUMBER]).sort_by(ROW_ID).cast(stored).combine_chunks()
    ids = np.asarray(values.column(ROW_ID).to_numpy(), dtype=np.int64)
    sequence = np.asarray(values.column(SEQUENCE_NUMBER).to_numpy(), dtype=np.int64)
    write_cols = (*columns, ROW_ID, SEQUENCE_NUMBER)
    out: list[DataFileMeta] = []
    breaks = _id_breaks(ids)
    for start, end in itertools.pairwise(breaks):  # one write per range of ids, not per row
        part = values.slice(start, end - start)
        written = writer.write_rewritten(split.partition, split.bucket, part, np.zeros(end - start, np.int8),
                                         sequence[start:end], level=0)
        first = int(ids[start])
        for f in written:
            out.append(dataclasses.replace(
                f, write_cols=write_cols, first_row_id=first,
                value_stats_cols=tuple(columns) if f.value_stats_cols is None else f.value_stats_cols))
            first += f.row_count
    return tuple(out)
