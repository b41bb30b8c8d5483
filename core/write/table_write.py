"""The batch write path: rows in, data files out, commit messages for one committer.

``TableWrite.write`` validates and routes rows to (partition, bucket) groups with vectorized
hashing; ``prepare_commit`` sorts, folds duplicate keys, writes the files (two threads over the
groups) and returns :class:`CommitMessage` objects. Nothing is visible until a committer commits
those messages; files of messages that are never committed are orphans, never read.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa

from ..data import data_file as df
from ..data.bucket import bucket_ids, hash_codes
from ..data.conversion import field_types
from ..data.keys import last_per_key, merge_order, stable_integer_order
from ..data.partition import partition_codes, rows_by_code
from ..errors import (
    DataError,
    InvalidArgumentError,
    InvalidOptionError,
    SchemaError,
    UnsupportedError,
    WriteAbortedError,
)
from ..fs import FileIO, join
from ..merge import merge
from ..meta.index_files import IndexFileMeta, write_dv_file, write_hash_file
from ..meta.layout import POSTPONE_BUCKET
from ..meta.manifest import DataFileMeta
from ..meta.schema import TableSchema
from ..options.core import CoreOptions
from ..options.merge import merge_spec_for
from ..options.registry import ChangelogProducer
from .bucket_index import DynamicBucketOptions, PartitionBucketIndex
from .buffer import RUN_BATCH_ROWS, SpillDirectory, iter_run, iter_slices, merge_runs, remove_files, write_run
from .conform import (
    ACCEPTED_INPUTS,
    chunks,
    conform,
    dataframe_to_arrow,
    not_accepted,
    row_kinds_of,
    to_arrow_table,
)
from .cross_partition import CrossPartitionRouter
from .file_writer import DataFileWriter
from .messages import FILE_SOURCE_COMPACT, CommitMessage
from .postpone import POSTPONE_SEQUENCE, is_postpone, postpone_write_options, validate_retraction
from .progress import report_files
from .row_ids import RowTrackingSettings
from .start import EmptyStart, WriteStart


@dataclass(slots=True)
class _Group:
    """The buffered rows of one (partition, bucket), in arrival order, and its spilled runs."""

    partition: tuple[object, ...]
    bucket: int
    # one table per write call; in a primary-key table each is already in key order (stable:
    # arrival order among equal keys), with its kinds and sequence numbers in the same order
    tables: list[pa.Table] = field(default_factory=list)
    kinds: list[np.ndarray] = field(default_factory=list)
    sequences: list[np.ndarray] = field(default_factory=list)
    nbytes: int = 0
    spills: list[str] = field(default_factory=list)

    @property
    def row_count(self) -> int:
        return sum(len(k) for k in self.kinds)


@dataclass(slots=True)
class _BucketState:
    """What a writer knows of one bucket across flushes and commits: its live files (restored
    from the snapshot the writer started from, plus its own) and what is not committed yet."""

    files: list[DataFileMeta]
    new_files: list[DataFileMeta] = field(default_factory=list)
    changelog: list[DataFileMeta] = field(default_factory=list)
    compact_before: list[DataFileMeta] = field(default_factory=list)
    compact_after: list[DataFileMeta] = field(default_factory=list)
    compact_changelog: list[DataFileMeta] = field(default_factory=list)
    total_buckets: int = -1
    vectors: dict | None = None  # deletion vectors of the live files (tables with deletion vectors)
    vector_files: list[IndexFileMeta] = field(default_factory=list)  # their committed index files
    vectors_changed: bool = False

    def take_message(self, partition: tuple[object, ...], bucket: int, write_vectors=None) -> CommitMessage:
        added: tuple[IndexFileMeta, ...] = ()
        deleted: tuple[IndexFileMeta, ...] = ()
        if self.vectors_changed and write_vectors is not None:
            live = {k: v for k, v in (self.vectors or {}).items() if v}
            new = write_vectors(partition, bucket, live) if live else None
            added, deleted = ((new,) if new else ()), tuple(self.vector_files)
            self.vector_files, self.vectors_changed = ([new] if new else []), False
        message = CommitMessage(partition=partition, bucket=bucket, total_buckets=self.total_buckets,
                                new_files=tuple(self.new_files), changelog_files=tuple(self.changelog),
                                compact_before=tuple(self.compact_before), compact_after=tuple(self.compact_after),
                                compact_changelog=tuple(self.compact_changelog),
                                compact_index_added=added, compact_index_deleted=deleted)
        self.new_files, self.changelog = [], []
        self.compact_before, self.compact_after, self.compact_changelog = [], [], []
        return message

    def apply_compaction(self, before: Sequence[DataFileMeta], after: Sequence[DataFileMeta],
                         changelog: Sequence[DataFileMeta], vectors: dict | None = None) -> list[DataFileMeta]:
        """Record a compaction; returns files it made obsolete that nothing committed knows (to delete)."""
        if vectors is not None:
            self.vectors, self.vectors_changed = vectors, True
        gone = {(f.file_name, f.level) for f in before}
        self.files = [f for f in self.files if (f.file_name, f.level) not in gone] + list(after)
        mine = {(f.file_name, f.level) for f in self.compact_after}
        obsolete = []
        originals = {f.file_name for f in self.compact_before} | {f.file_name for f in self.new_files}
        for f in before:
            if (f.file_name, f.level) in mine:  # written (or upgraded) by an earlier compaction of ours
                self.compact_after = [g for g in self.compact_after if (g.file_name, g.level) != (f.file_name, f.level)]
                if f.file_name not in originals and not any(g.file_name == f.file_name for g in after):
                    obsolete.append(f)
            else:
                self.compact_before.append(f)
        self.compact_after += list(after)
        self.compact_changelog += list(changelog)
        return obsolete


class TableWrite:
    """Buffers rows of one table and turns them into data files and commit messages.

    Not thread-safe; one writer per task. ``write`` may be called many times; ``prepare_commit``
    writes everything buffered and returns the messages (the writer can then be reused: it keeps
    what it knows of each bucket it wrote).

    Memory: rows wait in a buffer bounded by ``write-buffer-size``, which counts their values,
    kinds and sequence numbers and, while a chunk of a stream is routed, that chunk and its
    gathered copy. When it is full, the largest bucket's rows are sorted, folded and spilled to
    local disk as a sorted run (``write-buffer-spillable``, the default) or written as level-0
    files; spilled runs are merged k-way when the bucket is flushed, one bucket at a time.
    Writers that are not ``write-only`` then compact the buckets they wrote (Paimon's universal
    compaction, or a full compaction with ``full-compaction.delta-commits``), and wait for
    compaction during the write once a bucket has ``num-sorted-run.stop-trigger`` sorted runs.

    Interrupts: :meth:`abort` stops the writer between files and batches and deletes every file it
    wrote and did not hand out (``Table.write`` calls it on any failure before its commit lands).
    """

    def __init__(self, *, file_io: FileIO, table_path: str, schema: TableSchema, options: CoreOptions,
                 start: WriteStart | None = None, compactor_factory=None, spill_dir: str | None = None,
                 next_sequence: dict[tuple[tuple[object, ...], int], int] | None = None,
                 sequence_stride: int = 1, sequence_offset: int = 0, commit_user: str | None = None,
                 file_token: str | None = None) -> None:
        options.require_supported_for_write()
        # a postpone-bucket table: rows go unsorted to bucket -2 (core/write/postpone.py)
        self._postpone = is_postpone(options)
        if self._postpone:
            if not schema.primary_keys:
                raise InvalidOptionError("bucket", "-2", "postpone buckets need a primary-key table")
            options = postpone_write_options(options, schema.arrow_schema(), commit_user=commit_user)
        if sequence_stride < 1 or not 0 <= sequence_offset < sequence_stride:
            raise InvalidArgumentError(f"sequence offset {sequence_offset} must be in [0, stride {sequence_stride})")
        # Parallel writers of one bucket (Spark tasks) interleave their sequence numbers: task p of
        # n numbers its rows base + p, base + p + n, ...; no two tasks ever share a number.
        self._stride, self._offset = sequence_stride, sequence_offset
        self._file_io, self._path, self._schema, self._options = file_io, table_path, schema, options
        self._files = DataFileWriter(file_io=file_io, table_path=table_path, schema=schema, options=options,
                                     file_token=file_token)
        self._arrow_schema, self._pk = self._files.arrow_schema, self._files.primary_keys
        self._table_types = field_types(schema.fields)  # Paimon's names of the column types, for errors
        self._partition_keys = self._files.partition_keys
        self._is_pk = bool(schema.primary_keys)
        self._row_tracking = RowTrackingSettings.from_options(schema.options).enabled
        self._bucket = options.bucket
        self._dynamic = self._is_pk and self._bucket == -1
        self._cross_partition = self._dynamic and not set(schema.partition_keys) <= set(schema.primary_keys)
        self._router: CrossPartitionRouter | None = None
        if not self._is_pk and self._bucket > 0 and not options.bucket_key:
            raise InvalidOptionError("bucket", str(self._bucket),
                                     "an append table with fixed buckets needs 'bucket-key'")
        self._bucket_keys = list(schema.bucket_keys) if self._bucket > 0 else []
        self._groups: dict[tuple[tuple[object, ...], int], _Group] = {}
        self._buffered = 0
        self._buffer_lock = threading.Lock()
        self._touched: set[tuple[tuple[object, ...], int]] = set()  # written to since prepare_commit
        self._start: WriteStart = start if start is not None else EmptyStart()  # the snapshot it continues
        self._bucket_indexes: dict[tuple[object, ...], PartitionBucketIndex] = {}
        self._hash_files: dict[tuple[tuple[object, ...], int], list[IndexFileMeta]] = {}
        self._compactor_factory = compactor_factory  # TableWrite -> BucketCompactor (None: never compact)
        self._compactor = None
        self._states: dict[tuple[tuple[object, ...], int], _BucketState] = {}
        self._next_sequence = dict(next_sequence or {})
        self._merge_spec = merge_spec_for(schema, options, keep_deletes=True) if self._is_pk else None
        self._spill_dir = SpillDirectory(spill_dir)
        self._pool: ThreadPoolExecutor | None = None
        self._handed_out: list[str] = []  # paths of the files of the last prepare_commit's messages
        self.spilled_runs = 0  # observability: sorted runs spilled to local disk so far
        self.spilled_bytes = 0

    @property
    def compacts(self) -> bool:
        return not self._options.write_only and self._compactor_factory is not None

    # -- routing -----------------------------------------------------------------------------

    @property
    def chunk_bytes(self) -> int:
        """The most bytes of a stream routed at once: a quarter of the write buffer (batches of a
        stream are regrouped, up to this, because routing costs per call)."""
        return max(1, self._options.write_buffer_size // 4)

    def write(self, data, *, row_kinds=None) -> None:
        """Validate ``data`` against the schema and buffer it by (partition, bucket).

        ``data`` is a pyarrow Table or RecordBatch, a pandas DataFrame or a polars DataFrame or
        LazyFrame (each validated whole: on error nothing of it is buffered), or an iterable /
        RecordBatchReader of batches (streamed: batches are validated and buffered in chunks of
        at most :attr:`chunk_bytes`, each counted in the write buffer while it is routed, so
        memory stays bounded by the write buffer). Columns are converted to the table's types
        only where nothing is lost (:mod:`paimonflow.core.data.conversion`). Raises SchemaError
        (wrong, missing or extra columns; types the table refuses; values that do not fit) or
        DataError (null in a NOT NULL or primary-key column, unknown row kind, retractions into
        an append table).
        """
        self._write(data, row_kinds, fuse=False)

    def write_all(self, data, *, row_kinds=None) -> list[CommitMessage]:
        """``write(data)`` then ``prepare_commit()``, for a writer given one input (``Table.write``).
        A table (or data frame) given whole, to a writer holding nothing, has each bucket's rows
        written as files as soon as they are gathered: no buffer between routing and encoding."""
        self._write(data, row_kinds, fuse=not self._groups)
        return self.prepare_commit()

    def _write(self, data, row_kinds, *, fuse: bool) -> None:
        if isinstance(data, (pa.Table, pa.RecordBatch)):
            self._write_table(to_arrow_table(data), row_kinds, fuse=fuse)
            return
        frame = dataframe_to_arrow(data)
        if frame is not None:
            self._write_table(frame, row_kinds, fuse=fuse)
            return
        if isinstance(data, pa.RecordBatchReader):
            batches: Iterable = data
        elif isinstance(data, Mapping | str | bytes):
            raise not_accepted(data)
        else:
            try:
                batches = iter(data)
            except TypeError:
                raise not_accepted(data) from None
        if row_kinds is not None and not isinstance(row_kinds, str):
            self._write_table(to_arrow_table(list(batches)), row_kinds, fuse=fuse)  # per-row kinds need the whole input
            return
        written = False
        for chunk in chunks(_one_schema(batches), self.chunk_bytes):
            self._files.check_open()  # between batches
            self._write_table(chunk, row_kinds, streamed=True)
            written = True
        if not written:
            raise SchemaError(f"write() takes {ACCEPTED_INPUTS}; the iterable was empty")

    def _write_table(self, data: pa.Table, row_kinds, *, fuse: bool = False, streamed: bool = False) -> None:
        table = conform(data, self._arrow_schema, self._schema.primary_keys, table_types=self._table_types)
        if table.num_rows == 0:
            return
        if streamed:
            # a chunk of a stream counts in the buffer while it is routed: it and its gathered
            # copy (which the buffer keeps) are both alive until the routing ends
            self._relieve_memory(reserve=2 * _buffered_bytes(table))
        kinds = row_kinds_of(table, row_kinds, self._options.rowkind_field)
        if not self._is_pk and np.any(kinds != 0):
            raise DataError("an append table only takes +I rows; use a primary-key table for updates and deletes")
        if self._is_pk and self._options.ignore_delete:
            keep = (kinds == df.ROW_KIND_INSERT) | (kinds == df.ROW_KIND_UPDATE_AFTER)
            if not keep.all():
                table, kinds = table.filter(pa.array(keep)), kinds[keep]
            if table.num_rows == 0:
                return
        table = table.combine_chunks()
        if self._postpone:
            validate_retraction(table, kinds, primary_keys=self._pk, spec=self._merge_spec,
                                partition_keys=self._partition_keys)
        if self._cross_partition:
            table, kinds = self._router_of().route(table, kinds)
            if table.num_rows == 0:
                return
        self._route(table, kinds, self._routing_pool() if table.num_rows >= _PARALLEL_ROUTING_ROWS else None,
                    fuse=fuse)
        self._relieve_memory()

    def _routing_pool(self) -> ThreadPoolExecutor:
        """The writer's two routing threads, made once: threads made per chunk cost their start
        and leave the allocator a new per-thread heap each time (measured: +100 MB peak RSS over
        a 5M-row stream)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="paimonflow-route")
        return self._pool

    def _route(self, table: pa.Table, kinds: np.ndarray, pool: ThreadPoolExecutor | None, *, fuse: bool) -> None:
        """Buffer the rows of ``table`` by (partition, bucket) (with ``fuse``: write them as files
        right away); with a ``pool``, hashing runs beside the partition grouping and the buckets
        are gathered by two threads."""
        hashing = None
        if self._bucket > 0:
            hash_columns = [table.column(k) for k in self._bucket_keys]
            if pool is not None:
                hashing = pool.submit(bucket_ids, hash_columns, self._bucket)
        codes, partitions = partition_codes(table, self._partition_keys, pool=pool)
        targets: list[tuple[tuple[object, ...], int, np.ndarray]] = []  # (partition, bucket, rows ascending)
        if self._bucket > 0:
            buckets = hashing.result() if hashing is not None else bucket_ids(hash_columns, self._bucket)
            # one stable sort by (partition, bucket): the rows of each stay ascending
            if codes.dtype == np.int64 and codes.flags.writeable:  # the codes are ours: no 10M-row temporaries
                codes *= self._bucket
                codes += buckets
            else:
                codes = codes * self._bucket + buckets
            slots, rows_of_slots = rows_by_code(codes, len(partitions) * self._bucket, pool=pool)
            for slot, rows in zip(slots, rows_of_slots, strict=True):
                targets.append((partitions[slot // self._bucket], slot % self._bucket, rows))
        else:
            hashes = hash_codes([table.column(k) for k in self._pk]) if self._dynamic else None
            present, rows_of_partitions = rows_by_code(codes, len(partitions), pool=pool)
            for code, rows in zip(present, rows_of_partitions, strict=True):
                values = partitions[code]
                if hashes is None:
                    targets.append((values, POSTPONE_BUCKET if self._postpone else 0, rows))
                    continue
                row_buckets = self._bucket_index(values).assign(hashes[rows]).astype(np.int16)
                order = np.argsort(row_buckets, kind="stable")  # radix sort on int16: rows stay ascending
                cuts = np.flatnonzero(np.diff(row_buckets[order])) + 1
                for chunk in np.split(order, cuts):
                    targets.append((values, int(row_buckets[chunk[0]]), rows[chunk]))
        # what the writer has not seen yet is restored in one pass over the manifests (a postpone
        # writer ignores what exists, as Paimon's)
        if not self._postpone:
            self._start.restore([(values, bucket) for values, bucket, _ in targets
                                 if (values, bucket) not in self._next_sequence])
        self._add_all(table, kinds, targets, pool, fuse=fuse)

    def _router_of(self) -> CrossPartitionRouter:
        if self._router is None:
            existing = self._start.keys()
            partition_schema = pa.schema([self._arrow_schema.field(k) for k in self._partition_keys])
            self._router = CrossPartitionRouter(list(self._schema.primary_keys), self._partition_keys,
                                                self._options.merge_engine, partition_schema, existing)
        return self._router

    def _bucket_index(self, partition: tuple[object, ...]) -> PartitionBucketIndex:
        index = self._bucket_indexes.get(partition)
        if index is None:
            index = PartitionBucketIndex(DynamicBucketOptions.from_options(self._schema.options))
            for bucket, (hashes, files) in self._start.hash_index(partition).items():
                index.hashes[bucket] = np.unique(hashes).astype(np.int32)
                self._hash_files[(partition, bucket)] = list(files)
            self._bucket_indexes[partition] = index
        return index

    def _hash_index_changes(self, partition: tuple[object, ...], bucket: int):
        """New HASH index file of a bucket whose keys changed, and the files it replaces."""
        index = self._bucket_indexes.get(partition)
        if index is None or bucket not in index.changed:
            return (), ()
        index.changed.discard(bucket)
        new = write_hash_file(self._file_io, join(self._path, "index"), index.hashes[bucket])
        self._files.record(new.external_path or join(self._path, "index", new.file_name))
        old = self._hash_files.get((partition, bucket), [])
        self._hash_files[(partition, bucket)] = [new]
        return (new,), tuple(old)

    def _add_all(self, table: pa.Table, kinds: np.ndarray, targets: Sequence[tuple[tuple[object, ...], int, np.ndarray]],
                 pool: ThreadPoolExecutor | None, *, fuse: bool = False) -> None:
        """Buffer the ``rows`` of ``table`` of each (partition, bucket) target: gathered once, and
        in a primary-key table already in key order (so the flush neither sorts nor gathers a
        bucket written by one call). With a ``pool`` the targets are gathered by its threads
        (numpy's sort and Arrow's take release the GIL). With ``fuse`` each gathered target is
        written as files at once by the thread that gathered it, and nothing stays buffered."""
        firsts = [self._take_sequence((values, bucket), len(rows)) for values, bucket, rows in targets]
        self._touched.update((values, bucket) for values, bucket, _ in targets)
        keys = self._sort_key(table)
        # a one-chunk column taken as an Array: Arrow's take of strings is ~3x slower on a ChunkedArray
        columns = [c.chunk(0) if c.num_chunks == 1 else c for c in table.columns]

        def gather(target: tuple[tuple[object, ...], int, np.ndarray], first: int) -> _Group:
            self._files.check_open()
            values, bucket, rows = target
            part, part_kinds, sequence = self._gather(table, columns, kinds, keys, rows, first)
            group = _Group(values, bucket, tables=[part], kinds=[part_kinds], sequences=[sequence],
                           nbytes=_buffered_bytes(part))
            if fuse:
                with self._buffer_lock:
                    self._buffered += group.nbytes
                self._flush_group(group)
            return group

        with self._files.background_stores() if fuse else contextlib.nullcontext():
            if pool is not None and len(targets) > 1:
                # every job ends before a failure is raised: none writes a file after the caller
                # has collected the written files to delete them
                parts = self.run_jobs(pool, gather, targets, firsts)
            else:
                parts = [gather(target, first) for target, first in zip(targets, firsts, strict=True)]
        if fuse:
            return
        for part in parts:
            key = (part.partition, part.bucket)
            slot = self._groups.get(key)
            if slot is None:
                slot = self._groups[key] = _Group(part.partition, part.bucket)
            slot.tables += part.tables
            slot.kinds += part.kinds
            slot.sequences += part.sequences
            slot.nbytes += part.nbytes
            self._buffered += part.nbytes

    def _sort_key(self, table: pa.Table) -> np.ndarray | None:
        """The key as one numpy array when the key order is a plain sort of it (one integer key
        without nulls, no sequence fields, no row-kind flag); None otherwise."""
        if not self._is_pk or self._postpone or len(self._pk) != 1 or self._options.sequence_field \
                or self._options.row_kind_flag:
            return None
        column = table.column(self._pk[0])
        if not pa.types.is_integer(column.type) or column.null_count:
            return None
        return column.to_numpy()

    def _gather(self, table: pa.Table, columns: Sequence[pa.Array | pa.ChunkedArray], kinds: np.ndarray,
                keys: np.ndarray | None, rows: np.ndarray, first: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """The rows (ascending positions) of one (partition, bucket), in key order for a
        primary-key table, with their kinds and sequence numbers (numbered from ``first`` in
        arrival order). Partition columns are one value here: repeated, not gathered."""
        count = len(rows)
        known: dict[str, pa.Array] = {}  # columns already at hand in key order
        if self._postpone:  # arrival order, every row's sequence unknown
            sequence = np.full(count, POSTPONE_SEQUENCE, dtype=np.int64)
            if count == table.num_rows:
                return table, kinds, sequence
        elif self._is_pk:
            if keys is not None:
                order, ordered_keys = _stable_key_order(keys[rows])
                known[self._pk[0]] = pa.array(ordered_keys, table.schema.field(self._pk[0]).type)
            else:
                subset = table.select([*self._pk, *(self._options.sequence_field or ())]).take(pa.array(rows))
                order, _ = self._sort_and_fold(subset, np.arange(count, dtype=np.int64), kinds[rows], fold=False)
            order = order.astype(np.int64, copy=False)
            rows = rows[order]
            sequence = order * self._stride + first  # the arrival number of each row, in key order
        else:
            sequence = np.arange(first, first + count * self._stride, self._stride, dtype=np.int64)
            if count == table.num_rows:
                return table, kinds, sequence  # arrival order, every row: nothing to gather
        indices = pa.array(rows)
        for name in self._partition_keys:
            known[name] = pa.repeat(table.column(name)[int(rows[0])], count)
        gathered = [known[name] if name in known else column.take(indices)
                    for name, column in zip(table.column_names, columns, strict=True)]
        return pa.Table.from_arrays(gathered, schema=table.schema), kinds[rows], sequence

    def _take_sequence(self, key: tuple[tuple[object, ...], int], count: int) -> int:
        if self._postpone:
            return POSTPONE_SEQUENCE
        if key not in self._next_sequence:
            self._next_sequence[key] = self._start.next_sequence(*key) + self._offset
        first = self._next_sequence[key]
        self._next_sequence[key] = first + count * self._stride
        return first

    def _relieve_memory(self, *, reserve: int = 0) -> None:
        """Spill (or flush) the largest buckets until the buffer and ``reserve`` bytes (a chunk
        about to be routed) fit ``write-buffer-size``; then hand the memory they held back to the
        system (Arrow's allocator keeps freed pages for a while: measured 25-40 MB of peak RSS
        over a 5M-row stream with a 64 MB buffer)."""
        limit = max(self._options.write_buffer_size - reserve, 0)
        relieved = False
        while self._buffered > limit and self._groups:
            group = max(self._groups.values(), key=lambda g: g.nbytes)
            if group.nbytes == 0:
                break
            if self._is_pk and self._options.write_buffer_spillable and not self._postpone:
                self._spill(group)
            else:
                self._flush_group(group)
            relieved = True
        if relieved:
            self._release_unused()

    def _release_unused(self) -> None:
        """Hand the pages Arrow's allocator keeps back to the system, in this thread and in the
        routing threads: mimalloc keeps a heap per thread, and a buffer gathered by a routing
        thread and freed by another goes back to the gathering thread's heap, which only that
        thread can release (freed pages mimalloc kept were 100-200 MB of a 10M-row stream's
        peak RSS: BENCHMARKS.md, "10M-row write and read")."""
        pool = pa.default_memory_pool()
        pool.release_unused()
        if self._pool is None:
            return
        barrier = threading.Barrier(2)

        def release() -> None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=1.0)  # both jobs at once: one on each routing thread
            pool.release_unused()

        wait([self._pool.submit(release) for _ in range(2)])

    # -- spilling ----------------------------------------------------------------------------

    def _take_buffer(self, group: _Group) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """The group's buffered rows (one table per write call, one after the other), kinds and
        sequence numbers; empties the buffer."""
        if len(group.tables) == 1:
            table, kinds, sequence = group.tables[0], group.kinds[0], group.sequences[0]
        else:
            table = pa.concat_tables(group.tables).combine_chunks()
            kinds, sequence = np.concatenate(group.kinds), np.concatenate(group.sequences)
        with self._buffer_lock:  # buckets are flushed by several threads
            self._buffered -= group.nbytes
        group.tables, group.kinds, group.sequences, group.nbytes = [], [], [], 0
        return table, kinds, sequence

    def _sorted_run(self, group: _Group) -> pa.Table | None:
        """Sort and fold the buffered rows into one key-unique run with the system columns
        (writing the 'input' changelog of the raw rows on the way)."""
        if not group.kinds:
            return None
        one_call = len(group.tables) == 1
        source, kinds, sequence = self._take_buffer(group)
        last: np.ndarray | None
        if one_call:  # sorted when it was buffered
            keys = source.select(self._pk)
            last = last_per_key(keys, self._pk)
            if last.all():
                last = None
        else:  # sorted runs of several calls, one after the other: sort them together
            order, last = self._sort_and_fold(source, np.arange(source.num_rows, dtype=np.int64), kinds,
                                              arrival=sequence)
            source, kinds, sequence = source.take(pa.array(order)), kinds[order], sequence[order]
        if self._options.changelog_producer is ChangelogProducer.INPUT:
            # 'input': every input row, sorted by key and sequence, unfolded (Paimon writes the
            # write buffer as it is before merging it)
            state = self._state(group.partition, group.bucket)
            state.changelog += self._files.write(group.partition, group.bucket, source, kinds, sequence,
                                                 prefix=self._options.changelog_file_prefix)
        if self._merge_spec is None:  # deduplicate: the newest row of each key, already found
            if last is not None:
                source, kinds, sequence = source.filter(pa.array(last)), kinds[last], sequence[last]
            return df.with_system_columns(source, sequence, kinds)
        ordered = df.with_system_columns(source, sequence, kinds)
        return merge(ordered, self._pk, self._merge_spec, partition_columns=self._partition_keys)

    def _spill(self, group: _Group) -> None:
        self._files.check_open()
        run = self._sorted_run(group)
        if run is None:
            return
        path = self._spill_dir.new_file()
        self.spilled_bytes += write_run(path, run)
        self.spilled_runs += 1
        group.spills.append(path)
        if len(group.spills) >= self._options.local_sort_max_handles:
            merged_path = self._spill_dir.new_file()
            chunks = self._merge_spills(group.spills, None)
            first = next(chunks, None)
            if first is not None:
                with pa.OSFile(merged_path, "wb") as sink, pa.ipc.new_file(
                        sink, first.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as out:
                    for chunk in (first, *chunks):
                        out.write_table(chunk, max_chunksize=RUN_BATCH_ROWS)
            remove_files(group.spills)
            group.spills = [merged_path]

    def _merge_spills(self, spills: Sequence[str], memory: pa.Table | None) -> Iterator[pa.Table]:
        """Folded chunks of the k-way merge of spilled runs (oldest first) and the in-memory run."""
        runs: list[Iterable[pa.Table]] = [iter_run(p) for p in spills]
        if memory is not None and memory.num_rows:
            runs.append(iter_slices(memory))
        sequence_fields = list(self._options.sequence_field or ())
        for chunk in merge_runs(runs, self._pk, sequence_fields, self._options.sequence_descending,
                                row_kind_flag=self._options.row_kind_flag):
            if self._merge_spec is None:
                keep = last_per_key(chunk.select(self._pk), self._pk)
                yield chunk if keep.all() else chunk.filter(pa.array(keep))
            else:
                yield merge(chunk, self._pk, self._merge_spec, partition_columns=self._partition_keys)

    # -- flushing ----------------------------------------------------------------------------

    def _state(self, partition: tuple[object, ...], bucket: int) -> _BucketState:
        key = (partition, bucket)
        state = self._states.get(key)
        if state is None:
            may_compact = self._compactor_factory is not None  # write-only writers still compact on request
            files = list(self._start.files(partition, bucket)) if may_compact else []
            total = self._bucket if self._bucket > 0 or self._postpone else -1
            state = self._states[key] = _BucketState(files=files, total_buckets=total)
            if self._options.deletion_vectors and may_compact:
                vectors, index_files = self._start.deletion_vectors(partition, bucket)
                state.vectors, state.vector_files = dict(vectors), list(index_files)
        return state

    def _flush_group(self, group: _Group) -> None:
        """Write the group's buffered and spilled rows as level-0 files (one sorted run)."""
        self._files.check_open()
        state = self._state(group.partition, group.bucket)
        if not self._is_pk or self._postpone:  # arrival order, as buffered
            if group.kinds:
                table, kinds, sequence = self._take_buffer(group)
                if self._row_tracking:  # pending: the commit gives its rows the snapshot id
                    sequence = np.zeros_like(sequence)
                files = self._files.write(group.partition, group.bucket, table, kinds, sequence,
                                          prefix=self._options.data_file_prefix)
                state.new_files += files
                state.files += files
                report_files(self._path, files)  # progress observers (core/write/progress.py)
            return
        memory = self._sorted_run(group)
        if group.spills:
            files = self._files.write_sorted(group.partition, group.bucket, self._merge_spills(group.spills, memory),
                                             prefix=self._options.data_file_prefix)
            remove_files(group.spills)
            group.spills = []
        elif memory is not None:
            files = self._files.write_sorted(group.partition, group.bucket, [memory],
                                             prefix=self._options.data_file_prefix, stream=False)
        else:
            return
        state.new_files += files
        state.files += files
        report_files(self._path, files)  # progress observers (core/write/progress.py)
        if self.compacts and self._compactor_of().sorted_runs(state.files) > self._options.num_sorted_run_stop_trigger:
            self._files.wait_for_stores()  # the compaction reads what was just written
            self._compact(group.partition, group.bucket, full=False)  # back-pressure: wait for compaction

    def _compactor_of(self):
        if self._compactor is None:
            self._compactor = self._compactor_factory(self)
        return self._compactor

    def _compact(self, partition: tuple[object, ...], bucket: int, *, full: bool) -> None:
        self._files.check_open()
        state = self._state(partition, bucket)
        result = self._compactor_of().compact(partition, bucket, state.total_buckets, state.files, full=full,
                                              vectors=state.vectors)
        if result is None:
            return
        obsolete = state.apply_compaction(result.before, result.after, result.changelog, result.vectors)
        directory = self.bucket_dir(partition, bucket)
        for f in obsolete:
            with contextlib.suppress(Exception):
                self._file_io.delete(f.external_path or join(directory, f.file_name))
            for extra in f.extra_files:  # a file index beside the data file
                with contextlib.suppress(Exception):
                    self._file_io.delete(join((f.external_path or join(directory, f.file_name)).rsplit("/", 1)[0],
                                              extra))

    def flush(self) -> None:
        """Write every buffered row as level-0 files now (``prepare_commit`` does this too)."""
        groups = list(self._groups.values())
        if not groups:
            return
        if len(groups) == 1:
            self._flush_group(groups[0])
        elif any(g.spills for g in groups) or 2 * self._buffered > self._options.write_buffer_size:
            # near the memory bound: one bucket at a time, streamed to its files a row group at a
            # time, each bucket's freed pages handed back before the next (two at a time, on two
            # threads, measured +50 MB of peak RSS over a 10M-row stream: 590 MB against 540)
            for group in groups:
                self._flush_group(group)
                pa.default_memory_pool().release_unused()
        else:
            with self._files.background_stores():
                self.run_jobs(self._routing_pool(), self._flush_group, groups)
        self._groups = {}
        self._release_unused()

    def run_jobs(self, pool: ThreadPoolExecutor, fn, *arguments: Sequence) -> list:
        """``fn`` over ``arguments`` (zipped) on ``pool``; the results in order, or the first
        failure once every job has ended. Interrupted while waiting (Ctrl-C), it cancels the writer:
        queued jobs never start, running ones stop at their next file; then it re-raises. No job
        writes a file after the caller has collected the written files to delete them."""
        jobs = [pool.submit(fn, *args) for args in zip(*arguments, strict=True)]
        try:
            wait(jobs)
        except BaseException:
            self._cancel(jobs)
            raise
        errors = [error for job in jobs if (error := job.exception()) is not None]
        if errors:  # the failure itself, not the aborts it caused in the other jobs
            raise next((e for e in errors if not isinstance(e, WriteAbortedError)), errors[0])
        return [job.result() for job in jobs]

    def record(self, path: str) -> None:
        """Note a file written for this writer's commit by someone else (a compaction task's
        index file), so that :meth:`abort` deletes it too."""
        self._files.record(path)

    def _cancel(self, jobs: Sequence = ()) -> None:
        self._files.cancel()
        for job in jobs:
            job.cancel()
        wait(jobs)

    def compact(self, partition: tuple[object, ...], bucket: int, *, full: bool = False) -> None:
        """Compact one bucket as part of this writer's next commit (Paimon's ``TableWrite.compact``)."""
        if self._compactor_factory is None:
            raise UnsupportedError("this writer was created without a compactor")
        self._compact(partition, bucket, full=full)

    def prepare_commit(self) -> list[CommitMessage]:
        """Write everything buffered; compact what needs it (unless ``write-only``); return one
        message per (partition, bucket) touched since the last ``prepare_commit``."""
        touched, self._touched = self._touched | set(self._groups), set()
        self.flush()
        if self.compacts:
            full = self._options.full_compaction_delta_commits is not None
            for key in sorted(touched, key=lambda k: (str(k[0]), k[1])):
                self._compact(*key, full=full)
        messages = []
        for key, state in self._states.items():
            message = state.take_message(*key, write_vectors=self._write_vectors)
            if self._dynamic:
                added, deleted = self._hash_index_changes(*key)
                message = replace(message, new_index_files=added, deleted_index_files=deleted)
            if not message.is_empty():
                messages.append(message)
        self._handed_out = self._files.take_written()
        return messages

    def abort(self, *, include_prepared: bool = False) -> int:
        """Stop writing and delete what this writer wrote and nobody will commit; returns how
        many files were deleted.

        From the call on no new file starts: queued stores and routing jobs are cancelled, running
        ones stop at their next file, row group or batch (each then raises
        :class:`~paimonflow.core.errors.WriteAbortedError`), and the call waits for them. Then it
        deletes every file written since the last :meth:`prepare_commit` (data, changelog and index
        files, external paths included); with ``include_prepared`` also the files of the messages
        that call returned: only when their commit is known not to have landed. Files of earlier
        ``prepare_commit`` calls are never touched. Best effort (a failed delete leaves an orphan
        for ``remove-orphan-files``); idempotent. The writer is unusable afterwards."""
        self._files.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        with contextlib.suppress(Exception):
            self._files.wait_for_stores()
        paths = self._files.take_written()
        if include_prepared:
            paths, self._handed_out = self._handed_out + paths, []
        return _delete_files(self._file_io, paths)

    def _write_vectors(self, partition: tuple[object, ...], bucket: int, vectors: dict) -> IndexFileMeta:
        written = write_dv_file(self._file_io, join(self._path, "index"), vectors,
                                bitmap64=self._options.deletion_vectors_bitmap64)
        self._files.record(written.external_path or join(self._path, "index", written.file_name))
        return written

    def pending_messages(self) -> list[CommitMessage]:
        """Files written but not yet handed out by ``prepare_commit`` (to clean up after a failure)."""
        out = []
        for (partition, bucket), state in self._states.items():
            out.append(CommitMessage(partition=partition, bucket=bucket, total_buckets=state.total_buckets,
                                     new_files=tuple(state.new_files), changelog_files=tuple(state.changelog),
                                     compact_before=tuple(state.compact_before),
                                     compact_after=tuple(state.compact_after),
                                     compact_changelog=tuple(state.compact_changelog)))
        return out

    def write_rewritten(self, partition: tuple[object, ...], bucket: int, table: pa.Table, kinds: np.ndarray,
                        sequence: np.ndarray, *, level: int) -> list[DataFileMeta]:
        """Write rows a compaction produced (already sorted and merged, keeping their sequence
        numbers) as files of ``level``, rolled at ``target-file-size``."""
        return self._files.write(partition, bucket, table, kinds, sequence, prefix=self._options.data_file_prefix,
                                 level=level, file_source=FILE_SOURCE_COMPACT)

    def write_changelog(self, partition: tuple[object, ...], bucket: int, table: pa.Table, kinds: np.ndarray,
                        sequence: np.ndarray) -> list[DataFileMeta]:
        """Write changelog rows a compaction produced as changelog files."""
        return self._files.write(partition, bucket, table, kinds, sequence,
                                 prefix=self._options.changelog_file_prefix, file_source=FILE_SOURCE_COMPACT)

    def _sort_and_fold(self, source: pa.Table, rows: np.ndarray, kinds: np.ndarray | None = None, *,
                       arrival: np.ndarray | None = None, fold: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """The key order of ``rows`` (positions into it) and, with ``fold``, a mask of the last
        arrival of each key (None when every key is unique, and without ``fold``).

        Among equal keys (and equal sequence fields) rows are ordered by ``arrival`` (sequence
        numbers of the rows; default: position is arrival). Position must be arrival order among
        rows of equal keys in any case: the fast path is a stable sort of the key alone. The last
        of each run of equal keys is then the newest row: the one deduplicate keeps.
        """
        sequence_fields = list(self._options.sequence_field or ())
        keys = source.select([*self._pk, *sequence_fields]).take(pa.array(rows))
        flags = kinds[rows] if (kinds is not None and self._options.row_kind_flag) else None
        arrival_order = np.arange(len(rows), dtype=np.int64) if arrival is None else arrival[rows]
        order = merge_order(keys, self._pk, arrival_order, sequence_fields,
                            self._options.sequence_descending, positions_are_arrival=True, kinds=flags)
        if not fold:
            return order, None
        last = last_per_key(keys.select(self._pk).take(pa.array(order)), self._pk)
        return order, (None if last.all() else last)

    def bucket_dir(self, partition: tuple[object, ...], bucket: int) -> str:
        return self._files.bucket_dir(partition, bucket)

    def close(self) -> None:
        """Drop what is buffered and remove spill files (files already written stay: orphans
        unless a committer commits their messages)."""
        for group in self._groups.values():
            remove_files(group.spills)
        self._groups = {}
        self._buffered = 0
        self._spill_dir.close()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> TableWrite:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_PARALLEL_ROUTING_ROWS = 65_536  # below this, a second thread costs more than it saves


def _delete_files(file_io: FileIO, paths: Sequence[str]) -> int:
    """Delete ``paths`` (best effort; eight at a time, for object stores); how many existed and
    were deleted."""
    def delete(path: str) -> bool:
        try:
            return bool(file_io.delete(path))
        except Exception:
            return False

    unique = list(dict.fromkeys(paths))
    if len(unique) <= 8:
        return sum(map(delete, unique))
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="paimonflow-abort") as pool:
        return sum(pool.map(delete, unique))


def _buffered_bytes(table: pa.Table) -> int:
    """What rows of ``table`` take in the write buffer: their values, kind (1 byte) and sequence
    number (8 bytes)."""
    return table.nbytes + 9 * table.num_rows


def _stable_key_order(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable sort order of integer ``keys``, and the keys in that order."""
    order = stable_integer_order(keys)
    return order, keys[order]


def _one_schema(batches: Iterable) -> Iterator[pa.RecordBatch | pa.Table]:
    """``batches``, checked to be Arrow batches or tables of one schema."""
    first: pa.Schema | None = None
    for batch in batches:
        if not isinstance(batch, (pa.RecordBatch, pa.Table)):
            raise SchemaError(f"write() takes {ACCEPTED_INPUTS}; the iterable holds a {type(batch).__name__}")
        if first is None:
            first = batch.schema
        elif not batch.schema.equals(first):
            differ = sorted({f.name for f in batch.schema} ^ {f.name for f in first}
                            | {f.name for f in batch.schema if f.name in first.names
                               and first.field(f.name).type != f.type})
            raise SchemaError(f"the record batches do not share one schema; columns {differ} differ")
        yield batch
