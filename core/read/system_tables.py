"""System tables (``$snapshots``, ``$schemas``, ``$options``, ``$files``, ``$manifests``, ``$tags``)
as Arrow tables, with Apache Paimon's column names."""

from __future__ import annotations

import json
from collections.abc import Callable

import pyarrow as pa

from ..data.binary_row import deserialize_row
from ..errors import UnknownSystemTableError
from ..fs import join
from ..meta.layout import bucket_directory
from ..meta.schema import type_to_json_value

_TS = pa.timestamp("ms", tz="UTC")  # instants (epoch milliseconds): printed with their zone


def _snapshots(table) -> pa.Table:
    rows = list(table.snapshot_manager.snapshots())
    return pa.table({
        "snapshot_id": pa.array([s.id for s in rows], pa.int64()),
        "schema_id": pa.array([s.schema_id for s in rows], pa.int64()),
        "commit_user": pa.array([s.commit_user for s in rows], pa.string()),
        "commit_identifier": pa.array([s.commit_identifier for s in rows], pa.int64()),
        "commit_kind": pa.array([s.commit_kind.value for s in rows], pa.string()),
        "commit_time": pa.array([s.time_millis for s in rows], pa.int64()).cast(_TS),
        "base_manifest_list": pa.array([s.base_manifest_list for s in rows], pa.string()),
        "delta_manifest_list": pa.array([s.delta_manifest_list for s in rows], pa.string()),
        "changelog_manifest_list": pa.array([s.changelog_manifest_list for s in rows], pa.string()),
        "total_record_count": pa.array([s.total_record_count for s in rows], pa.int64()),
        "delta_record_count": pa.array([s.delta_record_count for s in rows], pa.int64()),
        "changelog_record_count": pa.array([s.changelog_record_count for s in rows], pa.int64()),
        "watermark": pa.array([s.watermark for s in rows], pa.int64()),
    })


def _schemas(table) -> pa.Table:
    manager = table.schema_manager
    rows = [manager.schema(i) for i in manager.list_ids()]
    return pa.table({
        "schema_id": pa.array([s.id for s in rows], pa.int64()),
        "fields": pa.array([json.dumps([{"id": f.id, "name": f.name, "type": type_to_json_value(f.type)}
                                        for f in s.fields]) for s in rows], pa.string()),
        "partition_keys": pa.array([json.dumps(list(s.partition_keys)) for s in rows], pa.string()),
        "primary_keys": pa.array([json.dumps(list(s.primary_keys)) for s in rows], pa.string()),
        "options": pa.array([json.dumps(dict(s.options)) for s in rows], pa.string()),
        "comment": pa.array([s.comment for s in rows], pa.string()),
        "update_time": pa.array([s.time_millis for s in rows], pa.int64()).cast(_TS),
    })


def _options(table) -> pa.Table:
    items = sorted(table.schema.options.items())
    return pa.table({"key": pa.array([k for k, _ in items], pa.string()),
                     "value": pa.array([v for _, v in items], pa.string())})


def _partition_text(keys, values) -> str | None:
    if not keys:
        return None
    return "{" + ", ".join(f"{k}={v}" for k, v in zip(keys, values, strict=True)) + "}"


def _files(table) -> pa.Table:
    snapshot = table.latest_snapshot()
    entries = table.manifest_io.live_entries(snapshot) if snapshot is not None else []
    keys = list(table.partition_keys)
    types = [table.arrow_schema.field(k).type for k in keys]
    cols: dict[str, list] = {n: [] for n in (
        "partition", "bucket", "file_path", "file_format", "schema_id", "level", "record_count",
        "file_size_in_bytes", "min_sequence_number", "max_sequence_number", "creation_time", "delete_row_count",
        "file_source")}
    for e in entries:
        values = deserialize_row(e.partition, types)
        f = e.file
        cols["partition"].append(_partition_text(keys, values))
        cols["bucket"].append(e.bucket)
        directory = bucket_directory(table.path, table.schema, table.options, values, e.bucket)
        cols["file_path"].append(f.external_path or join(directory, f.file_name))
        cols["file_format"].append(f.file_name.rsplit(".", 1)[-1])
        cols["schema_id"].append(f.schema_id)
        cols["level"].append(f.level)
        cols["record_count"].append(f.row_count)
        cols["file_size_in_bytes"].append(f.file_size)
        cols["min_sequence_number"].append(f.min_sequence_number)
        cols["max_sequence_number"].append(f.max_sequence_number)
        cols["creation_time"].append(f.creation_time_millis)
        cols["delete_row_count"].append(f.delete_row_count)
        cols["file_source"].append({0: "APPEND", 1: "COMPACT"}.get(f.file_source) if f.file_source is not None else None)
    schema = pa.schema([
        ("partition", pa.string()), ("bucket", pa.int32()), ("file_path", pa.string()), ("file_format", pa.string()),
        ("schema_id", pa.int64()), ("level", pa.int32()), ("record_count", pa.int64()),
        ("file_size_in_bytes", pa.int64()), ("min_sequence_number", pa.int64()), ("max_sequence_number", pa.int64()),
        ("creation_time", pa.int64()), ("delete_row_count", pa.int64()), ("file_source", pa.string()),
    ])
    out = pa.table(cols, schema=schema)
    return out.set_column(out.schema.get_field_index("creation_time"), "creation_time",
                          out.column("creation_time").cast(_TS))


