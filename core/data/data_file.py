"""Data files: Paimon's column layout, the file formats, and statistics.

A primary-key table's data file holds ``_KEY_<k>`` for each trimmed primary-key field, then
``_SEQUENCE_NUMBER`` (BIGINT NOT NULL) and ``_VALUE_KIND`` (TINYINT NOT NULL: 0 +I, 1 -U, 2 +U,
3 -D), then every table column. An append table's data file holds the table columns only.
Statistics come from the Parquet footer where possible (cheap) and from vectorized
``pyarrow.compute`` otherwise; they are stored as BinaryRows in the manifest.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import UnsupportedError
from .binary_row import serialize_row

KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
SYSTEM_FIELDS = (SEQUENCE_NUMBER, VALUE_KIND)

ROW_KIND_INSERT, ROW_KIND_UPDATE_BEFORE, ROW_KIND_UPDATE_AFTER, ROW_KIND_DELETE = 0, 1, 2, 3
ROW_KIND_NAMES = ("+I", "-U", "+U", "-D")

_EXTENSIONS = {"parquet": "parquet", "orc": "orc", "avro": "avro"}


def extension(file_format: str) -> str:
    return _EXTENSIONS[file_format]


def format_of(file_name: str) -> str:
    """The format of a data file, from its name (Paimon names files ``...-N.<format>``)."""
    suffix = file_name.rsplit(".", 1)[-1].lower()
    if suffix not in _EXTENSIONS:
        raise UnsupportedError(f"data file {file_name!r} has an unknown format {suffix!r}")
    return suffix


# ---------------------------------------------------------------------------------------------
# statistics


@dataclass(frozen=True, slots=True)
class ColumnRange:
    """Min, max (Python values; None = unknown) and null count of one column in one file."""

    min: object
    max: object
    null_count: int


def _is_atomic(t: pa.DataType) -> bool:
    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t))


def ranges_from_parquet(metadata: pq.FileMetaData, names: Sequence[str], types: Sequence[pa.DataType]) -> list[ColumnRange]:
    """Per-column ranges merged across row groups, read from a Parquet footer (no data scan)."""
    index = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    out = []
    for name, dtype in zip(names, types, strict=True):
        i = index.get(name)
        lo = hi = None
        nulls = 0
        known = i is not None and _is_atomic(dtype)
        for rg in range(metadata.num_row_groups):
            if i is None:
                known = False
                break
            stats = metadata.row_group(rg).column(i).statistics
            if stats is None:
                known = False
                break
            nulls += stats.null_count if stats.has_null_count else 0
            if metadata.row_group(rg).num_rows == stats.null_count:
                continue  # all null in this row group: no min/max to merge
            if not stats.has_min_max:
                known = False
                continue
            smin, smax = _logical(stats.min, dtype), _logical(stats.max, dtype)
            lo = smin if lo is None or smin < lo else lo
            hi = smax if hi is None or smax > hi else hi
        out.append(ColumnRange(lo if known else None, hi if known else None, nulls))
    return out


def _logical(value: Any, dtype: pa.DataType) -> Any:
    # pyarrow gives Python values in the logical type for most types; normalise the rest. The
    # result is comparable with the column's other values (pyarrow's statistics are untyped).
    if isinstance(value, bytes) and (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
        return value.decode("utf-8", errors="replace")
    return value


def ranges_from_table(table: pa.Table, names: Sequence[str]) -> list[ColumnRange]:
    """Per-column ranges computed with vectorized ``pyarrow.compute`` (ORC, Avro)."""
    out = []
    for name in names:
        column = table.column(name)
        nulls = column.null_count
        if not _is_atomic(column.type) or nulls == len(column):
            out.append(ColumnRange(None, None, nulls))
            continue
        mm = pc.min_max(column)
        out.append(ColumnRange(mm["min"].as_py(), mm["max"].as_py(), nulls))
    return out


_TRUNCATE = re.compile(r"truncate\((\d+)\)")


def _truncate(r: ColumnRange, dtype: pa.DataType, length: int) -> ColumnRange:
    if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
        return r
    lo, hi = r.min, r.max
    if isinstance(lo, str) and len(lo) > length:
        lo = lo[:length]
    if isinstance(hi, str) and len(hi) > length:
        head = hi[:length]
        # An upper bound: bump the last character that can be bumped; unknown if none can.
        hi = None
        for cut in range(len(head) - 1, -1, -1):
            code = ord(head[cut])
            if code < 0x10FFFF and not 0xD7FF <= code < 0xE000:
                hi = head[:cut] + chr(code + 1)
                break
    return ColumnRange(lo, hi, r.null_count)


def stats_row(ranges: Sequence[ColumnRange], types: Sequence[pa.DataType], mode: str) -> tuple[bytes, bytes, list[int]]:
    """Serialize ranges into Paimon's SimpleStats parts (min row, max row, null counts) under ``mode``."""
    if mode == "counts":
        ranges = [ColumnRange(None, None, r.null_count) for r in ranges]
    elif m := _TRUNCATE.fullmatch(mode):
        ranges = [_truncate(r, t, int(m.group(1))) for r, t in zip(ranges, types, strict=True)]
    mins = [r.min if _is_atomic(t) else None for r, t in zip(ranges, types, strict=True)]
    maxs = [r.max if _is_atomic(t) else None for r, t in zip(ranges, types, strict=True)]
    atomic_types = [t if _is_atomic(t) else pa.null() for t in types]
    return serialize_row(mins, atomic_types), serialize_row(maxs, atomic_types), [r.null_count for r in ranges]


