"""The ``paimonflow`` Spark data source (PySpark 4's Python Data Source API).

``paimonflow`` cannot clash with Apache Paimon's own Spark connector (``paimon``)::

    spark.read.format("paimonflow").option("warehouse", wh).load("db.t")          # batch
    spark.readStream.format("paimonflow").option("warehouse", wh).load("db.t")    # streaming
    df.write.format("paimonflow").option("warehouse", wh).mode("append").save("db.t")
    df.writeStream.format("paimonflow").option("warehouse", wh).option("checkpointLocation", cp)...

Batch reads: splits (partition, bucket) packed into Spark partitions by size (``jobs/splits.py``:
Paimon's ``source.split.target-size`` and ``source.split.open-file-cost``, the session's default
parallelism). Each action reads the table as it is then, though PySpark keeps a DataFrame's first
plan (see :class:`PaimonflowReader`); so no filter is taken from Spark: the ``partitions`` and
``columns`` options (or a user-given schema with fewer columns) read less; on a row-tracking
table ``columns`` may name ``_ROW_ID`` and ``_SEQUENCE_NUMBER``, as Paimon's engines expose
them. Time travel with
``snapshot-id``, ``tag`` or ``timestamp-millis`` (Paimon's ``scan.snapshot-id`` /
``scan.tag-name`` / ``scan.timestamp-millis`` are accepted too); ``incremental-between`` as
Paimon's batch read (docs/spark.md, "Incremental reads"). ``with-rowkind=true`` adds Paimon's row
kind (``+I``/``-U``/``+U``/``-D``) as a first ``rowkind`` column (streams then carry retractions;
without it they carry +I/+U only). A paimonflow error reaches Spark as its one line.

Writes: executors write their rows and return commit messages; the driver commits once
(``commit``), or deletes the written files when Spark aborts. Tasks may share buckets, so each
task numbers its rows with its own interleaved sequence numbers (``sequence-stride``, default
65536 tasks) and never compacts; run the compaction job afterwards, or use
``paimonflow.jobs.write``, which shuffles rows by bucket first. Dynamic-bucket tables need that
job. ``mode("overwrite")`` replaces the partitions present in the data (dynamic, the default) or
the partition given by ``overwrite-partition`` (``dt=2026-11-21,hh=10``). Streaming writes commit
once per micro-batch with the batch id as the commit identifier, under a commit user derived
from ``checkpointLocation`` (or ``commit-user``): a replayed micro-batch commits nothing.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from paimonflow.core.errors import InvalidArgumentError, PaimonflowError, UnsupportedError
from paimonflow.core.meta.capabilities import Operation
from paimonflow.core.options.core import CoreOptions
from paimonflow.core.read.incremental import ROWKIND
from paimonflow.core.read.row_tracking import tracking_fields

from .location import TableLocation, location_from_options
from .splits import DEFAULT_PARALLELISM, SplitPacking

if TYPE_CHECKING:
    from paimonflow.core.predicate import Predicate

FORMAT = "paimonflow"
DEFAULT_SEQUENCE_STRIDE = 65536


# -- errors in one line --------------------------------------------------------------------------
# Spark reports an exception raised in a Python data source with the worker's traceback, unless
# SPARK_HIDE_TRACEBACK is set in the worker (what spark.sql.execution.pyspark.udf.hideTraceback
# sets for the whole session). A paimonflow error is a user's mistake told in its one line, so the
# data source sets it in its own worker for that error only, and puts the worker's setting back
# whenever the data source runs again (a worker may be reused for a user's function after).

_HIDE = "SPARK_HIDE_TRACEBACK"
_HIDE_GIVEN = os.environ.get(_HIDE)
F = TypeVar("F", bound=Callable)


def _restore_traceback_setting() -> None:
    if _HIDE_GIVEN is None:
        os.environ.pop(_HIDE, None)
    else:
        os.environ[_HIDE] = _HIDE_GIVEN


def one_line(function: F) -> F:
    """``function`` reporting a paimonflow error to Spark as its one line, with no traceback."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        _restore_traceback_setting()
        try:
            return function(*args, **kwargs)
        except PaimonflowError:
            os.environ[_HIDE] = "1"
            raise
    return wrapper  # type: ignore[return-value]


