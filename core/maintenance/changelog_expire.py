"""Long-lived changelogs (Apache Paimon's ``ChangelogManager`` / ``ExpireChangelogImpl``).

When a table keeps its changelog longer than its snapshots (``changelog.num-retained.*`` or
``changelog.time-retained`` above the ``snapshot.*`` values: the lifecycle is *decoupled*),
snapshot expiry moves each expired snapshot's JSON to ``changelog/changelog-<id>`` and keeps
what its changes need: its changelog files and changelog manifests (tables with a changelog
producer), or its APPEND data files and data manifests (producer ``none``, where the changelog is
the delta). Incremental and streaming reads follow ``changelog-<id>`` below the earliest snapshot.

Changelog expiry (:func:`expire_changelogs`) removes the oldest long-lived changelogs by the
``changelog.*`` options: counts are relative to the latest *snapshot* id, a changelog goes only
when its own commit time is older than ``changelog.time-retained``, consumers always protect
what they have not read, and the latest changelog stays. Each expired changelog takes the files
only it still needed (never a file a tag, the earliest snapshot, another changelog or another
branch holds): its changelog files, or for producer ``none`` the files its delta added that nothing
holds any more and the APPEND files its delta deleted (which snapshot expiry left to the
changelog, as Paimon's ``ChangelogDeletion`` does), then its JSON; ``EARLIEST`` moves last.
``delete_all`` removes every changelog of a table that is no longer decoupled (all of them older
than the earliest snapshot).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import FileNotFoundStorageError, InvalidArgumentError
from ..faults import crash_point
from ..fs import join
from ..meta.changelogs import ChangelogManager
from ..meta.context import TableMeta
from ..meta.manifest import FileKind
from ..meta.references import (
    Needed,
    changelog_files,
    entry_path_resolver,
    file_key,
    files_of_other_branches,
    has_producer,
    manifest_files,
    tag_needs,
)
from ..meta.snapshots import EARLIEST, Snapshot
from ..options.changelog import changelog_settings
from ..options.retention import retained_counts


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangelogExpiry:
    earliest: int | None
    end: int | None  # exclusive: the new earliest changelog
    changelog_ids: tuple[int, ...] = ()
    data_files: tuple[str, ...] = ()
    metadata_files: tuple[str, ...] = ()
    dry_run: bool = False
    deleted_all: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"earliest": self.earliest, "end": self.end, "changelog_ids": list(self.changelog_ids),
                "expired_changelogs": len(self.changelog_ids) or self.deleted_all,
                "data_files": len(self.data_files), "metadata_files": len(self.metadata_files),
                "dry_run": self.dry_run}


def expire_changelogs(table: TableMeta, *, retain_min: int | None = None, retain_max: int | None = None,
                      older_than_millis: int | None = None, max_deletes: int | None = None,
                      delete_all: bool = False, dry_run: bool = False,
                      clock: Callable[[], float] = time.time) -> ChangelogExpiry:
    """Expire long-lived changelogs by the table's ``changelog.*`` options (each overridable).

    ``retain_min``/``retain_max`` count back from the latest *snapshot* id; in between, a
    changelog goes once its own commit time is older than ``older_than_millis`` (default
    ``changelog.time-retained``; ``clock`` returns epoch seconds). Consumers cap the range at
    their next snapshot, ``max_deletes`` (default ``snapshot.expire.limit``) bounds a run and the
    latest changelog always stays. ``dry_run`` only plans. ``delete_all`` removes every changelog
    and both hints, and raises :class:`InvalidArgumentError` unless all changelogs precede the
    earliest snapshot. Idempotent: a rerun after a crash finishes the job. A bound left out gives
    way to one given (:func:`~paimonflow.core.options.retention.retained_counts`): ``retain_max=1``
    alone keeps one id, as Paimon's ``expire_changelogs`` procedure does. Raises
    :class:`InvalidArgumentError` for a given bound below 1 or ``retain_max`` below ``retain_min``.
    """
    from ..meta.capabilities import Operation

    table.capabilities.require(Operation.EXPIRE)
    manager = ChangelogManager(table.file_io, table.path, table.branch)
    snapshots = table.snapshot_manager
    if delete_all:
        latest_c, earliest_s = manager.latest_id(), snapshots.earliest_id()
        if latest_c is not None and earliest_s is not None and latest_c >= earliest_s:
            raise InvalidArgumentError(f"changelog {latest_c} is not older than the earliest snapshot {earliest_s}: "
                                       "delete_all is for tables whose changelogs all precede their snapshots")
        ids = manager.list_ids()
        if dry_run:
            return ChangelogExpiry(earliest=ids[0] if ids else None, end=None, changelog_ids=tuple(ids), dry_run=True)
        return ChangelogExpiry(earliest=ids[0] if ids else None, end=None, deleted_all=manager.delete_all())
    settings = changelog_settings(table)
    retain_min, retain_max = retained_counts(retain_min, retain_max, option_min=settings.retain_min,
                                             option_max=settings.retain_max)
    time_retained = settings.time_retained_millis if older_than_millis is None else older_than_millis
    limit = table.options.snapshot_expire_limit if max_deletes is None else max_deletes
    latest_s = snapshots.latest_id()
    earliest_c, latest_c = manager.earliest_id(), manager.latest_id()
    if latest_s is None or earliest_c is None or latest_c is None:
        return ChangelogExpiry(earliest=earliest_c, end=None, dry_run=dry_run)
    lowest = max(latest_s - retain_max + 1, earliest_c)
    end = min(latest_s - retain_min + 1, earliest_c + limit, latest_c)
    consumer_min = table.consumer_manager.min_next_snapshot()
    if consumer_min is not None:
        end = min(end, consumer_min)
    if end <= earliest_c:
        return ChangelogExpiry(earliest=earliest_c, end=None, dry_run=dry_run)
    older_than = clock() * 1000 - time_retained
    for cid in range(lowest, end):
        changelog = manager.try_changelog(cid)
        if changelog is not None and changelog.time_millis >= older_than:
            end = cid
            break
    if end <= earliest_c:
        return ChangelogExpiry(earliest=earliest_c, end=None, dry_run=dry_run)
    plan = _plan(table, manager, earliest_c, end)
    if dry_run:
        return ChangelogExpiry(**{**plan, "dry_run": True})
    for group, point in ((plan["data_files"], "expire-changelog:data-files"),
                         (plan["metadata_files"], "expire-changelog:metadata-files")):
        for i, path in enumerate(group):
            with contextlib.suppress(FileNotFoundStorageError):
                table.file_io.delete(path)
            if i == len(group) // 2:
                crash_point(point)
    for i, cid in enumerate(plan["changelog_ids"]):
        with contextlib.suppress(FileNotFoundStorageError):
            table.file_io.delete(manager.path(cid))
        if i == len(plan["changelog_ids"]) // 2:
            crash_point("expire-changelog:changelog-files")
    manager.write_hint(EARLIEST, end)
    return ChangelogExpiry(**plan)


def _plan(table: TableMeta, manager: ChangelogManager, earliest: int, end: int) -> dict:
    mio = table.manifest_io
    path_of = entry_path_resolver(table)
    keepers: list[tuple[str | None, Snapshot]] = [(None, s) for s in (table.snapshot_manager.earliest(),) if s]
    keepers += list(table.tag_manager.list_tags().items())
    next_changelog = manager.try_changelog(end)
    keep_paths = changelog_files(table, next_changelog) if next_changelog is not None else set()
    # a tag deleted (with its files) since the listing protects nothing (None); one still there
    # with missing files stops the expiry before it deletes anything (raises)
    needs = (tag_needs(table, name, keeper, changelog=True) for name, keeper in keepers)
    keep = Needed.union([files_of_other_branches(table), *(n for n in needs if n is not None)])
    data, metadata, ids = [], [], []
    for cid in range(earliest, end):
        changelog = manager.try_changelog(cid)
        if changelog is None:
            continue
        ids.append(cid)
        with contextlib.suppress(FileNotFoundStorageError):
            if has_producer(table):
                entries = [e for e in mio.changelog_entries(changelog) if e.kind is FileKind.ADD]
            else:  # producer none: the files this delta added, unless still live in what stays
                # (checked below), and the APPEND files it deleted, which snapshot expiry left for
                # the changelog (Paimon's ChangelogDeletion: no file outlives every changelog)
                delta = mio.delta_entries(changelog)
                readded = {file_key(e) for e in delta if e.kind is FileKind.ADD}
                entries = [e for e in delta if e.kind is FileKind.ADD or file_key(e) not in readded]  # not upgrades
            for e in entries:
                if e not in keep and path_of(e) not in keep_paths:
                    data.append(path_of(e))
                    folder = path_of(e).rsplit("/", 1)[0]
                    data.extend(join(folder, extra) for extra in e.file.extra_files)
        names = [changelog.changelog_manifest_list] if has_producer(table) else [
            changelog.base_manifest_list, changelog.delta_manifest_list]
        for path in manifest_files(table, names):
            if path not in keep.metadata and path not in keep_paths:
                metadata.append(path)
    return {"earliest": earliest, "end": end, "changelog_ids": tuple(ids),
            "data_files": tuple(dict.fromkeys(data)), "metadata_files": tuple(dict.fromkeys(metadata))}


