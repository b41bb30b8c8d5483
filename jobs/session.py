"""The one place Spark is configured for paimonflow: a cluster when submitted, local otherwise.

``spark_session()`` returns the active session, or the session of the Spark launcher that
started this interpreter (``spark-submit``, the ``pyspark`` shell, ``PYSPARK_SUBMIT_ARGS``): its
master and settings come from the submit command and are never overridden. A Spark Connect URL
(``--master sc://host:port``, or ``SPARK_REMOTE``) gives a Spark Connect session. Only a job run as
a plain Python program with nothing given builds a session on ``local[2]``, with settings fit for
one machine (no UI, UTC, a few shuffle partitions). Every session gets the settings the jobs rely
on (Arrow) and the ``paimonflow`` data source.

``cancellable(spark, label)`` tags the Spark work started inside it with a fresh session tag and
interrupts it when the caller is interrupted (a signal, an Airflow ``on_kill``, a Dagster run
termination): the one cancellation that works on a classic session and on Spark Connect alike.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from paimonflow.core.errors import SparkUnavailableError

# the job tags of the Spark work a job starts (jobs/job_tags.py), re-exported for the integrations
from .job_tags import cancellable, interrupt, stop_tagged_tasks, tagged
from .spark_info import default_parallelism

DEFAULT_MASTER = "local[2]"

REQUIRED_CONF: dict[str, str] = {  # set on every session a job runs on (runtime SQL settings)
    "spark.sql.execution.arrow.pyspark.enabled": "true",
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
        raise SparkUnavailableError("PySpark is not installed: install paimonflow with its 'spark' extra "
                                    "(pip install '.[spark]' in a clone of the repository)") from None
    remote = remote_url(master)
    active = SparkSession.getActiveSession()
    if active is None and remote is not None:
        builder = SparkSession.builder.remote(remote)
        for key, value in {**REQUIRED_CONF, **(conf or {})}.items():  # the server owns the rest
            builder = builder.config(key, value)
        active = builder.getOrCreate()
    elif active is None:
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


def remote_url(master: str | None) -> str | None:
    """The Spark Connect URL to use: ``master`` when it is one, else ``SPARK_REMOTE`` when no
    master is given; None for a classic session."""
    if master is not None:
        return master if master.startswith("sc://") else None
    return os.environ.get("SPARK_REMOTE") or None


def launched_by_spark() -> bool:
    """Whether a Spark launcher started this interpreter and its JVM: ``spark-submit`` or the
    ``pyspark`` shell hand the driver a gateway; ``PYSPARK_SUBMIT_ARGS`` with a ``--master`` makes
    PySpark launch one with that master."""
    return "PYSPARK_GATEWAY_PORT" in os.environ or "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


def register(spark) -> None:
    """Register the ``paimonflow`` data source on ``spark`` (idempotent), with the session's
    parallelism (a data source sees no session). An installed paimonflow is found by any session
    without this call (``pyspark_paimonflow``), with a parallelism of 8."""
    from .datasource import PaimonflowDataSource

    spark.dataSource.register(type(PaimonflowDataSource.__name__, (PaimonflowDataSource,),
                                   {"parallelism": default_parallelism(spark),
                                    "__module__": PaimonflowDataSource.__module__}))


__all__ = ["cancellable", "interrupt", "launched_by_spark", "register", "remote_url", "spark_session",
           "stop_tagged_tasks", "tagged"]
