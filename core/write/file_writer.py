"""Writing the data files of a table write: file names, the stored layout (key and system columns
for primary-key tables), rolling at ``target-file-size``, each file's :class:`DataFileMeta`, and
Parquet files streamed to storage one row group at a time."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..data import data_file as df
from ..data.binary_row import serialize_row
from ..errors import WriteAbortedError
from ..fs import FileIO, join
from ..meta.fileindex import BuiltFileIndex, FileIndexBuilder, FileIndexSettings, index_file_name
from ..meta.layout import ExternalPaths, bucket_directory, relative_bucket_path
from ..meta.manifest import DataFileMeta, SimpleStats
from ..meta.schema import TableSchema
from ..options.core import CoreOptions
from .messages import FILE_SOURCE_APPEND
from .writer_token import writer_id


class DataFileWriter:
    """Writes the data and changelog files of one table write (thread-safe: a pool of threads
    writes the buckets). Files are written, never committed: only a commit makes them visible.

    It records the path of every file it stores (data, changelog and index files, in the bucket
    directory or an external path) before storing it: :meth:`take_written` hands them out, to be
    deleted when no commit will reference them. After :meth:`cancel` no file is started."""

    def __init__(self, *, file_io: FileIO, table_path: str, schema: TableSchema, options: CoreOptions,
                 file_token: str | None = None) -> None:
        self.file_io, self.options = file_io, options
        self._path, self._schema = table_path, schema
        self.arrow_schema = schema.arrow_schema()
        self.primary_keys = list(schema.trimmed_primary_keys)
        self.partition_keys = list(schema.partition_keys)
        self._is_pk = bool(schema.primary_keys)
        self._counter, self._lock = 0, threading.Lock()
        self._writer_id = writer_id(file_token)  # (a job's token begins it: writer_token.py)
        self._external = ExternalPaths.of(options.raw)  # None: new files go to their bucket directory
        self._store_pool: ThreadPoolExecutor | None = None
        self._stores: list[Future] = []
        self._written: list[str] = []  # every path stored (or being stored) since take_written
        self._cancelled = threading.Event()
        # constant in a bucket (partition columns) or nearly (row kind): always dictionary-encoded
        self.dictionary_hint = {df.VALUE_KIND, *self.partition_keys}
        self._file_index = FileIndexSettings.from_options(options.raw, schema.fields)

    def file_index_builder(self) -> FileIndexBuilder | None:
        """A builder of one new data file's index (``file-index.*``), or None without indexes."""
        return FileIndexBuilder(self._file_index) if self._file_index.enabled else None

    def store_file_index(self, data_path: str, data_name: str,
                         built: BuiltFileIndex | None) -> tuple[tuple[str, ...], bytes | None]:
        """Place a data file's index: ``(extra files, embedded bytes)`` for its manifest entry;
        an index above ``file-index.in-manifest-threshold`` is stored as ``<data file>.index``
        beside the data file."""
        if built is None:
            return (), None
        if built.embedded:
            return (), built.data
        name = index_file_name(data_name)
        self._store(data_path.rsplit("/", 1)[0] + "/" + name, built.data)
        return (name,), None

    def check_open(self) -> None:
        """Raise :class:`WriteAbortedError` once the writer is cancelled (checked before each file)."""
        if self._cancelled.is_set():
            raise WriteAbortedError("the write was aborted; it starts no new file")

    def cancel(self) -> None:
        """Start no new file from now on (threads stop at their next file or row group) and
        drop the stores not started yet. Idempotent."""
        self._cancelled.set()
        with self._lock:
            for future in self._stores:
                future.cancel()

    def record(self, path: str) -> None:
        """Note a file about to be stored (so that an abort deletes it)."""
        with self._lock:
            self._written.append(path)

    def take_written(self) -> list[str]:
        """The paths stored since the last call (in order), and forget them."""
        with self._lock:
            written, self._written = self._written, []
        return written

    @contextlib.contextmanager
    def background_stores(self) -> Iterator[None]:
        """Within this block, encoded files are stored (written and fsynced) by background
        threads while the writing threads encode the next; leaving it waits until every file is
        stored and raises the first failure. A file is described (``DataFileMeta``) before it is
        stored, so nothing may read the files written inside the block before it ends (or
        :meth:`wait_for_stores`)."""
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="paimonflow-store") as pool:
            self._store_pool = pool
            try:
                yield
            except BaseException:  # the write failed (or was interrupted): store nothing more
                self._store_pool = None
                self._cancel_queued_stores()
                with contextlib.suppress(Exception):  # the failure in flight is the one to raise
                    self.wait_for_stores()
                raise
            self._store_pool = None
            self.wait_for_stores()

    def wait_for_stores(self) -> None:
        """Wait until every file handed to the background stores so far, by any thread, is
        stored; raises the first failure. Threads may wait at once (a bucket's compaction in one
        flush thread, the other flush thread's compaction, the final wait): each waits for all the
        stores pending when it called, those another waiter is already waiting for included, so
        none returns before its own files are on storage."""
        with self._lock:
            stores = list(self._stores)
        wait(stores)  # interrupted here, the stores stay listed for the next wait (an abort's)
        with self._lock:
            done = set(stores)
            self._stores = [future for future in self._stores if future not in done]
        errors = [error for future in stores if not future.cancelled() and (error := future.exception()) is not None]
        if errors:  # the failure itself, not the aborts it caused in the other stores
            raise next((e for e in errors if not isinstance(e, WriteAbortedError)), errors[0])

    def _cancel_queued_stores(self) -> None:
        with self._lock:
            for future in self._stores:
                future.cancel()

    def _store(self, path: str, payload: bytes) -> None:
        self.check_open()
        self.record(path)
        pool = self._store_pool
        if pool is None:
            self.file_io.write_bytes(path, payload)
            return
        future = pool.submit(self._store_now, path, payload)
        with self._lock:
            self._stores.append(future)

    def _store_now(self, path: str, payload: bytes) -> None:
        self.check_open()
        try:
            self.file_io.write_bytes(path, payload)
        except BaseException:
            self.cancel()  # the write has failed: the other threads stop at their next file
            raise

    def bucket_dir(self, partition: tuple[object, ...], bucket: int) -> str:
        return bucket_directory(self._path, self._schema, self.options, partition, bucket)

    def file_path(self, partition: tuple[object, ...], bucket: int, name: str) -> tuple[str, str | None]:
        """Where new file ``name`` goes, and its ``external_path`` for the manifest (None: its
        bucket directory, found from the name)."""
        if self._external is None:
            return join(self.bucket_dir(partition, bucket), name), None
        with self._lock:  # the round-robin position is shared by the writing threads
            path = self._external.path(relative_bucket_path(self._schema, self.options, partition, bucket), name)
        return path, path

    def new_name(self, prefix: str) -> str:
        """A file name no other writer uses: ``<prefix><writer uuid>-<n>.<format>``."""
        with self._lock:
            self._counter += 1
            counter = self._counter
        return f"{prefix}{self._writer_id}-{counter}.{df.extension(self.options.file_format)}"

    def write(self, partition: tuple[object, ...], bucket: int, table: pa.Table, kinds: np.ndarray,
              sequence: np.ndarray, *, prefix: str, level: int = 0,
              file_source: int = FILE_SOURCE_APPEND) -> list[DataFileMeta]:
        """Write rows (values; kinds and sequence numbers beside) as files of ``level``, rolled
        at ``target-file-size`` by their in-memory size."""
        return [
            self._write_one(partition, bucket, table.slice(start, length), kinds[start:start + length],
                            sequence[start:start + length], prefix=prefix, level=level, file_source=file_source)
            for start, length in self._roll(table)
        ]

    def write_sorted(self, partition: tuple[object, ...], bucket: int, chunks: Iterable[pa.Table], *,
                     prefix: str, stream: bool = True) -> list[DataFileMeta]:
        """Write sorted chunks (values + system columns) as level-0 files. Parquet files are
        encoded incrementally (``stream``), one row group at a time, and rolled when the encoded
        file reaches ``target-file-size``, so memory stays at a row group plus the compressed
        bytes; other formats and ``stream=False`` write the rows whole."""
        names = self.arrow_schema.names
        if not stream or self.options.file_format != "parquet":
            held = [c for c in chunks if c.num_rows]
            if not held:
                return []
            table = pa.concat_tables(held).combine_chunks()
            return self.write(partition, bucket, table.select(names),
                              table.column(df.VALUE_KIND).to_numpy().astype(np.int8),
                              table.column(df.SEQUENCE_NUMBER).to_numpy(), prefix=prefix)
        target = self.options.target_file_size_for(self._is_pk)
        files: list[DataFileMeta] = []
        current: ParquetStream | None = None
        try:
            for chunk in chunks:
                if chunk.num_rows == 0:
                    continue
                if current is None:
                    current = ParquetStream(self, partition, bucket, prefix)
                current.add(chunk.select(names), chunk.column(df.VALUE_KIND).to_numpy().astype(np.int8),
                            chunk.column(df.SEQUENCE_NUMBER).to_numpy())
                if current.size() >= target:
                    files.append(current.finish())
                    current = None
            if current is not None:
                files.append(current.finish())
        except BaseException:
            if current is not None:
                current.discard()
            raise
        return files

    def physical(self, table: pa.Table, kinds: np.ndarray, sequence: np.ndarray) -> pa.Table:
        """The stored layout: ``_KEY_<k>`` columns, sequence number and row kind, then the values
        (primary-key tables); the values alone (append tables)."""
        if not self._is_pk:
            return table
        key_columns = [table.column(k) for k in self.primary_keys]
        return pa.Table.from_arrays(
            [*key_columns, pa.array(sequence, pa.int64()), pa.array(kinds, pa.int8()), *table.columns],
            schema=pa.schema([
                *(pa.field(df.KEY_PREFIX + k, c.type, nullable=False)
                  for k, c in zip(self.primary_keys, key_columns, strict=True)),
                pa.field(df.SEQUENCE_NUMBER, pa.int64(), nullable=False),
                pa.field(df.VALUE_KIND, pa.int8(), nullable=False),
                *table.schema,
            ]),
        )

    def describe(self, name: str, size: int, rows: int, ranges, first_key: list, last_key: list,
                 min_sequence: int, max_sequence: int, deletes: int, level: int, file_source: int, *,
                 external_path: str | None = None, extra_files: tuple[str, ...] = (),
                 embedded_index: bytes | None = None) -> DataFileMeta:
        """The manifest's description of a written file, from its column ranges and key bounds."""
        value_names = self.arrow_schema.names
        value_types = self.arrow_schema.types
        value_stats = self._value_stats(ranges, value_types)
        if self._is_pk:
            key_types = [self.arrow_schema.field(k).type for k in self.primary_keys]
            by_name = dict(zip(value_names, ranges, strict=True))
            key_min, key_max, key_nulls = df.stats_row([by_name[k] for k in self.primary_keys], key_types, "full")
            key_stats = SimpleStats(min_values=key_min, max_values=key_max, null_counts=tuple(key_nulls))
            min_key = serialize_row(first_key, key_types)
            max_key = serialize_row(last_key, key_types)
        else:
            empty = serialize_row([], [])
            key_stats = SimpleStats(min_values=empty, max_values=empty, null_counts=())
            min_key = max_key = empty
        return DataFileMeta(
            file_name=name,
            file_size=size,
            row_count=rows,
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            value_stats=value_stats,
            min_sequence_number=min_sequence,
            max_sequence_number=max_sequence,
            schema_id=self._schema.id,
            level=level,
            extra_files=extra_files,
            creation_time_millis=int(time.time() * 1000),
            delete_row_count=deletes,
            embedded_index=embedded_index,
            file_source=file_source,
            value_stats_cols=() if self.options.stats_mode == "none" else None,
            external_path=external_path,
            first_row_id=None,
            write_cols=None,
        )

    def _roll(self, table: pa.Table) -> list[tuple[int, int]]:
        target = self.options.target_file_size_for(self._is_pk)
        n = table.num_rows
        if n == 0:
            return []
        per_row = max(table.nbytes / n, 1.0)
        rows_per_file = max(int(target / per_row), 1)
        return [(s, min(rows_per_file, n - s)) for s in range(0, n, rows_per_file)]

    def _write_one(self, partition: tuple[object, ...], bucket: int, table: pa.Table, kinds: np.ndarray,
                   sequence: np.ndarray, *, prefix: str, level: int, file_source: int) -> DataFileMeta:
        self.check_open()
        options = self.options
        name = self.new_name(prefix)
        payload, footer = df.encode_file(self.physical(table, kinds, sequence), options.file_format,
                                         compression=options.file_compression, zstd_level=options.zstd_level,
                                         dictionary_hint=self.dictionary_hint)
        path, external = self.file_path(partition, bucket, name)
        self._store(path, payload)
        builder = self.file_index_builder()
        if builder is not None:
            builder.add(table)
        extra_files, embedded = self.store_file_index(path, name, builder.finish() if builder else None)
        stats_of = table.select(self.arrow_schema.names)  # stored extras (row tracking's) have no stats
        if footer is not None:
            ranges = df.ranges_from_parquet(footer, stats_of.column_names, [f.type for f in stats_of.schema])
        else:
            ranges = df.ranges_from_table(stats_of, stats_of.column_names)
        first = [table.column(k)[0].as_py() for k in self.primary_keys]
        last = [table.column(k)[-1].as_py() for k in self.primary_keys]
        return self.describe(name, len(payload), table.num_rows, ranges, first, last,
                             int(sequence.min()), int(sequence.max()), df.row_kind_counts(kinds), level, file_source,
                             external_path=external, extra_files=extra_files, embedded_index=embedded)

    def _value_stats(self, ranges, types) -> SimpleStats:
        mode = self.options.stats_mode
        if mode == "none":
            empty = serialize_row([], [])
            return SimpleStats(min_values=empty, max_values=empty, null_counts=())
        lo, hi, nulls = df.stats_row(ranges, types, mode)
        return SimpleStats(min_values=lo, max_values=hi, null_counts=tuple(nulls))


