"""Rows written out as a directory of files, as Spark's ``DataFrameWriter.mode("overwrite")``
leaves one: ``part-00000-<uuid>.<format>`` and ``_SUCCESS``, on a local disk or an object store.
What the core engine's change exports write (the Spark job writes the same layout)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import pyarrow as pa

from ..errors import InvalidArgumentError
from ..fs import get_file_io, join

EXPORT_FORMATS = ("parquet", "orc", "csv")


def export_rows(rows: pa.Table, output: str, output_format: str,
                storage_options: Mapping[str, str] | None = None) -> str:
    """Write ``rows`` under the directory ``output`` (a path or an ``s3://`` URI, reached with
    ``storage_options``) as one ``output_format`` file, then remove the part files an earlier
    export left there and mark the directory ``_SUCCESS``; the new file's path."""
    if output_format not in EXPORT_FORMATS:
        raise InvalidArgumentError(f"output_format must be one of {', '.join(EXPORT_FORMATS)} on the core engine "
                                   f"(the Spark engine writes any Spark format), not {output_format!r}")
    file_io = get_file_io(output, storage_options)
    file_io.mkdirs(output)
    earlier = [s.path for s in file_io.list_files(output, "part-")]
    path = join(output, f"part-00000-{uuid.uuid4()}.{output_format}")
    filesystem, to_fs_path = file_io.arrow_filesystem()
    with filesystem.open_output_stream(to_fs_path(path)) as out:
        _write(rows, out, output_format)
    for old in earlier:
        file_io.delete(old)
    file_io.write_bytes(join(output, "_SUCCESS"), b"")
    return path


def _write(rows: pa.Table, out, output_format: str) -> None:
    if output_format == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(rows, out, compression="zstd")
    elif output_format == "orc":
        import pyarrow.orc as orc

        orc.write_table(rows, out, compression="zstd")
    else:
        import pyarrow.csv as csv

        csv.write_csv(rows, out)
