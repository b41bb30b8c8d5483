"""Reads: scan planning (partition pruning, statistics-based file skipping) and the vectorized
merge-on-read of primary-key tables.

A :class:`Split` is one (partition, bucket) with its live files. Append splits are read file by
file. Primary-key splits are merged: rows of all files are sorted by (key, sequence number)
with a stable vectorized sort, the newest row of each key wins, and retractions (-U, -D) drop
the key. Results come as a pyarrow Table or as a stream of record batches, one split at a time,
so memory is bounded by the largest split.

What a read decodes is kept small: a deduplicating merge reads keys and row kinds first, then
the values only of files holding a winner (each file opened once for both passes);
``_SEQUENCE_NUMBER`` is read only when the files' sequence ranges overlap; partition columns
are filled from the split's partition values rather than decoded. Splits are read by two
threads (pyarrow and numpy release the GIL).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..data import data_file as df
from ..data.binary_row import deserialize_row
from ..data.conversion import bind_predicate, field_types
from ..data.keys import last_in_order, last_per_key, lookup_candidates, merge_order
from ..errors import PaimonflowError, UnsupportedFeatureError
from ..fs import join
from ..merge import merge
from ..meta.fileindex import FileIndexPruner, IndexedColumn, file_index_read_enabled
from ..meta.index_files import deleted_mask
from ..meta.layout import POSTPONE_BUCKET, bucket_directory
from ..meta.manifest import DataFileMeta, ManifestEntry
from ..meta.schema import TableSchema
from ..options.core import CoreOptions
from ..options.merge import merge_spec_for
from ..predicate import ColumnStats, Predicate, filter_table
from .data_evolution import anchor_of, is_data_evolution, merge_group, row_id_groups
from .evolution import evolve_table
from .row_tracking import require_whole_rows, stored_tracking_columns, tracking_fields, with_tracking_columns

_FILES_KEPT_OPEN = 32  # a two-pass merge of more files reopens them for the second pass
ROW_POSITION = "_ROW_POSITION"  # a row's position in its data file (deletion vectors address rows by it)


@dataclass(frozen=True, slots=True, kw_only=True)
class Split:
    """One (partition, bucket) and the live files a read must merge."""

    partition: tuple[object, ...]
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    #: deletion vectors (pyroaring BitMaps of deleted row positions) by data file name
    deletion_vectors: Mapping[str, Any] | None = None

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)


class ScanPlanner:
    """Plans the splits of one snapshot's live files for a predicate."""

    def __init__(self, *, table_path: str, schema: TableSchema, options: CoreOptions, schemas,
                 file_io=None) -> None:
        self._path, self._schema, self._options = table_path, schema, options
        self._schemas = schemas  # schema id -> TableSchema (for statistics of older files)
        self._file_io = file_io  # reads ``.index`` files (None: only indexes embedded in manifests)
        #: files a file index (``file-index.*``) proved hold no matching row, in the last :meth:`plan`
        self.files_skipped_by_index = 0
        arrow = schema.arrow_schema()
        self._partition_types = [arrow.field(k).type for k in schema.partition_keys]
        self._key_types = [arrow.field(k).type for k in schema.trimmed_primary_keys]
        self._arrow = arrow

    def plan(self, entries: Sequence[ManifestEntry], predicate: Predicate | None, *,
             level_filter=None) -> list[Split]:
        """The splits of ``entries`` that ``predicate`` (bound to the schema's column types
        first: :func:`~paimonflow.core.data.conversion.bind_predicate`) may match."""
        if predicate is not None:
            predicate = bind_predicate(predicate, self._arrow, field_types(self._schema.fields))
        partition_keys = list(self._schema.partition_keys)
        partition_pred = predicate.only_on(set(partition_keys)) if predicate is not None and partition_keys else None
        if predicate is not None and partition_keys:
            # a file's statistics can only prune by the other columns (partition columns are constant in it)
            others = {f.name for f in self._schema.fields} - set(partition_keys)
            predicate = predicate.only_on(others)
        decoded: dict[bytes, tuple[object, ...]] = {}
        accepted: dict[bytes, bool] = {}
        self.files_skipped_by_index = 0
        if is_data_evolution(self._schema.options):  # a file's rows take columns of others: no file pruning
            predicate = None
        index_predicate = self._index_predicate(predicate)
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        for e in entries:
            if e.bucket == POSTPONE_BUCKET:  # Paimon's batch scans read only real buckets
                continue
            if level_filter is not None and not level_filter(e.file.level):
                continue
            if e.partition not in decoded:
                values = deserialize_row(e.partition, self._partition_types)
                decoded[e.partition] = values
                accepted[e.partition] = partition_pred is None or partition_pred.might_match({
                    k: ColumnStats(v, v, int(v is None), 1) for k, v in zip(partition_keys, values, strict=True)
                })
            if not accepted[e.partition]:
                continue
            if predicate is not None and not self._file_might_match(e.file, predicate):
                continue
            if index_predicate is not None and not self._index_might_match(e, decoded[e.partition], index_predicate):
                self.files_skipped_by_index += 1
                continue
            groups.setdefault((e.partition, e.bucket), []).append(e)
        splits = []
        for (partition, bucket), group in sorted(groups.items(), key=lambda kv: (str(decoded[kv[0][0]]), kv[0][1])):
            files = sorted((e.file for e in group), key=lambda f: (f.min_sequence_number, f.file_name))
            splits.append(Split(partition=decoded[partition], bucket=bucket,
                                total_buckets=group[0].total_buckets, files=tuple(files)))
        return splits

    def _file_might_match(self, f: DataFileMeta, predicate: Predicate) -> bool:
        layout = self._stats_layout(f.schema_id)
        if self._schema.primary_keys:
            # Only key statistics are safe: a value filter must see the merged row, not a file's rows.
            names, types, current = layout.key_names, layout.key_types, layout.current_names
            stats = f.key_stats
        elif f.value_stats_cols is None or f.value_stats_cols:
            # statistics of the columns named, else of those the file holds (write_cols), else all
            named = f.value_stats_cols or f.write_cols
            names = list(named) if named else layout.value_names
            # (only Paimon's row-tracking columns, BIGINT, are stored without being table columns)
            types = [layout.type_of.get(n, pa.int64()) for n in names] if named else layout.value_types
            current, stats = layout.current_names, f.value_stats
        else:
            return True  # the writer kept no value statistics
        decoded = _decode_stats(stats, names, types, f.row_count, current)
        return predicate.might_match(decoded) if decoded else True

    def _index_predicate(self, predicate: Predicate | None) -> Predicate | None:
        """What file indexes may prune by: the whole filter of an append table, the key columns'
        part for a primary-key table (a file's rows are not the merged rows)."""
        if predicate is None or not file_index_read_enabled(self._options.raw):
            return None
        if self._schema.primary_keys:
            return predicate.only_on(set(self._schema.trimmed_primary_keys))
        return predicate

    def _index_might_match(self, e: ManifestEntry, partition: tuple[object, ...], predicate: Predicate) -> bool:
        """False when the file's index (embedded, or its ``.index`` extra file) proves no row matches."""
        f = e.file
        data = f.embedded_index
        if data is None:
            names = [x for x in f.extra_files if x.endswith(".index")]
            if not names or self._file_io is None:
                return True
            directory = f.external_path.rsplit("/", 1)[0] if f.external_path else \
                bucket_directory(self._path, self._schema, self._options, partition, e.bucket)
            try:
                data = self._file_io.read_bytes(join(directory, names[0]))
            except (PaimonflowError, OSError):  # an index that cannot be read is not used
                return True
        return FileIndexPruner(data, self._indexed_columns(f.schema_id)).might_match(predicate)

    @functools.cache  # noqa: B019 - one planner per read; the cache dies with it
    def _indexed_columns(self, schema_id: int) -> dict[str, IndexedColumn]:
        """Current column name -> its name and type in files of ``schema_id`` (columns whose type
        changed since are left out: their index hashed other values)."""
        schema = self._schemas(schema_id)
        current = {f.id: f for f in self._schema.fields}
        out = {}
        for old in schema.fields:
            new = current.get(old.id)
            if new is not None and old.type.root == new.type.root and \
                    old.type.precision == new.type.precision and old.type.scale == new.type.scale:
                out[new.name] = IndexedColumn(file_name=old.name, data_type=old.type)
        return out

    @functools.cache  # noqa: B019 - one planner per read; the cache dies with it
    def _stats_layout(self, schema_id: int) -> _StatsLayout:
        schema = self._schemas(schema_id)
        arrow = schema.arrow_schema()
        current_by_id = {f.id: f.name for f in self._schema.fields}
        keys = list(schema.trimmed_primary_keys)
        return _StatsLayout(
            key_names=keys,
            key_types=[arrow.field(k).type for k in keys],
            value_names=list(arrow.names),
            value_types=list(arrow.types),
            type_of={f.name: f.type for f in arrow},
            current_names={f.name: current_by_id.get(f.id) for f in schema.fields},
        )