def _read_one_line(read: Callable[..., Iterator], *args) -> Iterator:
    """The batches of ``read(*args)``, a paimonflow error reported as by :func:`one_line`."""
    _restore_traceback_setting()
    try:
        yield from read(*args)
    except PaimonflowError:
        os.environ[_HIDE] = "1"
        raise


def _flag(options: Mapping[str, str], key: str) -> bool:
    return str(options.get(key, "false")).lower() in ("true", "1", "yes")


def _first(options: Mapping[str, str], *keys: str) -> str | None:
    for key in keys:
        if options.get(key) not in (None, ""):
            return options[key]
    return None


class PaimonflowDataSource(DataSource):
    """The data source. It takes no filters from Spark (see :class:`PaimonflowReader`);
    ``partitions`` and ``columns`` options (or a schema with fewer columns) read less."""

    parallelism: ClassVar[int] = DEFAULT_PARALLELISM  # the session's, in the class :func:`register` makes

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def __init__(self, options) -> None:
        super().__init__(options)
        self.options = {k.lower(): v for k, v in dict(options).items()}
        self._given = dict(options)  # Spark also makes instances without options, never used to read or write

    @property
    def location(self) -> TableLocation:
        return location_from_options(self._given)

    def _table(self):
        return self.location.open()

    @one_line
    def schema(self):
        table = self._table()
        arrow = table.read_schema(**_travel(self.options)).arrow_schema()  # time travel: the snapshot's columns
        columns = _columns(self.options)
        if columns is not None:
            # Paimon's engines also expose _ROW_ID and _SEQUENCE_NUMBER of row-tracking tables
            readable = pa.schema([*arrow, *tracking_fields(table.options.raw).values()])
            unknown = [c for c in columns if c not in readable.names]
            if unknown:
                raise InvalidArgumentError(f"the columns option names {unknown}, which table "
                                           f"{table.identifier!r} does not have; its columns are {readable.names}")
            arrow = pa.schema([readable.field(c) for c in columns])
        if _flag(self.options, "with-rowkind"):
            arrow = arrow.insert(0, pa.field(ROWKIND, pa.string(), nullable=False))
        return from_arrow_schema(arrow)

    @one_line
    def reader(self, schema):
        return PaimonflowReader(self.location, self.options, schema, parallelism=self.parallelism)

    def streamReader(self, schema):
        try:
            return PaimonflowStreamReader(self.location, self.options, schema, parallelism=self.parallelism)
        except PaimonflowError as exc:
            # PySpark 4.3's stream runner hides an error raised here behind its own (it stops a
            # reader it never got): the error is raised by the first call Spark makes instead
            return _RefusedStreamReader(exc)

    @one_line
    def writer(self, schema, overwrite: bool):
        return PaimonflowWriter(self.location, self.options, overwrite, schema)

    @one_line
    def streamWriter(self, schema, overwrite: bool):
        return PaimonflowStreamWriter(self.location, self.options, overwrite, schema)


def _travel(options: Mapping[str, str]) -> dict:
    """The time-travel arguments of a read's options (empty: the latest snapshot)."""
    snapshot_id = _first(options, "snapshot-id", "scan.snapshot-id", "versionasof")
    tag = _first(options, "tag", "scan.tag-name")
    millis = _first(options, "timestamp-millis", "scan.timestamp-millis")
    out: dict = {}
    for key, text in (("snapshot_id", snapshot_id), ("timestamp", millis)):
        if text:
            try:
                out[key] = int(text)
            except ValueError:
                raise InvalidArgumentError(f"snapshot-id and timestamp-millis take integers, not {text!r}") from None
    if tag:
        out["tag"] = tag
    return out


def _columns(options: Mapping[str, str]) -> list[str] | None:
    """The ``columns`` option (``"id,v"``): the columns to read, None when not given."""
    text = _first(options, "columns")
    if text is None:
        return None
    columns = [c.strip() for c in text.split(",") if c.strip()]
    if not columns:
        raise InvalidArgumentError(f"the columns option must name columns (\"id,v\"), not {text!r}")
    return columns


