"""The filesystem catalog: ``<warehouse>/<database>.db/<table>``, as Apache Paimon lays it out.

A database is a directory; a table exists when its ``schema/`` holds a schema file. Every name
goes through the one validator, so no path is ever built outside the warehouse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from .errors import (
    BranchNotFoundError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidNameError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
    UnsupportedFeatureError,
    WarehouseNotFoundError,
)
from .fs import FileIO, get_file_io, join
from .meta.capabilities import Feature
from .meta.layout import MAIN_BRANCH
from .meta.schema import Schema
from .meta.schema_manager import SchemaManager
from .names import parse_table_name, split_identifier, validate_name
from .options.validate import validate_user_options
from .table import Table

DB_SUFFIX = ".db"
SYSTEM_TABLE_SEPARATOR = "$"


class Catalog:
    """Databases and tables of one warehouse (local path, ``file://`` or ``s3://`` URI).

    ``storage_options`` configure the backend (for S3: ``s3.endpoint``, ``s3.access-key``,
    ``s3.secret-key``, ``s3.region``); they are never written to table metadata.
    """

    def __init__(self, warehouse: str, *, storage_options: Mapping[str, str] | None = None,
                 file_io: FileIO | None = None) -> None:
        self.file_io = file_io or get_file_io(warehouse, storage_options)
        self.warehouse = warehouse.rstrip("/") if warehouse not in ("/",) else warehouse
        if self.warehouse.startswith("file://"):
            self.warehouse = self.warehouse[len("file://"):]

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse!r})"

    # -- databases ---------------------------------------------------------------------------

    def database_path(self, name: str) -> str:
        return join(self.warehouse, validate_name("database", name) + DB_SUFFIX)

    def list_databases(self) -> list[str]:
        """The databases, sorted. A warehouse that does not exist (a mistyped path) is an error,
        not an empty answer: :class:`WarehouseNotFoundError` (``create_database`` makes one)."""
        names = self._database_names()
        if not names and not self.file_io.exists(self.warehouse):
            raise WarehouseNotFoundError(f"warehouse {self.warehouse!r} does not exist (create_database "
                                         "creates a new one)")
        return names

    def _database_names(self) -> list[str]:
        return sorted(
            s.path.rstrip("/").rsplit("/", 1)[-1][: -len(DB_SUFFIX)]
            for s in self.file_io.list_dir(self.warehouse)
            if s.is_dir and s.path.rstrip("/").endswith(DB_SUFFIX)
        )

    def database_exists(self, name: str) -> bool:
        return self.file_io.exists(self.database_path(name)) or name in self._database_names()

    def create_database(self, name: str, *, ignore_if_exists: bool = False) -> None:
        path = self.database_path(name)
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistsError(f"database {name!r} already exists")
        self.file_io.mkdirs(path)
        # Object stores have no directories: a marker keeps an empty database listable.
        if not self.file_io.exists(path):
            self.file_io.write_bytes(join(path, ".paimonflow-database"), b"")

    def drop_database(self, name: str, *, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotFoundError(f"database {name!r} does not exist")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(f"database {name!r} holds tables {', '.join(tables)}: drop them first, or "
                                        "drop it with cascade (the command line's --cascade)")
        self.file_io.delete(self.database_path(name), recursive=True)

    # -- tables ------------------------------------------------------------------------------

    def table_path(self, identifier: str) -> str:
        database, table = split_identifier(identifier)
        return join(self.database_path(database), table)

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotFoundError(f"database {database!r} does not exist")
        names = []
        for status in self.file_io.list_dir(self.database_path(database)):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            if status.is_dir and not name.startswith(".") and SchemaManager(self.file_io, status.path).list_ids():
                names.append(name)
        return sorted(names)

    def table_exists(self, identifier: str) -> bool:
        return bool(SchemaManager(self.file_io, self.table_path(identifier)).list_ids())

    def create_table(self, identifier: str, schema: pa.Schema | Schema, *, primary_keys: Sequence[str] = (),
                     partition_keys: Sequence[str] = (), options: Mapping[str, object] | None = None,
                     comment: str | None = None, ignore_if_exists: bool = False) -> Table:
        """Create a table and return it.

        ``schema`` is a pyarrow schema (with ``primary_keys``, ``partition_keys``, ``options``)
        or a :class:`~paimonflow.core.meta.schema.Schema`. Options are checked strictly (unknown keys
        and bad values raise InvalidOptionError). Creation is atomic: ``schema/schema-0`` is
        published with create-if-absent, so two racing creators never both succeed.
        """
        database, _ = split_identifier(identifier)
        if not self.database_exists(database):
            raise DatabaseNotFoundError(f"database {database!r} does not exist; create it first")
        path = self.table_path(identifier)
        manager = SchemaManager(self.file_io, path)
        if manager.list_ids():
            if ignore_if_exists:
                return self.get_table(identifier)
            raise TableAlreadyExistsError(f"table {identifier!r} already exists")
        if isinstance(schema, pa.Schema):
            schema = Schema.from_arrow(schema, primary_keys=list(primary_keys), partition_keys=list(partition_keys),
                                       options=validate_user_options(options or {}), comment=comment)
        else:
            validate_user_options(schema.options)
        table_schema = schema.to_table_schema()
        from .options.core import CoreOptions

        CoreOptions.from_map(table_schema.options).check_combinations()
        if not manager.create(table_schema):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise TableAlreadyExistsError(f"table {identifier!r} already exists")
        return self.get_table(identifier)

    def get_table(self, identifier: str) -> Table:
        """Open a table; ``db.t$branch_b`` opens its branch ``b``. ``db.t$snapshots`` style names
        are system tables: use ``load_system_table``."""
        base, branch, system = parse_table_name(identifier)
        if system is not None:
            raise InvalidNameError("table", identifier, f"names the system table {system!r}; use load_system_table")
        path = self.table_path(base)
        try:
            if SchemaManager(self.file_io, path).latest() is None:
                raise TableNotFoundError(f"table {base!r} does not exist")
            schema = SchemaManager(self.file_io, path, branch).latest()
        except UnsupportedFeatureError:
            raise
        except UnsupportedError as exc:  # a column type this version does not implement
            raise UnsupportedFeatureError(table=identifier, feature=Feature.COLUMN_TYPE.value,
                                          operation="any operation", detail=str(exc)) from None
        if schema is None:
            raise BranchNotFoundError(f"branch {branch!r} of table {base!r} does not exist")
        return Table(file_io=self.file_io, path=path, identifier=identifier, schema=schema, branch=branch)

    def load_system_table(self, name: str) -> pa.Table:
        """``"db.t$snapshots"`` (or ``"db.t$branch_b$snapshots"``) -> the system table as a pyarrow Table."""
        base, branch, system = parse_table_name(name)
        if system is None:
            raise InvalidNameError("table", name, "names no system table (expected 'db.t$<system table>')")
        table = self.get_table(base if branch == MAIN_BRANCH else f"{base}$branch_{branch}")
        return table.system_table(system)

    def rename_table(self, identifier: str, new_identifier: str) -> Table:
        """Move a table to a new name (in the same or another database), as Paimon's filesystem
        catalog does: one rename of its directory, atomic on a local disk and refused if the new
        name is taken. Refused on object stores, where a directory's rename copies every file
        and is not atomic (a reader could see half a table). Returns the table under its new name."""
        from .fs import LocalFileIO

        split_identifier(identifier)  # (plain names: a branch or system table is refused here)
        database = split_identifier(new_identifier)[0]
        if not self.table_exists(identifier):
            raise TableNotFoundError(f"table {identifier!r} does not exist")
        if not self.database_exists(database):
            raise DatabaseNotFoundError(f"database {database!r} does not exist")
        if self.table_exists(new_identifier):
            raise TableAlreadyExistsError(f"table {new_identifier!r} already exists")
        if not isinstance(self.file_io, LocalFileIO):
            raise UnsupportedError("renaming a table on an object store would copy every file of it, not "
                                   "atomically; create the new table and write into it instead")
        self.file_io.rename(self.table_path(identifier), self.table_path(new_identifier))
        return self.get_table(new_identifier)

    def drop_table(self, identifier: str, *, ignore_if_not_exists: bool = False) -> None:
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"table {identifier!r} does not exist")
        self.file_io.delete(self.table_path(identifier), recursive=True)
