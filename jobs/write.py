"""The write job: rows from files, a Spark table or a query into a table, one commit.

Each row's bucket is Paimon's hash computed by Spark itself where the bucket key allows
(``jobs/bucket_expr.py``: non-null integer keys), else by the core's vectorized hash in Python
workers; Spark shuffles the rows so each bucket lands in exactly one task, each task writes (and,
unless the table is ``write-only``, compacts) its buckets and returns commit messages, and the
driver commits once. Dynamic-bucket tables are shuffled by partition (a task owns a partition's key index);
cross-partition upsert tables are written by one task (one global key index). With a commit user
and identifier the job is exactly-once: a rerun after the commit landed writes and commits
nothing and reports the existing snapshot; a rerun after a crash before the commit writes again
and commits once (the first attempt's files are orphans for ``remove-orphan-files``).
"""

from __future__ import annotations

import contextlib
import logging
import pickle
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from paimonflow.core.errors import (
    CommitOutcomeUnknownError,
    Interrupted,
    InvalidArgumentError,
    note_files_removed,
)
from paimonflow.core.faults import crash_point
from paimonflow.core.write.commit import BATCH_COMMIT_IDENTIFIER
from paimonflow.core.write.conform import chunks
from paimonflow.core.write.signals import signals_deferred
from paimonflow.core.write.writer_token import files_of_token, new_token

from .executor import executor_identity
from .job_tags import stop_tagged_tasks, tagged
from .location import TableLocation
from .result import JobResult, Stopwatch
from .spark_errors import DETERMINISTIC_ERRORS, is_malformed_record, raise_task_error, task_error
from .spark_info import default_parallelism

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_log = logging.getLogger(__name__)
BUCKET_COLUMN = "__paimonflow_bucket"
# writer tasks per task slot of the session (by default): buckets hash unevenly onto tasks, and
# more tasks than slots even out the load (measured on local[2], 80 buckets: 3 tasks as adaptive
# execution sized them, 7.5 s; 4 tasks, 6.3 s)
WRITERS_PER_SLOT = 2
# a writer task's one row: its pickled commit messages, its executor, and the deterministic error
# (spark_errors.DETERMINISTIC_ERRORS) it met instead, raised once by the driver rather than retried
PAYLOAD_SCHEMA = "payload binary, executor string, error string"
_PAYLOAD = pa.schema([("payload", pa.binary()), ("executor", pa.string()), ("error", pa.string())])
# the bucket of rows whose bucket key does not fit the table (a null key, a value out of range):
# the writer task that gets them reports the error (no attempt of the bucketing task fails on it)
UNFIT_BUCKET = -1
TEXT_FORMATS = ("csv", "json")


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteSource:
    """Exactly one of: files at ``path`` (``format`` parquet, csv, json, orc), a Spark table, a query."""

    path: str | None = None
    format: str = "parquet"
    spark_table: str | None = None
    sql: str | None = None
    read_options: Mapping[str, str] | None = None

    def dataframe(self, spark, schema=None):
        """The source as a DataFrame. Text formats (csv, json) are parsed with ``schema`` (the
        table's Spark schema) in ``FAILFAST`` mode unless ``read_options`` say otherwise: a
        malformed line fails the job before anything is committed, where Spark's default
        (``PERMISSIVE``) would turn it into nulls and shifted values."""
        given = [x for x in (self.path, self.spark_table, self.sql) if x]
        if len(given) != 1:
            raise InvalidArgumentError("give exactly one source: a path, a Spark table or a SQL query")
        if self.path:
            reader = spark.read.format(self.format)
            if self.format in TEXT_FORMATS:
                reader = reader.option("mode", "FAILFAST")
            if self.format == "csv":
                reader = reader.option("header", "true")
                if schema is not None:  # the header's columns, in its order, with the table's types
                    schema = _csv_schema(spark.read.option("header", "true").csv(self.path).columns, schema)
                else:
                    reader = reader.option("inferSchema", "true")
            if self.format in TEXT_FORMATS and schema is not None:
                reader = reader.schema(schema)
            for key, value in (self.read_options or {}).items():
                reader = reader.option(key, value)
            return reader.load(self.path)
        if self.spark_table:
            return spark.table(self.spark_table)
        return spark.sql(self.sql)


def _csv_schema(header: Sequence[str], table_schema):
    """A Spark schema for a CSV file with ``header``: each column with its type in
    ``table_schema``, columns the table does not have as strings (they are dropped later)."""
    from pyspark.sql.types import StringType, StructField, StructType

    types = {f.name: f.dataType for f in table_schema.fields}
    return StructType([StructField(name, types.get(name, StringType()), True) for name in header])


