"""Keeping a table healthy, each operation planned and then executed so that a crash leaves a
readable table and a rerun finishes: snapshot expiry (:mod:`.expire`), changelog expiry
(:mod:`.changelog_expire`), partition expiry (:mod:`.partition_expire`), tags (:mod:`.tags`),
automatic tags (:mod:`.auto_tag`), rollback (:mod:`.rollback`), branches (:mod:`.branches`), orphan
removal (:mod:`.orphans`), statistics (:mod:`.statistics`) and the maintenance after each commit
(:mod:`.post_commit`). Built on :mod:`paimonflow.core.meta` and below.
"""

from .auto_tag import run_auto_tag
from .branches import BranchManager, open_branch
from .changelog_expire import expire_changelogs
from .expire import expire_snapshots
from .orphans import remove_orphan_files
from .partition_expire import expire_partitions
from .post_commit import maintain_after_commit
from .rollback import rollback
from .statistics import analyze
from .tags import Tags

__all__ = [
    "BranchManager",
    "Tags",
    "analyze",
    "expire_changelogs",
    "expire_partitions",
    "expire_snapshots",
    "maintain_after_commit",
    "open_branch",
    "remove_orphan_files",
    "rollback",
    "run_auto_tag",
]