@dataclass(frozen=True, slots=True)
class _StatsLayout:
    """How the statistics of files written under one schema map to the current columns."""

    key_names: list[str]
    key_types: list[pa.DataType]
    value_names: list[str]
    value_types: list[pa.DataType]
    type_of: dict[str, pa.DataType]
    current_names: dict[str, str | None]  # name in that schema -> current name (None = dropped)


def _decode_stats(s, names, types, row_count, current_names) -> dict[str, ColumnStats]:
    """Statistics of a file keyed by the *current* column names (matched through field ids)."""
    if not names:
        return {}
    try:
        lows = deserialize_row(s.min_values, types)
        highs = deserialize_row(s.max_values, types)
    except Exception:  # statistics we cannot decode are simply unknown
        return {}
    nulls = list(s.null_counts) if s.null_counts else [None] * len(names)
    out = {}
    for name, lo, hi, n in zip(names, lows, highs, nulls, strict=False):
        current = current_names.get(name)
        if current is not None:
            out[current] = ColumnStats(lo, hi, n, row_count)
    return out


class SplitReader:
    """Reads splits into Arrow (projection, filter, merge-on-read, schema evolution)."""

    def __init__(self, *, file_io, table_path: str, schema: TableSchema, options: CoreOptions, schemas) -> None:
        self._file_io, self._path, self._schema, self._options = file_io, table_path, schema, options
        self._schemas = schemas
        self._arrow = schema.arrow_schema()
        # what a read may name: the columns, and _ROW_ID / _SEQUENCE_NUMBER of row-tracking tables
        self._tracking = tracking_fields(schema.options)
        self._readable = pa.schema([*self._arrow, *self._tracking.values()]) if self._tracking else self._arrow
        self._by_row_id = is_data_evolution(schema.options)  # partial-column files merged by row id
        self._keys = list(schema.trimmed_primary_keys)
        self._is_pk = bool(schema.primary_keys)
        # Paimon merges lookup tables (changelog-producer lookup, deletion vectors) with its
        # LookupMergeFunction: level 0 plus the lowest level above it (first-row is not wrapped)
        self._lookup_merge = (options.changelog_producer.value == "lookup" or options.deletion_vectors) \
            and options.merge_engine.value != "first-row"
        self._partition_index = {k: i for i, k in enumerate(schema.partition_keys)}
        self._unevolved: dict[int, bool] = {}  # schema id of a data file -> same fields as the read schema
        self._directories: dict[tuple[tuple[object, ...], int], str] = {}

    def output_schema(self, columns: Sequence[str] | None) -> pa.Schema:
        if columns is None:
            return self._arrow
        unknown = [c for c in columns if self._readable.get_field_index(c) < 0]
        if unknown:
            from ..errors import SchemaError

            raise SchemaError(f"unknown columns {unknown}; the table has {self._readable.names}")
        return pa.schema([self._readable.field(c) for c in columns])

    def read(self, splits: Sequence[Split], *, columns: Sequence[str] | None = None,
             predicate: Predicate | None = None, merge: bool = True) -> pa.Table:
        out_schema = self.output_schema(columns)
        if predicate is not None:
            self.output_schema(sorted(predicate.fields()))  # unknown filter columns fail even with no rows
        predicate = self._bind(predicate)
        if not splits:
            return out_schema.empty_table()
        with ThreadPoolExecutor(max_workers=2) as pool:
            tables = list(pool.map(lambda s: self.read_split(s, columns=columns, predicate=predicate, merge=merge),
                                   splits))
        return pa.concat_tables(tables)

    def read_batches(self, splits: Sequence[Split], *, columns: Sequence[str] | None = None,
                     predicate: Predicate | None = None) -> Iterator[pa.RecordBatch]:
        """Append tables stream file by file and batch by batch (memory: one batch); primary-key
        splits are merged whole (memory: one bucket's rows of the needed columns)."""
        wanted = list(columns) if columns is not None else list(self._arrow.names)
        self.output_schema(wanted)
        if predicate is not None:
            self.output_schema(sorted(predicate.fields()))
        predicate = self._bind(predicate)
        for split in splits:
            if (self._is_pk and not self._options.deletion_vectors) or self._by_row_id:
                yield from self.read_split(split, columns=columns, predicate=predicate).to_batches()
                continue
            needed = list(dict.fromkeys([*wanted, *(sorted(predicate.fields()) if predicate else [])]))
            for f in split.files:
                if (split.deletion_vectors and f.file_name in split.deletion_vectors) or \
                        any(c in self._tracking for c in needed):
                    yield from filter_table(self._read_file(split, f, needed), predicate).select(wanted).to_batches()
                    continue
                for batch in self._file_batches(split, f, needed):
                    table = filter_table(pa.Table.from_batches([batch]), predicate).select(wanted)
                    yield from table.to_batches()

    def _file_batches(self, split: Split, f: DataFileMeta, columns: list[str]) -> Iterator[pa.RecordBatch]:
        data_schema = self._schemas(f.schema_id)
        current_ids = {fld.name: fld.id for fld in self._schema.fields}
        data_names = {fld.id: fld.name for fld in data_schema.fields}
        physical = [data_names[current_ids[c]] for c in columns if current_ids[c] in data_names]
        directory = bucket_directory(self._path, self._schema, self._options, split.partition, split.bucket)
        with self._file_io.open_input(f.external_path or join(directory, f.file_name)) as stream:
            for batch in df.iter_file_batches(stream, df.format_of(f.file_name), physical):
                yield from evolve_table(pa.Table.from_batches([batch]), data_schema, self._schema, columns).to_batches()

    def read_split(self, split: Split, *, columns: Sequence[str] | None = None,
                   predicate: Predicate | None = None, merge: bool = True) -> pa.Table:
        wanted = list(columns) if columns is not None else list(self._arrow.names)
        needed = list(dict.fromkeys([*wanted, *(sorted(predicate.fields()) if predicate else [])]))
        self.output_schema(needed)  # unknown columns fail
        predicate = self._bind(predicate)
        if self._is_pk and merge and not self._options.deletion_vectors:
            table = self._merge(split, needed)
        elif self._by_row_id:
            parts = [self._read_by_row_id(split, group, needed) for group in row_id_groups(split.files, table=self._path)]
            table = pa.concat_tables(parts) if parts else self.output_schema(needed).empty_table()
        else:  # append files, or merge-on-write files whose replaced rows are deleted by vectors
            parts = [self._read_file(split, f, needed) for f in split.files]
            table = pa.concat_tables(parts) if parts else self.output_schema(needed).empty_table()
        table = filter_table(table, predicate).select(wanted)
        expected = self.output_schema(wanted)
        return table if table.schema == expected else table.cast(expected)

    # -- internals ---------------------------------------------------------------------------

    def _bind(self, predicate: Predicate | None) -> Predicate | None:
        """``predicate``'s values as exact values of the columns' types (a no-op once bound)."""
        if predicate is None:
            return None
        return bind_predicate(predicate, self._arrow, field_types(self._schema.fields))

    def read_file(self, split: Split, f: DataFileMeta, columns: Sequence[str], *,
                  system: Sequence[str] = ()) -> pa.Table:
        """One file of ``split`` as stored (no merging): ``columns`` (current names, evolved to
        the current schema) and the ``system`` columns (``_SEQUENCE_NUMBER``, ``_VALUE_KIND``)."""
        return self._read_file(split, f, list(columns), system=system)

    def _read_file(self, split: Split, f: DataFileMeta, columns: list[str], *, system: Sequence[str] = (),
                   positions: bool = False, opened: df.OpenDataFile | None = None,
                   some_columns: bool = False) -> pa.Table:
        """One file's ``columns`` (current names), evolved to the current schema, plus the
        ``system`` columns (``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) as stored. ``opened`` is the
        file already opened by :meth:`_open_file` (for reads in several passes). A file holding only
        some columns (``write_cols``) is refused unless ``some_columns`` (a merge by row id)."""
        if opened is None:
            with self._open_file(split, f) as opened:
                return self._read_file(split, f, columns, system=system, positions=positions, opened=opened,
                                       some_columns=some_columns)
        if self._tracking and any(c in self._tracking for c in columns):
            data = [c for c in columns if c not in self._tracking] or [self._arrow.names[0]]
            stored = [c for c in stored_tracking_columns(f) if c in columns]
            values = self._read_file(split, f, data, system=[*system, *stored], positions=True, opened=opened,
                                     some_columns=some_columns)
            return with_tracking_columns(values, f, [*columns, *system], position_column=ROW_POSITION,
                                         keep_positions=positions)
        data_schema = self._schemas(f.schema_id)
        if f.write_cols is not None and not some_columns:
            require_whole_rows(f, data_schema.field_names, table=self._path)
        extra = list(system)
        constant = self._constant_columns(split, data_schema, columns)
        decoded = [c for c in columns if c not in constant] if constant else columns
        if constant and not decoded and not extra:  # something must be read to know the row count
            constant, decoded = {}, columns
        if self._is_unevolved(data_schema):
            raw = opened.read([*decoded, *extra])
            values = self._as_read_schema(raw, data_schema, decoded)
        else:
            current_ids = {fld.name: fld.id for fld in self._schema.fields}
            data_names = {fld.id: fld.name for fld in data_schema.fields}
            physical = [data_names[current_ids[c]] for c in decoded if current_ids[c] in data_names]
            raw = opened.read([*physical, *extra])
            values = evolve_table(raw, data_schema, self._schema, decoded)
        if constant:
            arrays = self._constant_arrays(constant, raw.num_rows)
            values = pa.Table.from_arrays([arrays[c] if c in arrays else values.column(c) for c in columns],
                                          schema=pa.schema([self._arrow.field(c) for c in columns]))
        for name in extra:
            values = values.append_column(name, raw.column(name))
        if positions:
            values = values.append_column(ROW_POSITION, pa.array(np.arange(values.num_rows, dtype=np.int64)))
        keep = deleted_mask((split.deletion_vectors or {}).get(f.file_name), values.num_rows)
        return values if keep is None else values.filter(pa.array(keep))

    def _read_by_row_id(self, split: Split, group: list[DataFileMeta], columns: list[str]) -> pa.Table:
        """One row-id group of a data-evolution table (:mod:`paimonflow.core.read.data_evolution`)."""
        if len(group) == 1 and group[0].write_cols is None:
            return self._read_file(split, group[0], columns)
        held = set().union(*(self._columns_held(f) for f in group))
        if all(f.write_cols is not None for f in group) and not held >= set(self._arrow.names):
            raise UnsupportedFeatureError(table=self._path, feature="data evolution (data-evolution.enabled)",
                                          operation="read", detail=f"rows {group[0].first_row_id}.. are read without "
                                          "a file holding their other columns (an incremental read?)")
        every_row = dataclasses.replace(split, deletion_vectors=None)  # the anchor's vector applies after merging
        anchor = anchor_of(group)
        keep = deleted_mask((split.deletion_vectors or {}).get(anchor.file_name), group[0].row_count)
        return merge_group(group, columns, holds=self._columns_held, keep=keep, field_of=self._readable.field,
                           read=lambda f, names: self._read_file(every_row, f, names, some_columns=True))

    def _columns_held(self, f: DataFileMeta) -> set[str]:
        """The current names of the columns data file ``f`` stores."""
        data_schema = self._schemas(f.schema_id)
        current = {fld.id: fld.name for fld in self._schema.fields}
        return {current[fld.id] for fld in data_schema.fields
                if fld.id in current and (f.write_cols is None or fld.name in f.write_cols)}

    @contextlib.contextmanager
    def _open_file(self, split: Split, f: DataFileMeta) -> Iterator[df.OpenDataFile]:
        """``f`` opened for reading in one or more passes (closed on exit)."""
        where = (split.partition, split.bucket)
        directory = self._directories.get(where)
        if directory is None:
            directory = self._directories[where] = bucket_directory(
                self._path, self._schema, self._options, split.partition, split.bucket)
        with self._file_io.open_input(f.external_path or join(directory, f.file_name)) as stream:
            yield df.OpenDataFile(stream, df.format_of(f.file_name))

    def _is_unevolved(self, data_schema: TableSchema) -> bool:
        """True if files written under ``data_schema`` have exactly the read schema's columns
        (same ids, names and types): they need no schema evolution."""
        same = self._unevolved.get(data_schema.id)
        if same is None:
            same = self._unevolved[data_schema.id] = data_schema.fields == self._schema.fields
        return same

    def _as_read_schema(self, raw: pa.Table, data_schema: TableSchema, columns: list[str]) -> pa.Table:
        """``columns`` of ``raw`` (a file written under the read schema) with the read schema's
        fields; the general evolution when the file stored other Arrow types."""
        fields = [self._arrow.field(c) for c in columns]
        if all(raw.schema.field(c).type == fld.type for c, fld in zip(columns, fields, strict=True)):
            return pa.Table.from_arrays([raw.column(c) for c in columns], schema=pa.schema(fields))
        return evolve_table(raw, data_schema, self._schema, columns)

    #: partition column types whose value, decoded from the split's partition BinaryRow, is
    #: exactly the value stored in the file's rows
    _CONSTANT_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer,
                       pa.types.is_boolean, pa.types.is_date32)

    def _constant_arrays(self, values: Mapping[str, object], rows: int) -> dict[str, pa.Array]:
        """Columns of ``rows`` copies of each of ``values`` (column name -> value)."""
        out = {}
        for name, value in values.items():
            dtype = self._arrow.field(name).type
            out[name] = pa.nulls(rows, dtype) if value is None else pa.repeat(pa.scalar(value, dtype), rows)
        return out

    def _constant_columns(self, split: Split, data_schema: TableSchema, columns: Sequence[str]) -> dict[str, object]:
        """The partition columns among ``columns`` that are filled from the split's partition
        values instead of being decoded (every row of a file holds its partition's values),
        with those values. Only columns that did not evolve since the file was written and whose
        type round-trips exactly through the partition BinaryRow."""
        if not self._partition_index or not split.partition or not self._is_unevolved(data_schema):
            return {}
        out = {}
        for name in columns:
            i = self._partition_index.get(name)
            if i is not None and any(test(self._arrow.field(name).type) for test in self._CONSTANT_TYPES):
                out[name] = split.partition[i]
        return out

    def _merge(self, split: Split, needed: list[str]) -> pa.Table:
        sequence_fields = list(self._options.sequence_field or ())
        columns = list(dict.fromkeys([*self._keys, *needed, *sequence_fields]))
        if len(split.files) == 1:
            # One key-unique file: nothing to merge, only retractions to drop. The row kinds are
            # read even when deleteRowCount says 0, since some writers (pypaimon 2.1.0) always
            # write 0 there.
            table = self._read_file(split, split.files[0], columns, system=[df.VALUE_KIND])
            kinds = table.column(df.VALUE_KIND)
            table = table.filter(pc.or_(pc.equal(kinds, df.ROW_KIND_INSERT), pc.equal(kinds, df.ROW_KIND_UPDATE_AFTER)))
            return table.select(needed)
        if self._options.merge_engine.value != "deduplicate":
            # the engine's rules may name any column (sequence groups, aggregates): merge whole rows
            columns = list(dict.fromkeys([*columns, *self._arrow.names]))
        elif merge_spec_for(self._schema, self._options, keep_deletes=False) is None:
            return self._deduplicate_files(split, needed, sequence_fields, drop_retractions=True,
                                           system_columns=False)
        return self.merge_files(split, columns, drop_retractions=True).select(needed)

    def merge_files(self, split: Split, columns: Sequence[str] | None = None, *,
                    drop_retractions: bool, extra: pa.Table | None = None) -> pa.Table:
        """The newest row of each key across the split's files, sorted by key, with
        ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``. Retractions (-U, -D) are dropped only when asked
        (a compaction into a lower level must keep them: older rows may live further down).
        Lookup tables merge as Paimon's ``LookupMergeFunction``: level-0 rows and, of a key's rows
        above level 0, only the one on the lowest level (it already holds the merged state)."""
        sequence_fields = list(self._options.sequence_field or ())
        wanted = list(columns) if columns is not None else list(self._arrow.names)
        columns = list(dict.fromkeys([*self._keys, *wanted, *sequence_fields]))
        system = [df.SEQUENCE_NUMBER, df.VALUE_KIND]
        spec = merge_spec_for(self._schema, self._options, keep_deletes=not drop_retractions)
        if spec is None and len(split.files) > 1 and extra is None:
            return self._deduplicate_files(split, wanted, sequence_fields, drop_retractions)
        parts = [self._read_file(split, f, columns, system=system) for f in split.files]
        if extra is not None:  # rows pulled into the merge from elsewhere (older than the files)
            parts.insert(0, extra.select([*columns, *system]))
        table = pa.concat_tables(parts).combine_chunks()
        if table.num_rows == 0:
            return table.select([*wanted, *system])
        # Files come sorted by min sequence number; when their sequence ranges do not overlap, a
        # row's position already orders it after every older row of its key.
        files = split.files
        ordered = extra is None and all(
            a.max_sequence_number < b.min_sequence_number for a, b in itertools.pairwise(files))
        order = merge_order(table, self._keys, df.SEQUENCE_NUMBER, sequence_fields,
                            self._options.sequence_descending, positions_are_arrival=ordered,
                            kinds=df.VALUE_KIND if self._options.row_kind_flag else None)
        if self._lookup_merge:
            file_levels = [f.level for f in files]
            if extra is not None:
                file_levels.insert(0, self._options.num_levels)  # pulled rows: from above every level
            levels = np.repeat(np.array(file_levels, np.int64), [p.num_rows for p in parts])[order]
            order = order[lookup_candidates(table.select(self._keys).take(pa.array(order)), self._keys, levels)]
        return self.merge_sorted(table.take(pa.array(order)), wanted, drop_retractions=drop_retractions)

    def merge_sorted(self, table: pa.Table, columns: Sequence[str] | None = None, *,
                     drop_retractions: bool) -> pa.Table:
        """Merge rows already in merge order (:func:`~paimonflow.core.data.keys.merge_order`: by key,
        oldest first) with the table's merge engine: one row per key, in key order, with
        ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``. Retractions (-U, -D) are dropped only when asked.
        A key all of whose records the engine ignores (``ignore-delete``) has no row."""
        wanted = list(columns) if columns is not None else list(self._arrow.names)
        system = [df.SEQUENCE_NUMBER, df.VALUE_KIND]
        spec = merge_spec_for(self._schema, self._options, keep_deletes=not drop_retractions)
        if spec is not None:
            merged = merge(table, self._keys, spec, partition_columns=self._schema.partition_keys)
            return merged.select([*wanted, *system])
        keep = last_per_key(table.select(self._keys), self._keys)
        if drop_retractions:
            kinds = table.column(df.VALUE_KIND).to_numpy()
            keep &= (kinds == df.ROW_KIND_INSERT) | (kinds == df.ROW_KIND_UPDATE_AFTER)
        return table.filter(pa.array(keep)).select([*wanted, *system])

    def _deduplicate_files(self, split: Split, wanted: list[str], sequence_fields: list[str],
                           drop_retractions: bool, *, system_columns: bool = True) -> pa.Table:
        """Deduplicate in two passes over files opened once: keys, sequence fields and system
        columns of every file decide the newest row of each key; the other columns are then
        decoded only from files that hold a winner, and the winners are gathered in one take.
        Files whose rows were all superseded (the usual case for older runs after updates) never
        have their values decoded. Without ``system_columns`` the result has only ``wanted``, and
        ``_SEQUENCE_NUMBER`` is not even read when the files' sequence ranges do not overlap (a
        row's position then orders it after every older row of its key)."""
        files = split.files
        key_columns = list(dict.fromkeys([*self._keys, *sequence_fields]))
        ordered = all(a.max_sequence_number < b.min_sequence_number for a, b in itertools.pairwise(files))
        system = [df.SEQUENCE_NUMBER, df.VALUE_KIND] if system_columns or not ordered else [df.VALUE_KIND]
        output = [*wanted, df.SEQUENCE_NUMBER, df.VALUE_KIND] if system_columns else list(wanted)
        # partition columns of files that all hold the read schema's columns: filled after the take
        constant = self._constant_columns(split, self._schema, wanted) \
            if all(self._is_unevolved(self._schemas(f.schema_id)) for f in files) else {}
        value_columns = [c for c in wanted if c not in key_columns and c not in constant]
        with contextlib.ExitStack() as stack:
            # each file stays open between the passes (one footer parse), unless there are many
            keep_open = len(files) <= _FILES_KEPT_OPEN
            opened = [stack.enter_context(self._open_file(split, f)) if keep_open else None for f in files]
            parts = [self._read_file(split, f, key_columns, system=system, opened=o)
                     for f, o in zip(files, opened, strict=True)]
            # contiguous once: the merge order, the newest-row mask and the kinds read it as numpy
            table = pa.concat_tables(parts).combine_chunks()
            if table.num_rows == 0:
                return self._empty_merge_result(wanted, system_columns)
            order = merge_order(table, self._keys, None if ordered else df.SEQUENCE_NUMBER, sequence_fields,
                                self._options.sequence_descending, positions_are_arrival=ordered,
                                kinds=df.VALUE_KIND if self._options.row_kind_flag else None)
            keep = last_in_order(table, self._keys, order)
            if drop_retractions:
                kinds = table.column(df.VALUE_KIND).to_numpy()[order]
                keep &= (kinds == df.ROW_KIND_INSERT) | (kinds == df.ROW_KIND_UPDATE_AFTER)
            winners = np.asarray(order[keep], dtype=np.int64)  # rows of the concatenated files, in key order
            if not len(winners):
                return self._empty_merge_result(wanted, system_columns)
            # Decode the values of the files holding a winner only; renumber the winners' rows
            # as rows of the concatenation of those files.
            rows = np.array([p.num_rows for p in parts], dtype=np.int64)
            offsets = np.concatenate([[0], np.cumsum(rows)])
            hit = np.zeros(table.num_rows + 1, dtype=bool)  # one spare slot: reduceat needs valid starts
            hit[winners] = True
            holding = (rows > 0) & np.logical_or.reduceat(hit, offsets[:-1])
            if not holding.all():
                file_of = np.searchsorted(offsets, winners, side="right") - 1
                kept_offsets = np.concatenate([[0], np.cumsum(np.where(holding, rows, 0))])
                winners += kept_offsets[file_of] - offsets[file_of]
            pieces = []
            for f, o, part, needed in zip(files, opened, parts, holding, strict=True):
                if not needed:
                    continue
                if value_columns:
                    values = self._read_file(split, f, value_columns, opened=o)
                    for name in value_columns:  # keep the field (nullability included), not just the name
                        part = part.append_column(values.schema.field(name), values.column(name))
                pieces.append(part)
        gathered = [c for c in output if c not in constant]
        # one take from contiguous columns: Arrow's take of strings from chunks is much slower
        result = pa.concat_tables(pieces).select(gathered).combine_chunks().take(pa.array(winners))
        if not constant:
            return result
        filled = self._constant_arrays(constant, result.num_rows)
        fields = [self._arrow.field(c) if c in filled else result.schema.field(c) for c in output]
        return pa.Table.from_arrays([filled[c] if c in filled else result.column(c) for c in output],
                                    schema=pa.schema(fields))

    def _empty_merge_result(self, wanted: list[str], system_columns: bool) -> pa.Table:
        table = self.output_schema(wanted).empty_table()
        return df.with_system_columns(table) if system_columns else table