def _with_buckets(location: TableLocation):
    """mapInArrow function: append each row's bucket (fixed buckets; 0 otherwise)."""

    def add(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = location.open()
        for batch in batches:
            try:
                buckets = bucket_of(table, batch)
            except DETERMINISTIC_ERRORS:  # raised again, once, by the writer task that gets these rows
                buckets = np.full(batch.num_rows, UNFIT_BUCKET, np.int32)
            yield batch.append_column(BUCKET_COLUMN, pa.array(buckets, pa.int32()))

    return add


def bucket_of(table, batch: pa.RecordBatch) -> np.ndarray:
    """Each row's bucket (fixed buckets; 0 otherwise); the bucket key's values converted to the
    table's types first, so a key that does not fit raises its ``SchemaError`` or ``DataError``."""
    from paimonflow.core.data.bucket import bucket_ids
    from paimonflow.core.write.conform import conform

    keys = list(table.schema.bucket_keys) if table.options.bucket > 0 else []
    if not keys:
        return np.zeros(batch.num_rows, np.int32)
    conformed = conform(pa.Table.from_batches([batch]).select(keys),
                        pa.schema([table.arrow_schema.field(k) for k in keys]), table.primary_keys)
    return bucket_ids([conformed.column(k) for k in keys], table.options.bucket).astype(np.int32)


def _fitting(table, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches``, after raising the error of any row whose bucket key did not fit the table
    (:data:`UNFIT_BUCKET`: computing its bucket again raises what the bucketing task met)."""
    import pyarrow.compute as pc

    for batch in batches:
        buckets = batch.column(BUCKET_COLUMN)
        if batch.num_rows and pc.min(buckets).as_py() == UNFIT_BUCKET:
            unfit = batch.filter(pc.equal(buckets, UNFIT_BUCKET))
            bucket_of(table, unfit)
            raise RuntimeError(f"{unfit.num_rows} rows were not given a bucket, and their bucket key fits")  # a bug
        yield batch


def _bucketed(df, table, location: TableLocation):
    """``df`` with each row's bucket: a Spark expression where Paimon's hash is expressible
    (``jobs/bucket_expr.py``), else the core's hash in Python workers (fixed buckets; 0 otherwise)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StructField, StructType

    from .bucket_expr import bucket_expression

    if table.options.bucket > 0:
        keys = [table.arrow_schema.field(k) for k in table.schema.bucket_keys]
        expression = bucket_expression(keys, dict(df.dtypes), table.options.bucket)
        if expression is not None:
            return df.withColumn(BUCKET_COLUMN, F.expr(expression))
    bucketed = StructType([*df.schema.fields, StructField(BUCKET_COLUMN, IntegerType(), False)])
    return df.mapInArrow(_with_buckets(location), bucketed)


def check_source_types(spark_schema, table) -> None:
    """Refuse, before any task runs, the source columns whose Spark type the table's column does
    not take (the core's rule of lossless conversions, :mod:`paimonflow.core.data.conversion`):
    one :class:`~paimonflow.core.errors.SchemaError` naming each. Values (an overflowing number)
    are checked by the tasks as they write; columns the table lacks are left to the caller."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from paimonflow.core.data.conversion import check_writable, field_types

    try:
        arrow = to_arrow_schema(spark_schema, timezone="UTC")  # what mapInArrow hands the tasks
    except TypeError:  # a Spark type without an Arrow form: Spark refuses it when it converts the rows
        return
    check_writable(arrow, table.arrow_schema, field_types(table.schema.fields))


def write_batches(table, batches: Iterator[pa.RecordBatch], *, row_kind_column: str | None = None,
                  drop: Sequence[str] = (), **new_write: object) -> list:
    """One Spark task's write: every batch (less ``drop`` and the row-kind column, whose values
    give each row's kind) through one core writer, regrouped as the core regroups a stream (``conform.chunks``); returns its
    commit messages. On failure (a task killed by Spark's cancellation included, when Python sees
    it) the writer is aborted: it stops between batches and deletes every file it wrote (nothing
    will ever commit them)."""
    writer = table.new_write(**new_write)
    try:
        for chunk in chunks(batches, writer.chunk_bytes):
            kinds = chunk.column(row_kind_column) if row_kind_column else None
            unwanted = [n for n in (*drop, row_kind_column) if n and n in chunk.schema.names]
            writer.write(chunk.drop_columns(unwanted) if unwanted else chunk, row_kinds=kinds)
        return writer.prepare_commit()
    except BaseException:
        writer.abort(include_prepared=True)
        raise
    finally:
        writer.close()


def _after_failed_commit(table, commit_user: str, identifier: int, before: int, messages: Sequence,
                         exc: BaseException) -> None:
    """After the driver's commit failed or was interrupted: delete the files of ``messages`` only
    when storage shows that no snapshot of this commit landed after ``before`` (a failed look-up
    deletes nothing), and tell an interrupt what became of the commit (its one line says it)."""
    if table.known_not_committed(commit_user, identifier, after=before):
        table.manifest_io.delete_data_files(messages)
        note_files_removed(exc, sum(len(m.all_written_files()) for m in messages))
        if isinstance(exc, Interrupted):
            exc.outcome_known = True
        return
    if isinstance(exc, Interrupted):
        with contextlib.suppress(Exception):
            found = table.committed_snapshot(commit_user, identifier, after=before)
            if found is not None:
                exc.outcome_known, exc.committed_snapshot = True, found.id


def _remove_task_files(spark, table, tag: str | None, token: str, exc: BaseException) -> None:
    """After the writer tasks' stage failed or the driver was interrupted while it collected their
    messages: stop the tasks still running, wait until none runs, and delete every file a task of
    this job wrote (found by the job's token; nothing committed them). A failure to clean up leaves
    orphans for ``remove-orphan-files`` and never hides the job's own error."""
    if tag is not None:
        stop_tagged_tasks(spark, tag)  # (never raises: when Spark cannot tell, it waits longer)
    try:
        found = files_of_token(table, token)
        for path in found:
            table.file_io.delete(path)
        note_files_removed(exc, len(found))
    except Exception as failed:  # best effort: the job's own error is the one to report
        _log.warning("the files of the interrupted or failed writer tasks were not all removed (orphans for "
                     "remove-orphan-files): %s", failed)


def _writer_task(location: TableLocation, overwrite: bool, row_kind_column: str | None,
                 commit_user: str | None = None, file_token: str | None = None):
    """mapInArrow function: write this task's rows (it owns their buckets); yield its pickled
    commit messages. Its file names carry the job's ``file_token`` (``core/write/writer_token.py``)."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = location.open()
        error: str | None = None
        try:  # a deterministic error is returned, not raised: another attempt would meet it again
            payload = pickle.dumps(write_batches(table, _fitting(table, batches), row_kind_column=row_kind_column,
                                                 drop=[BUCKET_COLUMN], overwrite=overwrite, commit_user=commit_user,
                                                 file_token=file_token))
        except DETERMINISTIC_ERRORS as exc:  # (the writer has deleted its files)
            payload, error = b"", task_error(exc)
        yield pa.RecordBatch.from_pydict({"payload": [payload], "executor": [executor_identity()], "error": [error]},
                                         schema=_PAYLOAD)

    return write


def write(spark, location: TableLocation, source: WriteSource | DataFrame, *, mode: str = "append",
          overwrite_partition: Mapping[str, object] | None = None, row_kind_column: str | None = None,
          commit_user: str | None = None, commit_identifier: int | None = None,
          parallelism: int | None = None) -> JobResult:
    """Write ``source`` (a :class:`WriteSource` or a DataFrame) into the table as one commit."""
    watch = Stopwatch()
    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError(f"mode must be append or overwrite, not {mode!r}")
    table = location.open()
    location = location.pinned(table.schema.id)
    overwrite = None
    if mode == "overwrite":
        overwrite = table.overwrite_spec(dict(overwrite_partition) if overwrite_partition else True)
    committer = table.new_commit(commit_user)
    identifier = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else int(commit_identifier)
    existing = committer.already_committed(identifier) if commit_user is not None else None
    if existing is not None:
        return JobResult(job="write", table=location.identifier, snapshot_id=existing.id, duration_s=watch.elapsed,
                         metrics={"already_committed": True})
    if isinstance(source, WriteSource):
        from pyspark.sql.pandas.types import from_arrow_schema

        extra = [pa.field(row_kind_column, pa.string())] if row_kind_column else []
        df = source.dataframe(spark, from_arrow_schema(pa.schema([*table.arrow_schema, *extra])))
    else:
        df = source
    read_schema = df.schema  # a text source's columns as Spark parses them
    names = set(df.columns)
    for field in table.arrow_schema:
        if field.name not in names:
            raise InvalidArgumentError(f"the source has no column {field.name!r}; table columns are "
                                       f"{table.arrow_schema.names}")
    wanted = list(table.arrow_schema.names) + ([row_kind_column] if row_kind_column else [])
    df = df.select(*wanted)
    check_source_types(df.schema, table)
    with_buckets = _bucketed(df, table, location)
    partitions = list(table.partition_keys)

    tasks = parallelism or WRITERS_PER_SLOT * default_parallelism(spark)

    def by(*columns: str):  # a given number of tasks: adaptive execution does not merge them
        return with_buckets.repartition(tasks, *columns)

    if table.primary_keys and table.options.bucket == -1:
        cross = not set(partitions) <= set(table.primary_keys)
        shuffled = with_buckets.coalesce(1) if cross or not partitions else by(*partitions)
    else:
        shuffled = by(*partitions, BUCKET_COLUMN)
    token, tag = new_token(), None
    try:
        with tagged(spark, "paimonflow-write-tasks") as tag:
            payloads = shuffled.mapInArrow(_writer_task(location, overwrite is not None, row_kind_column,
                                                        committer.commit_user, token),
                                           PAYLOAD_SCHEMA).collect()
    except BaseException as exc:  # the job failed or was interrupted before its files were known
        with signals_deferred():
            _remove_task_files(spark, table, tag, token, exc)
        if isinstance(exc, Exception) and isinstance(source, WriteSource) and source.path \
                and source.format == "csv" and is_malformed_record(exc):
            _refuse_malformed_csv(spark, source, read_schema, table)
        raise
    try:
        raise_task_error(row.error for row in payloads)  # a task's deterministic error: once, not retried
    except BaseException as exc:
        with signals_deferred():
            _remove_task_files(spark, table, None, token, exc)  # what the other tasks wrote
        raise
    messages: list = []
    before = 0
    try:
        with signals_deferred():  # a signal while the messages are decoded lands once all are known
            before = table.snapshot_manager.latest_id() or 0
            messages = [m for row in payloads for m in pickle.loads(row.payload)]
        crash_point("spark-write:before-commit")
        with signals_deferred():  # SIGINT/SIGTERM on the driver wait until the commit has landed or failed
            result = committer.commit(messages, commit_identifier=identifier, overwrite=overwrite)
    except CommitOutcomeUnknownError:
        raise
    except BaseException as exc:  # SIGINT/SIGTERM on the driver included
        _after_failed_commit(table, committer.commit_user, identifier, before, messages, exc)
        raise
    from paimonflow.core.maintenance.post_commit import after_batch_write

    result = after_batch_write(table, result)  # tag.automatic-creation=batch, as Paimon's Spark writes do
    files = [f for m in messages for f in m.new_files]
    return JobResult(job="write", table=location.identifier, snapshot_id=result.snapshot_id,
                     duration_s=watch.elapsed, executors=len({row.executor for row in payloads}),
                     metrics={"rows_written": sum(f.row_count for f in files), "files_written": len(files),
                              "bytes_written": sum(f.file_size for f in files), "tasks": len(payloads),
                              "buckets": len({(m.partition, m.bucket) for m in messages}),
                              "compacted_files": sum(len(m.compact_before) for m in messages),
                              "notes": list(result.notes)})


def _refuse_malformed_csv(spark, source: WriteSource, read_schema, table) -> None:
    """Raise a :class:`~paimonflow.core.errors.DataError` naming every column of the CSV source
    ``source`` that holds a value its type cannot take (the first one, with its file and record)
    and the records whose field count is off; return if the source shows none (Spark's own error
    then stands)."""
    from paimonflow.core.data.conversion import field_types, paimon_notation
    from paimonflow.core.data.csv_records import describe
    from paimonflow.core.errors import DataError

    from .csv_records import csv_source_problems

    types = field_types(table.schema.fields)
    names = {f.name: paimon_notation(f.type, types[f.name]) for f in table.arrow_schema}
    try:
        values, records = csv_source_problems(spark, source, read_schema, names)
    except Exception:  # the look that explains the failure failed itself: Spark's error stands
        return
    if values or records:
        raise DataError(f"the CSV source does not fit the table's columns (parse mode FAILFAST; nothing was "
                        f"committed): {describe(values, records)}") from None


def partition_spec(text: str | None) -> dict[str, str] | None:
    """``"dt=2026-11-21,hh=10"`` -> ``{"dt": "2026-11-21", "hh": "10"}``."""
    if not text:
        return None
    out = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise InvalidArgumentError(f"partition spec {text!r} must be k=v[,k2=v2]")
        out[key.strip()] = value
    return out


def partition_specs(texts: Sequence[str] | None) -> list[dict[str, str]] | None:
    """Several partition specs (None: none given); an empty one raises :class:`InvalidArgumentError`."""
    if not texts:
        return None
    specs = []
    for text in texts:
        spec = partition_spec(text)
        if spec is None:
            raise InvalidArgumentError("a partition spec is empty; each must be k=v[,k2=v2]")
        specs.append(spec)
    return specs
