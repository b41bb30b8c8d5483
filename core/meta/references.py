"""What the snapshots, tags, long-lived changelogs and branches of a table need: the one answer
every deletion depends on (snapshot and changelog expiry, tag deletion, rollback, branch
protection, orphan removal).

* :func:`metadata_files`: the manifest lists, manifests, index manifest, index and statistics
  files a snapshot (or tag, or changelog) references;
* :func:`changelog_files`: what a long-lived changelog keeps alive;
* :func:`files_needed_by`: everything one branch's snapshots, tags and long-lived changelogs need
  (orphan removal keeps exactly the union over the branches);
* :func:`needed_by` / :func:`tag_needs`: what one snapshot or tag needs, as a :class:`Needed`
  (data files by :func:`file_key`, metadata files by path); every deletion plan is "what goes,
  minus the union of :class:`Needed` of what stays";
* :func:`files_of_other_branches`: what every other branch references (a :class:`Needed`);
* :func:`entry_path_resolver`: where a manifest entry's data file lives;
* :func:`restored_from_tag`: the snapshot a tag brings back without naming files that are gone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..data.binary_row import deserialize_row
from ..errors import (
    FileNotFoundStorageError,
    PaimonflowError,
    ReferencesUnreadableError,
    SnapshotNotFoundError,
)
from ..fs import join
from .changelogs import ChangelogManager
from .context import TableMeta
from .layout import MAIN_BRANCH, bucket_directory
from .manifest import FileKind
from .schema_manager import existing_branches
from .snapshots import Snapshot, SnapshotManager
from .tags import TagManager


def manifest_files(table: TableMeta, names: Iterable[str | None]) -> list[str]:
    """The manifest lists ``names`` and every manifest they list (absolute paths; gone ones skipped)."""
    mio = table.manifest_io
    out = []
    for name in names:
        if not name:
            continue
        out.append(join(mio.manifest_dir, name))
        with contextlib.suppress(FileNotFoundStorageError):
            out += [join(mio.manifest_dir, m.file_name) for m in mio.manifest_list(name)]
    return out


def changelog_files(table: TableMeta, changelog: Snapshot) -> set[str]:
    """What a long-lived changelog keeps alive (absolute paths): its changelog manifests and
    changelog files, or for producer ``none`` its data manifests and the APPEND files its delta
    added. Files already gone are skipped (orphan removal must not abort over them)."""
    mio = table.manifest_io
    path_of = entry_path_resolver(table)
    out: set[str] = set()
    with contextlib.suppress(FileNotFoundStorageError):
        if has_producer(table):
            out |= set(manifest_files(table, [changelog.changelog_manifest_list]))
            out |= {path_of(e) for e in mio.changelog_entries(changelog)}
        else:
            out |= set(manifest_files(table, [changelog.base_manifest_list, changelog.delta_manifest_list]))
            # what the delta's rows were written as: APPEND files (a compaction's output is no change,
            # and snapshot expiry deletes it like any compacted-away file: core/maintenance/expire.py)
            out |= {path_of(e) for m in mio.manifest_list(changelog.delta_manifest_list)
                    for e in mio.manifest_entries(m.file_name)
                    if e.kind is FileKind.ADD and e.file.file_source in (None, 0)}
    return out


def has_producer(table: TableMeta) -> bool:
    """With a changelog producer the changelog is the changelog files; without, the delta."""
    return str(table.options.changelog_producer) != "none"


def bucket_directory_resolver(table: TableMeta):
    """``entry -> its bucket's directory`` for manifest entries (partitions decoded once each)."""
    partition_types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    decoded: dict[bytes, tuple] = {}

    def directory_of(entry) -> str:
        values = decoded.get(entry.partition)
        if values is None:
            values = decoded[entry.partition] = tuple(deserialize_row(entry.partition, partition_types))
        return bucket_directory(table.path, table.schema, table.options, values, entry.bucket)

    return directory_of


def entry_path_resolver(table: TableMeta):
    """``entry -> absolute path`` of manifest entries' data files (partitions decoded once each)."""
    directory_of = bucket_directory_resolver(table)

    def path_of(entry) -> str:
        return entry.file.external_path or join(directory_of(entry), entry.file.file_name)

    return path_of