class ParquetStream:
    """One data file written incrementally, straight to storage: row groups are encoded as
    rows arrive. A file left behind by a failure is never referenced (an orphan)."""

    ROW_GROUP_ROWS = 131_072

    def __init__(self, owner: DataFileWriter, partition: tuple[object, ...], bucket: int, prefix: str, *,
                 level: int = 0, file_source: int = FILE_SOURCE_APPEND) -> None:
        owner.check_open()
        self._owner, self._level, self._source = owner, level, file_source
        self.name = owner.new_name(prefix)
        self._path, self._external = owner.file_path(partition, bucket, self.name)
        owner.record(self._path)
        owner.file_io.mkdirs(self._path.rsplit("/", 1)[0])
        fs, to_path = owner.file_io.arrow_filesystem()
        self._sink = fs.open_output_stream(to_path(self._path))
        self._writer: pq.ParquetWriter | None = None
        self._pending: list[pa.Table] = []
        self._pending_rows = self._pending_bytes = self._flushed_bytes = 0
        self._rows = self._deletes = 0
        self._first_key: list | None = None
        self._last_key: list = []
        self._min_sequence: int | None = None
        self._max_sequence: int | None = None
        self._index = owner.file_index_builder()

    def add(self, values: pa.Table, kinds: np.ndarray, sequence: np.ndarray) -> None:
        self._owner.check_open()
        keys = self._owner.primary_keys
        if self._first_key is None:
            self._first_key = [values.column(k)[0].as_py() for k in keys]
        self._last_key = [values.column(k)[-1].as_py() for k in keys]
        lo, hi = int(sequence.min()), int(sequence.max())
        self._min_sequence = lo if self._min_sequence is None else min(lo, self._min_sequence)
        self._max_sequence = hi if self._max_sequence is None else max(hi, self._max_sequence)
        self._rows += values.num_rows
        self._deletes += df.row_kind_counts(kinds)
        if self._index is not None:
            self._index.add(values)
        physical = self._owner.physical(values, kinds, sequence)
        self._pending.append(physical)
        self._pending_rows += values.num_rows
        self._pending_bytes += physical.nbytes
        if self._pending_rows >= self.ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending).combine_chunks()
        self._flushed_bytes += self._pending_bytes
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        options = self._owner.options
        if self._writer is None:
            codec = "none" if options.file_compression in ("none", "uncompressed") else options.file_compression
            self._writer = pq.ParquetWriter(
                self._sink, table.schema, compression=codec,
                compression_level=options.zstd_level if codec == "zstd" else None,
                use_dictionary=df.dictionary_columns(table, self._owner.dictionary_hint),
                write_statistics=True, store_schema=True)
        self._writer.write_table(table, row_group_size=1 << 20)

    def size(self) -> int:
        """Encoded bytes so far, plus the pending rows at the compression ratio seen so far
        (uncompressed until a row group is written)."""
        written = self._sink.tell()
        ratio = written / self._flushed_bytes if self._flushed_bytes and written else 1.0
        return int(written + self._pending_bytes * ratio)

    def discard(self) -> None:
        """Close a file a failure left unfinished (best effort): it exists, recorded, before the
        writer's abort deletes it, and no later close (a garbage collection) stores it again."""
        with contextlib.suppress(Exception):
            if self._writer is not None:
                self._writer.close()
        with contextlib.suppress(Exception):
            self._sink.close()

    def finish(self) -> DataFileMeta:
        """Close the file and describe it. Callers ``add`` rows before (a data file is never empty)."""
        self._flush()
        assert self._writer is not None and self._first_key is not None, "finish() before any add()"
        assert self._min_sequence is not None and self._max_sequence is not None
        self._writer.close()
        size = self._sink.tell()
        self._sink.close()
        self._owner.file_io.sync(self._path)  # durable before any snapshot may reference it
        footer = self._writer.writer.metadata
        owner = self._owner
        extra_files, embedded = owner.store_file_index(self._path, self.name,
                                                       self._index.finish() if self._index else None)
        ranges = df.ranges_from_parquet(footer, owner.arrow_schema.names, owner.arrow_schema.types)
        return owner.describe(self.name, size, self._rows, ranges, self._first_key, self._last_key,
                              self._min_sequence, self._max_sequence, self._deletes, self._level, self._source,
                              external_path=self._external, extra_files=extra_files, embedded_index=embedded)