def _partition_filter(table, text: str | None):
    """The ``partitions`` option (``"dt=2026-11-21,hh=10;dt=2026-11-22"``, ``;`` for or, as Paimon's
    procedures take it) as a predicate on the partition columns, None when not given."""
    if text is None:
        return None
    from paimonflow.core.data.partition import partition_predicate
    from paimonflow.core.errors import SchemaError

    from .write import partition_spec

    specs = []
    for spec_text in text.split(";"):
        spec = partition_spec(spec_text.strip())
        if not spec:
            raise InvalidArgumentError(f"the partitions option {text!r} must be k=v[,k2=v2][;k=v...]")
        outside = sorted(set(spec) - set(table.partition_keys))
        if outside:
            raise SchemaError(f"the partitions option names {outside}, which are not partition columns of "
                              f"{table.identifier!r} (its partition keys are {list(table.partition_keys)})")
        specs.append(spec)
    return partition_predicate(specs, table.arrow_schema, default_name=table.options.partition_default_name)


# -- reading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitPartition(InputPartition):
    """Splits of a snapshot (``kind="splits"``: ``slot`` of ``slots``), the changes of one
    snapshot (``"changes:<mode>"``), a diff (``"diff"``) or merged changes (``"net"``)."""

    kind: str
    payload: bytes  # the pickled list of core Splits, for "splits" and "net"
    snapshot_id: int
    slot: int = 0


def _split_partitions(packing: SplitPacking, splits: list, snapshot_id: int, *, kind: str = "splits",
                      slots: int = 0) -> list[SplitPartition]:
    """The Spark partitions reading ``splits`` of snapshot ``snapshot_id``, packed by ``packing``
    (at least ``slots`` partitions: the empty ones read what later snapshots add)."""
    groups = packing.pack(splits, [sum(f.file_size for f in s.files) for s in splits], [len(s.files) for s in splits])
    groups += [[] for _ in range(slots - len(groups))]
    return [SplitPartition(kind, pickle.dumps(g), snapshot_id, slot) for slot, g in enumerate(groups)]


def _bucket_key(split) -> tuple:
    return (split.partition, split.bucket)


def _slot_of(key: tuple, planned: Mapping[tuple, int], slots: int) -> int:
    """The Spark partition that reads bucket ``key``: the one that read it in the plan, else one
    chosen by a hash of the key that every task computes alike."""
    if key in planned:
        return planned[key]
    return zlib.crc32(repr(key).encode()) % slots


def _target_schema(spark_schema) -> pa.Schema:
    return to_arrow_schema(spark_schema, timezone="UTC")


