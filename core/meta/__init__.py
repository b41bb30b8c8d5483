"""A table's metadata on storage: where everything lives (:mod:`.layout`), snapshots and the
maintenance markers (:mod:`.snapshots`), tags (:mod:`.tags`), schemas (:mod:`.schema`,
:mod:`.schema_changes`, :mod:`.schema_manager`), manifests and manifest lists (:mod:`.manifest`,
:mod:`.manifest_io`), index files (:mod:`.index_files`), consumers (:mod:`.consumers`),
long-lived changelogs (:mod:`.changelogs`), and :mod:`.references`: the one answer to "what does this
snapshot, tag, changelog or branch need", which every deletion uses.
"""

from .changelogs import ChangelogManager
from .consumers import ConsumerManager
from .index_files import IndexManifest
from .layout import MAIN_BRANCH, branch_root, bucket_directory
from .manifest import DataFileMeta, FileKind, ManifestEntry
from .manifest_io import ManifestIO
from .references import Needed, files_needed_by, files_of_other_branches, needed_by
from .schema import Schema, TableSchema
from .schema_manager import SchemaManager
from .snapshots import CommitKind, Snapshot, SnapshotManager
from .tags import TagManager

__all__ = [
    "MAIN_BRANCH",
    "ChangelogManager",
    "CommitKind",
    "ConsumerManager",
    "DataFileMeta",
    "FileKind",
    "IndexManifest",
    "ManifestEntry",
    "ManifestIO",
    "Needed",
    "Schema",
    "SchemaManager",
    "Snapshot",
    "SnapshotManager",
    "TableSchema",
    "TagManager",
    "branch_root",
    "bucket_directory",
    "files_needed_by",
    "files_of_other_branches",
    "needed_by",
]
