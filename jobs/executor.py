"""Which executor runs a task (a module of its own: tasks of every job import it, and it imports nothing)."""

from __future__ import annotations

import os


def executor_identity() -> str:
    """Called inside a task: which executor runs it. A standalone or YARN executor has its own
    ``SPARK_EXECUTOR_DIRS``; in local mode every task runs in the driver's one executor."""
    return os.environ.get("SPARK_EXECUTOR_DIRS") or "driver"


#: :func:`executor_identity` as a Spark SQL expression, for work that Spark runs without a Python
#: function of ours (an observed metric of a read and write): the same environment variable, read
#: in the executor's JVM, whose environment its Python workers inherit (``reflect`` turns a Java
#: null into the string ``'null'``).
EXECUTOR_IDENTITY_SQL = "coalesce(nullif(reflect('java.lang.System', 'getenv', 'SPARK_EXECUTOR_DIRS'), 'null'), 'driver')"
