"""The one place Spark is configured for paimonflow: a cluster when submitted, local otherwise.

``spark_session()`` returns the active session, or the session of the Spark launcher that
started this interpreter (``spark-submit``, the ``pyspark`` shell, ``PYSPARK_SUBMIT_ARGS``): its
master and settings come from the submit command and are never overridden. Only a job run as a
plain Python program with no master given builds a session on ``local[2]``, with settings fit for
one machine (no UI, UTC, a few shuffle partitions). Every session gets the settings the jobs rely
on (Arrow, Python data source filter pushdown) and the ``paimonflow`` data source.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from paimonflow.core.errors import SparkUnavailableError

DEFAULT_MASTER = "local[2]"

REQUIRED_CONF: dict[str, str] = {  # set on every session a job runs on (runtime SQL settings)
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.python.filterPushdown.enabled": "true",
}

LOCAL_CONF: dict[str, str] = {  # a session built here for one machine; a submitted job keeps its own
    **REQUIRED_CONF,
    "spark.sql.session.timeZone": "UTC",
    "spark.log.level": "ERROR",  # a job's own error is the last line of stderr; Spark's warnings hide it
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "1g",
    "spark.python.worker.reuse": "true",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
}


def spark_session(*, master: str | None = None, app_name: str = "paimonflow",
                  conf: Mapping[str, str] | None = None):
    """The active SparkSession, the launcher's (under ``spark-submit``), or a new one on ``master``
    (default ``local[2]``). ``conf`` is applied in every case (the job's ``--conf``)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailableError("PySpark is not installed: pip install 'paimonflow[spark]'") from None
    active = SparkSession.getActiveSession()
    if active is None:
        from .environment import HOW_TO_GET_JAVA, detect_java

        launched = launched_by_spark()
        if not launched:  # under a launcher Spark found Java already
            java = detect_java()
            if not java.usable:
                raise SparkUnavailableError(f"{java.detail}\n{HOW_TO_GET_JAVA}")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder if launched else SparkSession.builder.appName(app_name)  # keep --name
        chosen = master or (None if launched else DEFAULT_MASTER)
        if chosen is not None:
            builder = builder.master(chosen)
            if chosen.startswith("local"):
                os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # a launcher's settings win over ours (its master, its shuffle partitions...)
        for key, value in {**({} if launched else LOCAL_CONF), **(conf or {})}.items():
            builder = builder.config(key, value)
        active = builder.getOrCreate()
    elif conf:
        for key, value in conf.items():
            active.conf.set(key, value)
    for key, value in REQUIRED_CONF.items():
        if key not in (conf or {}):
            active.conf.set(key, value)
    register(active)
    return active


def launched_by_spark() -> bool:
    """Whether a Spark launcher started this interpreter and its JVM: ``spark-submit`` or the
    ``pyspark`` shell hand the driver a gateway; ``PYSPARK_SUBMIT_ARGS`` with a ``--master`` makes
    PySpark launch one with that master."""
    return "PYSPARK_GATEWAY_PORT" in os.environ or "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


def master_of(spark) -> str:
    """The master URL ``spark`` runs on."""
    return str(spark.conf.get("spark.master"))


def register(spark) -> None:
    """Register the ``paimonflow`` data source on ``spark`` (idempotent): the one that prunes by
    Spark's filters when ``spark.sql.python.filterPushdown.enabled`` is on, else the one that
    reads without them. An installed paimonflow is found by any session without this call
    (``pyspark_paimonflow``), without pruning."""
    from .datasource import PaimonflowDataSource, PaimonflowPushdownDataSource

    pushdown = str(spark.conf.get("spark.sql.python.filterPushdown.enabled", "false")).lower() == "true"
    spark.dataSource.register(PaimonflowPushdownDataSource if pushdown else PaimonflowDataSource)
