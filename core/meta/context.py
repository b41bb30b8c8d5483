"""The collaborators of one table branch, as the layers below the public face see them.

Deletion planning (:mod:`.references`), maintenance and compaction work on a table's storage,
schema, options and managers. They receive them through :class:`TableMeta`, a protocol that
:class:`paimonflow.core.table.Table` satisfies, so that nothing below the face imports ``Table``
or reaches its reading and writing methods; the type checker holds every such function to the
members listed here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import pyarrow as pa

    from ..fs import FileIO
    from ..options.core import CoreOptions
    from .capabilities import TableCapabilities
    from .consumers import ConsumerManager
    from .index_files import IndexManifest
    from .manifest_io import ManifestIO
    from .schema import TableSchema
    from .snapshots import SnapshotManager
    from .tags import TagManager


class TableMeta(Protocol):
    """Storage, schema, options and the metadata managers of one table branch."""

    file_io: FileIO
    path: str  # the table's directory (every branch's data files live under it)
    identifier: str  # ``db.table``, for messages
    branch: str
    schema: TableSchema
    options: CoreOptions  # parsed once per table open
    snapshot_manager: SnapshotManager
    tag_manager: TagManager
    consumer_manager: ConsumerManager
    manifest_io: ManifestIO
    capabilities: TableCapabilities  # the capability gate, decided when the table was opened

    @property
    def arrow_schema(self) -> pa.Schema: ...

    @property
    def partition_keys(self) -> tuple[str, ...]: ...

    @property
    def primary_keys(self) -> tuple[str, ...]: ...

    @property
    def index_dir(self) -> str: ...

    @property
    def index_manifest(self) -> IndexManifest: ...