def _manifests(table) -> pa.Table:
    snapshot = table.latest_snapshot()
    metas = table.manifest_io.data_manifests(snapshot) if snapshot is not None else []
    return pa.table({
        "file_name": pa.array([m.file_name for m in metas], pa.string()),
        "file_size": pa.array([m.file_size for m in metas], pa.int64()),
        "num_added_files": pa.array([m.num_added_files for m in metas], pa.int64()),
        "num_deleted_files": pa.array([m.num_deleted_files for m in metas], pa.int64()),
        "schema_id": pa.array([m.schema_id for m in metas], pa.int64()),
    })


def _tags(table) -> pa.Table:
    tags = table.tag_manager.list_tags()
    names = sorted(tags)
    return pa.table({
        "tag_name": pa.array(names, pa.string()),
        "snapshot_id": pa.array([tags[n].id for n in names], pa.int64()),
        "schema_id": pa.array([tags[n].schema_id for n in names], pa.int64()),
        "commit_time": pa.array([tags[n].time_millis for n in names], pa.int64()).cast(_TS),
        "record_count": pa.array([tags[n].total_record_count for n in names], pa.int64()),
    })


def _branches(table) -> pa.Table:
    """Paimon's ``$branches`` (branch_name, create_time), plus where each branch came from."""
    manager = table.branches
    infos = [manager.info(n) for n in manager.list()]
    return pa.table({
        "branch_name": pa.array([i.name for i in infos], pa.string()),
        "create_time": pa.array([i.create_time_millis for i in infos], pa.int64()).cast(_TS),
        "from_tag": pa.array([i.from_tag for i in infos], pa.string()),
        "earliest_snapshot_id": pa.array([i.earliest_snapshot for i in infos], pa.int64()),
        "latest_snapshot_id": pa.array([i.latest_snapshot for i in infos], pa.int64()),
    })


def _audit_log(table) -> pa.Table:
    """The latest snapshot's rows with their row kind first (``rowkind``: ``+I`` or ``+U`` for a
    key whose newest record was an update), as Paimon's batch ``$audit_log``."""
    from ..data import data_file as df

    splits = table.plan()
    reader = table.split_reader()
    names = list(table.arrow_schema.names)
    kinds_of = pa.array(df.ROW_KIND_NAMES)
    parts = []
    for split in splits:
        if table.primary_keys and not table.options.deletion_vectors:
            merged = reader.merge_files(split, drop_retractions=True)
            rows = merged.select(names)
            kinds = merged.column(df.VALUE_KIND).cast(pa.int64())
        else:
            rows = reader.read_split(split)
            kinds = pa.array([0] * rows.num_rows, pa.int64())
        parts.append(rows.add_column(0, "rowkind", kinds_of.take(kinds)))
    if not parts:
        empty = table.arrow_schema.empty_table()
        return empty.add_column(0, "rowkind", pa.array([], pa.string()))
    return pa.concat_tables(parts)


def _read_optimized(table) -> pa.Table:
    return table.read(read_optimized=True)


def _index_files(table) -> pa.Table:
    entries = table.index_entries(table.latest_snapshot())
    types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    keys = list(table.partition_keys)
    return pa.table({
        "partition": pa.array([_partition_text(keys, deserialize_row(e.partition, types)) for e in entries],
                              pa.string()),
        "bucket": pa.array([e.bucket for e in entries], pa.int32()),
        "index_type": pa.array([e.file.index_type for e in entries], pa.string()),
        "file_name": pa.array([e.file.file_name for e in entries], pa.string()),
        "file_size": pa.array([e.file.file_size for e in entries], pa.int64()),
        "row_count": pa.array([e.file.row_count for e in entries], pa.int64()),
        "deleted_rows": pa.array([sum(r.cardinality or 0 for r in e.file.dv_ranges) if e.file.dv_ranges else None
                                  for e in entries], pa.int64()),
    })


SYSTEM_TABLES: dict[str, Callable] = {
    "snapshots": _snapshots, "schemas": _schemas, "options": _options,
    "files": _files, "manifests": _manifests, "tags": _tags,
    "read_optimized": _read_optimized, "ro": _read_optimized, "index_files": _index_files,
    "audit_log": _audit_log, "branches": _branches,
}


def load(table, name: str) -> pa.Table:
    loader = SYSTEM_TABLES.get(name.lstrip("$"))
    if loader is None:
        raise UnknownSystemTableError(f"unknown system table {name!r}; known: {', '.join(sorted(SYSTEM_TABLES))}")
    return loader(table)
