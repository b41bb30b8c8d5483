"""Spark's errors as paimonflow's: a user's mistake that Spark reports (a missing input path, a
malformed CSV line, a query it cannot analyse, a paimonflow error raised inside a task) becomes the
typed paimonflow error with one line of message, so that the job prints one JSON line and exits 2
instead of a JVM stack trace. Anything else stays as it is (a defect, reported in full)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from paimonflow.core import errors
from paimonflow.core.errors import (
    DataError,
    InvalidArgumentError,
    InvalidNameError,
    InvalidOptionError,
    PaimonflowError,
    SchemaError,
    SourceError,
    UnsupportedError,
)

#: paimonflow errors a task meets again on every attempt (the same rows, the same table): rows that
#: do not fit the table, a value its column cannot hold, a null key, an argument or a feature
#: refused. A task hands such an error to the driver as data (:func:`task_error`), and the driver
#: raises it once (:func:`raise_task_error`), where Spark would run the task again first
#: (``spark.task.maxFailures``: 4 attempts on a cluster). Anything else (storage, a lost executor)
#: fails the task and is retried by Spark as usual.
DETERMINISTIC_ERRORS: tuple[type[PaimonflowError], ...] = (SchemaError, DataError, InvalidArgumentError,
                                                           InvalidNameError, InvalidOptionError, UnsupportedError)

# "paimonflow.core.errors.SchemaError: column 'id' ..." as the last line of a task's traceback, or
# after Spark's own words on one line ("Failed to ... writer: paimonflow.core.errors.SchemaError: ...")
# when the data source reported it without a traceback
_TASK_ERROR = re.compile(r"(?:^|: )paimonflow\.core\.errors\.(\w+): (.*?)(?:\s+SQLSTATE: \w+)?$", re.MULTILINE)
_CONDITION = re.compile(r"\[([A-Z_.]+)\]\s*(.*)")


def typed_error(exc: BaseException) -> PaimonflowError | None:
    """The paimonflow error ``exc`` stands for, or None when it is not a user's mistake we know."""
    try:
        from pyspark.errors import AnalysisException, PySparkException
    except ImportError:  # pragma: no cover - the jobs need PySpark
        return None
    if isinstance(exc, PaimonflowError):
        return exc
    text = str(exc)
    raised = _TASK_ERROR.findall(text)
    if raised:  # a task failed with a paimonflow error: the same type, its own message
        name, message = raised[-1]
        cls = getattr(errors, name, None)
        if isinstance(cls, type) and issubclass(cls, PaimonflowError):
            return _rebuilt(cls, message)
    if is_malformed_record(exc):
        file = re.search(r"while reading file (\S+?)\.?\s", text)
        record = re.search(r"Malformed CSV record: (.*?) SQLSTATE", text)
        where = f" in {file.group(1)}" if file else ""
        what = f": {record.group(1)!r}" if record else ""
        return DataError(f"a malformed record{where}{what} (parse mode FAILFAST: the source does not match the "
                         "table schema); nothing was committed")
    if isinstance(exc, AnalysisException):
        condition = _CONDITION.search(text)
        first = (condition.group(0) if condition else text).splitlines()[0]
        return SourceError(re.sub(r"\s*SQLSTATE: \w+\.?$", "", first))
    if isinstance(exc, PySparkException) and "FAILED_READ_FILE" in text:
        return SourceError(text.splitlines()[0])
    return None


def is_malformed_record(exc: BaseException) -> bool:
    """Whether ``exc`` is Spark refusing a malformed CSV or JSON record (parse mode ``FAILFAST``)."""
    text = str(exc)
    return "MALFORMED_RECORD_IN_PARSING" in text or "MALFORMED_CSV_RECORD" in text


@contextmanager
def typed_errors() -> Iterator[None]:
    """Raise, in place of an error from Spark, the paimonflow error it stands for (others pass unchanged)."""
    try:
        yield
    except PaimonflowError:
        raise
    except Exception as exc:
        typed = typed_error(exc)
        if typed is None:
            raise
        raise typed from None


def task_error(exc: PaimonflowError) -> str:
    """What a task returns instead of raising ``exc`` (one of :data:`DETERMINISTIC_ERRORS`): its
    type and message, as JSON text."""
    return json.dumps({"error": type(exc).__name__, "message": str(exc)})


def raise_task_error(returned: Iterable[str | None]) -> None:
    """Raise the first error the tasks returned (``returned``: each task's :func:`task_error`
    text, or None), as its own paimonflow type and message; return if none did."""
    for text in returned:
        if text:
            document = json.loads(text)
            cls = getattr(errors, document["error"], None)
            if not (isinstance(cls, type) and issubclass(cls, PaimonflowError)):
                cls = PaimonflowError
            raise _rebuilt(cls, document["message"])


def _rebuilt(cls: type[PaimonflowError], message: str) -> PaimonflowError:
    """``cls`` with ``message``, also for errors built from named parts (``InvalidOptionError(key,
    value, reason)``): across the task boundary only the message survives."""
    try:
        return cls(message)
    except TypeError:
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        return error
