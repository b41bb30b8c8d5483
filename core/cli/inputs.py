"""Files ``paimonflow write`` reads: Parquet, ORC, CSV (with a header line) and JSON (one object
per line), known by their suffix. A file that is missing, of an unknown kind or unreadable is one
:class:`~paimonflow.core.errors.SourceError` naming it; text formats are parsed with the table's
column types, so a value that does not parse is refused, never guessed: the error names every
column holding such a value, with the first one and its record number, and the records whose field
count differs from the header's (:mod:`paimonflow.core.data.csv_records`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from ..errors import SourceError
from .contract import one_line

KINDS = {".parquet": "Parquet", ".parq": "Parquet", ".orc": "ORC", ".csv": "CSV", ".json": "JSON",
         ".jsonl": "JSON", ".ndjson": "JSON"}


def _kind(path: Path, reader: str) -> str:
    """The kind of the input file ``path`` (``Parquet``, ``ORC``, ``CSV``, ``JSON``); a
    :class:`SourceError` for a missing file, a folder or an unknown suffix (``reader``: who reads it)."""
    if not path.exists():
        raise SourceError(f"{path}: no such file")
    if path.is_dir():
        raise SourceError(f"{path}: is a directory; give the files in it")
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        raise SourceError(f"{path}: unknown file kind {path.suffix or '(no suffix)'!r}; {reader} reads "
                          f"{', '.join(sorted(KINDS))} files")
    return kind


def read_input(path: Path, schema: pa.Schema) -> pa.Table:
    """The rows of ``path``; text formats parsed with ``schema``'s types (the table's)."""
    kind = _kind(path, "write")
    try:
        return _read(path, kind, schema)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise SourceError(f"{path}: not a readable {kind} file: {one_line(str(exc))}") from None


def _read(path: Path, kind: str, schema: pa.Schema) -> pa.Table:
    if kind == "Parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path)
    if kind == "ORC":
        import pyarrow.orc as orc

        return orc.read_table(path)
    if kind == "CSV":
        import pyarrow.csv as csv

        try:
            return csv.read_csv(path, convert_options=csv.ConvertOptions(column_types=schema))
        except pa.ArrowInvalid:  # pyarrow names the first problem only, and no line: find them all
            from ..data.csv_records import csv_file_problems, describe

            values, records = csv_file_problems(path, schema)
            if not values and not records:
                raise
            raise SourceError(f"{path}: does not fit the table's columns: {describe(values, records)}") from None
    import pyarrow.json as pj

    return pj.read_json(path, parse_options=pj.ParseOptions(explicit_schema=schema,
                                                             unexpected_field_behavior="error"))


def schema_of(path: Path) -> pa.Schema:
    """The columns of a sample file (``create-table --like``): a Parquet or ORC file's own schema,
    a CSV or JSON-lines file's as pyarrow infers it from the first rows."""
    kind = _kind(path, "--like")
    try:
        if kind == "Parquet":
            import pyarrow.parquet as pq

            return pq.read_schema(path).remove_metadata()
        if kind == "ORC":
            import pyarrow.orc as orc

            return orc.ORCFile(path).schema
        if kind == "CSV":
            import pyarrow.csv as csv

            with csv.open_csv(path) as reader:
                return reader.schema
        import pyarrow.json as pj

        return pj.read_json(path).schema
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise SourceError(f"{path}: not a readable {kind} file: {one_line(str(exc))}") from None
