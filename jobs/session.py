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

import contextlib
import os
import re
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from paimonflow.core.errors import SparkUnavailableError
from paimonflow.core.options.parse import parse_duration_millis

from .spark_info import default_parallelism, is_connect

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


_TAG_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


@contextmanager
def tagged(spark, label: str) -> Iterator[str]:
    """Run the block with a fresh job tag on ``spark`` (yielded), removed afterwards. On Spark
    Connect the tag is the session's operation tag; on a classic session, the SparkContext's job
    tag (a classic session's own tags are known only to the thread that added them, and an
    ``on_kill`` comes from another)."""
    tag = f"paimonflow-{_TAG_UNSAFE.sub('-', label)[:80]}-{uuid.uuid4().hex[:12]}"
    connect = is_connect(spark)
    if connect:
        spark.addTag(tag)
    else:
        spark.sparkContext.addJobTag(tag)
    try:
        yield tag
    finally:
        if connect:
            spark.removeTag(tag)
        else:
            spark.sparkContext.removeJobTag(tag)


@contextmanager
def cancellable(spark, label: str) -> Iterator[str]:
    """:func:`tagged`, and if the block is left by an interruption (``KeyboardInterrupt``,
    ``SystemExit``, a scheduler's own interrupt) the Spark work under the tag is interrupted
    before the interruption goes on. Errors of the job pass unchanged."""
    with tagged(spark, label) as tag:
        try:
            yield tag
        except Exception:
            raise
        except BaseException:
            interrupt(spark, tag)
            raise


def stop_tagged_tasks(spark, tag: str, *, timeout_s: float = 60.0) -> None:
    """Interrupt the Spark work tagged ``tag`` and return once none of its tasks can still write:
    on a classic session when its status tracker shows no running task of the tag's jobs, then
    ``spark.python.task.killTimeout`` more (a killed task's Python worker is destroyed only that
    long after the task); on Spark Connect, whose client sees no tasks, after that grace alone."""
    import time

    interrupt(spark, tag)
    grace = 2.0
    if not is_connect(spark):
        context = spark.sparkContext
        with contextlib.suppress(Exception):
            grace = parse_duration_millis(context.getConf().get("spark.python.task.killTimeout", "2s")) / 1000
        tracker, deadline = context.statusTracker(), time.monotonic() + timeout_s
        while time.monotonic() < deadline and _running_tasks(context, tracker, tag):
            time.sleep(0.1)
    time.sleep(grace + 0.5)


def _running_tasks(context, tracker, tag: str) -> int:
    running = 0
    for job in context._jsc.sc().statusTracker().getJobIdsForTag(tag):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info is not None else ():
            stage_info = tracker.getStageInfo(stage)
            running += stage_info.numActiveTasks if stage_info is not None else 0
    return running


def interrupt(spark, tag: str) -> None:
    """Interrupt the Spark work tagged ``tag`` by :func:`cancellable`, from any thread."""
    if is_connect(spark):
        spark.interruptTag(tag)
    else:
        spark.sparkContext.cancelJobsWithTag(tag)
