"""paimonflow.operators.dagster: Dagster resources, ops, assets and the IO manager (Dagster code
only, never Airflow).

* ``resources``: :class:`PaimonResource` (a warehouse and its storage, secrets from ``dg.EnvVar``)
  and :class:`SparkResource` (a local Spark session, or ``spark-submit``);
* ``assets``: :func:`paimon_job_op` (an op per paimonflow job) and :func:`paimon_table` with
  :class:`TableSpec` (a table's asset, health checks, maintenance job and schedule);
* ``io_manager``: :class:`PaimonIOManager`, asset outputs stored in Paimon tables.
"""

from .assets import TableSpec, commit_identity, paimon_job_op, paimon_table, result_metadata
from .io_manager import PaimonIOManager
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
]
