"""Runs INSIDE the pypaimon 2.1.0 virtual environment (imported by ``oracle_driver.py``, never by
paimonflow): writes the "feature frontier" tables, one per table feature pypaimon 2.1.0 can
write, and reads them back the way Paimon's rules say a reader sees them.

Every table gets at least four commits: inserts, then updates of existing keys (primary-key
tables) or more inserts, then a delete where the kind allows one (a ``-D`` row, an overwritten
partition, a delete by row id), then more changes; tag ``t1`` sits on snapshot 2, in the middle.
The recipes live here, keyed by feature name; ``tests/interop/frontier.py`` lists the same names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

TAG = "t1"
TAG_SNAPSHOT = 2
ROW_ID = "_ROW_ID"

_ROW_TRACKING = {"row-tracking.enabled": "true"}
_DATA_EVOLUTION = {**_ROW_TRACKING, "data-evolution.enabled": "true"}


@dataclass(frozen=True)
class Recipe:
    """How one frontier table is made: its keys, options and commit plan.

    ``plan``: ``pk`` (upserts, a ``-D`` row when ``deletes``), ``append`` (inserts; an overwritten
    partition when partitioned), ``postpone`` (postpone-bucket and fixed-bucket writes mixed),
    ``evolution`` (row-id column updates; deletes by row id with deletion vectors),
    ``global_index`` (btree and bitmap global indexes between inserts) or ``blob``.
    ``external_dirs``: how many ``file://`` folders outside the table receive its data files.
    """

    plan: str
    options: dict[str, str] = field(default_factory=dict)
    partitioned: bool = False
    deletes: bool = True
    partial: bool = False  # updates leave columns null (partial-update)
    external_dirs: int = 0
    variant: bool = False  # a VARIANT column ``doc`` (Paimon's unshredded Parquet variant)


RECIPES: dict[str, Recipe] = {
    # merge engines
    "pk_deduplicate": Recipe("pk", {"bucket": "2"}),
    "pk_deduplicate_partitioned": Recipe("pk", {"bucket": "2"}, partitioned=True),
    "pk_partial_update": Recipe("pk", {"bucket": "1", "merge-engine": "partial-update"}, deletes=False, partial=True),
    "pk_aggregation": Recipe("pk", {"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                                    "fields.amount.aggregate-function": "max"}, deletes=False),
    "pk_first_row": Recipe("pk", {"bucket": "1", "merge-engine": "first-row"}, deletes=False),
    "pk_sequence_field": Recipe("pk", {"bucket": "1", "sequence.field": "v"}),
    # deletion vectors
    "pk_deletion_vectors": Recipe("pk", {"bucket": "1", "deletion-vectors.enabled": "true"}),
    "pk_deletion_vectors_partitioned": Recipe("pk", {"bucket": "2", "deletion-vectors.enabled": "true"},
                                              partitioned=True),
    # changelog producers
    "pk_changelog_input": Recipe("pk", {"bucket": "1", "changelog-producer": "input"}),
    "pk_changelog_lookup": Recipe("pk", {"bucket": "1", "changelog-producer": "lookup"}),
    "pk_changelog_full_compaction": Recipe("pk", {"bucket": "1", "changelog-producer": "full-compaction"}),
    # file formats
    "pk_orc": Recipe("pk", {"bucket": "1", "file.format": "orc"}),
    "pk_avro": Recipe("pk", {"bucket": "1", "file.format": "avro"}),
    "append_orc": Recipe("append", {"file.format": "orc"}, partitioned=True),
    "append_avro": Recipe("append", {"file.format": "avro"}, partitioned=True),
    # bucket modes
    "pk_dynamic_bucket": Recipe("pk", {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}, partitioned=True),
    "pk_postpone_bucket": Recipe("postpone", {"bucket": "-2"}),
    "append_fixed_bucket": Recipe("append", {"bucket": "2", "bucket-key": "id"}, partitioned=True),
    "append_unaware_bucket": Recipe("append", {"bucket": "-1"}, partitioned=True),
    # where data files live
    "pk_external_paths": Recipe("pk", {"bucket": "2", "data-file.external-paths.strategy": "round-robin"},
                                external_dirs=2),
    "append_external_paths": Recipe("append", {"data-file.external-paths.strategy": "specific-fs",
                                               "data-file.external-paths.specific-fs": "file"},
                                    partitioned=True, external_dirs=1),
    "pk_path_directory": Recipe("pk", {"bucket": "2", "data-file.path-directory": "data"}),
    "append_path_directory": Recipe("append", {"data-file.path-directory": "data"}, partitioned=True),
    # file indexes (options only: pypaimon 2.1.0 writes no index files for them)
    "pk_file_index": Recipe("pk", {"bucket": "1", "file-index.bloom-filter.columns": "name",
                                   "file-index.bitmap.columns": "op"}),
    "append_file_index": Recipe("append", {"file-index.bloom-filter.columns": "name",
                                           "file-index.bitmap.columns": "dt",
                                           "file-index.in-manifest-threshold": "1 b"}, partitioned=True),
    # row tracking and data evolution
    "append_row_tracking": Recipe("append", _ROW_TRACKING),
    "append_row_tracking_partitioned": Recipe("append", _ROW_TRACKING, partitioned=True),
    "append_data_evolution": Recipe("evolution", _DATA_EVOLUTION),
    "append_data_evolution_dv": Recipe("evolution", {**_DATA_EVOLUTION, "deletion-vectors.enabled": "true"}),
    "append_global_index": Recipe("global_index", {**_DATA_EVOLUTION, "global-index.enabled": "true"}),
    "append_blob": Recipe("blob", _DATA_EVOLUTION),
    # column types
    "pk_variant": Recipe("pk", {"bucket": "1"}, variant=True),
}


def _schema(recipe: Recipe) -> pa.Schema:
    key_nullable = recipe.plan not in ("pk", "postpone")
    fields = [pa.field("id", pa.int64(), nullable=key_nullable)]
    if recipe.partitioned:
        fields.append(pa.field("dt", pa.string(), nullable=key_nullable))
    fields += [pa.field("name", pa.string()), pa.field("v", pa.int64())]
    if recipe.plan in ("pk", "postpone"):
        fields += [pa.field("amount", pa.float64()), pa.field("op", pa.string())]
    if recipe.plan == "blob":
        fields.append(pa.field("pic", pa.large_binary()))
    if recipe.variant:
        fields.append(pa.field("doc", _VARIANT))
    return pa.schema(fields)


#: pypaimon's Arrow form of VARIANT (it maps exactly this struct to the type)
_VARIANT = pa.struct([pa.field("value", pa.binary(), nullable=False), pa.field("metadata", pa.binary(), nullable=False)])


def _variant(i: int, generation: int) -> dict:
    from pypaimon.data.generic_variant import GenericVariant

    v = GenericVariant.from_python({"id": i, "generation": generation, "tags": [f"t{i}", None]})
    return {"value": v.value(), "metadata": v.metadata()}


def _rows(schema: pa.Schema, ids, *, generation: int = 0, op: str = "+I", partial: bool = False) -> pa.Table:
    """Rows for keys ``ids``: values derived from the key and ``generation`` (0 = first write);
    ``partial`` leaves ``name`` null (a partial update)."""
    columns: dict[str, list] = {}
    for name in schema.names:
        if name == "id":
            columns[name] = list(ids)
        elif name == "dt":
            columns[name] = ["a" if i % 2 else "b" for i in ids]
        elif name == "name":
            columns[name] = [None if partial else f"n{i}-g{generation}" for i in ids]
        elif name == "v":
            columns[name] = [i * 10 + generation for i in ids]
        elif name == "amount":
            columns[name] = [i * 1.5 + generation for i in ids]
        elif name == "op":
            columns[name] = [op] * len(ids)
        elif name == "pic":
            columns[name] = [bytes([i % 256]) * (i * 37 + generation) for i in ids]
        elif name == "doc":
            columns[name] = [_variant(i, generation) for i in ids]
    return pa.table(columns, schema=schema)


class _Writer:
    """One pypaimon table and the commits made to it."""

    def __init__(self, table, schema: pa.Schema) -> None:
        self.table, self.schema = table, schema

    def write(self, data: pa.Table, *, builder=None, overwrite: dict | None = None) -> None:
        builder = builder or self.table.new_batch_write_builder()
        if overwrite is not None:
            builder = builder.overwrite(overwrite)
        writer, commit = builder.new_write(), builder.new_commit()
        writer.write_arrow(data)
        commit.commit(writer.prepare_commit())
        writer.close()
        commit.close()

    def update_by_row_id(self, column: str, row_ids: list[int], values: list) -> None:
        builder = self.table.new_batch_write_builder()
        arrow_type = self.schema.field(column).type
        update = pa.table({ROW_ID: pa.array(row_ids, pa.int64()), column: pa.array(values, arrow_type)})
        messages = builder.new_update().with_update_type([column]).update_by_arrow_with_row_id(update)
        self._commit(builder, messages)

    def delete_by_row_id(self, row_ids: list[int]) -> None:
        builder = self.table.new_batch_write_builder()
        self._commit(builder, builder.new_update().delete_by_row_id(row_ids))

    @staticmethod
    def _commit(builder, messages) -> None:
        commit = builder.new_commit()
        commit.commit(messages)
        commit.close()


def _plan_pk(w: _Writer, recipe: Recipe) -> None:
    s = w.schema
    w.write(_rows(s, range(1, 7)))
    w.write(pa.concat_tables([_rows(s, [2, 3], generation=1, op="+U", partial=recipe.partial),
                              _rows(s, [7, 8])]))
    if recipe.deletes:
        w.write(pa.concat_tables([_rows(s, [4], op="-D"), _rows(s, [5], generation=2, op="+U")]))
    else:
        w.write(_rows(s, [4, 5], generation=2, op="+U", partial=recipe.partial))
    w.write(pa.concat_tables([_rows(s, [1], generation=3, op="+U", partial=recipe.partial), _rows(s, [9])]))


def _plan_append(w: _Writer, recipe: Recipe) -> None:
    s = w.schema
    w.write(_rows(s, range(1, 5)))
    w.write(_rows(s, [5, 6, 7, 1]))  # a duplicate of row 1: append tables keep both
    if recipe.partitioned:  # the delete: partition dt=a replaced
        w.write(_rows(s, [11, 13], generation=1), overwrite={"dt": "a"})
    else:
        w.write(_rows(s, [2, 3], generation=1))
    w.write(_rows(s, [8, 9]))


def _plan_postpone(w: _Writer, recipe: Recipe) -> list[pa.Table]:
    """Keys written to the postpone bucket (invisible to batch reads until a compaction assigns
    them a bucket) never meet keys written to real buckets. Returns the postponed rows."""
    s = w.schema
    postponed = [_rows(s, [1, 2, 3]), _rows(s, [20, 21])]
    w.write(postponed[0])
    fixed = w.table.new_postpone_fixed_bucket_write_builder
    w.write(_rows(s, [4, 5, 6]), builder=fixed())
    w.write(pa.concat_tables([_rows(s, [4], generation=1, op="+U"), _rows(s, [5], op="-D"), _rows(s, [7])]),
            builder=fixed())
    w.write(postponed[1])
    w.write(_rows(s, [6], generation=2, op="+U"), builder=fixed())
    return postponed


def _plan_evolution(w: _Writer, recipe: Recipe) -> None:
    s = w.schema
    w.write(_rows(s, range(1, 5)))  # row ids 0..3
    w.write(_rows(s, [5, 6, 7]))  # row ids 4..6
    w.update_by_row_id("v", [0, 4], [1000, 5000])  # a partial-column file
    if recipe.options.get("deletion-vectors.enabled") == "true":
        w.delete_by_row_id([1, 5])
    else:
        w.update_by_row_id("name", [2, 6], ["renamed-2", "renamed-6"])
    w.write(_rows(s, [8, 9]))


def _plan_global_index(w: _Writer, recipe: Recipe) -> None:
    s = w.schema
    w.write(_rows(s, range(1, 5)))
    w.write(_rows(s, [5, 6, 7]))
    w.table.create_global_index("id", "btree")
    w.write(_rows(s, [8, 9]))
    w.table.create_global_index("name", "bitmap")


def _plan_blob(w: _Writer, recipe: Recipe) -> None:
    s = w.schema
    w.write(_rows(s, [1, 2, 3]))
    w.write(_rows(s, [4, 5]))
    w.update_by_row_id("name", [0, 3], ["renamed-0", "renamed-3"])
    w.write(_rows(s, [6]))


PLANS = {"pk": _plan_pk, "append": _plan_append, "postpone": _plan_postpone, "evolution": _plan_evolution,
         "global_index": _plan_global_index, "blob": _plan_blob}


def _write_ipc(path: str, table: pa.Table) -> None:
    with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)


def make_frontier_table(op: dict) -> dict:
    """Create and fill table ``identifier`` of kind ``feature`` in ``warehouse``; external data
    folders go under ``external_root``; ``out_dir`` receives the Arrow IPC files the answer names:
    ``fresh_ipc`` (rows with new keys, for another engine's write) and ``postponed_ipc`` (rows
    only in the postpone bucket, visible after a compaction; postpone tables only)."""
    recipe = RECIPES[op["feature"]]
    options = dict(recipe.options)
    external = []
    for i in range(recipe.external_dirs):
        folder = os.path.join(op["external_root"], f"ext-{i}")
        os.makedirs(folder, exist_ok=True)
        external.append(folder)
    if external:
        options["data-file.external-paths"] = ",".join("file://" + folder for folder in external)
    if recipe.plan in ("pk", "postpone"):
        options["rowkind.field"] = "op"
    schema = _schema(recipe)
    catalog = CatalogFactory.create({"warehouse": op["warehouse"]})
    catalog.create_database(op["identifier"].split(".")[0], True)
    primary_keys = None
    if recipe.plan in ("pk", "postpone"):
        primary_keys = ["id", "dt"] if recipe.partitioned else ["id"]
    catalog.create_table(op["identifier"], Schema.from_pyarrow_schema(
        schema, primary_keys=primary_keys, partition_keys=["dt"] if recipe.partitioned else None,
        options=options), False)
    table = catalog.get_table(op["identifier"])
    postponed = PLANS[recipe.plan](_Writer(table, schema), recipe)
    table.create_tag(TAG, snapshot_id=TAG_SNAPSHOT)

    out_dir = op["out_dir"]
    os.makedirs(out_dir, exist_ok=True)
    fresh = os.path.join(out_dir, "fresh.arrow")
    _write_ipc(fresh, _rows(schema, [100, 101, 102], generation=7))
    answer = {"feature": op["feature"], "fresh_ipc": fresh, "external_dirs": external,
              "snapshots": sorted(s.id for s in table.snapshot_manager().list_snapshots()),
              "latest_snapshot": table.snapshot_manager().get_latest_snapshot().id,
              "tag": TAG, "tag_snapshot": TAG_SNAPSHOT, "table_path": table.table_path,
              "row_tracking": bool(table.options.row_tracking_enabled()),
              "skips_level0": bool(table.options.batch_scan_skip_level0()), "columns": schema.names,
              "postponed_ipc": None}
    if postponed:
        answer["postponed_ipc"] = os.path.join(out_dir, "postponed.arrow")
        _write_ipc(answer["postponed_ipc"], pa.concat_tables(postponed))
    return answer


def read_rows(op: dict) -> dict:
    """Rows of the latest snapshot, of ``snapshot_id`` or of ``tag``, into ``out_ipc``;
    ``with_row_id`` adds ``_ROW_ID`` (row-tracking tables); ``all_levels`` reads level-0 files
    too where pypaimon's batch scan skips them (first-row and deletion-vector primary-key tables
    before a compaction: Paimon's writers compact those at once, pypaimon's never do)."""
    table = CatalogFactory.create({"warehouse": op["warehouse"]}).get_table(op["identifier"])
    if op.get("snapshot_id") is not None:
        table = table.copy({"scan.snapshot-id": str(op["snapshot_id"])})
    if op.get("tag") is not None:
        table = table.copy({"scan.tag-name": op["tag"]})
    if op.get("all_levels") and table.options.batch_scan_skip_level0():
        if table.options.deletion_vectors_enabled():
            table = table.copy({"deletion-vectors.merge-on-read": "true"})
        else:  # first-row: no option turns the skip off
            table = table.copy({})
            table.options.batch_scan_skip_level0 = lambda: False
    builder = table.new_read_builder()
    if op.get("with_row_id"):
        builder = builder.with_projection([*(f.name for f in table.table_schema.fields), ROW_ID])
    out = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    _write_ipc(op["out_ipc"], out)
    return {"rows": out.num_rows}


def missing_files(op: dict) -> dict:
    """Files a snapshot (every one left) or a tag references that are gone, as pypaimon resolves
    them: manifest lists, manifests, data files (in the postpone bucket, path directories and
    external folders too) with their extra files, index files (deletion vectors, dynamic-bucket
    hashes, global indexes), and the snapshots' changelog files (a tag keeps no changelog:
    Paimon's snapshot expiry deletes an expired snapshot's changelog files, tagged or not).
    Batch reads of the latest snapshot miss most of these (older snapshots, postponed files,
    global indexes), so the removal of a live file shows here first."""
    from pypaimon.manifest.index_manifest_file import IndexManifestFile
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    table = CatalogFactory.create({"warehouse": op["warehouse"]}).get_table(op["identifier"])
    file_io, paths = table.file_io, table.path_factory()
    lists, manifests, index_manifests = ManifestListManager(table), ManifestFileManager(table), IndexManifestFile(table)
    holders = {f"snapshot {s.id}": s for s in table.snapshot_manager().list_snapshots()}
    holders.update((f"tag {name}", table.tag_manager().get(name)) for name in op.get("tags") or [])

    def gone(snapshot, changelog: bool) -> list[str]:
        """The files ``snapshot`` needs that are missing; stops at a missing metadata file."""
        def lost(paths_: list[str]) -> list[str]:
            return [path for path in paths_ if not file_io.exists(path)]

        names = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        names += [snapshot.changelog_manifest_list] if changelog and snapshot.changelog_manifest_list else []
        names += [snapshot.index_manifest] if snapshot.index_manifest else []
        found = lost([f"{paths.manifest_path()}/{name}" for name in names])
        if found:
            return found
        metas = lists.read_all(snapshot) + (lists.read_changelog(snapshot) if changelog else [])
        found = lost([f"{paths.manifest_path()}/{meta.file_name}" for meta in metas])
        if found:
            return found
        files = []
        for entry in manifests.read_entries_parallel(metas):
            files += entry.file.collect_files(paths.bucket_path(tuple(entry.partition.values), entry.bucket))
        for entry in index_manifests.read(snapshot.index_manifest) if snapshot.index_manifest else []:
            index = entry.index_file
            if index.index_type in ("DELETION_VECTORS", "HASH"):
                files.append(paths.bucket_index_path(tuple(entry.partition.values), entry.bucket, index, file_io))
            else:
                files.append(index.external_path or paths.global_index_path_factory().to_path(index.file_name))
        return lost(files)

    missing = []
    for holder, snapshot in holders.items():
        if snapshot is None:
            missing.append(f"{holder}: the tag file itself")
        else:
            missing += [f"{holder}: {path}" for path in gone(snapshot, changelog=holder.startswith("snapshot"))]
    return {"missing": missing}


FRONTIER_OPS = {"make_frontier_table": make_frontier_table, "read_rows": read_rows, "missing_files": missing_files}
