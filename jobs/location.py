"""Where a table lives, in a form that travels to Spark executors (picklable, no open handles).

Executors reopen the table from its location: a filesystem catalog is a directory, so opening is
cheap and needs no service. ``storage_options`` (S3 endpoint and keys) come from the job's
configuration, never from table options, and are never printed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from paimonflow.core import Catalog

# Storage options (credentials included) reach a spark-submit'ed job as one JSON object in
# PAIMONFLOW_STORAGE_OPTIONS, never as ``--storage-option`` on argv (reliability S9).
from paimonflow.core.fs import STORAGE_OPTIONS_ENV, storage_options_from_env

__all__ = ["STORAGE_OPTIONS_ENV", "TableLocation", "storage_options_from_env"]


@dataclass(frozen=True, slots=True)
class TableLocation:
    warehouse: str
    identifier: str  # db.t, or db.t$branch_b for a branch
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    schema_id: int | None = None  # pin the schema the driver planned with

    def catalog(self) -> Catalog:
        return Catalog(self.warehouse, storage_options=dict(self.storage_options) or None)

    def open(self):
        """The table (at ``schema_id`` when pinned, so executors agree with the driver's plan)."""
        table = self.catalog().get_table(self.identifier)
        if self.schema_id is None or self.schema_id == table.schema.id:
            return table
        from paimonflow.core.table import Table

        return Table(file_io=table.file_io, path=table.path, identifier=table.identifier,
                     schema=table.schema_manager.schema(self.schema_id), branch=table.branch)

    def pinned(self, schema_id: int) -> TableLocation:
        return TableLocation(self.warehouse, self.identifier, self.storage_options, schema_id)


STORAGE_PREFIXES = ("s3.", "fs.")


def location_from_options(options: Mapping[str, str], identifier: str | None = None) -> TableLocation:
    """A location from data source options: ``warehouse`` plus the table (``path``/``table``:
    ``db.t``), or without ``warehouse`` the table's own directory as ``path``
    (``<warehouse>/<db>.db/<table>``, as Apache Paimon's connector takes it; ``CREATE TABLE ...
    USING paimonflow OPTIONS (path ...)``); every ``s3.*`` / ``fs.*`` option is a storage option."""
    from paimonflow.core.errors import InvalidArgumentError

    lowered = {k.lower(): v for k, v in options.items()}
    warehouse = lowered.get("warehouse")
    table = identifier or lowered.get("table") or lowered.get("path")
    storage = {k: v for k, v in options.items() if k.lower().startswith(STORAGE_PREFIXES)}
    if not warehouse and table:
        return TableLocation(*table_path_parts(table), storage)
    if not options:  # PySpark 4.3 hands a catalog table's Python data source reader and writer none
        raise InvalidArgumentError("no table given: Spark passes no options to the reader or writer of a table "
                                   "created USING paimonflow; use CREATE TEMPORARY VIEW <v> USING paimonflow "
                                   "OPTIONS (path '<table directory>') for SELECT and INSERT INTO, or "
                                   "spark.read/df.write.format('paimonflow')")
    if not warehouse or not table:
        raise InvalidArgumentError("give the table's directory (.load('/wh/db.db/t')), or the warehouse "
                                   "(.option('warehouse', ...)) and the table (.load('db.t'))")
    return TableLocation(warehouse, table, storage)


def table_path_parts(path: str) -> tuple[str, str]:
    """``(warehouse, "db.t")`` of a table directory ``<warehouse>/<db>.db/<table>`` (a local path
    or a URI; a trailing slash is ignored)."""
    from paimonflow.core.errors import InvalidArgumentError

    parts = path.rstrip("/").rsplit("/", 2)
    if len(parts) != 3 or not parts[1].endswith(".db") or len(parts[1]) <= 3 or not parts[2] or not parts[0]:
        raise InvalidArgumentError(f"{path!r} is not a table directory <warehouse>/<database>.db/<table>; "
                                   "or give the warehouse option and load 'database.table'")
    return parts[0], f"{parts[1][:-3]}.{parts[2]}"
