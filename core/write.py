"""The batch write path: rows in, data files out, commit messages for one committer.

``TableWrite.write`` validates and routes rows to (partition, bucket) groups with vectorized
hashing; ``prepare_commit`` sorts, folds duplicate keys, writes the files (two threads over the
groups) and returns :class:`CommitMessage` objects. Nothing is visible until a committer commits
those messages; files of messages that are never committed are orphans, never read.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import data_file as df
from .binary_row import serialize_row
from .bucket import bucket_ids
from .errors import DataError, InvalidOptionError, SchemaError, UnsupportedError
from .fs import FileIO, join
from .keys import last_per_key, merge_order
from .manifest import DataFileMeta, SimpleStats
from .merge import merge, spec_from_options
from .options import ChangelogProducer, CoreOptions
from .partition import group_by_partition, partition_path
from .schema import TableSchema

FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1
_KIND_CODES = {name: code for code, name in enumerate(df.ROW_KIND_NAMES)}


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitMessage:
    """New files of one (partition, bucket), produced by a writer, committed by one committer."""

    partition: tuple[object, ...]
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...]
    deleted_files: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()

    def is_empty(self) -> bool:
        return not self.new_files and not self.deleted_files and not self.changelog_files


@dataclass(slots=True)
class _Group:
    """Rows routed to one (partition, bucket): row indices into the written tables, not copies."""

    partition: tuple[object, ...]
    bucket: int
    parts: list[tuple[pa.Table, np.ndarray]] = field(default_factory=list)
    kinds: list[np.ndarray] = field(default_factory=list)

    @property
    def row_count(self) -> int:
        return sum(len(k) for k in self.kinds)


def to_arrow_table(data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    expected = "write() takes a pyarrow Table, a RecordBatch or an iterable of RecordBatches"
    try:
        batches = list(data)
    except TypeError:
        raise SchemaError(f"{expected}, not {type(data).__name__}") from None
    if not batches or not all(isinstance(b, pa.RecordBatch) for b in batches):
        raise SchemaError(expected)
    try:
        return pa.Table.from_batches(batches)
    except pa.ArrowInvalid as exc:  # batches of different schemas; the message names the columns
        raise SchemaError(f"the record batches do not share one schema: {exc}") from None


def conform(table: pa.Table, schema: pa.Schema, key_columns: Sequence[str] = ()) -> pa.Table:
    """Reorder and safely cast ``table`` to ``schema``; typed errors name the offending column."""
    names = table.column_names
    if len(set(names)) != len(names):
        raise SchemaError(f"duplicate column names in the data: {sorted(n for n in set(names) if names.count(n) > 1)}")
    missing = [f.name for f in schema if f.name not in names]
    extra = [n for n in names if schema.get_field_index(n) < 0]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"unknown columns {extra}")
        raise SchemaError("data does not match the table schema: " + "; ".join(parts))
    columns = []
    for target in schema:
        column = table.column(target.name)
        if column.type != target.type:
            try:
                column = pc.cast(column, target.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise SchemaError(
                    f"column {target.name!r} has type {column.type}, which cannot be written as {target.type}: {exc}"
                ) from None
        if not target.nullable and column.null_count:
            role = "primary key column" if target.name in key_columns else "column"
            raise DataError(f"{role} {target.name!r} is NOT NULL but has {column.null_count} null value(s)")
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def _row_kinds(table: pa.Table, row_kinds: object, rowkind_field: str | None) -> np.ndarray:
    if row_kinds is not None and rowkind_field is not None:
        raise DataError("pass row kinds either through 'rowkind.field' or the row_kinds argument, not both")
    source = row_kinds
    if rowkind_field is not None:
        source = table.column(rowkind_field)
    if source is None:
        return np.zeros(table.num_rows, dtype=np.int8)
    if isinstance(source, str):
        if source not in _KIND_CODES:
            raise DataError(f"unknown row kind {source!r}; expected one of {', '.join(df.ROW_KIND_NAMES)}")
        return np.full(table.num_rows, _KIND_CODES[source], dtype=np.int8)
    arr = pa.chunked_array([source]) if isinstance(source, pa.Array) else source
    if not isinstance(arr, pa.ChunkedArray):
        arr = pa.chunked_array([pa.array(source)])
    if len(arr) != table.num_rows:
        raise DataError(f"row_kinds has {len(arr)} values for {table.num_rows} rows")
    if pa.types.is_integer(arr.type):
        codes = arr.to_numpy(zero_copy_only=False)
    else:
        lookup = pa.array(df.ROW_KIND_NAMES)
        codes_arr = pc.index_in(arr, value_set=lookup)
        if codes_arr.null_count:
            bad = pc.filter(arr, pc.is_null(codes_arr)).unique().to_pylist()[:5]
            where = f"column {rowkind_field!r}" if rowkind_field else "row_kinds"
            raise DataError(f"{where} holds unknown row kinds {bad}; expected one of {', '.join(df.ROW_KIND_NAMES)}")
        codes = codes_arr.to_numpy(zero_copy_only=False)
    codes = np.asarray(codes, dtype=np.int8)
    if codes.size and (codes.min() < 0 or codes.max() > 3):
        raise DataError("row kinds must be 0..3 (+I, -U, +U, -D)")
    return codes


class TableWrite:
    """Buffers rows of one table and turns them into data files and commit messages.

    Not thread-safe; one writer per task. ``write`` may be called many times; ``prepare_commit``
    writes everything buffered and returns the messages (the writer can then be reused).
    """

    def __init__(self, *, file_io: FileIO, table_path: str, schema: TableSchema, options: CoreOptions,
                 next_sequence: dict[tuple[tuple[object, ...], int], int] | None = None,
                 sequence_lookup=None) -> None:
        options.require_supported_for_write()
        self._file_io, self._path, self._schema, self._options = file_io, table_path, schema, options
        self._arrow_schema = schema.arrow_schema()
        self._pk = list(schema.trimmed_primary_keys)
        self._partition_keys = list(schema.partition_keys)
        self._is_pk = bool(schema.primary_keys)
        self._bucket = options.bucket
        if self._is_pk and self._bucket == -1:
            raise UnsupportedError("dynamic bucket mode (bucket = -1 on a primary-key table) is not supported yet")
        if not self._is_pk and self._bucket > 0 and not options.bucket_key:
            raise InvalidOptionError("bucket", str(self._bucket),
                                     "an append table with fixed buckets needs 'bucket-key'")
        self._bucket_keys = list(schema.bucket_keys) if self._bucket > 0 else []
        self._groups: dict[tuple[tuple[object, ...], int], _Group] = {}
        self._sequence_lookup = sequence_lookup  # (partition, bucket) -> next sequence number
        self._next_sequence = dict(next_sequence or {})
        self._file_counter = 0
        self._merge_spec = merge_spec_for(schema, options, keep_deletes=True) if self._is_pk else None
        self._counter_lock = threading.Lock()  # files are written by a thread pool
        self._writer_id = str(uuid.uuid4())

    # -- routing -----------------------------------------------------------------------------

    def write(self, data, *, row_kinds=None) -> None:
        """Validate ``data`` against the schema and buffer it by (partition, bucket).

        Raises SchemaError (wrong/missing/extra columns, impossible casts) or DataError (null in a
        NOT NULL or primary-key column, unknown row kind, retractions into an append table); on
        error nothing of ``data`` is buffered.
        """
        table = conform(to_arrow_table(data), self._arrow_schema, self._schema.primary_keys)
        if table.num_rows == 0:
            return
        kinds = _row_kinds(table, row_kinds, self._options.rowkind_field)
        if not self._is_pk and np.any(kinds != 0):
            raise DataError("an append table only takes +I rows; use a primary-key table for updates and deletes")
        if self._is_pk and self._options.ignore_delete:
            keep = (kinds == df.ROW_KIND_INSERT) | (kinds == df.ROW_KIND_UPDATE_AFTER)
            if not keep.all():
                table, kinds = table.filter(pa.array(keep)), kinds[keep]
            if table.num_rows == 0:
                return
        table = table.combine_chunks()
        partitions = group_by_partition(table, self._partition_keys)
        buckets = None
        if self._bucket > 0:
            buckets = bucket_ids([table.column(k) for k in self._bucket_keys], self._bucket).astype(np.int16)
        for values, rows in zip(partitions.values, partitions.row_indices, strict=True):
            if buckets is None:
                self._add(values, 0, table, rows, kinds[rows])
                continue
            row_buckets = buckets[rows]
            order = np.argsort(row_buckets, kind="stable")  # radix sort on int16: rows stay ascending per bucket
            sorted_buckets = row_buckets[order]
            cuts = np.flatnonzero(np.diff(sorted_buckets)) + 1
            for chunk in np.split(order, cuts):
                selected = rows[chunk]
                self._add(values, int(row_buckets[chunk[0]]), table, selected, kinds[selected])

    def _add(self, partition: tuple[object, ...], bucket: int, table: pa.Table, rows: np.ndarray,
             kinds: np.ndarray) -> None:
        key = (partition, bucket)
        slot = self._groups.get(key)
        if slot is None:
            slot = self._groups[key] = _Group(partition, bucket)
        slot.parts.append((table, rows))
        slot.kinds.append(kinds)

    # -- flushing ----------------------------------------------------------------------------

    def prepare_commit(self) -> list[CommitMessage]:
        """Write every buffered group as data files; return one message per (partition, bucket)."""
        groups = list(self._groups.values())
        self._groups = {}
        starts = {}
        for g in groups:
            key = (g.partition, g.bucket)
            if key not in self._next_sequence:
                self._next_sequence[key] = self._sequence_lookup(*key) if self._sequence_lookup else 0
            starts[key] = self._next_sequence[key]
            self._next_sequence[key] += g.row_count
        with ThreadPoolExecutor(max_workers=2) as pool:
            messages = list(pool.map(lambda g: self._flush(g, starts[(g.partition, g.bucket)]), groups))
        return messages

    def _flush(self, group: _Group, first_sequence: int) -> CommitMessage:
        kinds = np.concatenate(group.kinds)
        sequence = np.arange(first_sequence, first_sequence + len(kinds), dtype=np.int64)
        if len(group.parts) == 1:
            source, rows = group.parts[0]
        else:  # several write() calls: gather once, then work on positions in the gathered table
            source = pa.concat_tables([t.take(pa.array(r)) for t, r in group.parts]).combine_chunks()
            rows = np.arange(source.num_rows, dtype=np.int64)
        changelog: list[DataFileMeta] = []
        if self._is_pk:
            order, last = self._sort_and_fold(source, rows)
            if self._options.changelog_producer is ChangelogProducer.INPUT:
                # 'input': every input row, sorted by key and sequence, unfolded (Paimon writes the
                # write buffer as it is before merging it).
                changelog = self._write_files(group, source.take(pa.array(rows[order])), kinds[order], sequence[order],
                                              prefix=self._options.changelog_file_prefix)
            if self._merge_spec is None:  # deduplicate: the newest row of each key, already found
                positions = order if last is None else order[last]
                table = source.take(pa.array(rows[positions]))
                kinds, sequence = kinds[positions], sequence[positions]
            else:  # other merge engines fold the key's rows; level-0 files keep their deletes
                ordered = source.take(pa.array(rows[order]))
                ordered = ordered.append_column(df.SEQUENCE_NUMBER, pa.array(sequence[order], pa.int64()))
                ordered = ordered.append_column(df.VALUE_KIND, pa.array(kinds[order], pa.int8()))
                merged = merge(ordered, self._pk, self._merge_spec)
                kinds = merged.column(df.VALUE_KIND).to_numpy().astype(np.int8)
                sequence = merged.column(df.SEQUENCE_NUMBER).to_numpy()
                table = merged.select(self._arrow_schema.names)
        else:
            table = source.take(pa.array(rows))
        files = self._write_files(group, table, kinds, sequence, prefix=self._options.data_file_prefix)
        total = self._bucket if self._bucket > 0 else -1
        return CommitMessage(partition=group.partition, bucket=group.bucket, total_buckets=total,
                             new_files=tuple(files), changelog_files=tuple(changelog))

    def _write_files(self, group: _Group, table: pa.Table, kinds: np.ndarray, sequence: np.ndarray, *,
                     prefix: str, level: int = 0, file_source: int = FILE_SOURCE_APPEND) -> list[DataFileMeta]:
        return [
            self._write_file(group, table.slice(start, length), kinds[start:start + length],
                             sequence[start:start + length], prefix=prefix, level=level, file_source=file_source)
            for start, length in self._roll(table)
        ]

    def write_rewritten(self, partition: tuple[object, ...], bucket: int, table: pa.Table, kinds: np.ndarray,
                        sequence: np.ndarray, *, level: int) -> list[DataFileMeta]:
        """Write rows a compaction produced (already sorted and merged, keeping their sequence
        numbers) as files of ``level``, rolled at ``target-file-size``."""
        return self._write_files(_Group(partition, bucket), table, kinds, sequence,
                                 prefix=self._options.data_file_prefix, level=level, file_source=FILE_SOURCE_COMPACT)

    def _sort_and_fold(self, source: pa.Table, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The key order of ``rows`` (positions into it) and a mask of the last arrival of each key
        (None when every key is unique).

        The sort is stable, so among equal keys arrival order (= sequence order) is kept and the
        last of each run of equal keys is the newest row: the one deduplicate keeps.
        """
        sequence_fields = list(self._options.sequence_field or ())
        keys = source.select([*self._pk, *sequence_fields]).take(pa.array(rows))
        order = merge_order(keys, self._pk, np.arange(len(rows), dtype=np.int64), sequence_fields,
                            self._options.sequence_descending, positions_are_arrival=True)
        last = last_per_key(keys.select(self._pk).take(pa.array(order)), self._pk)
        return order, (None if last.all() else last)

    def _roll(self, table: pa.Table) -> list[tuple[int, int]]:
        target = self._options.target_file_size_for(self._is_pk)
        n = table.num_rows
        if n == 0:
            return []
        per_row = max(table.nbytes / n, 1.0)
        rows_per_file = max(int(target / per_row), 1)
        return [(s, min(rows_per_file, n - s)) for s in range(0, n, rows_per_file)]

    def _write_file(self, group: _Group, table: pa.Table, kinds: np.ndarray, sequence: np.ndarray, *,
                    prefix: str, level: int = 0, file_source: int = FILE_SOURCE_APPEND) -> DataFileMeta:
        options = self._options
        fmt = options.file_format
        with self._counter_lock:
            self._file_counter += 1
            counter = self._file_counter
        name = f"{prefix}{self._writer_id}-{counter}.{df.extension(fmt)}"
        if self._is_pk:
            key_columns = [table.column(k) for k in self._pk]
            physical = pa.Table.from_arrays(
                [*key_columns, pa.array(sequence, pa.int64()), pa.array(kinds, pa.int8()), *table.columns],
                schema=pa.schema([
                    *(pa.field(df.KEY_PREFIX + k, c.type, nullable=False) for k, c in zip(self._pk, key_columns, strict=True)),
                    pa.field(df.SEQUENCE_NUMBER, pa.int64(), nullable=False),
                    pa.field(df.VALUE_KIND, pa.int8(), nullable=False),
                    *table.schema,
                ]),
            )
        else:
            physical = table
        payload, footer = df.encode_file(physical, fmt, compression=options.file_compression,
                                         zstd_level=options.zstd_level,
                                         dictionary_hint={df.VALUE_KIND, *self._partition_keys})
        directory = self.bucket_dir(group.partition, group.bucket)
        self._file_io.write_bytes(join(directory, name), payload)
        value_names = table.column_names
        value_types = [f.type for f in table.schema]
        if footer is not None:
            ranges = df.ranges_from_parquet(footer, value_names, value_types)
        else:
            ranges = df.ranges_from_table(table, value_names)
        value_stats = self._value_stats(ranges, value_types)
        if self._is_pk:
            key_types = [table.schema.field(k).type for k in self._pk]
            by_name = dict(zip(value_names, ranges, strict=True))
            key_min, key_max, key_nulls = df.stats_row([by_name[k] for k in self._pk], key_types, "full")
            key_stats = SimpleStats(min_values=key_min, max_values=key_max, null_counts=tuple(key_nulls))
            min_key = serialize_row([table.column(k)[0].as_py() for k in self._pk], key_types)
            max_key = serialize_row([table.column(k)[-1].as_py() for k in self._pk], key_types)
        else:
            empty = serialize_row([], [])
            key_stats = SimpleStats(min_values=empty, max_values=empty, null_counts=())
            min_key = max_key = empty
        return DataFileMeta(
            file_name=name,
            file_size=len(payload),
            row_count=table.num_rows,
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            value_stats=value_stats,
            min_sequence_number=int(sequence.min()),
            max_sequence_number=int(sequence.max()),
            schema_id=self._schema.id,
            level=level,
            extra_files=(),
            creation_time_millis=int(time.time() * 1000),
            delete_row_count=df.row_kind_counts(kinds),
            embedded_index=None,
            file_source=file_source,
            value_stats_cols=() if self._options.stats_mode == "none" else None,
            external_path=None,
            first_row_id=None,
            write_cols=None,
        )

    def _value_stats(self, ranges, types) -> SimpleStats:
        mode = self._options.stats_mode
        if mode == "none":
            empty = serialize_row([], [])
            return SimpleStats(min_values=empty, max_values=empty, null_counts=())
        lo, hi, nulls = df.stats_row(ranges, types, mode)
        return SimpleStats(min_values=lo, max_values=hi, null_counts=tuple(nulls))

    def bucket_dir(self, partition: tuple[object, ...], bucket: int) -> str:
        return bucket_directory(self._path, self._schema, self._options, partition, bucket)

    def close(self) -> None:
        self._groups = {}


def merge_spec_for(schema: TableSchema, options: CoreOptions, *, keep_deletes: bool):
    """The merge-engine spec of a primary-key table, or None for ``deduplicate`` (which the
    writer and the reader do with their own faster key-only path)."""
    if options.merge_engine.value == "deduplicate":
        return None
    return spec_from_options(schema.options, keep_deletes=keep_deletes)


def bucket_directory(table_path: str, schema: TableSchema, options: CoreOptions,
                     partition: tuple[object, ...], bucket: int) -> str:
    """``<table>/<k=v/...>/bucket-<n>``."""
    if schema.partition_keys:
        arrow_schema = schema.arrow_schema()
        types = [arrow_schema.field(k).type for k in schema.partition_keys]
        rel = partition_path(list(schema.partition_keys), list(partition), types, options.partition_default_name,
                             legacy=options.partition_legacy_name)
        return join(table_path, rel, f"bucket-{bucket}")
    return join(table_path, f"bucket-{bucket}")
