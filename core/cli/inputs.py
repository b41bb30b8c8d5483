"""Files ``paimonflow write`` reads: Parquet, ORC, CSV (with a header line) and JSON (one object
per line), known by their suffix. A file that is missing, of an unknown kind or unreadable is one
:class:`~paimonflow.core.errors.SourceError` naming it; one whose columns do not fit the table's is
one :class:`~paimonflow.core.errors.SchemaError` naming it and every column that does not fit (a
text value that does not parse: its first one and its record), as the Airflow write operator on
the core engine reports it: both read through :mod:`paimonflow.core.data.source_files`."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from ..data.source_files import FORMAT_NAMES, SUFFIX_FORMATS, read_source_file
from ..errors import SourceError
from .contract import one_line

KINDS = {suffix: FORMAT_NAMES[format] for suffix, format in SUFFIX_FORMATS.items()}


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
    """The rows of ``path`` as the table's columns (``schema``, the table's), text formats parsed
    with its types; a column the table does not have is refused."""
    from ..fs import LocalFileIO

    _kind(path, "write")
    return read_source_file(LocalFileIO(), str(path), SUFFIX_FORMATS[path.suffix.lower()], schema)


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
