"""paimonflow.operators.airflow: the Airflow provider's task side (Airflow code only, never Dagster).

* :class:`PaimonHook` (``hook``): the ``paimon`` connection opens catalogs and tables, with its
  secrets masked;
* the operators (``operators``): one per paimonflow job (write, compact, expiries, tags, rollback,
  orphans, incremental read, branches), keyword-only, on the ``spark``, ``spark-submit`` or
  ``core`` engine, with a commit identity derived from the task run; :func:`table_asset` is a
  table's Airflow Asset.
"""

from .hook import ENGINES, PaimonHook
from .operators import (
    PaimonAnalyzeOperator,
    PaimonBranchOperator,
    PaimonCompactOperator,
    PaimonCreateTagOperator,
    PaimonDeleteTagOperator,
    PaimonExpireChangelogsOperator,
    PaimonExpirePartitionsOperator,
    PaimonExpireSnapshotsOperator,
    PaimonExpireTagsOperator,
    PaimonJobOperator,
    PaimonReadChangesOperator,
    PaimonRemoveOrphanFilesOperator,
    PaimonRollbackOperator,
    PaimonWriteOperator,
    commit_user_for,
    connection_table_asset,
    table_asset,
)

__all__ = [
    "ENGINES",
    "PaimonAnalyzeOperator",
    "PaimonBranchOperator",
    "PaimonCompactOperator",
    "PaimonCreateTagOperator",
    "PaimonDeleteTagOperator",
    "PaimonExpireChangelogsOperator",
    "PaimonExpirePartitionsOperator",
    "PaimonExpireSnapshotsOperator",
    "PaimonExpireTagsOperator",
    "PaimonHook",
    "PaimonJobOperator",
    "PaimonReadChangesOperator",
    "PaimonRemoveOrphanFilesOperator",
    "PaimonRollbackOperator",
    "PaimonWriteOperator",
    "commit_user_for",
    "connection_table_asset",
    "table_asset",
]
