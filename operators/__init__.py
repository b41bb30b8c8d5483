"""paimonflow.operators: running paimonflow jobs as scheduler tasks, one subpackage per framework.

* :mod:`paimonflow.operators.airflow`: the ``paimon`` connection's hook and an operator per job
  (on Spark, ``spark-submit`` or the core), and ``table_asset`` for Airflow Assets;
* :mod:`paimonflow.operators.dagster`: the Paimon and Spark resources, job ops, the table asset
  factory with its health checks and maintenance schedule, and the IO manager.

Importing this package imports neither Airflow nor Dagster: import the subpackage of your
scheduler. The work itself is done by ``paimonflow.jobs`` (Spark) and ``paimonflow.core``; both
subpackages submit Spark jobs through the one builder in ``paimonflow.jobs.submit``.
"""

__all__: list[str] = []
