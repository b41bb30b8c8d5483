"""Oracles shared by the reliability harnesses (invariants of docs/reliability.md)."""

from __future__ import annotations

from paimonflow.core.binary_row import deserialize_row
from paimonflow.core.fs import join
from paimonflow.core.snapshot import Snapshot
from paimonflow.core.table import Table
from paimonflow.core.write import bucket_directory


def needed_files(table: Table) -> set[str]:
    """Every file a reader of a retained snapshot or tag needs (I4), failing if metadata is missing.

    A retained snapshot needs its manifest lists, manifests, index files, data files and changelog
    files. A tag needs what a batch read of it needs: its changelog went with its snapshot's
    expiry (as in Paimon), so a tag's changelog files are not required.
    """
    mio = table.manifest_io
    partition_types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    out: set[str] = set()

    def add(snapshot: Snapshot, *, with_changelog: bool) -> None:
        metas = list(mio.data_manifests(snapshot))
        lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        entries = list(mio.live_entries(snapshot))
        if with_changelog and snapshot.changelog_manifest_list:
            lists.append(snapshot.changelog_manifest_list)
            entries += mio.changelog_entries(snapshot)
            metas += mio._lists.read(snapshot.changelog_manifest_list)
        out.update(join(mio.manifest_dir, name) for name in lists if name)
        out.update(join(mio.manifest_dir, m.file_name) for m in metas)
        if snapshot.index_manifest:
            out.add(join(mio.manifest_dir, snapshot.index_manifest))
            out.update(e.file.external_path or join(table.index_dir, e.file.file_name)
                       for e in table.index_manifest.read(snapshot.index_manifest))
        if snapshot.statistics:
            out.add(join(table.path, "statistics", snapshot.statistics))
        for e in entries:
            values = tuple(deserialize_row(e.partition, partition_types))
            directory = bucket_directory(table.path, table.schema, table.options, values, e.bucket)
            out.add(e.file.external_path or join(directory, e.file.file_name))
            out.update(join(directory, x) for x in e.file.extra_files)

    manager = table.snapshot_manager
    for sid in manager.list_ids():
        add(manager.snapshot(sid), with_changelog=True)
    for snapshot in table.tag_manager.list_tags().values():
        add(snapshot, with_changelog=False)
    return out


def missing_needed_files(table: Table) -> list[str]:
    return sorted(p for p in needed_files(table) if not table.file_io.exists(p))
