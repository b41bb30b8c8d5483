"""The rows waiting in the postpone bucket (-2) of a postpone-bucket table, read as stored.

Batch reads never show them (Paimon's ``onlyReadRealBuckets``). A streaming read of a table
without a changelog producer does: its first, full phase emits them unmerged beside the merged
rows of the real buckets (Paimon's no-merge reader for postpone splits), and each later APPEND
snapshot's postpone files are its delta (:func:`~paimonflow.core.read.incremental.read_changes`
with ``postponed``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..data import data_file as df
from ..data.binary_row import deserialize_row
from ..meta.layout import POSTPONE_BUCKET
from .scan import Split


def postponed_rows(table, snapshot_id: int, columns: Sequence[str]) -> tuple[pa.Table, np.ndarray]:
    """``columns`` of every row in snapshot ``snapshot_id``'s postpone files (file by file in
    creation order, rows as written) and their row kinds."""
    snapshot = table.snapshot_manager.snapshot(snapshot_id)
    entries = [e for e in table.manifest_io.live_entries(snapshot) if e.bucket == POSTPONE_BUCKET]
    reader = table.split_reader()
    types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    parts, kinds = [], []
    for e in sorted(entries, key=lambda e: (e.file.creation_time_millis, e.file.file_name)):
        split = Split(partition=tuple(deserialize_row(e.partition, types)), bucket=POSTPONE_BUCKET,
                      total_buckets=e.total_buckets, files=(e.file,))
        rows = reader.read_file(split, e.file, columns, system=[df.VALUE_KIND])
        kinds.append(rows.column(df.VALUE_KIND).to_numpy())
        parts.append(rows.drop_columns([df.VALUE_KIND]))
    if not parts:
        return reader.output_schema(list(columns)).empty_table(), np.zeros(0, np.int8)
    return pa.concat_tables(parts), np.concatenate(kinds).astype(np.int8)
