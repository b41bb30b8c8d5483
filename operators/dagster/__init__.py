"""paimonflow.operators.dagster: Dagster resources, ops, assets and the IO manager (Dagster code
only, never Airflow).

* ``resources``: :class:`PaimonResource` (a warehouse and its storage, secrets from ``dg.EnvVar``)
  and :class:`SparkResource` (a local Spark session, or ``spark-submit``);
* ``assets``: :func:`paimon_job_op` (an op per paimonflow job) and :func:`paimon_table` with
  :class:`TableSpec` (a table's asset, health checks, maintenance job and schedule);
* ``io_manager``: :class:`PaimonIOManager`, asset outputs stored in Paimon tables, with
  Dagster's database IO manager conventions (``table_slice``, ``type_handlers``), committed by
  ``write_mode`` (overwrite, append, upsert), a schema change and its rows landing together;
* ``metadata``: Dagster's standard table metadata (``dagster/row_count``, ``dagster/column_schema``...)
  on every materialization.
"""

from .assets import TableSpec, commit_identity, paimon_job_op, paimon_table, result_metadata, table_asset_key
from .io_manager import PaimonIOManager
from .metadata import table_metadata
from .resources import LocalStorage, PaimonResource, S3Storage, SparkResource

__all__ = [
    "LocalStorage",
    "PaimonIOManager",
    "PaimonResource",
    "S3Storage",
    "SparkResource",
    "TableSpec",
    "commit_identity",
    "paimon_job_op",
    "paimon_table",
    "result_metadata",
    "table_asset_key",
    "table_metadata",
]
