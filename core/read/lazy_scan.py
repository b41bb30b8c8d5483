"""A lazy scan of one snapshot: :meth:`Table.scan <paimonflow.core.table.Table.scan>`.

Nothing is read when a scan is made: the snapshot is chosen (and held: the scan reads that
snapshot however the table moves on), the columns and filter are checked, and the splits are
planned on first use. What the scan gives other engines:

* the Arrow C stream (``__arrow_c_stream__``): DuckDB, Polars, pandas and pyarrow take the scan
  itself (``duckdb.sql("select ... from scan")``, ``polars.from_arrow``), reading the scan's
  columns and filter split by split;
* the ``pyarrow.dataset`` interface Polars' ``scan_pyarrow_dataset`` uses (``schema``,
  ``to_batches(columns=, filter=, batch_size=)``, ``to_table``, ``head``, ``count_rows``): the
  engine's projection and filter (an Arrow expression, :mod:`.arrow_filter`) are pushed into
  split planning, so only the partitions, files and columns they need are read;
* :meth:`TableScan.to_pyarrow_dataset`: a real ``pyarrow.dataset.Dataset``, what DuckDB pushes
  its own projection and filters into. Files that need nothing but decoding (append files, a
  primary-key bucket compacted into one file without retractions, files no deletion vector
  touches, written under the read schema, Parquet or ORC) are its file fragments, each with its
  partition as a partition expression (pruned without being opened); the rest (buckets that need
  merging, deletion vectors, schema evolution, Avro) is read by this engine when the dataset is
  made, within the scan's filter and columns.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..data.data_file import format_of
from ..errors import InvalidArgumentError, PaimonflowError, SchemaError
from ..fs import join
from ..meta.layout import bucket_directory
from ..predicate import And, Predicate
from .arrow_filter import pushdown, referenced_columns
from .data_evolution import is_data_evolution
from .scan import Split

if TYPE_CHECKING:
    import pyarrow.dataset

_RAW_FORMATS = ("parquet", "orc")  # what pyarrow.dataset reads as file fragments


class TableScan:
    """The rows of one snapshot of a table, within ``columns`` and ``filter``, read when asked."""

    def __init__(self, table, snapshot, schema, options, *, columns: Sequence[str] | None,
                 filter: Predicate | None, planner, schemas) -> None:
        """Made by :meth:`Table.scan <paimonflow.core.table.Table.scan>`: ``planner(filter=predicate)``
        plans ``snapshot``'s splits for the read ``schema`` and ``options``; ``schemas(id)`` is
        the table's schema of that id."""
        self._table, self._snapshot, self._read_schema, self._options = table, snapshot, schema, options
        self._planner, self._schemas = planner, schemas
        self._reader = table.split_reader(schema, options)
        self._filter = table.bind(filter, schema)
        self._columns = list(columns) if columns is not None else list(schema.arrow_schema().names)
        self.schema: pa.Schema = self._reader.output_schema(self._columns)
        if self._filter is not None:
            self._reader.output_schema(sorted(self._filter.fields()))  # unknown filter columns fail here
        self._splits: dict[Predicate | None, list[Split]] = {}

    # -- the scan itself -----------------------------------------------------------------------

    @property
    def snapshot_id(self) -> int | None:
        """The snapshot this scan reads (None: the table had none)."""
        return None if self._snapshot is None else self._snapshot.id

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    @property
    def row_filter(self) -> Predicate | None:
        return self._filter

    def filter(self, predicate: Predicate) -> TableScan:
        """This scan narrowed by ``predicate`` (and-ed with its filter)."""
        combined = predicate if self._filter is None else And((self._filter, predicate))
        return self._with(columns=self._columns, filter=combined)

    def select(self, *columns: str) -> TableScan:
        """This scan reading only ``columns`` (of its own)."""
        self._require_known(columns)
        return self._with(columns=columns, filter=self._filter)

    def plan(self) -> list[Split]:
        """The splits this scan reads (planned once, from metadata only)."""
        return self._plan(self._filter)

    def plan_files(self) -> list[str]:
        """The paths of the data files this scan reads."""
        return [self._path_of(s, f) for s in self.plan() for f in s.files]

    # -- the pyarrow.dataset interface (what Polars' scan_pyarrow_dataset calls) ---------------

    def to_batches(self, columns: Sequence[str] | None = None, filter: Predicate | pc.Expression | None = None,
                   batch_size: int | None = None, **_options: Any) -> Iterator[pa.RecordBatch]:
        """The rows as record batches (at most ``batch_size`` rows each), split by split.
        ``columns`` (of this scan's) narrows the projection; ``filter`` (a
        :class:`~paimonflow.core.predicate.Predicate` or an Arrow expression) narrows the rows,
        and what of it can be planned with prunes partitions, files and row groups first.
        Other keyword arguments of ``Dataset.to_batches`` (threading, readahead) are accepted
        and have no effect."""
        wanted = self._columns if columns is None else list(columns)
        self._require_known(wanted)
        predicate, expression, needed = self._narrowed(filter, wanted)
        schema = self._reader.output_schema(wanted)
        batches = self._reader.read_batches(self._plan(predicate), columns=needed, predicate=predicate)
        if expression is not None:
            batches = (b.filter(expression).select(wanted) for b in batches)
        return _rechunked(batches, schema, batch_size)

    def to_table(self, columns: Sequence[str] | None = None, filter: Predicate | pc.Expression | None = None,
                 **options: Any) -> pa.Table:
        """:meth:`to_batches` as one Arrow table."""
        wanted = self._columns if columns is None else list(columns)
        return pa.Table.from_batches(list(self.to_batches(wanted, filter, **options)),
                                     schema=self._reader.output_schema(wanted))

    def head(self, num_rows: int, columns: Sequence[str] | None = None,
             filter: Predicate | pc.Expression | None = None, **options: Any) -> pa.Table:
        """The first ``num_rows`` rows (reading stops once they are found)."""
        wanted = self._columns if columns is None else list(columns)
        taken: list[pa.RecordBatch] = []
        remaining = num_rows
        for batch in self.to_batches(wanted, filter, **options) if num_rows > 0 else ():
            taken.append(batch.slice(0, remaining))
            remaining -= min(remaining, batch.num_rows)
            if remaining <= 0:
                break
        return pa.Table.from_batches(taken, schema=self._reader.output_schema(wanted))

    def count_rows(self, filter: Predicate | pc.Expression | None = None, **options: Any) -> int:
        """The number of rows (from the files' metadata when nothing needs merging or filtering)."""
        if filter is None and self._filter is None and all(self._raw_files(s)[1] is None for s in self.plan()) \
                and not any(s.deletion_vectors for s in self.plan()):
            return sum(s.row_count for s in self.plan())
        narrowest = [self._columns[0]]
        return sum(b.num_rows for b in self.to_batches(narrowest, filter, **options))

    def scanner(self, columns: Sequence[str] | None = None, filter: Predicate | pc.Expression | None = None,
                batch_size: int | None = None, **options: Any) -> pa.RecordBatchReader:
        """:meth:`to_batches` as a ``RecordBatchReader`` (what a scanner's ``to_reader`` gives)."""
        wanted = self._columns if columns is None else list(columns)
        return pa.RecordBatchReader.from_batches(self._reader.output_schema(wanted),
                                                 self.to_batches(wanted, filter, batch_size, **options))

    # -- other engines -------------------------------------------------------------------------

    def to_reader(self) -> pa.RecordBatchReader:
        """The scan's rows as a ``pyarrow.RecordBatchReader`` (read as it is consumed)."""
        return self.scanner()

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow C stream of the scan's rows (PyCapsule protocol), read split by split."""
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def to_arrow(self) -> pa.Table:
        return self.to_table()

    def to_pandas(self, **options: Any):
        """The scan's rows as a pandas DataFrame (``options``: ``pyarrow.Table.to_pandas``'s)."""
        return self.to_table().to_pandas(**options)

    def to_polars(self):
        """A Polars ``LazyFrame`` over this scan: its projection and filters reach split planning."""
        try:
            import polars
        except ImportError as exc:
            raise InvalidArgumentError("to_polars needs polars; install it (pip install polars)") from exc
        return polars.scan_pyarrow_dataset(self)

    def to_duckdb(self, table_name: str, connection=None):
        """A DuckDB connection (``connection``, or a new one) where ``table_name`` is a view of
        :meth:`to_pyarrow_dataset`: DuckDB's projection and filters reach the files."""
        try:
            import duckdb
        except ImportError as exc:
            raise InvalidArgumentError("to_duckdb needs duckdb; install it (pip install duckdb)") from exc
        connection = connection if connection is not None else duckdb.connect()
        connection.register(table_name, self.to_pyarrow_dataset())
        return connection

    def to_pyarrow_dataset(self) -> pyarrow.dataset.Dataset:
        """A ``pyarrow.dataset.Dataset`` of the scan (see the module's description): its schema
        is the scan's columns, and the filter's columns when the filter reads others."""
        import pyarrow.dataset as ds

        columns = list(dict.fromkeys([*self._columns, *(sorted(self._filter.fields()) if self._filter else [])]))
        schema = self._reader.output_schema(columns)
        raw: dict[str, list] = {}
        rest: list[Split] = []
        filesystem, to_fs_path = self._table.file_io.arrow_filesystem()
        for split in self.plan():
            files, remaining = self._raw_files(split, columns)
            expression = self._partition_expression(split)
            for f in files:
                fmt = format_of(f.file_name)
                raw.setdefault(fmt, []).append((to_fs_path(self._path_of(split, f)), expression))
            if remaining is not None:
                rest.append(remaining)
        children: list = []
        for fmt, fragments in sorted(raw.items()):
            file_format = ds.ParquetFileFormat() if fmt == "parquet" else ds.OrcFileFormat()
            made = [file_format.make_fragment(path, filesystem=filesystem, partition_expression=expression)
                    for path, expression in fragments]
            children.append(ds.FileSystemDataset(made, schema=schema, format=file_format, filesystem=filesystem))
        if rest or not children:
            children.append(ds.InMemoryDataset(self._reader.read(rest, columns=columns, predicate=self._filter)
                                               if rest else schema.empty_table()))
        dataset = children[0] if len(children) == 1 else ds.UnionDataset(schema, children)
        return dataset if self._filter is None else dataset.filter(self._filter.to_arrow())

    # -- internals -----------------------------------------------------------------------------

    def _with(self, *, columns: Sequence[str], filter: Predicate | None) -> TableScan:
        return TableScan(self._table, self._snapshot, self._read_schema, self._options, columns=columns,
                         filter=filter, planner=self._planner, schemas=self._schemas)

    def _plan(self, predicate: Predicate | None) -> list[Split]:
        splits = self._splits.get(predicate)
        if splits is None:
            splits = self._splits[predicate] = self._planner(filter=predicate)
        return splits

    def _require_known(self, columns: Sequence[str]) -> None:
        unknown = [c for c in columns if c not in self._columns]
        if unknown:
            raise SchemaError(f"unknown columns {unknown}; the scan reads {self._columns}")

    def _narrowed(self, filter, wanted: list[str]) -> tuple[Predicate | None, pc.Expression | None, list[str]]:
        """``(predicate to plan and read with, expression still to apply, columns to read)``."""
        predicate, expression = self._filter, None
        if isinstance(filter, Predicate):
            predicate = self._table.bind(filter if predicate is None else And((predicate, filter)), self._read_schema)
        elif isinstance(filter, pc.Expression):
            expression = filter
            referenced = referenced_columns(filter)
            if referenced is None:
                raise InvalidArgumentError(f"the filter {filter} references a nested field; filter on the "
                                           "scan's top-level columns")
            self._require_known(referenced)
            pushed = self._bound_parts(pushdown(filter))
            if pushed is not None:
                predicate = pushed if predicate is None else And((predicate, pushed))
        elif filter is not None:
            raise InvalidArgumentError(f"filter must be a paimonflow Predicate or a pyarrow.compute.Expression, "
                                       f"not {type(filter).__name__}")
        needed = list(wanted)
        if expression is not None:
            needed = list(dict.fromkeys([*wanted, *(referenced_columns(expression) or [])]))
        return predicate, expression, needed

    def _bound_parts(self, pushed: Predicate | None) -> Predicate | None:
        """The conjuncts of ``pushed`` whose values convert exactly to their columns' types (an
        engine may compare an INT column with 2.5: that part is evaluated on rows only)."""
        if pushed is None:
            return None
        parts = pushed.children if isinstance(pushed, And) else (pushed,)
        kept = []
        for part in parts:
            try:
                kept.append(self._table.bind(part, self._read_schema))
            except PaimonflowError:
                continue
        return None if not kept else kept[0] if len(kept) == 1 else And(tuple(kept))

    def _path_of(self, split: Split, f) -> str:
        if f.external_path:
            return f.external_path
        return join(bucket_directory(self._table.path, self._read_schema, self._options, split.partition,
                                     split.bucket), f.file_name)

    def _raw_files(self, split: Split, columns: Sequence[str] | None = None) -> tuple[list, Split | None]:
        """``(files of split a pyarrow dataset reads as they are, the rest of it as a split or None)``."""
        columns = self._columns if columns is None else columns
        schema = self._read_schema
        if is_data_evolution(schema.options) or any(c not in schema.field_names for c in columns) \
                or any(pa.types.is_nested(schema.arrow_schema().field(c).type) for c in columns):
            return [], split
        vectors = split.deletion_vectors or {}

        def as_stored(f) -> bool:
            return (format_of(f.file_name) in _RAW_FORMATS and f.write_cols is None and f.file_name not in vectors
                    and self._schemas(f.schema_id).fields == schema.fields)

        if schema.primary_keys and not self._options.deletion_vectors:
            # a bucket needs no merge when one file above level 0 holds it, without retractions
            whole = len(split.files) == 1 and split.files[0].level > 0 and split.files[0].delete_row_count == 0
            return ([split.files[0]], None) if whole and as_stored(split.files[0]) else ([], split)
        if schema.primary_keys and any(f.delete_row_count != 0 for f in split.files):
            return [], split
        stored = [f for f in split.files if as_stored(f)]
        others = tuple(f for f in split.files if not as_stored(f))
        return stored, (replace(split, files=others) if others else None)

    def _partition_expression(self, split: Split) -> pc.Expression:
        keys = list(self._read_schema.partition_keys)
        if not keys:
            return pc.scalar(True)
        arrow = self._read_schema.arrow_schema()
        parts = [pc.field(k).is_null() if v is None else pc.field(k) == pa.scalar(v, arrow.field(k).type)
                 for k, v in zip(keys, split.partition, strict=True)]
        return list(itertools.accumulate(parts, lambda a, b: a & b))[-1]


def _rechunked(batches: Iterator[pa.RecordBatch], schema: pa.Schema,
               batch_size: int | None) -> Iterator[pa.RecordBatch]:
    """``batches`` (empty ones dropped) cut to at most ``batch_size`` rows each."""
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if batch.schema != schema:
            batch = batch.cast(schema)
        if batch_size is None or batch.num_rows <= batch_size:
            yield batch
            continue
        for start in range(0, batch.num_rows, batch_size):
            yield batch.slice(start, batch_size)
