"""Dagster's standard table metadata for a Paimon table, on every materialization the suite makes.

``dagster/table_name``, ``dagster/uri``, ``dagster/column_schema``, ``dagster/row_count`` and
(for a partition) ``dagster/partition_row_count`` are the keys Dagster's UI shows as the asset's
schema, row counts and location; ``paimon/snapshot_id``, ``paimon/commit_kind``,
``paimon/files_written`` and ``paimon/bytes_written`` say what the commit did (from the snapshot's
delta, so the same whichever engine committed).
"""

# No ``from __future__ import annotations``: kept like the other Dagster modules of the suite.

from pathlib import Path
from typing import Any

import dagster as dg

STORAGE_KIND = "paimon"


def column_schema(table: Any) -> dg.TableSchema:
    """The table's columns, types (Paimon SQL types), nullability and comments."""
    keys = set(table.primary_keys)
    return dg.TableSchema(columns=[
        dg.TableColumn(name=f.name, type=str(f.type), description=f.description,
                       constraints=dg.TableColumnConstraints(nullable=f.type.nullable,
                                                             unique=keys == {f.name}))
        for f in table.schema.fields])


def stored_row_count(table: Any, snapshot: Any) -> int | None:
    """Rows the table holds at ``snapshot`` when its metadata says so exactly: an append table
    without deletion vectors (the snapshot's record count). A primary-key table's rows are known
    only by merging its keys, a whole-table read the scheduler's step process should not do after
    every commit: None (the caller may know the count from the rows it wrote)."""
    if snapshot is None:
        return 0
    if table.primary_keys or table.options.deletion_vectors or snapshot.total_record_count is None:
        return None
    return int(snapshot.total_record_count)


def table_uri(path: str) -> str:
    """A table's location as a URI: object stores' as they are, a local directory as ``file://``."""
    return path if "://" in path else Path(path).absolute().as_uri()


def table_metadata(table: Any, *, snapshot_id: int | None, committed: bool = True,
                   partition_rows: int | None = None, rows: int | None = None,
                   row_count: bool = True) -> dict[str, Any]:
    """Standard metadata of ``table`` after the commit that made ``snapshot_id`` (``committed``:
    this materialization made it, so its files and bytes are reported). ``rows``: the table's row
    count when the caller knows it (else :func:`stored_row_count`); ``row_count=False``: none."""
    meta: dict[str, Any] = {
        "dagster/table_name": table.identifier,
        "dagster/uri": dg.MetadataValue.url(table_uri(table.path)),
        "dagster/storage_kind": STORAGE_KIND,
        "dagster/column_schema": column_schema(table),
    }
    snapshot = table.snapshot_manager.snapshot(snapshot_id) if snapshot_id else table.latest_snapshot()
    if snapshot is not None:
        meta["paimon/snapshot_id"] = snapshot.id
        meta["paimon/commit_kind"] = str(snapshot.commit_kind.value)
        if committed:
            stats = table.delta_stats(snapshot.id)
            meta["paimon/files_written"] = stats.added_files
            meta["paimon/bytes_written"] = stats.added_bytes
    if row_count:
        count = rows if rows is not None else stored_row_count(table, snapshot)
        if count is not None:
            meta["dagster/row_count"] = count
    if partition_rows is not None:
        meta["dagster/partition_row_count"] = partition_rows
    return meta


__all__ = ["column_schema", "stored_row_count", "table_metadata"]