def restored_from_tag(table: TableMeta, tag: Snapshot) -> Snapshot:
    """The snapshot a tag brings back (a rollback to it, a branch created from it): without the
    tag's fields, and without its changelog unless every changelog file is still there. A tag
    does not keep its changelog (it went with the snapshot's expiry, as in Paimon), and a restored
    snapshot must never name files that are gone."""
    plain = replace(tag, tag_create_time=None, tag_time_retained=None)
    if not plain.changelog_manifest_list:
        return plain
    io = table.file_io
    try:
        entries = table.manifest_io.changelog_entries(plain)
        path_of = entry_path_resolver(table)
        whole = all(io.exists(path_of(e)) for e in entries)
    except FileNotFoundStorageError:
        whole = False
    if whole:
        return plain
    return replace(plain, changelog_manifest_list=None, changelog_manifest_list_size=None, changelog_record_count=None)


def tag_still_there(table: TableMeta, name: str, tag: Snapshot) -> bool:
    """Whether tag ``name`` still holds the snapshot it held when listed."""
    try:
        now = table.tag_manager.get(name)
    except SnapshotNotFoundError:
        return False
    return (now.id, now.base_manifest_list, now.delta_manifest_list) == (
        tag.id, tag.base_manifest_list, tag.delta_manifest_list)


def metadata_files(table: TableMeta, snapshot: Snapshot) -> Iterable[str]:
    """Every metadata file ``snapshot`` references: manifest lists, manifests, the index manifest
    and index files (absolute paths); files already gone are skipped."""
    mio = table.manifest_io
    lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.changelog_manifest_list]
    for name in lists:
        if not name:
            continue
        yield join(mio.manifest_dir, name)
        try:
            metas = mio.manifest_list(name)
        except FileNotFoundStorageError:
            continue
        for m in metas:
            yield join(mio.manifest_dir, m.file_name)
    if snapshot.statistics:
        yield join(table.path, "statistics", snapshot.statistics)
    if snapshot.index_manifest:
        yield join(mio.manifest_dir, snapshot.index_manifest)
        try:
            entries = table.index_manifest.read(snapshot.index_manifest)
        except FileNotFoundStorageError:
            entries = []
        for e in entries:
            yield e.file.external_path or join(table.index_dir, e.file.file_name)


def files_needed_by(table: TableMeta, *, strict: bool = False) -> set[str]:
    """Absolute paths of every file ``table``'s branch needs: for each retained snapshot and tag,
    its manifest lists, manifests, index manifest, index files, statistics, the data files live in
    it (with their extra files) and its changelog files; for each long-lived changelog, what
    :func:`changelog_files` keeps. ``strict``: a metadata file that is missing or unreadable raises
    (:class:`~paimonflow.core.errors.ReferencesUnreadableError`) instead of being skipped, so that a caller about to delete "everything else" never deletes on uncertainty."""
    manager = table.snapshot_manager
    keepers = [s for s in map(manager.try_snapshot, manager.list_ids()) if s is not None]
    # A tag does not keep its changelog (Paimon's expiry removes it with the snapshot): a tag
    # whose changelog manifest list is gone needs only the rest, as a rollback to it does.
    keepers += [_without_lost_changelog(table, tag) for tag in table.tag_manager.list_tags().values()]
    changelogs = ChangelogManager(table.file_io, table.path, table.branch)
    long_lived = [c for c in map(changelogs.try_changelog, changelogs.list_ids()) if c is not None]
    directory_of = bucket_directory_resolver(table)
    out: set[str] = set()
    for snap in keepers:
        try:
            metadata = list(metadata_files(table, snap))
            if strict:
                for path in metadata:
                    if not table.file_io.exists(path):
                        raise FileNotFoundStorageError(f"no such file: {path}")
            out.update(metadata)
            entries = [*table.manifest_io.live_entries(snap), *table.manifest_io.changelog_entries(snap)]
        except PaimonflowError as exc:
            if strict:
                raise ReferencesUnreadableError(f"snapshot {snap.id} cannot be read completely ({exc})") from exc
            continue
        for e in entries:
            directory = directory_of(e)
            out.add(e.file.external_path or join(directory, e.file.file_name))
            beside = e.file.external_path.rsplit("/", 1)[0] if e.file.external_path else directory
            out.update(join(beside, x) for x in e.file.extra_files)  # file indexes sit beside their data file
    for changelog in long_lived:  # its index files and statistics went with its snapshot
        out |= changelog_files(table, changelog)
    return out


def _without_lost_changelog(table: TableMeta, tag: Snapshot) -> Snapshot:
    name = tag.changelog_manifest_list
    if name and not table.file_io.exists(join(table.manifest_io.manifest_dir, name)):
        return replace(tag, changelog_manifest_list=None, changelog_manifest_list_size=None,
                       changelog_record_count=None)
    return tag


