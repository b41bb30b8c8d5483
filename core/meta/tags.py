"""The ``tag/tag-<name>`` files of one branch (Apache Paimon's ``TagManager`` storage side): a
snapshot's JSON plus ``tagCreateTime`` / ``tagTimeRetained``. The verbs on tags (create with the
expiry handshake, delete freeing files, expire) are in :mod:`paimonflow.core.maintenance.tags`.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import (
    FileNotFoundStorageError,
    SnapshotNotFoundError,
)
from ..fs import join
from ..names import validate_name
from .layout import branch_root
from .snapshots import Snapshot


class TagManager:
    """Tags (``tag/tag-<name>``): a snapshot JSON plus optional ``tagCreateTime``/``tagTimeRetained``."""

    def __init__(self, file_io, table_path: str, branch: str = "main") -> None:
        self.file_io = file_io
        self.branch = branch
        self.directory = join(branch_root(table_path, branch), "tag")

    def tag_path(self, name: str) -> str:
        return join(self.directory, f"tag-{validate_name('tag', name)}")

    def get(self, name: str) -> Snapshot:
        path = self.tag_path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundStorageError:
            raise SnapshotNotFoundError(f"tag {name!r} does not exist") from None
        return Snapshot.from_json(data, path)

    def list_tags(self) -> dict[str, Snapshot]:
        """Every tag. A tag deleted between listing and reading is gone (it protects nothing);
        the directory is then listed again, so a tag renamed meanwhile is found by its new name."""
        for _ in range(5):
            tags, vanished = {}, False
            for status in self.file_io.list_dir(self.directory):
                name = status.path.rstrip("/").rsplit("/", 1)[-1]
                if name.startswith("tag-") and not name.startswith("."):
                    try:
                        tags[name[4:]] = Snapshot.from_json(self.file_io.read_bytes(status.path), status.path)
                    except FileNotFoundStorageError:
                        vanished = True
            if not vanished:
                break
        return tags

    def create(self, name: str, snapshot: Snapshot, *, create_time: list[int] | None = None,
               time_retained: str | None = None) -> bool:
        tagged = replace(snapshot, tag_create_time=create_time, tag_time_retained=time_retained)
        return self.file_io.create_if_absent(self.tag_path(name), tagged.to_json())
