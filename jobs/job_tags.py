"""The Spark work a job starts, under a job tag of its own: interrupted when the job is, and its
tasks waited for before the job cleans up after them (``jobs/write.py``). Imports nothing of the
jobs but ``spark_info``, so the write job and the session module both use it without a cycle."""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from paimonflow.core.options.parse import parse_duration_millis

from .spark_info import is_connect

_TAG_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")
UNKNOWN_WAIT_SECONDS = 5.0  # when the tasks' state cannot be read: time for Spark to end them


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
            # (a signal that landed inside a Py4J call leaves that call's socket shut: an error of
            # the interrupt must not replace the interruption, which goes on)
            with contextlib.suppress(Exception):
                interrupt(spark, tag)
            raise


def stop_tagged_tasks(spark, tag: str, *, timeout_s: float = 60.0) -> None:
    """Interrupt the Spark work tagged ``tag`` and return once none of its tasks can still write:
    on a classic session when its status tracker shows no running task of the tag's jobs, then
    ``spark.python.task.killTimeout`` more (a killed task's Python worker is destroyed only that
    long after the task); on Spark Connect, whose client sees no tasks, after that grace alone.
    Never raises: when Spark cannot be asked (a signal broke the Py4J connection the job was
    using), it waits the grace and :data:`UNKNOWN_WAIT_SECONDS` more instead."""
    for _ in range(2):  # (the first call after a broken Py4J connection may fail; its retry does not)
        try:
            interrupt(spark, tag)
            break
        except Exception:  # (at most two attempts)
            continue
    grace, watched = 2.0, False
    if not is_connect(spark):
        with contextlib.suppress(Exception):
            context = spark.sparkContext
            with contextlib.suppress(Exception):
                grace = parse_duration_millis(context.getConf().get("spark.python.task.killTimeout", "2s")) / 1000
            tracker, deadline = context.statusTracker(), time.monotonic() + timeout_s
            while time.monotonic() < deadline and _running_tasks(context, tracker, tag):
                time.sleep(0.1)
            watched = True
    time.sleep(grace + 0.5 + (0 if watched else UNKNOWN_WAIT_SECONDS))


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
