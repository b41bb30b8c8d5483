"""Writing a table: input conformed to the schema (:mod:`.conform`), the table write that routes
rows to (partition, bucket), buffers and spills them (:mod:`.table_write`, :mod:`.buffer`,
:mod:`.bucket_index`, :mod:`.cross_partition`), data files (:mod:`.file_writer`), commit messages
(:mod:`.messages`) and the committer that publishes one snapshot (:mod:`.commit`). Never imports
:mod:`paimonflow.core.read`.
"""

from .commit import CommitResult, OverwriteSpec, TableCommit
from .conform import conform
from .messages import CommitMessage
from .table_write import TableWrite

__all__ = [
    "CommitMessage",
    "CommitResult",
    "OverwriteSpec",
    "TableCommit",
    "TableWrite",
    "conform",
]
