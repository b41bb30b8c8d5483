"""Landed source files read into a table's columns: Parquet, ORC, CSV (with a header line) and
JSON (one object per line), on a local disk or an object store.

What the core engine writes from files (``paimonflow write`` and the Airflow write operator on the
``core`` engine) comes through here, so both refuse the same input with the same line. Every
problem is found before anything is written, and each is one typed error naming the file:

* a file that cannot be read at all (missing, not of its format, a broken JSON record):
  :class:`~paimonflow.core.errors.SourceError`;
* a file whose columns do not fit the table's: :class:`~paimonflow.core.errors.SchemaError`,
  naming every column that is missing, unknown, of a type the table's column does not take
  (:mod:`paimonflow.core.data.conversion`), or holding a value its type cannot take, with the
  first such value and its record (records are numbered from 1 after a CSV header; blank lines
  are no records).

Text formats are parsed with the table's column types, so a value that does not parse is refused,
never guessed (``007`` is not turned into an integer for a STRING column). JSON DATE and TIME
columns take ISO text (``"2026-11-21"``, ``"10:15:00"``), as CSV does; pyarrow's JSON reader would
take numbers of days for them. The data path is vectorized; only when a read fails do the readers
look again, with every column as text, bisecting each column with the same conversion to find its
first bad value (:mod:`paimonflow.core.data.csv_records` for CSV).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Collection, Mapping
from functools import partial
from typing import TYPE_CHECKING

import pyarrow as pa

from ..errors import FileNotFoundStorageError, SchemaError, SourceError
from ..fs import get_file_io
from .conversion import cast_exactly, convert_columns, paimon_notation, refusal
from .csv_records import BadValue, csv_file_problems, describe, first_failing

if TYPE_CHECKING:
    from ..fs import FileIO
    from .types import DataType

SOURCE_FORMATS = ("parquet", "orc", "csv", "json")
#: a file's format by its suffix (``paimonflow write`` knows its files' formats this way)
SUFFIX_FORMATS: Mapping[str, str] = {".parquet": "parquet", ".parq": "parquet", ".orc": "orc", ".csv": "csv",
                                     ".json": "json", ".jsonl": "json", ".ndjson": "json"}
FORMAT_NAMES: Mapping[str, str] = {"parquet": "Parquet", "orc": "ORC", "csv": "CSV", "json": "JSON"}
#: names of files in a source directory that are not data (``_SUCCESS``, ``.part-0.crc``), as Spark skips them
HIDDEN_PREFIXES = ("_", ".")
_SHOWN_TEXT = 60  # characters of a bad value or record shown in a message


def read_source_files(path: str, format: str, schema: pa.Schema, *,
                      storage_options: Mapping[str, str] | None = None,
                      table_types: Mapping[str, DataType] | None = None,
                      extra_columns: Collection[str] | None = ()) -> pa.Table:
    """The rows of the file at ``path``, or of every file under the directory ``path`` (in path
    order, names starting with ``_`` or ``.`` skipped), in ``format`` (one of
    :data:`SOURCE_FORMATS`), each read by :func:`read_source_file`; ``storage_options`` reach an
    ``s3://`` path. Raises :class:`SourceError` when there is no file, and the first file's error
    otherwise (nothing is read past it)."""
    if format not in SOURCE_FORMATS:
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError(f"format must be one of {', '.join(SOURCE_FORMATS)} on the core engine, "
                                   f"not {format!r}")
    file_io = get_file_io(path, storage_options)
    files = list_source_files(file_io, path)
    if not files:
        raise SourceError(f"no source files at {path}")
    tables = [read_source_file(file_io, name, format, schema, table_types=table_types, extra_columns=extra_columns)
              for name in files]
    if len(tables) == 1:
        return tables[0]
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # extra columns of different types in different files
        raise SchemaError(f"the files at {path} do not share their columns' types: {_one_line(exc)}") from None


def list_source_files(file_io: FileIO, path: str) -> list[str]:
    """``[path]`` for a file; for a directory every file under it, in path order, without the
    names that are not data (:data:`HIDDEN_PREFIXES`); :class:`SourceError` if nothing is there."""
    try:
        status = file_io.status(path)
    except FileNotFoundStorageError:
        raise SourceError(f"no source files at {path}: no such file or directory") from None
    if not status.is_dir:
        return [path]
    found: list[str] = []
    folders = [path]
    while folders:
        for child in file_io.list_dir(folders.pop()):
            if child.path.rstrip("/").rsplit("/", 1)[-1].startswith(HIDDEN_PREFIXES):
                continue
            if child.is_dir:
                folders.append(child.path)
            else:
                found.append(child.path)
    return sorted(found)


def read_source_file(file_io: FileIO, path: str, format: str, schema: pa.Schema, *,
                     table_types: Mapping[str, DataType] | None = None,
                     extra_columns: Collection[str] | None = ()) -> pa.Table:
    """The rows of one file in ``format``, as the table's columns (``schema``: the table's Arrow
    schema, every column converted to its type, losslessly) followed by the file's
    ``extra_columns`` (a row-kind column, say) as read. ``extra_columns=None`` keeps every column
    the table does not have (for a caller that checks them itself); otherwise such a column is
    refused. ``table_types`` (the table's Paimon types by column) name the types in messages.

    Raises :class:`SourceError` for a file that cannot be read, and one :class:`SchemaError`
    naming the file and every column that does not fit (see the module's docstring)."""
    kind = FORMAT_NAMES[format]
    try:
        if format == "csv":
            data = _read_csv(file_io, path, schema, table_types)
        elif format == "json":
            data = _read_json(file_io, path, schema, table_types)
        else:
            data = _read_columnar(file_io, path, format)
    except (SchemaError, SourceError):
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise SourceError(f"{path}: not a readable {kind} file: {_one_line(exc)}") from None
    return _fitted(path, data, schema, table_types, extra_columns)


# -- the columns of a file against the table's ------------------------------------------------


def _fitted(path: str, data: pa.Table, schema: pa.Schema, table_types: Mapping[str, DataType] | None,
            extra_columns: Collection[str] | None) -> pa.Table:
    """``data``'s table columns converted to the table's types, then its extra columns; one
    :class:`SchemaError` naming ``path`` and every column that does not fit."""
    names = data.column_names
    duplicated = sorted({n for n in names if names.count(n) > 1})
    missing = [f.name for f in schema if f.name not in names]
    unknown = [n for n in names if schema.get_field_index(n) < 0
               and extra_columns is not None and n not in extra_columns]
    problems = []
    if duplicated:
        problems.append(f"duplicate columns {duplicated}")
    if missing:
        problems.append(f"missing columns {missing}")
    if unknown:
        problems.append(f"unknown columns {unknown} (the table's are {schema.names})")
    types = table_types or {}
    refused = [p for f in schema if f.name in names and not duplicated
               and (p := refusal(f.name, data.column(f.name).type, f.type, types.get(f.name)))]
    if refused:
        problems.append("; ".join(refused) + "; only lossless conversions are written (cast the data first)")
    if problems:
        raise SchemaError(f"{path}: does not fit the table's columns: {'; '.join(problems)}")
    try:
        converted = convert_columns({f.name: data.column(f.name) for f in schema}, schema, table_types)
    except SchemaError as exc:
        values = _unconvertible(data, schema, table_types)
        raise SchemaError(f"{path}: does not fit the table's columns: {describe(values, []) if values else exc}") \
            from None
    others = [n for n in names if schema.get_field_index(n) < 0]
    return pa.table([*(converted[f.name] for f in schema), *(data.column(n) for n in others)],
                    names=[*schema.names, *others])


def _casts(values: pa.ChunkedArray, target: pa.DataType, low: int, high: int) -> bool:
    try:
        cast_exactly(values.slice(low, high - low), target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        return False
    return True


def _unconvertible(data: pa.Table, schema: pa.Schema, table_types: Mapping[str, DataType] | None) -> list[BadValue]:
    """Each column of ``data`` holding a value its table column's type cannot hold exactly, with
    the first such value and its record (after a conversion of the whole column failed)."""
    found = []
    for field in schema:
        values = data.column(field.name)
        first = first_failing(len(values), partial(_casts, values, field.type))
        if first is not None:
            found.append(BadValue(column=field.name, type_name=_type_name(field, table_types),
                                  value=_shown(str(values[first].as_py())), record=first + 1))
    return found


# -- Parquet, ORC ---------------------------------------------------------------------------------


def _read_columnar(file_io: FileIO, path: str, format: str) -> pa.Table:
    filesystem, to_fs_path = file_io.arrow_filesystem()
    if format == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(to_fs_path(path), filesystem=filesystem)
    import pyarrow.orc as orc

    return orc.read_table(to_fs_path(path), filesystem=filesystem)


# -- CSV ------------------------------------------------------------------------------------------


def _opener(file_io: FileIO, path: str) -> Callable[[], pa.NativeFile]:
    """Opens ``path`` as a stream (a ``.gz``, ``.zst``... file decompressed by its suffix)."""
    filesystem, to_fs_path = file_io.arrow_filesystem()
    return lambda: filesystem.open_input_stream(to_fs_path(path))


def _atomic(schema: pa.Schema) -> pa.Schema:
    """The columns a text reader parses with their types (nested ones are read as text and refused)."""
    return pa.schema([f for f in schema if not pa.types.is_nested(f.type)])


def _read_csv(file_io: FileIO, path: str, schema: pa.Schema, table_types: Mapping[str, DataType] | None) -> pa.Table:
    import pyarrow.csv as csv

    atomic = _atomic(schema)
    open_file = _opener(file_io, path)
    try:
        with open_file() as source:
            return csv.read_csv(source, convert_options=csv.ConvertOptions(
                column_types={f.name: f.type for f in atomic}))
    except pa.ArrowInvalid:  # pyarrow names the first problem only, by column position: find them all
        with open_file() as source:
            values, records = csv_file_problems(source, atomic)
        if not values and not records:
            raise
        values = [_named(v, table_types) for v in values]
        raise SchemaError(f"{path}: does not fit the table's columns: {describe(values, records)}") from None


def _named(value: BadValue, table_types: Mapping[str, DataType] | None) -> BadValue:
    """``value`` with its column's type in the table's own notation (CHAR lengths, precisions)."""
    table_type = (table_types or {}).get(value.column)
    if table_type is None:
        return value
    return BadValue(column=value.column, type_name=table_type.copy(nullable=True).sql(), value=value.value,
                    record=value.record, file=value.file)


# -- JSON -----------------------------------------------------------------------------------------


def _is_text_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_time(t)


def _json_types(schema: pa.Schema) -> pa.Schema:
    """The explicit schema of a JSON read: the table's types, DATE and TIME columns as text."""
    return pa.schema([pa.field(f.name, pa.string()) if _is_text_temporal(f.type) else pa.field(f.name, f.type)
                      for f in schema])


def _parse_json(source, explicit: pa.Schema, unexpected: str) -> pa.Table:
    import pyarrow.json as pj

    return pj.read_json(source, parse_options=pj.ParseOptions(explicit_schema=explicit,
                                                              unexpected_field_behavior=unexpected))


def _read_json(file_io: FileIO, path: str, schema: pa.Schema,
               table_types: Mapping[str, DataType] | None) -> pa.Table:
    explicit = _json_types(schema)
    open_file = _opener(file_io, path)
    try:
        with open_file() as source:
            data = _parse_json(source, explicit, "infer")
    except pa.ArrowInvalid:
        with open_file() as source:
            _refuse_json(path, source.read(), explicit, schema, table_types)
        raise
    problems: list[BadValue] = []
    for field in schema:
        if _is_text_temporal(field.type):
            text = data.column(field.name)
            try:
                parsed = _parse_text(text, field.type)
            except pa.ArrowInvalid:
                problems += _text_problems(text, field, table_types)
                continue
            data = data.set_column(data.schema.get_field_index(field.name), field.name, parsed)
    if problems:
        raise SchemaError(f"{path}: does not fit the table's columns: {describe(problems, [])}")
    return data


def _text_problems(text: pa.ChunkedArray, field: pa.Field, table_types: Mapping[str, DataType] | None,
                   ) -> list[BadValue]:
    """The first value of ``text`` (a JSON DATE or TIME column, as text) that does not parse as
    ``field``'s type, as a one-item list (empty if every value parses)."""
    first = first_failing(len(text), partial(_parses, text, field.type))
    if first is None:
        return []
    return [BadValue(column=field.name, type_name=_type_name(field, table_types),
                     value=_shown(json.dumps(text[first].as_py())), record=first + 1)]


def _type_name(field: pa.Field, table_types: Mapping[str, DataType] | None) -> str:
    return paimon_notation(field.type, (table_types or {}).get(field.name))


def _parse_text(text: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """ISO text (JSON strings) as ``target`` with the conversion the CSV reader uses (Arrow's cast
    takes no text for TIME): a null stays null, any other text that does not parse raises."""
    import pyarrow.csv as csv

    buffer = io.BytesIO()
    csv.write_csv(pa.table({"v": text}), buffer)  # every string quoted, a null as an empty field
    return csv.read_csv(pa.py_buffer(buffer.getvalue()),
                        read_options=csv.ReadOptions(use_threads=False),
                        parse_options=csv.ParseOptions(ignore_empty_lines=False),
                        convert_options=csv.ConvertOptions(column_types={"v": target}, null_values=[""],
                                                           quoted_strings_can_be_null=False)).column("v")


def _parses(text: pa.ChunkedArray, target: pa.DataType, low: int, high: int) -> bool:
    try:
        _parse_text(text.slice(low, high - low), target)
    except pa.ArrowInvalid:
        return False
    return True


def _json_records(data: bytes) -> pa.Array:
    """The records of a JSON-lines file: its lines that are not blank, as text."""
    import pyarrow.compute as pc

    text = pa.array([data], pa.large_binary()).cast(pa.large_string())
    lines = pc.split_pattern(text, "\n").flatten()
    return lines.filter(pc.invert(pc.equal(pc.utf8_trim_whitespace(lines), "")))


def _json_slice(records: pa.Array, low: int, high: int) -> pa.BufferReader:
    import pyarrow.compute as pc

    part = records.slice(low, high - low)
    lists = pa.LargeListArray.from_arrays(pa.array([0, len(part)], pa.int64()), part)
    joined = pc.binary_join(lists, pa.scalar("\n", pa.large_string()))
    return pa.BufferReader(joined[0].as_buffer())


def _json_reads(records: pa.Array, explicit: pa.Schema, low: int, high: int) -> bool:
    try:
        _parse_json(_json_slice(records, low, high), explicit, "ignore")
    except pa.ArrowInvalid:
        return False
    return True


def _refuse_json(path: str, data: bytes, explicit: pa.Schema, schema: pa.Schema,
                 table_types: Mapping[str, DataType] | None) -> None:
    """After a failed read of a JSON-lines file (its bytes ``data``): raise a :class:`SourceError`
    for its first record that is not a JSON object, else one :class:`SchemaError` naming every
    column holding a value its type does not take (the first one, with its record); return when
    neither explains the failure."""
    try:
        records = _json_records(data)
    except pa.ArrowInvalid as exc:  # not UTF-8
        raise SourceError(f"{path}: not a readable JSON file: {_one_line(exc)}") from None
    broken = first_failing(len(records), partial(_json_reads, records, pa.schema([])))
    if broken is not None:
        raise SourceError(f"{path}: not a readable JSON file: record {broken + 1} "
                          f"({_shown(records[broken].as_py())!r}) is not a JSON object")
    problems = []
    for field in explicit:
        single = pa.schema([field])
        first = first_failing(len(records), partial(_json_reads, records, single))
        if first is not None:
            value = json.loads(records[first].as_py()).get(field.name)
            problems.append(BadValue(column=field.name, type_name=_type_name(schema.field(field.name), table_types),
                                     value=_shown(json.dumps(value)), record=first + 1))
        elif _is_text_temporal(schema.field(field.name).type):  # the text is there: does it parse?
            text = _parse_json(_json_slice(records, 0, len(records)), single, "ignore").column(field.name)
            problems += _text_problems(text, schema.field(field.name), table_types)
    if problems:
        raise SchemaError(f"{path}: does not fit the table's columns: {describe(problems, [])}")


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN_TEXT else text[:_SHOWN_TEXT - 3] + "..."


def _one_line(exc: BaseException) -> str:
    return "; ".join(part.strip() for part in str(exc).splitlines() if part.strip())


__all__ = ["FORMAT_NAMES", "HIDDEN_PREFIXES", "SOURCE_FORMATS", "SUFFIX_FORMATS", "list_source_files",
           "read_source_file", "read_source_files"]
