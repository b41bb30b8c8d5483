"""paimonflow.operators.airflow: the Airflow provider's task side (Airflow code only, never Dagster).

* :class:`PaimonHook` (``hook``): the ``paimon`` connection opens catalogs and tables, with its
  secrets masked;
* the operators (``operators``): one per paimonflow job (write, compact, expiries, tags, rollback,
  orphans, incremental read, branches), keyword-only, on the ``spark``, ``spark-submit`` or
  ``core`` engine, with a commit identity derived from the task run; :func:`table_asset` is a
  table's Airflow Asset;
* the DDL operators (``ddl``): create, alter and drop tables, on the core, idempotent on retries;
* :class:`PaimonTableCheckOperator` (``checks``): data-quality checks (row count, freshness,
  unique keys, nulls, distinct values, min and max), from metadata where it answers.
"""

from .checks import PaimonTableCheckOperator
from .ddl import PaimonAlterTableOperator, PaimonCreateTableOperator, PaimonDropTableOperator
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
from .warehouse import PaimonMaintenanceActionOperator, PaimonPlanWarehouseOperator

__all__ = [
    "ENGINES",
    "PaimonAlterTableOperator",
    "PaimonAnalyzeOperator",
    "PaimonBranchOperator",
    "PaimonCompactOperator",
    "PaimonCreateTableOperator",
    "PaimonCreateTagOperator",
    "PaimonDeleteTagOperator",
    "PaimonDropTableOperator",
    "PaimonExpireChangelogsOperator",
    "PaimonExpirePartitionsOperator",
    "PaimonExpireSnapshotsOperator",
    "PaimonExpireTagsOperator",
    "PaimonHook",
    "PaimonJobOperator",
    "PaimonMaintenanceActionOperator",
    "PaimonPlanWarehouseOperator",
    "PaimonReadChangesOperator",
    "PaimonRemoveOrphanFilesOperator",
    "PaimonRollbackOperator",
    "PaimonTableCheckOperator",
    "PaimonWriteOperator",
    "commit_user_for",
    "connection_table_asset",
    "table_asset",
]
