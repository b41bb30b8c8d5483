"""The ``schema/schema-N`` files of one branch: listing, reading and publishing schema versions
(each a new file published with create-if-absent, so concurrent changes never overwrite each
other), and which branches of a table exist.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from ..errors import (
    CorruptMetadataError,
    FileNotFoundStorageError,
    InvalidNameError,
    SchemaChangeError,
    SchemaError,
    StorageOutcomeUnknownError,
)
from ..fs.base import FileIO, join
from ..names import validate_name
from .layout import BRANCH_DIR, BRANCH_PREFIX, branch_root
from .schema import TableSchema
from .schema_changes import SchemaChange, apply_changes

# -- the schema directory ----------------------------------------------------------------------

_PREFIX = "schema-"


class SchemaManager:
    """Reads and writes ``<table>/schema/schema-<id>``; every file is published with
    create-if-absent, so no schema version is ever overwritten."""

    def __init__(self, file_io: FileIO, table_path: str, branch: str = "main") -> None:
        self._file_io = file_io
        self.table_path = table_path
        self.branch = branch
        self.directory = join(branch_root(table_path, branch), "schema")

    def path(self, schema_id: int) -> str:
        """The file of schema ``schema_id``."""
        return join(self.directory, f"{_PREFIX}{schema_id}")

    def list_ids(self) -> list[int]:
        """The ids of the schema files present, ascending (empty if the table has none)."""
        ids = []
        for status in self._file_io.list_dir(self.directory):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            suffix = name[len(_PREFIX):]
            if name.startswith(_PREFIX) and suffix.isdigit() and suffix.isascii() and not status.is_dir:
                ids.append(int(suffix))
        return sorted(ids)

    def schema(self, schema_id: int) -> TableSchema:
        """Schema ``schema_id``. Raises SchemaError if it does not exist, CorruptMetadataError if
        the file is unreadable or holds another id."""
        path = self.path(schema_id)
        try:
            data = self._file_io.read_bytes(path)
        except FileNotFoundStorageError:
            raise SchemaError(f"schema {schema_id} does not exist ({path})") from None
        schema = TableSchema.from_json(data, path)
        if schema.id != schema_id:
            raise CorruptMetadataError(path, f"holds schema id {schema.id}")
        return schema

    def latest(self) -> TableSchema | None:
        """The schema with the highest id, or None if the table has no schema."""
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def create(self, schema: TableSchema) -> bool:
        """Publish ``schema-<schema.id>`` atomically; False (and nothing written) if it exists.

        Raises StorageOutcomeUnknownError when the storage cannot tell whether it landed.
        """
        return self._file_io.create_if_absent(self.path(schema.id), schema.to_json())

    def commit_changes(self, changes: Sequence[SchemaChange], *, max_attempts: int = 10,
                       validate: Callable[[TableSchema], object] | None = None) -> TableSchema:
        """Apply ``changes`` to the latest schema and publish the result as the next schema file.

        If another writer publishes that id first, the latest schema is re-read and the changes
        re-applied (and re-checked) against it, up to ``max_attempts`` times. ``validate`` (default:
        the table-option check of :class:`~paimonflow.core.options.core.CoreOptions`) runs on the new
        schema before it is written. Returns the schema written. Raises SchemaError if the table
        has no schema, SchemaChangeError for a change that is not allowed or when every attempt
        lost the race.
        """
        check = validate if validate is not None else _check_options
        for _ in range(max_attempts):
            current = self.latest()
            if current is None:
                raise SchemaError(f"the table at {self.table_path} has no schema")
            candidate = apply_changes(current, changes)
            check(candidate)
            if self._publish(candidate):
                return candidate
        raise SchemaChangeError(
            f"the schema of {self.table_path} changed concurrently {max_attempts} times; try again")

    def _publish(self, schema: TableSchema) -> bool:
        """create-if-absent, resolving an unknown outcome by reading the file back."""
        data = schema.to_json()
        path = self.path(schema.id)
        try:
            return self._file_io.create_if_absent(path, data)
        except StorageOutcomeUnknownError:
            try:
                return self._file_io.read_bytes(path) == data
            except FileNotFoundStorageError:
                return self._file_io.create_if_absent(path, data)


def _check_options(schema: TableSchema) -> object:
    from ..options.core import CoreOptions  # options are another module's concern; imported late

    options = CoreOptions.from_map(schema.options)
    options.check_combinations()
    return options


def existing_branches(file_io, table_path: str) -> list[str]:
    """Names of the branches of the table at ``table_path`` (main not included), sorted. A branch
    exists while it has a schema: its deletion removes the schemas first."""
    names = []
    for status in file_io.list_dir(join(table_path, BRANCH_DIR)):
        entry = status.path.rstrip("/").rsplit("/", 1)[-1]
        if status.is_dir and entry.startswith(BRANCH_PREFIX) and not entry.startswith("."):
            name = entry[len(BRANCH_PREFIX):]
            with contextlib.suppress(InvalidNameError):
                if SchemaManager(file_io, table_path, validate_name("branch", name)).list_ids():
                    names.append(name)
    return sorted(names)
