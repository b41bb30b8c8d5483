"""The one place Spark is configured for paimonflow: local by default, a cluster when submitted.

``spark_session()`` returns the active session (under ``spark-submit`` the master comes from the
submit command) or builds one on ``local[2]``, with the settings the jobs rely on:
Python workers on this interpreter (``PYSPARK_PYTHON``), Arrow on, Python data source filter
pushdown on, no UI or console progress bars in logs, UTC session time zone. The ``paimonflow``
data source is registered on every session it returns.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from paimonflow.core.errors import SparkUnavailableError

DEFAULT_MASTER = "local[2]"

DEFAULT_CONF: dict[str, str] = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "1g",
    "spark.python.worker.reuse": "true",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
}


def spark_session(*, master: str | None = None, app_name: str = "paimonflow",
                  conf: Mapping[str, str] | None = None):
    """The active SparkSession, or a new one (``master`` default: ``local[2]`` unless submitted)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailableError("PySpark is not installed: pip install 'paimonflow[spark]'") from None
    active = SparkSession.getActiveSession()
    if active is None:
        from .environment import HOW_TO_GET_JAVA, detect_java

        java = detect_java()
        if not java.usable:
            raise SparkUnavailableError(f"{java.detail}\n{HOW_TO_GET_JAVA}")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder.appName(app_name)
        submitted = "spark.master" in _submitted_conf()
        chosen = master or (None if submitted else DEFAULT_MASTER)
        if chosen is not None:
            builder = builder.master(chosen)
            if chosen.startswith("local"):
                os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        for key, value in {**DEFAULT_CONF, **(conf or {})}.items():
            builder = builder.config(key, value)
        active = builder.getOrCreate()
    register(active)
    return active


def _submitted_conf() -> dict[str, str]:
    """Settings spark-submit passed to this driver (empty when run as a plain Python program)."""
    from pyspark import SparkConf

    return dict(SparkConf().getAll())


def register(spark) -> None:
    """Register the ``paimonflow`` data source on ``spark`` (idempotent)."""
    from .datasource import PaimonflowDataSource

    spark.dataSource.register(PaimonflowDataSource)