def walk_files(file_io, directory: str) -> Iterable[str]:
    for status in file_io.list_dir(directory):
        if status.is_dir:
            yield from walk_files(file_io, status.path)
        else:
            yield status.path.rstrip("/")


# -- what other branches need ------------------------------------------------------------------


FileKey = tuple[bytes, int, str]
"""A data or changelog file as ``(partition, bucket, file name)``: how manifests name it."""


def file_key(entry) -> FileKey:
    """The :data:`FileKey` of a manifest entry's file."""
    return (entry.partition, entry.bucket, entry.file.file_name)


@dataclass(frozen=True, slots=True)
class Needed:
    """Files something needs: data/changelog files as :data:`FileKey` and metadata files
    (manifest lists, manifests, index manifests, index and statistics files) as absolute paths.
    Unions with ``|``; ``entry in needed`` asks about a manifest entry's file."""

    data: frozenset[FileKey] = frozenset()
    metadata: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.data or self.metadata)

    def __or__(self, other: Needed) -> Needed:
        return Needed(self.data | other.data, self.metadata | other.metadata)

    def __contains__(self, entry) -> bool:
        return file_key(entry) in self.data

    @staticmethod
    def union(parts: Iterable[Needed]) -> Needed:
        """The union of many (built once, where ``|`` in a loop would copy the growing sets)."""
        data: set[FileKey] = set()
        metadata: set[str] = set()
        for part in parts:
            data |= part.data
            metadata |= part.metadata
        return Needed(frozenset(data), frozenset(metadata))


def needed_by(table: TableMeta, snapshot: Snapshot, *, changelog: bool = False) -> Needed:
    """What ``snapshot`` (or a tag) needs: its metadata files and the data files live in it;
    with ``changelog``, its changelog files too (skipped when already gone: a tag does not keep
    its changelog). Raises when its manifests cannot be read."""
    mio = table.manifest_io
    data = {file_key(e) for e in mio.live_entries(snapshot)}
    if changelog:
        with contextlib.suppress(FileNotFoundStorageError):
            data |= {file_key(e) for e in mio.changelog_entries(snapshot)}
    return Needed(frozenset(data), frozenset(metadata_files(table, snapshot)))


def tag_needs(table: TableMeta, name: str | None, tag: Snapshot, *, changelog: bool = False) -> Needed | None:
    """:func:`needed_by` for a listed tag (``name``) or snapshot (``None``), or ``None`` when it
    was deleted meanwhile (with its files: it protects nothing any more). A tag still there whose
    files cannot be read raises: never plan deletions around it."""
    try:
        return needed_by(table, tag, changelog=changelog)
    except (SnapshotNotFoundError, FileNotFoundStorageError):
        if name is None:
            manager = table.snapshot_manager
            below = manager.expiring_below()
            if manager.exists(tag.id) and (below is None or tag.id >= below):
                raise
            return None
        if tag_still_there(table, name, tag):
            raise
        return None


def files_of_other_branches(table: TableMeta) -> Needed:
    """What every branch other than ``table``'s references through its snapshots and tags.

    Empty (and free) for a table without branches. A file referenced by any retained snapshot
    of a branch is live in its earliest snapshot or added by a later snapshot's delta, so the
    union is read from the earliest snapshot's entries, every later delta, every tag and every
    changelog.
    """
    names = existing_branches(table.file_io, table.path)
    others = [n for n in [MAIN_BRANCH, *names] if n != table.branch]
    if not names:
        return Needed()
    data: set[FileKey] = set()
    metadata: set[str] = set()
    mio = table.manifest_io
    for name in others:
        manager = SnapshotManager(table.file_io, table.path, name)
        snapshots = [s for s in map(manager.try_snapshot, manager.list_ids()) if s is not None]
        tags = list(TagManager(table.file_io, table.path, name).list_tags().values())
        first_read = False
        for is_tag, snap in [*((True, t) for t in tags), *((False, s) for s in snapshots)]:
            try:
                if is_tag or not first_read:  # everything live in the first readable snapshot
                    data |= {file_key(e) for e in mio.live_entries(snap)}
                    first_read = first_read or not is_tag
                for m in mio.manifest_list(snap.delta_manifest_list):
                    data |= {file_key(e) for e in mio.manifest_entries(m.file_name)}
                data |= {file_key(e) for e in mio.changelog_entries(snap)}
            except FileNotFoundStorageError:
                # only a snapshot an interrupted expiry of that branch is removing loses its
                # manifests; what it alone needed is being deleted by that expiry anyway
                continue
            metadata |= set(metadata_files(table, snap))
    return Needed(frozenset(data), frozenset(metadata))
