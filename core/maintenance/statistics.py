"""Table statistics (Paimon's ``ANALYZE TABLE``): row count, size and per-column statistics of the
latest snapshot, written as ``statistics/stat-<uuid>-0`` (Paimon's ``Statistics`` JSON) and
committed as an ANALYZE snapshot that changes no rows. Later snapshots inherit the file while
the schema stays the same.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CorruptMetadataError
from ..fs import join
from .context import TableOps


def _column_stats(column: pa.ChunkedArray, col_id: int) -> dict:
    out: dict[str, object] = {"colId": col_id, "nullCount": column.null_count}
    t = column.type
    if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        out["distinctCount"] = None
    else:
        out["distinctCount"] = pc.count_distinct(column).as_py()
        if column.length() - column.null_count:
            bounds = pc.min_max(column)
            out["min"], out["max"] = str(bounds["min"].as_py()), str(bounds["max"].as_py())
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        lengths = pc.binary_length(column)
        if column.length() - column.null_count:
            out["avgLen"] = round(pc.mean(lengths).as_py())
            out["maxLen"] = pc.max(lengths).as_py()
    return out


def analyze(table: TableOps, columns: Sequence[str] | None = None, *, commit_user: str | None = None):
    """Compute the statistics of the latest snapshot and commit them as an ANALYZE snapshot."""
    latest = table.snapshot_manager.latest()
    if latest is None:
        return None
    reader = table.split_reader()  # the table's columns (the schemaId recorded), not the snapshot's own
    rows = reader.read(table.plan(snapshot_id=latest.id))
    ids = {f.name: f.id for f in table.schema.fields}
    wanted = list(columns) if columns is not None else list(rows.column_names)
    reader.output_schema(wanted)  # unknown columns fail with a SchemaError
    doc = {"snapshotId": latest.id, "schemaId": table.schema.id, "mergedRecordCount": rows.num_rows,
           "mergedRecordSize": rows.nbytes,
           "colStats": {name: _column_stats(rows.column(name), ids[name]) for name in wanted}}
    name = f"stat-{uuid.uuid4()}-0"
    table.file_io.write_bytes(join(table.path, "statistics", name), json.dumps(doc, indent=2).encode())
    return table.new_commit(commit_user).commit_statistics(name)


def read_statistics(table: TableOps, snapshot=None) -> dict | None:
    """The statistics JSON the snapshot (default: latest) carries, or None."""
    snapshot = snapshot or table.snapshot_manager.latest()
    if snapshot is None or not snapshot.statistics:
        return None
    path = join(table.path, "statistics", snapshot.statistics)
    try:
        return json.loads(table.file_io.read_bytes(path))
    except ValueError as exc:
        raise CorruptMetadataError(path, f"not JSON: {exc}") from None