def _conformed(batch: pa.RecordBatch | pa.Table, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    table = table.select(schema.names)
    if table.schema != schema:
        table = table.cast(schema)
    yield from table.to_batches()


class PaimonflowReader(DataSourceReader):
    """Batch reads of one snapshot, or with ``incremental-between=start,end`` the changes after
    snapshot ``start`` up to ``end`` (see docs/spark.md for what each scan mode returns).

    PySpark 4.3 plans a Python data source once per DataFrame or view and runs that plan again for
    every later action on it (the reader and its partitions are kept by the JVM; a query with
    pushable filters replaces them, and the next query without filters reuses the replacement).
    So nothing a query decides may live in the plan: this reader takes no filters from Spark
    (Spark filters the rows itself) and an unpinned read follows the table: each task checks the
    latest snapshot when it starts and, if the table moved since the plan, plans that snapshot
    itself and reads the buckets of its slot (each bucket in the slot that read it in the plan,
    new buckets by a hash of their partition and bucket). A read pinned by ``snapshot-id``,
    ``tag``, ``timestamp-millis`` or ``incremental-between`` reads what was planned."""

    def __init__(self, location: TableLocation, options: Mapping[str, str], schema, *,
                 parallelism: int = DEFAULT_PARALLELISM) -> None:
        self.location, self.options = location, dict(options)
        self.target = _target_schema(schema)
        self.between = _between(self.options)
        self.with_rowkind = ROWKIND in self.target.names and _flag(options, "with-rowkind")
        self.columns = [n for n in self.target.names if n != ROWKIND or not self.with_rowkind]
        table = location.open()
        table.capabilities.require(Operation.READ)  # on the driver, before Spark plans anything
        travel = _travel(self.options)
        self.follows_latest = not travel and self.between is None
        self.read_schema = table.read_schema(**travel)  # a time-travel read: the snapshot's own schema
        unknown = [c for c in self.columns if c not in self.read_schema.arrow_schema().names
                   and c not in tracking_fields(self.read_schema.options)]
        if unknown:
            raise InvalidArgumentError(f"the schema names columns {unknown} that table {location.identifier!r} "
                                       "does not have")
        self.predicate: Predicate | None = _partition_filter(table, _first(self.options, "partitions"))
        self.location = location.pinned(table.schema.id)
        self.packing = SplitPacking.from_options({**table.options.raw, **self.options}, parallelism)
        snapshot = table.resolve_snapshot(**travel)
        self.snapshot_id = None if snapshot is None else snapshot.id
        self.planned: dict[tuple, int] = {}  # bucket -> the slot that reads it, for reads that follow the table
        self.slots = 0
        if self.between is not None:
            start, end, mode = self.between
            if not 0 <= start < end:
                raise InvalidArgumentError(f"incremental-between needs 0 <= start < end, got {start},{end}")
            from paimonflow.core.read.incremental import batch_mode

            mode = batch_mode(table, mode)
            if mode == "diff" and not table.primary_keys:
                raise InvalidArgumentError("incremental-between-scan-mode diff needs a primary-key table")
            self.between = (start, end, mode)
        self._parts = self._plan(table)

    def _plan(self, table) -> list[SplitPartition]:
        if self.between is not None:
            start, end, mode = self.between
            if mode == "diff":
                return [SplitPartition("diff", pickle.dumps((start, end)), end)]
            if self.with_rowkind:  # every change, in commit order: one partition per snapshot
                return [SplitPartition(f"changes:{mode}", b"", sid) for sid in range(start + 1, end + 1)]
            from paimonflow.core.read.incremental import net_splits

            splits = net_splits(table, start, end, mode)
            return _split_partitions(self.packing, splits, end, kind="net") or [SplitPartition("empty", b"", end)]
        splits = [] if self.snapshot_id is None else table.plan(filter=self._plan_filter(table),
                                                                snapshot_id=self.snapshot_id)
        if not self.follows_latest:
            return _split_partitions(self.packing, splits, self.snapshot_id or 0) or [SplitPartition("empty", b"", 0)]
        parts = _split_partitions(self.packing, splits, self.snapshot_id or 0, slots=self.packing.parallelism)
        self.slots = len(parts)
        self.planned = {_bucket_key(s): part.slot for part in parts for s in pickle.loads(part.payload)}
        return parts

    def partitions(self):
        return self._parts

    def __getstate__(self) -> dict:
        # the reader travels to every task; the plan travels in each task's own partition
        return {k: v for k, v in self.__dict__.items() if k != "_parts"}

    def _plan_filter(self, table):
        # splits are planned with the table's schema; a filter names the read schema's columns,
        # so a time-travel read under another schema is planned without it (it still filters rows)
        return self.predicate if self.read_schema.id == table.schema.id else None

    def read(self, partition: InputPartition):
        assert isinstance(partition, SplitPartition)  # Spark hands back what partitions() made
        yield from _read_one_line(self._read, partition)

    def _read(self, partition: SplitPartition) -> Iterator[pa.RecordBatch]:
        if partition.kind == "empty":
            return
        table = self.location.open()
        if partition.kind == "diff" or partition.kind.startswith("changes:"):
            start, end = pickle.loads(partition.payload) if partition.kind == "diff" else (
                partition.snapshot_id - 1, partition.snapshot_id)
            mode = "diff" if partition.kind == "diff" else partition.kind.split(":", 1)[1]
            rows = table.read_changes(start, end, mode=mode, columns=self.columns)
            if not self.with_rowkind:  # a batch read returns rows, not retractions
                rows = _added(rows)
            if rows.num_rows:
                yield from _conformed(rows, self.target)
            return
        if partition.kind == "net":
            from paimonflow.core.read.incremental import read_net

            for split in pickle.loads(partition.payload):
                rows = read_net(table, split, self.columns)
                if rows.num_rows:
                    yield from _conformed(rows, self.target)
            return
        splits = pickle.loads(partition.payload)
        if self.follows_latest:
            splits = self._current_splits(table, partition, splits)
        reader = table.split_reader(self.read_schema, CoreOptions.from_map(self.read_schema.options))
        for batch in reader.read_batches(splits, columns=self.columns, predicate=self.predicate):
            if self.with_rowkind:
                batch = _with_insert_kind(batch)
            yield from _conformed(batch, self.target)

    def _current_splits(self, table, partition: SplitPartition, planned: list) -> list:
        """This slot's splits of the latest snapshot: the planned ones while the table has not
        moved since the plan, else planned again from the latest snapshot."""
        latest = table.snapshot_manager.latest()
        if latest is None or latest.id == partition.snapshot_id:
            return planned if latest is not None else []
        if latest.schema_id != self.read_schema.id and not _same_columns(
                table.schema_manager.schema(latest.schema_id), self.read_schema):
            from paimonflow.core.errors import SchemaError

            raise SchemaError(f"the schema of table {self.location.identifier!r} changed (schema {self.read_schema.id} "
                              f"to {latest.schema_id}) since this DataFrame or view was planned: load it again")
        return [s for s in table.plan(filter=self.predicate, snapshot_id=latest.id)
                if _slot_of(_bucket_key(s), self.planned, self.slots) == partition.slot]


def _same_columns(a, b) -> bool:
    """Whether two schemas of a table read alike: same columns and keys (an options or comment
    change makes a new schema a planned read can still follow)."""
    return (a.fields, a.partition_keys, a.primary_keys) == (b.fields, b.partition_keys, b.primary_keys)


def _between(options: Mapping[str, str]) -> tuple[int, int, str] | None:
    text = _first(options, "incremental-between")
    if text is None:
        return None
    try:
        start, end = (int(x) for x in text.split(","))
    except ValueError:
        raise InvalidArgumentError(f"incremental-between must be 'start,end' snapshot ids, not {text!r}") from None
    mode = options.get("incremental-between-scan-mode", "auto")
    if mode not in ("auto", "changelog", "delta", "diff"):
        raise InvalidArgumentError(f"unknown incremental-between-scan-mode {mode!r}: auto, changelog, delta or diff")
    return start, end, mode


def _added(rows: pa.Table) -> pa.Table:
    """The +I and +U rows of changes, without their ``rowkind``."""
    import pyarrow.compute as pc

    return rows.filter(pc.is_in(rows.column(ROWKIND), pa.array(["+I", "+U"]))).drop_columns([ROWKIND])


def _with_insert_kind(batch: pa.RecordBatch) -> pa.Table:
    table = pa.Table.from_batches([batch])
    return table.add_column(0, ROWKIND, pa.repeat(pa.scalar("+I", pa.string()), table.num_rows))


# -- streaming reads -------------------------------------------------------------------------------


class PaimonflowStreamReader(DataSourceStreamReader):
    """Offsets are ``{"next": n, "full": f}``: changes of snapshots ``>= n`` are still to come, and
    ``f > 0`` means the whole state of snapshot ``f`` is still to be emitted first (the ``*-full``
    start modes). ``scan.mode``, ``scan.snapshot-id``, ``scan.timestamp-millis`` choose the start;
    with ``consumer-id`` the stream resumes where that consumer stopped and records its progress
    (protecting unread snapshots from expiry) whenever Spark commits a micro-batch.
    ``max-snapshots-per-trigger`` bounds a micro-batch (default 100)."""

    def __init__(self, location: TableLocation, options: Mapping[str, str], schema, *,
                 parallelism: int = DEFAULT_PARALLELISM) -> None:
        if _first(options, "partitions") is not None:
            raise InvalidArgumentError("the partitions option is for batch reads; filter the stream instead")
        table = location.open()
        table.capabilities.require(Operation.READ)  # on the driver, before Spark plans anything
        self.location, self.options = location.pinned(table.schema.id), dict(options)
        self.packing = SplitPacking.from_options({**table.options.raw, **self.options}, parallelism)
        self.target = _target_schema(schema)
        self.with_rowkind = ROWKIND in self.target.names and _flag(options, "with-rowkind")
        self.columns = [n for n in self.target.names if n != ROWKIND or not self.with_rowkind]
        self.consumer_id = _first(self.options, "consumer-id")
        self.max_snapshots = int(self.options.get("max-snapshots-per-trigger", 100))

    @one_line
    def initialOffset(self) -> dict:
        from paimonflow.core.read.stream import StreamingScan

        snapshot_id = _first(self.options, "scan.snapshot-id", "snapshot-id")
        millis = _first(self.options, "scan.timestamp-millis", "timestamp-millis")
        mode = self.options.get("scan.mode") or ("from-snapshot" if snapshot_id else
                                                 "from-timestamp" if millis else "latest-full")
        scan = StreamingScan(self.location.open(), mode=mode, snapshot_id=int(snapshot_id) if snapshot_id else None,
                             timestamp_millis=int(millis) if millis else None, consumer_id=self.consumer_id)
        return {"next": int(scan.next_snapshot or 1), "full": int(scan.full_snapshot or 0)}

    @one_line
    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        start = start or self.initialOffset()
        latest = self.location.open().snapshot_manager.latest_id() or 0
        nxt = min(latest + 1, start["next"] + self.max_snapshots)
        return {"next": max(nxt, start["next"]), "full": 0}

    @one_line
    def partitions(self, start: dict, end: dict):
        out = []
        table = self.location.open()
        if start.get("full"):
            out += _split_partitions(self.packing, table.plan(snapshot_id=start["full"]), start["full"])
        out += [SplitPartition("changes", b"", sid) for sid in range(start["next"], end["next"])]
        return out

    def read(self, partition: InputPartition):
        assert isinstance(partition, SplitPartition)  # Spark hands back what partitions() made
        yield from _read_one_line(self._read, partition)

    def _read(self, partition: SplitPartition) -> Iterator[pa.RecordBatch]:
        table = self.location.open()
        if partition.kind == "splits":
            for batch in table.split_reader().read_batches(pickle.loads(partition.payload), columns=self.columns):
                yield from _conformed(_with_insert_kind(batch) if self.with_rowkind else batch, self.target)
            return
        from paimonflow.core.options.registry import ChangelogProducer

        snapshot = table.snapshot_manager.try_snapshot(partition.snapshot_id)
        if snapshot is None:
            from paimonflow.core.errors import SnapshotNotFoundError

            raise SnapshotNotFoundError(f"snapshot {partition.snapshot_id} expired before the stream read it; "
                                        "protect streaming readers with a consumer-id")
        mode = "changelog" if table.options.changelog_producer is not ChangelogProducer.NONE else "delta"
        rows = table.read_changes(partition.snapshot_id - 1, partition.snapshot_id, mode=mode, columns=self.columns)
        if not self.with_rowkind:
            rows = _added(rows)
        if rows.num_rows:
            yield from _conformed(rows, self.target)

    @one_line
    def commit(self, end: dict) -> None:
        if self.consumer_id is not None:
            self.location.open().consumer_manager.record(self.consumer_id, int(end["next"]))


class _RefusedStreamReader(DataSourceStreamReader):
    """A stream reader that could not be made: every call raises its error."""

    def __init__(self, error: PaimonflowError) -> None:
        self.error = error

    @one_line
    def initialOffset(self) -> dict:
        raise self.error

    @one_line
    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        raise self.error

    @one_line
    def partitions(self, start: dict, end: dict):
        raise self.error

    def read(self, partition: InputPartition):
        raise self.error


# -- writing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PaimonflowCommitMessage(WriterCommitMessage):
    payload: bytes  # pickled list of core CommitMessage


def _overwrite_spec(table, options: Mapping[str, str], overwrite: bool):
    if not overwrite:
        return None
    static = _first(options, "overwrite-partition")
    if static:
        spec = dict(kv.split("=", 1) for kv in static.split(","))
        return table.overwrite_spec(spec)
    return table.overwrite_spec(True)


def _check_writable(table, schema=None) -> None:
    """Refuse a write before any task runs: tables the capability gate refuses, dynamic-bucket
    tables, and (given the DataFrame's ``schema``) columns of types the table does not take."""
    table.capabilities.require(Operation.WRITE)
    if table.primary_keys and table.options.bucket == -1:
        raise UnsupportedError(f"table {table.identifier!r} has dynamic buckets: one writer must own each "
                               "partition's key index, so write it with paimonflow.jobs.write (it shuffles by "
                               "partition), not with df.write.format('paimonflow')")
    if schema is not None:
        from .write import check_source_types

        check_source_types(schema, table)


def _task_write(location: TableLocation, options: Mapping[str, str], overwrite: bool,
                iterator: Iterator[pa.RecordBatch]) -> PaimonflowCommitMessage:
    from pyspark import TaskContext

    table = location.open()
    stride = int(options.get("sequence-stride", DEFAULT_SEQUENCE_STRIDE))
    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    if not table.primary_keys and table.options.bucket == -1:
        stride, task = 1, 0  # unaware-bucket append tables: sequence numbers order nothing
    elif task >= stride:
        raise InvalidArgumentError(f"Spark task {task} exceeds sequence-stride {stride}: coalesce the DataFrame "
                                   "or raise the sequence-stride option")
    from .write import write_batches

    messages = write_batches(table, iterator, row_kind_column=_first(options, "rowkind-column"), overwrite=overwrite,
                             sequence_stride=stride, sequence_offset=task, compact=False)
    return PaimonflowCommitMessage(pickle.dumps(messages))


def _messages(messages) -> list:
    return [m for message in messages if message is not None for m in pickle.loads(message.payload)]


def _commit(location: TableLocation, options: Mapping[str, str], overwrite: bool, messages, *,
            commit_user: str | None, identifier: int | None) -> int | None:
    """Commit every task's messages once; on a known failure (or a replay) delete their files."""
    from paimonflow.core.errors import CommitOutcomeUnknownError
    from paimonflow.core.write.commit import BATCH_COMMIT_IDENTIFIER

    table = location.open()
    core_messages = _messages(messages)
    committer = table.new_commit(commit_user)
    identifier = BATCH_COMMIT_IDENTIFIER if identifier is None else identifier
    existing = committer.already_committed(identifier) if commit_user is not None else None
    if existing is not None:
        table.manifest_io.delete_data_files(core_messages)  # a replay: its files are not needed
        return existing.id
    try:
        result = committer.commit(core_messages, commit_identifier=identifier,
                                  overwrite=_overwrite_spec(table, options, overwrite))
    except CommitOutcomeUnknownError:
        raise
    except BaseException:
        table.manifest_io.delete_data_files(core_messages)
        raise
    return result.snapshot_id


class PaimonflowWriter(DataSourceArrowWriter):
    def __init__(self, location: TableLocation, options: Mapping[str, str], overwrite: bool, schema=None) -> None:
        table = location.open()
        _check_writable(table, schema)
        _overwrite_spec(table, options, overwrite)  # a bad partition spec fails before any task runs
        self.location, self.options, self.overwrite = location.pinned(table.schema.id), dict(options), overwrite

    @one_line
    def write(self, iterator):
        return _task_write(self.location, self.options, self.overwrite, iterator)

    @one_line
    def commit(self, messages) -> None:
        identifier = _first(self.options, "commit-identifier")
        _commit(self.location, self.options, self.overwrite, messages, commit_user=_first(self.options, "commit-user"),
                identifier=int(identifier) if identifier else None)

    def abort(self, messages) -> None:
        self.location.open().manifest_io.delete_data_files(_messages(messages))


def stream_commit_user(options: Mapping[str, str], location: TableLocation) -> str:
    """The commit user of a streaming query: ``commit-user``, or one derived from the checkpoint
    location and the table, stable across restarts of the same query."""
    given = _first(options, "commit-user")
    if given:
        return given
    checkpoint = _first(options, "checkpointlocation")
    if not checkpoint:
        raise InvalidArgumentError("a streaming write needs .option('checkpointLocation', ...) or "
                                   ".option('commit-user', ...): the commit user makes replays commit nothing")
    digest = hashlib.sha256(f"{checkpoint}|{location.warehouse}|{location.identifier}".encode()).hexdigest()[:16]
    return f"spark-stream-{digest}"


class PaimonflowStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, location: TableLocation, options: Mapping[str, str], overwrite: bool, schema=None) -> None:
        table = location.open()
        _check_writable(table, schema)
        self.location, self.options, self.overwrite = location.pinned(table.schema.id), dict(options), overwrite
        self.commit_user = stream_commit_user(self.options, location)

    @one_line
    def write(self, iterator):
        return _task_write(self.location, self.options, self.overwrite, iterator)

    @one_line
    def commit(self, messages, batchId: int) -> None:
        _commit(self.location, self.options, self.overwrite, messages, commit_user=self.commit_user,
                identifier=int(batchId))

    def abort(self, messages, batchId: int) -> None:
        self.location.open().manifest_io.delete_data_files(_messages(messages))


__all__ = ["FORMAT", "PaimonflowDataSource"]
