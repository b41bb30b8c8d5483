"""Writing one data file of a primary-key or append table: Parquet row groups streamed to storage."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..data import data_file as df
from ..fs import join
from ..meta.manifest import DataFileMeta
from .messages import FILE_SOURCE_APPEND

if TYPE_CHECKING:
    from .table_write import TableWrite


class ParquetStream:
    """One data file written incrementally, straight to storage: row groups are encoded as
    rows arrive. A file left behind by a failure is never referenced (an orphan)."""

    ROW_GROUP_ROWS = 131_072

    def __init__(self, owner: TableWrite, partition: tuple[object, ...], bucket: int, prefix: str, *,
                 level: int = 0, file_source: int = FILE_SOURCE_APPEND) -> None:
        self._owner, self._level, self._source = owner, level, file_source
        self.name = owner._new_name(prefix)
        directory = owner.bucket_dir(partition, bucket)
        owner._file_io.mkdirs(directory)
        fs, to_path = owner._file_io.arrow_filesystem()
        self._sink = fs.open_output_stream(to_path(join(directory, self.name)))
        self._writer: pq.ParquetWriter | None = None
        self._pending: list[pa.Table] = []
        self._pending_rows = self._pending_bytes = self._flushed_bytes = 0
        self._rows = self._deletes = 0
        self._first_key: list | None = None
        self._last_key: list = []
        self._min_sequence: int | None = None
        self._max_sequence: int | None = None

    def add(self, values: pa.Table, kinds: np.ndarray, sequence: np.ndarray) -> None:
        keys = self._owner._pk
        if self._first_key is None:
            self._first_key = [values.column(k)[0].as_py() for k in keys]
        self._last_key = [values.column(k)[-1].as_py() for k in keys]
        lo, hi = int(sequence.min()), int(sequence.max())
        self._min_sequence = lo if self._min_sequence is None else min(lo, self._min_sequence)
        self._max_sequence = hi if self._max_sequence is None else max(hi, self._max_sequence)
        self._rows += values.num_rows
        self._deletes += df.row_kind_counts(kinds)
        physical = self._owner._physical(values, kinds, sequence)
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
        options = self._owner._options
        if self._writer is None:
            codec = "none" if options.file_compression in ("none", "uncompressed") else options.file_compression
            self._writer = pq.ParquetWriter(
                self._sink, table.schema, compression=codec,
                compression_level=options.zstd_level if codec == "zstd" else None,
                use_dictionary=df.dictionary_columns(table, {df.VALUE_KIND, *self._owner._partition_keys}),
                write_statistics=True, store_schema=True)
        self._writer.write_table(table, row_group_size=1 << 20)

    def size(self) -> int:
        """Encoded bytes so far, plus the pending rows at the compression ratio seen so far
        (uncompressed until a row group is written)."""
        written = self._sink.tell()
        ratio = written / self._flushed_bytes if self._flushed_bytes and written else 1.0
        return int(written + self._pending_bytes * ratio)

    def finish(self) -> DataFileMeta:
        """Close the file and describe it. Callers ``add`` rows before (a data file is never empty)."""
        self._flush()
        assert self._writer is not None and self._first_key is not None, "finish() before any add()"
        assert self._min_sequence is not None and self._max_sequence is not None
        self._writer.close()
        size = self._sink.tell()
        self._sink.close()
        footer = self._writer.writer.metadata
        owner = self._owner
        ranges = df.ranges_from_parquet(footer, owner._arrow_schema.names, owner._arrow_schema.types)
        return owner._file_meta(self.name, size, self._rows, ranges, self._first_key, self._last_key,
                                self._min_sequence, self._max_sequence, self._deletes, self._level, self._source)


def with_system_columns(table: pa.Table, sequence: np.ndarray, kinds: np.ndarray) -> pa.Table:
    """``table`` with the sequence-number and row-kind columns a data file stores after the values."""
    table = table.append_column(df.SEQUENCE_NUMBER, pa.array(sequence, pa.int64()))
    return table.append_column(df.VALUE_KIND, pa.array(kinds, pa.int8()))
