"""Where a CSV file does not fit a table's columns: the records and values a typed read refuses.

Both engines that read CSV with the table's types (the core's ``write`` through pyarrow, the
Spark write job in ``FAILFAST`` mode) stop at the first value they cannot convert and name
neither its line nor, in Spark's case, its column. After such a failure they look again, here
(pyarrow) or in ``jobs/csv_records.py`` (Spark), and describe every column that holds a value
its type cannot take, with the first such value and its record, and the records whose number of
fields differs from the header's, in one line (:func:`describe`).

Records are numbered from 1 after the header, as both engines count them: blank lines are not
records, and a quoted value spanning lines is one record, so a record number is a line number
less one only in a file without either.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa


@dataclass(frozen=True, slots=True, kw_only=True)
class BadValue:
    """The first value of ``column`` that its type (``type_name``, Paimon's notation) cannot hold."""

    column: str
    type_name: str
    value: str
    record: int
    file: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BadRecord:
    """A record (``text``) with ``fields`` fields where the header has ``expected``."""

    record: int
    fields: int
    expected: int
    text: str
    file: str | None = None


def _where(record: int, file: str | None) -> str:
    return f"record {record} of {file}" if file else f"record {record}"


def describe(values: Sequence[BadValue], records: Sequence[BadRecord]) -> str:
    """One line naming every bad column (its first bad value and record) and the first record
    whose field count is off (and how many more there are)."""
    parts = [f"column {v.column!r} ({v.type_name}) cannot hold {v.value!r} ({_where(v.record, v.file)})"
             for v in values]
    if records:
        first = records[0]
        more = f" (and {len(records) - 1} more such records)" if len(records) > 1 else ""
        text = first.text if len(first.text) <= 60 else first.text[:57] + "..."
        parts.append(f"{_where(first.record, first.file)} ({text!r}) has {first.fields} fields where the header "
                     f"has {first.expected}{more}")
    return "; ".join(parts)


def _first_unconvertible(values: pa.ChunkedArray, target: pa.DataType) -> int | None:
    """The index of the first of ``values`` (a CSV column read as text) that pyarrow's CSV
    conversion to ``target`` refuses, or None: a bisection, each step a CSV round trip through
    that same conversion (a cast is stricter: it refuses ``' 3'`` as a number, the CSV reader
    does not), since the conversion reports a bad value but not its position."""
    import pyarrow.csv as csv

    def converts(low: int, high: int) -> bool:
        text = io.BytesIO()
        csv.write_csv(pa.table({"v": values.slice(low, high - low)}), text)
        try:
            csv.read_csv(pa.py_buffer(text.getvalue()), convert_options=csv.ConvertOptions(column_types={"v": target}))
        except pa.ArrowInvalid:
            return False
        return True

    return first_failing(len(values), converts)


def first_failing(count: int, works: Callable[[int, int], bool]) -> int | None:
    """The first index in ``range(count)`` whose item makes ``works(low, high)`` (a check of the
    items ``low`` to ``high``) fail, or None when all of them pass: a bisection, each step one
    vectorized check of a slice."""
    low, high = 0, count
    if count == 0 or works(low, high):
        return None
    while high - low > 1:  # items[low:high] holds a failing one
        middle = (low + high) // 2
        if works(low, middle):
            low = middle
        else:
            high = middle
    return low


def csv_file_problems(path: Path | str | pa.NativeFile, schema: pa.Schema) -> tuple[list[BadValue], list[BadRecord]]:
    """Read ``path`` (a CSV file with a header, or a stream of one) again with every column as
    text and find what a read with ``schema``'s types refuses: each column's first value its type
    cannot hold, and the records whose field count differs from the header's."""
    import pyarrow.csv as csv

    from .conversion import paimon_notation

    refused: list[BadRecord] = []

    def skip(row) -> str:  # pyarrow numbers rows from the header (1), blank lines not counted
        refused.append(BadRecord(record=row.number - 1, fields=row.actual_columns, expected=row.expected_columns,
                                 text=row.text))
        return "skip"

    text = csv.read_csv(path, read_options=csv.ReadOptions(use_threads=False),
                        parse_options=csv.ParseOptions(invalid_row_handler=skip),
                        convert_options=csv.ConvertOptions(column_types={f.name: pa.string() for f in schema},
                                                           strings_can_be_null=True))
    # the record number of each row read: every record but the refused ones, in order
    numbers = np.setdiff1d(np.arange(1, text.num_rows + len(refused) + 1), [r.record for r in refused])
    values = []
    for field in schema:
        if field.name not in text.column_names or pa.types.is_string(field.type):
            continue
        column = text.column(field.name)
        first = _first_unconvertible(column, field.type)
        if first is not None:
            values.append(BadValue(column=field.name, type_name=paimon_notation(field.type),
                                   value=str(column[first].as_py()), record=int(numbers[first])))
    return values, refused
