"""Oracles shared by the reliability harnesses (invariants of docs/reliability.md).

They walk the table's metadata themselves (snapshot -> manifest lists -> manifests -> files)
instead of asking the product's own ``referenced_files``, so a bug there cannot hide itself.
"""

from __future__ import annotations

import contextlib
import re

from paimonflow.core.data.binary_row import deserialize_row
from paimonflow.core.errors import FileNotFoundStorageError
from paimonflow.core.fs import join
from paimonflow.core.meta.changelogs import ChangelogManager
from paimonflow.core.meta.layout import bucket_directory
from paimonflow.core.meta.snapshots import Snapshot
from paimonflow.core.table import Table

METADATA_DIRS = ("snapshot", "schema", "tag", "consumer", "changelog", "branch")
_TEMP_FILE = re.compile(r"^\..+\.tmp$")  # a write in progress, or a crashed one: .<name>.<id>.tmp


def is_temp(path: str) -> bool:
    return _TEMP_FILE.match(path.rstrip("/").rsplit("/", 1)[-1]) is not None


def snapshot_ids_on_storage(table: Table) -> list[int]:
    """Ids of the ``snapshot/snapshot-<n>`` files, listed directly (not through the snapshot manager)."""
    ids = []
    for status in table.file_io.list_dir(table.snapshot_manager.directory):  # the branch's own
        name = status.path.rstrip("/").rsplit("/", 1)[-1]
        if name.startswith("snapshot-") and name[len("snapshot-"):].isdigit():
            ids.append(int(name[len("snapshot-"):]))
    return sorted(ids)


def needed_files(table: Table) -> tuple[set[str], list[str]]:
    """I4: ``(needed, missing)``: every file a reader of a retained snapshot or tag needs, and
    those of them storage lacks (a missing manifest list or manifest is reported, not followed).
    ``needed`` also holds a tag's changelog manifests where they still exist: they are referenced,
    so not garbage, though no read needs them.

    A retained snapshot needs its manifest lists, manifests, index files, statistics, data files
    and changelog files. A tag needs what a batch read of it needs: its changelog went with its
    snapshot's expiry (as in Paimon), so a tag's changelog files are not required.
    """
    mio = table.manifest_io
    partition_types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    needed: set[str] = set()
    missing: list[str] = []
    referenced: set[str] = set()  # optional extras: a tag's changelog manifests (expiry may keep them)

    def need(path: str) -> bool:
        needed.add(path)
        if table.file_io.exists(path):
            return True
        missing.append(path)
        return False

    def directory_of(e) -> str:
        values = tuple(deserialize_row(e.partition, partition_types))
        return bucket_directory(table.path, table.schema, table.options, values, e.bucket)

    def path_of(e) -> str:
        return e.file.external_path or join(directory_of(e), e.file.file_name)

    def walk(snapshot: Snapshot, what: str, *, with_changelog: bool) -> None:
        lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        if with_changelog:
            lists.append(snapshot.changelog_manifest_list)
        elif snapshot.changelog_manifest_list:  # a tag: kept if there, not needed (see above)
            kept_list = join(mio.manifest_dir, snapshot.changelog_manifest_list)
            if table.file_io.exists(kept_list):
                referenced.add(kept_list)
                referenced.update(join(mio.manifest_dir, m.file_name)
                                  for m in mio.manifest_list(snapshot.changelog_manifest_list))
                with contextlib.suppress(FileNotFoundStorageError):  # and the changelog files left
                    referenced.update(path_of(e) for e in mio.changelog_entries(snapshot))
        for name in lists:
            if name and need(join(mio.manifest_dir, name)):
                for meta in mio.manifest_list(name):
                    need(join(mio.manifest_dir, meta.file_name))
        if snapshot.index_manifest and need(join(mio.manifest_dir, snapshot.index_manifest)):
            for e in table.index_manifest.read(snapshot.index_manifest):
                need(e.file.external_path or join(table.index_dir, e.file.file_name))
        if snapshot.statistics:
            need(join(table.path, "statistics", snapshot.statistics))
        try:
            entries = list(mio.live_entries(snapshot))
            if with_changelog:
                entries += mio.changelog_entries(snapshot)
        except (FileNotFoundStorageError, LookupError) as exc:
            missing.append(f"{what}: {exc}")
            return
        for e in entries:
            need(path_of(e))
            for extra in e.file.extra_files:
                need(join(directory_of(e), extra))

    ids = snapshot_ids_on_storage(table)
    tags = table.tag_manager.list_tags()
    for sid in ids:
        snapshot = table.snapshot_manager.try_snapshot(sid)
        if snapshot is None:
            missing.append(f"snapshot-{sid} vanished while checking")
            continue
        walk(snapshot, f"snapshot {sid}", with_changelog=True)
    for name, tag in tags.items():
        walk(tag, f"tag {name}", with_changelog=False)
    changelogs = ChangelogManager(table.file_io, table.path, table.branch)
    for cid in changelogs.list_ids():  # a long-lived changelog needs its changelog files
        changelog = changelogs.try_changelog(cid)
        if changelog is None or not changelog.changelog_manifest_list:
            continue
        if need(join(mio.manifest_dir, changelog.changelog_manifest_list)):
            for meta in mio.manifest_list(changelog.changelog_manifest_list):
                need(join(mio.manifest_dir, meta.file_name))
            try:
                entries = mio.changelog_entries(changelog)
            except (FileNotFoundStorageError, LookupError) as exc:
                missing.append(f"changelog {cid}: {exc}")
                continue
            for e in entries:
                need(path_of(e))
    return needed | referenced, missing


def missing_needed_files(table: Table) -> list[str]:
    return sorted(needed_files(table)[1])


def _files(table: Table, path: str) -> list[str]:
    out = []
    for status in table.file_io.list_dir(path):
        out += _files(table, status.path) if status.is_dir else [status.path.rstrip("/")]
    return out


def garbage(table: Table) -> set[str]:
    """I8: what a crash may leave and orphan removal must collect: files outside the metadata
    directories that no retained snapshot or tag of any branch needs, and temp files anywhere."""
    from paimonflow.core.maintenance.branches import BranchManager, open_branch

    needed, _ = needed_files(table)
    for name in BranchManager(table).list():
        needed |= needed_files(open_branch(table, name))[0]
    out: set[str] = set()
    for entry in table.file_io.list_dir(table.path):
        if not entry.is_dir:
            continue
        metadata = entry.path.rstrip("/").rsplit("/", 1)[-1] in METADATA_DIRS
        out.update(p for p in _files(table, entry.path) if is_temp(p) or (not metadata and p not in needed))
    return out
