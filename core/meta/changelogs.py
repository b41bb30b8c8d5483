"""The ``changelog/changelog-<id>`` files of long-lived changelogs (Apache Paimon's
``ChangelogManager``): listing, reading, publishing, and their LATEST/EARLIEST hints. What they
keep alive is answered in :mod:`paimonflow.core.meta.references`; their expiry is
:mod:`paimonflow.core.maintenance.changelog_expire`.
"""

from __future__ import annotations

import contextlib

from ..errors import FileNotFoundStorageError
from ..fs import join
from .layout import MAIN_BRANCH, branch_root
from .metafile import read_hint, write_hint
from .snapshots import EARLIEST, LATEST, Snapshot

CHANGELOG_PREFIX = "changelog-"


class ChangelogManager:
    """``<branch root>/changelog/changelog-<id>`` and its ``EARLIEST``/``LATEST`` hints."""

    def __init__(self, file_io, table_path: str, branch: str = MAIN_BRANCH) -> None:
        self.file_io = file_io
        self.directory = join(branch_root(table_path, branch), "changelog")

    def path(self, changelog_id: int) -> str:
        return join(self.directory, f"{CHANGELOG_PREFIX}{changelog_id}")

    def list_ids(self) -> list[int]:
        ids = []
        for status in self.file_io.list_dir(self.directory):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            rest = name[len(CHANGELOG_PREFIX):]
            if name.startswith(CHANGELOG_PREFIX) and rest.isdigit():
                ids.append(int(rest))
        return sorted(ids)

    def try_changelog(self, changelog_id: int) -> Snapshot | None:
        path = self.path(changelog_id)
        try:
            return Snapshot.from_json(self.file_io.read_bytes(path), path)
        except FileNotFoundStorageError:
            return None

    def exists(self, changelog_id: int) -> bool:
        return self.file_io.exists(self.path(changelog_id))

    def _hint(self, name: str) -> int | None:
        return read_hint(self.file_io, join(self.directory, name))

    def earliest_id(self) -> int | None:
        hint = self._hint(EARLIEST)
        if hint is not None and self.exists(hint):
            return hint
        ids = self.list_ids()
        return ids[0] if ids else None

    def latest_id(self) -> int | None:
        hint = self._hint(LATEST)
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self.list_ids()
        return ids[-1] if ids else None

    def write_hint(self, name: str, value: int) -> None:
        write_hint(self.file_io, join(self.directory, name), value)

    def publish(self, snapshot: Snapshot) -> None:
        """Write ``changelog-<id>`` (idempotent: a rerun after a crash finds it there)."""
        plain = Snapshot.from_json(snapshot.to_json())
        self.file_io.create_if_absent(self.path(snapshot.id), plain.to_json())
        latest = self._hint(LATEST)
        if latest is None or latest < snapshot.id:
            self.write_hint(LATEST, snapshot.id)

    def delete_all(self) -> int:
        ids = self.list_ids()
        for cid in ids:
            with contextlib.suppress(FileNotFoundStorageError):
                self.file_io.delete(self.path(cid))
        for name in (EARLIEST, LATEST):
            with contextlib.suppress(FileNotFoundStorageError):
                self.file_io.delete(join(self.directory, name))
        return len(ids)


def _read_or_none(table, snapshot_id: int) -> Snapshot | None:
    """A snapshot, or the long-lived changelog of that id (what incremental reads follow)."""
    found = table.snapshot_manager.try_snapshot(snapshot_id)
    if found is None:
        found = ChangelogManager(table.file_io, table.path, table.branch).try_changelog(snapshot_id)
    return found