# ---------------------------------------------------------------------------------------------
# writing and reading


def dictionary_columns(table: pa.Table, always: set[str]) -> list[str]:
    """Columns worth dictionary-encoding: constants and low-cardinality columns (sampled)."""
    chosen = []
    sample_size = min(table.num_rows, 2048)
    for name in table.column_names:
        column = table.column(name)
        if name in always:
            chosen.append(name)
        elif sample_size and (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            sample = column.slice(0, sample_size)
            distinct = len(pc.unique(sample)) - (1 if sample.null_count else 0)  # = count_distinct, 2x faster
            if distinct * 4 <= sample_size:
                chosen.append(name)
    return chosen


@dataclass(frozen=True, slots=True)
class WrittenFile:
    size: int
    ranges: list[ColumnRange]


def encode_file(
    table: pa.Table, file_format: str, *, compression: str, zstd_level: int, dictionary_hint: set[str]
) -> tuple[bytes, pq.FileMetaData | None]:
    """Encode ``table`` in ``file_format``; returns the bytes and, for Parquet, its footer."""
    sink = io.BytesIO()
    codec = "none" if compression in ("none", "uncompressed") else compression
    if file_format == "parquet":
        writer = pq.ParquetWriter(
            sink,
            table.schema,
            compression=codec,
            compression_level=zstd_level if codec == "zstd" else None,
            use_dictionary=dictionary_columns(table, dictionary_hint),
            write_statistics=True,
            store_schema=True,
        )
        try:
            writer.write_table(table, row_group_size=1 << 20)
        finally:
            writer.close()
        return sink.getvalue(), writer.writer.metadata
    if file_format == "orc":
        import pyarrow.orc as orc

        orc.write_table(_orc_time_as_int(table), sink, compression=codec if codec != "none" else "uncompressed")
        return sink.getvalue(), None
    if file_format == "avro":
        from .avro_data import write_avro_table

        return write_avro_table(table, codec), None
    raise UnsupportedError(f"file.format={file_format!r}")


def _orc_time_as_int(table: pa.Table) -> pa.Table:
    """ORC has no time-of-day type: Paimon stores TIME as an INT of milliseconds of the day
    (``OrcTypeUtil``), which readers cast back to TIME by the table's schema."""
    for i, field in enumerate(table.schema):
        if pa.types.is_time(field.type):
            millis = table.column(i).cast(pa.time32("ms")) if field.type != pa.time32("ms") else table.column(i)
            table = table.set_column(i, pa.field(field.name, pa.int32(), field.nullable, field.metadata),
                                     millis.cast(pa.int32()))
    return table


def iter_file_batches(stream: object, file_format: str, columns: Sequence[str], batch_rows: int = 65536):
    """Record batches of a data file, read incrementally for Parquet (one batch in memory at a
    time); ORC and Avro files are read whole, then sliced."""
    if file_format == "parquet":
        yield from pq.ParquetFile(stream).iter_batches(batch_size=batch_rows, columns=list(columns), use_threads=False)
        return
    yield from decode_file(stream, file_format, columns).to_batches(max_chunksize=batch_rows)


def decode_file(data_or_stream: object, file_format: str, columns: Sequence[str] | None) -> pa.Table:
    """Read a data file (all columns, or ``columns``) into an Arrow table."""
    return OpenDataFile(data_or_stream, file_format).read(columns)


class OpenDataFile:
    """A data file opened once (for Parquet: its footer parsed once) whose columns can be read
    in several passes, e.g. the keys first and the values only if some row of the file is
    needed. Each :meth:`read` decodes only the columns asked for; the stream stays the
    caller's to close."""

    __slots__ = ("_file", "_format")

    def __init__(self, data_or_stream: object, file_format: str) -> None:
        self._format = file_format
        self._file: Any
        if file_format == "parquet":
            self._file = pq.ParquetFile(data_or_stream)
        elif file_format == "orc":
            import pyarrow.orc as orc

            self._file = orc.ORCFile(data_or_stream)
        elif file_format == "avro":
            from .avro_data import read_avro_table

            self._file = read_avro_table(data_or_stream)  # row-oriented: decoded whole, once
        else:
            raise UnsupportedError(f"file.format={file_format!r}")

    def read(self, columns: Sequence[str] | None) -> pa.Table:
        """The file's ``columns`` (all if None), as stored."""
        wanted = list(columns) if columns is not None else None
        if self._format == "parquet":
            # one thread per file: callers read files (splits) in parallel already
            return self._file.read(columns=wanted, use_threads=False)
        if self._format == "orc":
            return self._file.read(columns=wanted)
        return self._file.select(wanted) if wanted is not None else self._file


def row_kind_counts(kinds: np.ndarray) -> int:
    """Number of retract rows (-U, -D): Paimon's ``deleteRowCount``."""
    return int(np.count_nonzero((kinds == ROW_KIND_UPDATE_BEFORE) | (kinds == ROW_KIND_DELETE)))


def with_system_columns(table: pa.Table, sequence: np.ndarray | None = None, kinds: np.ndarray | None = None) -> pa.Table:
    """``table`` with the sequence-number and row-kind columns a data file stores after the
    values (of an empty ``table``: empty columns)."""
    sequence = np.empty(0, np.int64) if sequence is None else sequence
    kinds = np.empty(0, np.int8) if kinds is None else kinds
    table = table.append_column(SEQUENCE_NUMBER, pa.array(sequence, pa.int64()))
    return table.append_column(VALUE_KIND, pa.array(kinds, pa.int8()))
