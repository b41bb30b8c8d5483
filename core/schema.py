"""Table schemas: the ``schema/schema-N`` files, creating schemas, evolving them, and reading
data files written under an older schema by field id.

A schema file is the JSON Java Paimon's ``SchemaSerializer`` writes: ``version`` (3), ``id``,
``fields``, ``highestFieldId``, ``partitionKeys``, ``primaryKeys``, ``options``, ``comment`` (only
when set) and ``timeMillis``, in that order, indented by two spaces. pypaimon 2.1.0 writes the same
layout except that it writes ``"comment": null`` (which Java reads back as the text "null") and
the type spellings noted in :mod:`paimonflow.core.types`; paimonflow reads both and writes Java's.

Schema ids count up from 0 and every version is a new file published with create-if-absent, so
concurrent writers never overwrite each other. Field ids are never reused: a new column, and
every field nested in it, takes ids above ``highestFieldId``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from .errors import (
    CorruptMetadataError,
    FileNotFoundStorageError,
    InvalidNameError,
    SchemaChangeError,
    SchemaError,
)
from .fs.base import FileIO, StorageOutcomeUnknownError, join
from .metafile import load_object
from .names import validate_name
from .snapshot import branch_root
from .types import (
    COMPOSITE_ROOTS,
    DataField,
    DataType,
    TypeRoot,
    collect_field_ids,
    field_to_json,
    from_arrow,
    highest_field_id,
    is_safe_widening,
    parse_field,
    parse_type_text,
    reassign_field_ids,
    row_of,
    to_arrow,
    type_to_json,
)

__all__ = [
    "SCHEMA_VERSION",
    "AddColumn",
    "ColumnPosition",
    "DataField",
    "DropColumn",
    "RemoveOption",
    "RenameColumn",
    "Schema",
    "SchemaChange",
    "SchemaManager",
    "SetOption",
    "TableSchema",
    "UpdateColumnComment",
    "UpdateColumnNullability",
    "UpdateColumnPosition",
    "UpdateColumnType",
    "UpdateComment",
    "apply_changes",
    "current_names",
    "evolve_table",
    "file_columns",
    "index_mapping",
    "validate_table_schema",
]

SCHEMA_VERSION = 3
_PAIMON_07_VERSION = 1
_PAIMON_08_VERSION = 2
PRIMARY_KEY_NULLABLE = "primary-key.nullable"


def _is_true(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def _split_list(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableSchema:
    """One version of a table's schema, as stored in ``schema/schema-<id>``.

    Immutable; evolve it with :func:`apply_changes` (or :meth:`SchemaManager.commit_changes`).
    ``highest_field_id`` is the largest field id ever handed out in this table, dropped columns
    included.
    """

    version: int = SCHEMA_VERSION
    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0

    # -- facts -------------------------------------------------------------------------------

    @property
    def field_names(self) -> list[str]:
        """Column names in table order."""
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField | None:
        """The top-level column called ``name``, or None."""
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def field_by_id(self, field_id: int) -> DataField | None:
        """The top-level column with id ``field_id``, or None (dropped or never existed)."""
        for f in self.fields:
            if f.id == field_id:
                return f
        return None

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """The primary key minus partition keys (what data files and bucketing use).

        Raises SchemaError if the primary key consists of partition keys only.
        """
        trimmed = tuple(k for k in self.primary_keys if k not in self.partition_keys)
        if self.primary_keys and not trimmed:
            raise SchemaError(
                f"the primary key {list(self.primary_keys)} must not be the same as the partition keys "
                f"{list(self.partition_keys)}: each partition would hold one row")
        return trimmed

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        """Option ``bucket-key`` (comma separated), else the trimmed primary key."""
        configured = _split_list(self.options.get("bucket-key"))
        return tuple(configured) if configured else self.trimmed_primary_keys

    @property
    def cross_partition_update(self) -> bool:
        """True for a primary-key table whose key does not contain every partition key."""
        return bool(self.primary_keys) and any(k not in self.primary_keys for k in self.partition_keys)

    @property
    def logical_row_type(self) -> DataType:
        """The table's columns as one ROW type."""
        return row_of(self.fields)

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the table's rows: primary-key columns NOT NULL (unless
        ``primary-key.nullable`` is true), the others as their types say."""
        keys_nullable = _is_true(self.options.get(PRIMARY_KEY_NULLABLE))
        out = []
        for f in self.fields:
            nullable = f.type.nullable and (keys_nullable or f.name not in self.primary_keys)
            out.append(pa.field(f.name, to_arrow(f.type), nullable))
        return pa.schema(out)

    # -- JSON --------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON object Java writes, keys in Java's order (``comment`` only when set)."""
        doc: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [field_to_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:
            doc["comment"] = self.comment
        doc["timeMillis"] = self.time_millis
        return doc

    def to_json(self) -> bytes:
        """The schema file's bytes: UTF-8 JSON, 2-space indent."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes | str, path: str = "<schema>") -> TableSchema:
        """Parse a schema file written by paimonflow, pypaimon or Java Paimon.

        Unknown keys are ignored. As in Java, a version-1 schema without ``bucket`` gets
        ``bucket = 1`` and a version <= 2 schema without ``file.format`` gets ``orc``. Raises
        CorruptMetadataError (naming ``path``) for invalid JSON, missing or mistyped required keys,
        unknown types, duplicate field ids or keys that are not columns; UnsupportedError for a
        Paimon type paimonflow does not handle.
        """
        doc = load_object(data, path)
        try:
            return cls._from_dict(doc)
        except SchemaError as exc:
            raise CorruptMetadataError(path, str(exc)) from None

    @classmethod
    def _from_dict(cls, doc: dict[str, Any]) -> TableSchema:
        for key in ("id", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "options"):
            if doc.get(key) is None:
                raise SchemaError(f"required field {key!r} is missing")
        version = doc.get("version", _PAIMON_07_VERSION)
        schema_id, highest, millis = doc["id"], doc["highestFieldId"], doc.get("timeMillis") or 0
        for key, value in (("version", version), ("id", schema_id), ("highestFieldId", highest),
                           ("timeMillis", millis)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise SchemaError(f"{key!r} must be an integer, found {value!r}")
        if not isinstance(doc["fields"], list):
            raise SchemaError("'fields' must be a list")
        fields = tuple(parse_field(f) for f in doc["fields"])
        keys = {}
        for key in ("partitionKeys", "primaryKeys"):
            value = doc[key]
            if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
                raise SchemaError(f"{key!r} must be a list of strings")
            keys[key] = tuple(value)
        if not isinstance(doc["options"], dict):
            raise SchemaError("'options' must be an object")
        options = {k: _option_text(k, v) for k, v in doc["options"].items()}
        if version <= _PAIMON_07_VERSION:
            options.setdefault("bucket", "1")
        if version <= _PAIMON_08_VERSION:
            options.setdefault("file.format", "orc")
        comment = doc.get("comment")
        if comment is not None and not isinstance(comment, str):
            raise SchemaError("'comment' must be a string")
        collect_field_ids(fields)
        names = [f.name for f in fields]
        missing = [k for k in (*keys["partitionKeys"], *keys["primaryKeys"]) if k not in names]
        if missing:
            raise SchemaError(f"key columns {missing} are not columns {names}")
        return cls(version=version, id=schema_id, fields=fields, highest_field_id=highest,
                   partition_keys=keys["partitionKeys"], primary_keys=keys["primaryKeys"], options=options,
                   comment=comment, time_millis=millis)


def _option_text(key: str, value: object) -> str:
    """Option values as Java's ``asText`` reads them: strings, or numbers and booleans as text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    raise SchemaError(f"option {key!r} must be a string, found {value!r}")


# -- creating ----------------------------------------------------------------------------------

ColumnSpec = DataField | tuple[str, DataType | pa.DataType] | tuple[str, DataType | pa.DataType, str | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Schema:
    """What a user asks for when creating a table; :meth:`to_table_schema` validates it.

    Build it with :meth:`from_arrow` or :meth:`from_fields`, which number the fields as Paimon
    does (top-level columns 0, 1, ... in order, each column's nested ROW fields right after it).
    """

    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None

    def __post_init__(self) -> None:
        for name in ("fields", "partition_keys", "primary_keys"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise SchemaError(f"{name} must be a sequence, not the string {value!r}")
            object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "options", dict(self.options))

    @classmethod
    def from_arrow(cls, schema: pa.Schema, *, primary_keys: Sequence[str] = (), partition_keys: Sequence[str] = (),
                   options: Mapping[str, str] | None = None, comment: str | None = None) -> Schema:
        """A create spec from a pyarrow schema (field metadata ``description`` becomes the comment).

        Raises SchemaError for Arrow types Paimon cannot hold, naming the column.
        """
        columns: list[ColumnSpec] = []
        for f in schema:
            try:
                paimon_type = from_arrow(f.type, f.nullable)
            except SchemaError as exc:
                raise SchemaError(f"column {f.name!r}: {exc}") from None
            metadata = f.metadata or {}
            description = metadata[b"description"].decode("utf-8") if b"description" in metadata else None
            columns.append((f.name, paimon_type, description))
        return cls.from_fields(columns, primary_keys=primary_keys, partition_keys=partition_keys,
                               options=options, comment=comment)

    @classmethod
    def from_fields(cls, columns: Sequence[ColumnSpec], *, primary_keys: Sequence[str] = (),
                    partition_keys: Sequence[str] = (), options: Mapping[str, str] | None = None,
                    comment: str | None = None) -> Schema:
        """A create spec from ``DataField`` objects or ``(name, type[, comment])`` tuples.

        Types may be Paimon or Arrow types (Arrow types are nullable). Ids are assigned here, as
        Paimon's ``Schema.Builder`` does; ids carried by the given fields are ignored.
        """
        last_id = [-1]
        fields = []
        for column in columns:
            if isinstance(column, DataField):
                name, column_type, description = column.name, column.type, column.description
            else:
                name, column_type = column[0], column[1]
                description = column[2] if len(column) > 2 else None  # type: ignore[misc]
            if isinstance(column_type, pa.DataType):
                try:
                    column_type = from_arrow(column_type)
                except SchemaError as exc:
                    raise SchemaError(f"column {name!r}: {exc}") from None
            last_id[0] += 1
            field_id = last_id[0]
            fields.append(DataField(id=field_id, name=name, type=reassign_field_ids(column_type, last_id),
                                    description=description,
                                    default_value=column.default_value if isinstance(column, DataField) else None))
        return cls(fields=tuple(fields), partition_keys=tuple(partition_keys), primary_keys=tuple(primary_keys),
                   options=dict(options or {}), comment=comment)

    def to_table_schema(self, schema_id: int = 0, *, time_millis: int | None = None) -> TableSchema:
        """The validated first schema of a table.

        Like Paimon: options ``primary-key`` / ``partition`` become the keys (SchemaError if keys
        are also given), primary-key columns become NOT NULL (nullable with
        ``primary-key.nullable = true``). Raises SchemaError naming the problem (empty or
        duplicate column names, unknown or duplicate key columns, ARRAY/MAP/MULTISET/ROW keys,
        a primary key made of partition keys only...). Option values are not checked here.
        """
        options = dict(self.options)
        primary_keys, partition_keys = self.primary_keys, self.partition_keys
        for option, keys, what in (("primary-key", primary_keys, "primary key"),
                                   ("partition", partition_keys, "partition keys")):
            if option in options:
                if keys:
                    raise SchemaError(f"the {what} is given both as keys and as option {option!r}")
                keys = tuple(_split_list(options.pop(option)))
                if option == "primary-key":
                    primary_keys = keys
                else:
                    partition_keys = keys
        keys_nullable = _is_true(options.get(PRIMARY_KEY_NULLABLE))
        fields = tuple(
            replace(f, type=f.type.copy(nullable=keys_nullable)) if f.name in primary_keys else f
            for f in self.fields)
        try:
            highest = highest_field_id(fields)
        except SchemaError as exc:
            raise SchemaError(f"invalid field ids: {exc}") from None
        schema = TableSchema(id=schema_id, fields=fields, highest_field_id=highest,
                             partition_keys=tuple(partition_keys), primary_keys=tuple(primary_keys),
                             options=options, comment=self.comment,
                             time_millis=_now_millis() if time_millis is None else time_millis)
        validate_table_schema(schema)
        return schema


def _now_millis() -> int:
    return int(time.time() * 1000)


def validate_table_schema(schema: TableSchema) -> None:
    """Check the structural rules every table schema must follow; raise SchemaError naming the problem.

    Columns: at least one, valid non-empty names, no duplicates, unique field ids. Keys: existing,
    not repeated, of atomic types, and a primary key not made only of partition keys. Options that
    name columns (``bucket-key``, ``sequence.field``) must name existing columns; ``bucket-key``
    must be part of the primary key and not a partition key. A primary key that leaves out a
    partition key needs ``bucket = -1``. Other option values are not checked here.
    """
    names = schema.field_names
    if not names:
        raise SchemaError("a table needs at least one column")
    for name in names:
        try:
            validate_name("column", name)
        except InvalidNameError as exc:
            raise SchemaError(str(exc)) from exc
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SchemaError(f"duplicate column names {dupes}")
    collect_field_ids(schema.fields)
    types = {f.name: f.type for f in schema.fields}
    for kind, keys in (("partition key", schema.partition_keys), ("primary key", schema.primary_keys)):
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise SchemaError(f"duplicate {kind} columns {dupes} in {list(keys)}")
        missing = [k for k in keys if k not in types]
        if missing:
            raise SchemaError(f"{kind} columns {missing} are not columns of the table {names}")
        for k in keys:
            if types[k].root in COMPOSITE_ROOTS:
                raise SchemaError(f"{kind} column {k!r} has type {types[k]}; {types[k].root} cannot be a {kind}")
    schema.trimmed_primary_keys  # noqa: B018 - raises if the key is only partition keys
    if schema.cross_partition_update and schema.options.get("bucket", "-1").strip() != "-1":
        outside = [k for k in schema.partition_keys if k not in schema.primary_keys]
        raise SchemaError(
            f"the primary key {list(schema.primary_keys)} does not include the partition keys {outside}: "
            "a cross-partition update table needs bucket = -1 (dynamic bucket mode); "
            "add the partition keys to the primary key")
    for k in _split_list(schema.options.get("sequence.field")):
        if k not in types:
            raise SchemaError(f"sequence.field column {k!r} is not a column of the table {names}")
    for k in _split_list(schema.options.get("bucket-key")):
        if k not in types:
            raise SchemaError(f"bucket-key column {k!r} is not a column of the table {names}")
        if k in schema.partition_keys:
            raise SchemaError(f"bucket-key column {k!r} must not be a partition key")
        if schema.primary_keys and k not in schema.primary_keys:
            raise SchemaError(f"bucket-key column {k!r} must be part of the primary key {list(schema.primary_keys)}")
        if types[k].root in COMPOSITE_ROOTS:
            raise SchemaError(f"bucket-key column {k!r} has nested type {types[k]}")


# -- evolution ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnPosition:
    """Where a column goes: ``FIRST``, ``LAST``, or ``AFTER`` / ``BEFORE`` another column."""

    kind: Literal["FIRST", "LAST", "AFTER", "BEFORE"]
    reference: str | None = None

    @staticmethod
    def first() -> ColumnPosition:
        return ColumnPosition("FIRST")

    @staticmethod
    def last() -> ColumnPosition:
        return ColumnPosition("LAST")

    @staticmethod
    def after(column: str) -> ColumnPosition:
        return ColumnPosition("AFTER", column)

    @staticmethod
    def before(column: str) -> ColumnPosition:
        return ColumnPosition("BEFORE", column)


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """Base of the schema changes; the static methods build each kind (``SchemaChange.add_column(...)``)."""

    @staticmethod
    def set_option(key: str, value: str) -> SetOption:
        return SetOption(key, value)

    @staticmethod
    def remove_option(key: str) -> RemoveOption:
        return RemoveOption(key)

    @staticmethod
    def add_column(name: str, type: DataType | pa.DataType, comment: str | None = None,
                   position: ColumnPosition | None = None) -> AddColumn:
        return AddColumn(name, type, comment, position)

    @staticmethod
    def drop_column(name: str) -> DropColumn:
        return DropColumn(name)

    @staticmethod
    def rename_column(name: str, new_name: str) -> RenameColumn:
        return RenameColumn(name, new_name)

    @staticmethod
    def update_column_type(name: str, type: DataType | pa.DataType, keep_nullability: bool = False) -> UpdateColumnType:
        return UpdateColumnType(name, type, keep_nullability)

    @staticmethod
    def update_column_nullability(name: str, nullable: bool) -> UpdateColumnNullability:
        return UpdateColumnNullability(name, nullable)

    @staticmethod
    def update_column_comment(name: str, comment: str | None) -> UpdateColumnComment:
        return UpdateColumnComment(name, comment)

    @staticmethod
    def update_column_position(name: str, position: ColumnPosition) -> UpdateColumnPosition:
        return UpdateColumnPosition(name, position)

    @staticmethod
    def update_comment(comment: str | None) -> UpdateComment:
        return UpdateComment(comment)


@dataclass(frozen=True, slots=True)
class SetOption(SchemaChange):
    """Set a table option (immutable options may only be set to their current value)."""

    key: str
    value: str


@dataclass(frozen=True, slots=True)
class RemoveOption(SchemaChange):
    """Remove a table option (no-op if absent; immutable options cannot be removed)."""

    key: str


@dataclass(frozen=True, slots=True)
class AddColumn(SchemaChange):
    """Add a nullable column (last unless ``position`` says otherwise); Arrow types are nullable."""

    name: str
    type: DataType | pa.DataType
    comment: str | None = None
    position: ColumnPosition | None = None


@dataclass(frozen=True, slots=True)
class DropColumn(SchemaChange):
    """Drop a column that is neither a partition nor a primary-key column."""

    name: str


@dataclass(frozen=True, slots=True)
class RenameColumn(SchemaChange):
    """Rename a column that is neither a partition nor a primary-key column (its id stays)."""

    name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class UpdateColumnType(SchemaChange):
    """Widen a non-key column's type (only :func:`~paimonflow.core.types.is_safe_widening` changes).

    The new type's nullability applies unless ``keep_nullability`` (as in Paimon); an Arrow type
    always keeps the column's nullability.
    """

    name: str
    type: DataType | pa.DataType
    keep_nullability: bool = False


@dataclass(frozen=True, slots=True)
class UpdateColumnNullability(SchemaChange):
    """Make a column nullable (``nullable=True``; not for primary-key columns). Making a column
    NOT NULL is refused, as Paimon does by default: old files may hold nulls."""

    name: str
    nullable: bool


@dataclass(frozen=True, slots=True)
class UpdateColumnComment(SchemaChange):
    """Set (or clear, with None) a column's comment."""

    name: str
    comment: str | None


@dataclass(frozen=True, slots=True)
class UpdateColumnPosition(SchemaChange):
    """Move a column."""

    name: str
    position: ColumnPosition


@dataclass(frozen=True, slots=True)
class UpdateComment(SchemaChange):
    """Set (or clear, with None) the table comment."""

    comment: str | None


# Options that cannot change once a table exists: Paimon's @Immutable options, plus ``bucket``
# (paimonflow does not rescale buckets) and ``sequence.field`` (would reorder merged history).
IMMUTABLE_OPTIONS = frozenset({
    "type", "bucket-key", "bucket-function.type", "data-file.path-directory", "merge-engine",
    "sequence.snapshot-ordering", "aggregation.remove-record-on-delete", "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group", "rowkind.field", "primary-key", PRIMARY_KEY_NULLABLE,
    "partition", "dynamic-bucket.initial-buckets", "force-lookup", "row-tracking.enabled",
    "data-evolution.enabled", "index-file-in-data-file-dir", "blob-field", "blob-descriptor-field",
    "blob-view-field", "pk-clustering-override", "bucket", "sequence.field",
})


def _as_paimon(t: DataType | pa.DataType, nullable: bool = True) -> DataType:
    if isinstance(t, DataType):
        return t
    if isinstance(t, pa.DataType):
        return from_arrow(t, nullable)
    raise SchemaChangeError(f"expected a Paimon or Arrow type, got {t!r}")


class _Evolution:
    """The working state of :func:`apply_changes`."""

    def __init__(self, schema: TableSchema) -> None:
        self.schema = schema
        self.fields = list(schema.fields)
        self.options = dict(schema.options)
        self.comment = schema.comment
        self.last_id = [max(schema.highest_field_id, highest_field_id(schema.fields))]
        self.primary_keys = list(schema.primary_keys)

    def index(self, name: str) -> int:
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise SchemaChangeError(f"column {name!r} does not exist (columns: {[f.name for f in self.fields]})")

    def refuse_keys(self, name: str, action: str, *, primary: bool = True) -> None:
        if name in self.schema.partition_keys:
            raise SchemaChangeError(f"cannot {action} partition column {name!r}")
        if primary and name in self.schema.primary_keys:
            raise SchemaChangeError(f"cannot {action} primary key column {name!r}")

    def insert(self, new_field: DataField, position: ColumnPosition | None) -> None:
        kind = position.kind if position is not None else "LAST"
        if kind == "FIRST":
            self.fields.insert(0, new_field)
        elif kind in ("AFTER", "BEFORE"):
            reference = position.reference if position is not None else None
            if reference is None:
                raise SchemaChangeError(f"position {kind} needs a reference column")
            i = self.index(reference)
            self.fields.insert(i + 1 if kind == "AFTER" else i, new_field)
        elif kind == "LAST":
            if position is None and _is_true(self.options.get("add-column-before-partition")):
                at = next((i for i, f in enumerate(self.fields) if f.name in self.schema.partition_keys),
                          len(self.fields))
                self.fields.insert(at, new_field)
            else:
                self.fields.append(new_field)
        else:
            raise SchemaChangeError(f"unknown column position {kind!r}")

    def apply(self, change: SchemaChange) -> None:
        if isinstance(change, SetOption):
            if self.options.get(change.key) != change.value:
                if change.key in IMMUTABLE_OPTIONS:
                    raise SchemaChangeError(f"option {change.key!r} cannot be changed on an existing table")
                self.options[change.key] = change.value
        elif isinstance(change, RemoveOption):
            if change.key in IMMUTABLE_OPTIONS and change.key in self.options:
                raise SchemaChangeError(f"option {change.key!r} cannot be removed from an existing table")
            self.options.pop(change.key, None)
        elif isinstance(change, UpdateComment):
            self.comment = change.comment
        elif isinstance(change, AddColumn):
            self._add(change)
        elif isinstance(change, DropColumn):
            self.refuse_keys(change.name, "drop")
            self.fields.pop(self.index(change.name))
            if not self.fields:
                raise SchemaChangeError(f"cannot drop {change.name!r}: a table needs at least one column")
        elif isinstance(change, RenameColumn):
            self._rename(change)
        elif isinstance(change, UpdateColumnType):
            self._update_type(change)
        elif isinstance(change, UpdateColumnNullability):
            i = self.index(change.name)
            old = self.fields[i].type
            if change.nullable and change.name in self.schema.primary_keys:
                raise SchemaChangeError(f"cannot make primary key column {change.name!r} nullable")
            if old.nullable and not change.nullable:
                raise SchemaChangeError(
                    f"cannot make column {change.name!r} NOT NULL: files written before may hold nulls")
            self.fields[i] = replace(self.fields[i], type=old.copy(nullable=change.nullable))
        elif isinstance(change, UpdateColumnComment):
            i = self.index(change.name)
            self.fields[i] = replace(self.fields[i], description=change.comment)
        elif isinstance(change, UpdateColumnPosition):
            moved = self.fields.pop(self.index(change.name))
            if change.position.reference == change.name:
                raise SchemaChangeError(f"cannot move column {change.name!r} relative to itself")
            self.insert(moved, change.position)
        else:
            raise SchemaChangeError(f"unknown schema change {change!r}")

    def _add(self, change: AddColumn) -> None:
        try:
            validate_name("column", change.name)
        except InvalidNameError as exc:
            raise SchemaChangeError(str(exc)) from exc
        if any(f.name == change.name for f in self.fields):
            raise SchemaChangeError(f"column {change.name!r} already exists")
        new_type = _as_paimon(change.type)
        if not new_type.nullable:
            raise SchemaChangeError(
                f"cannot add column {change.name!r} as NOT NULL: rows written before have no value for it")
        self.last_id[0] += 1
        field_id = self.last_id[0]
        new_type = reassign_field_ids(new_type, self.last_id)
        self.insert(DataField(id=field_id, name=change.name, type=new_type, description=change.comment),
                    change.position)

    def _rename(self, change: RenameColumn) -> None:
        self.refuse_keys(change.name, "rename")
        try:
            validate_name("column", change.new_name)
        except InvalidNameError as exc:
            raise SchemaChangeError(str(exc)) from exc
        i = self.index(change.name)
        if change.new_name != change.name and any(f.name == change.new_name for f in self.fields):
            raise SchemaChangeError(f"cannot rename {change.name!r}: column {change.new_name!r} already exists")
        self.fields[i] = replace(self.fields[i], name=change.new_name)
        self.options = _rename_in_options(self.options, change.name, change.new_name)

    def _update_type(self, change: UpdateColumnType) -> None:
        self.refuse_keys(change.name, "change the type of")
        i = self.index(change.name)
        old = self.fields[i].type
        keep = change.keep_nullability or isinstance(change.type, pa.DataType)
        new = _as_paimon(change.type, old.nullable)
        if keep:
            new = new.copy(nullable=old.nullable)
        if not is_safe_widening(old, new):
            raise SchemaChangeError(
                f"cannot change column {change.name!r} from {old} to {new}: only changes that keep every "
                "value exactly are allowed (wider integers or decimals, FLOAT to DOUBLE, longer strings, "
                "NOT NULL to nullable...)")
        self.fields[i] = replace(self.fields[i], type=_carry_field_ids(old, new))


def _carry_field_ids(old: DataType, new: DataType) -> DataType:
    """``new`` with the ROW field ids of ``old`` (same shape: only the types were widened)."""
    if old.root is TypeRoot.ROW and new.root is TypeRoot.ROW:
        fields = tuple(replace(b, id=a.id, type=_carry_field_ids(a.type, b.type))
                       for a, b in zip(old.fields or (), new.fields or (), strict=True))
        return replace(new, fields=fields)
    if old.root is new.root and old.root in (TypeRoot.ARRAY, TypeRoot.MULTISET):
        return replace(new, element=_carry_field_ids(old.element, new.element))  # type: ignore[arg-type]
    if old.root is new.root is TypeRoot.MAP:
        return replace(new, key=_carry_field_ids(old.key, new.key),  # type: ignore[arg-type]
                       value=_carry_field_ids(old.value, new.value))  # type: ignore[arg-type]
    return new


def _rename_in_options(options: Mapping[str, str], old: str, new: str) -> dict[str, str]:
    """Options naming column ``old`` rewritten to ``new`` (see :func:`rename_columns_in_options`)."""
    return rename_columns_in_options(options, {old: new})


def rename_columns_in_options(options: Mapping[str, str], names: Mapping[str, str | None]) -> dict[str, str]:
    """Options naming columns rewritten through ``names`` (name -> new name, or None for a column
    to leave out), every name at once: ``sequence.field`` and ``bucket-key`` values,
    ``fields.<columns>.<option>`` keys and ``fields.*.sequence-group`` values. Names not in
    ``names`` are kept. A ``fields.`` key naming a left-out column is dropped, and so is a list
    option left with no name."""
    def rename_list(value: str) -> str | None:
        parts = []
        for part in value.split(","):
            name = part.strip()
            if name in names:
                if names[name] is None:
                    continue
                part = names[name]  # type: ignore[assignment]
            parts.append(part)
        return ",".join(parts) if parts else None

    out: dict[str, str] = {}
    for key, value in options.items():
        renamed: str | None = value
        if key in ("sequence.field", "bucket-key"):
            renamed = rename_list(value)
        if key.startswith("fields."):
            head, _, suffix = key[len("fields."):].rpartition(".")
            if head:
                if any(names.get(part.strip(), "") is None for part in head.split(",")):
                    continue
                key = f"fields.{rename_list(head)}.{suffix}"
            if suffix == "sequence-group":
                renamed = rename_list(value)
        if renamed is not None:
            out[key] = renamed
    return out


def apply_changes(schema: TableSchema, changes: Sequence[SchemaChange], *,
                  time_millis: int | None = None) -> TableSchema:
    """The schema that follows ``schema`` after ``changes`` (applied in order), with id + 1.

    Pure: nothing is written. New columns (and fields nested in them) get ids above
    ``highest_field_id``; ids are never reused. Raises SchemaChangeError naming the column or
    option for a change that is not allowed: unknown or existing columns, dropping, renaming or
    retyping partition / primary-key columns, dropping every column, adding a NOT NULL column,
    type changes that are not safe widenings, NOT NULL on an existing column, changing an
    immutable option (``bucket``, ``merge-engine``, ``bucket-key``, ...). The result is checked
    with :func:`validate_table_schema` (SchemaError).
    """
    state = _Evolution(schema)
    for change in changes:
        if not isinstance(change, SchemaChange):
            raise SchemaChangeError(f"not a schema change: {change!r}")
        state.apply(change)
    result = TableSchema(
        id=schema.id + 1, fields=tuple(state.fields), highest_field_id=state.last_id[0],
        partition_keys=schema.partition_keys, primary_keys=schema.primary_keys, options=state.options,
        comment=state.comment, time_millis=_now_millis() if time_millis is None else time_millis)
    validate_table_schema(result)
    return result


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
        the table-option check of :class:`~paimonflow.core.options.CoreOptions`) runs on the new
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
    from .options import CoreOptions  # options are another module's concern; imported late

    options = CoreOptions.from_map(schema.options)
    options.check_combinations()
    return options


# -- reading data files written under an older schema ------------------------------------------


def index_mapping(read_fields: Sequence[DataField], data_fields: Sequence[DataField]) -> tuple[int, ...] | None:
    """For each read field, the index of the data field with the same id (-1 if the data file
    has none: the column was added later). None when the mapping is the identity."""
    position = {f.id: i for i, f in enumerate(data_fields)}
    mapping = tuple(position.get(f.id, -1) for f in read_fields)
    if len(read_fields) == len(data_fields) and mapping == tuple(range(len(read_fields))):
        return None
    return mapping


def current_names(data_schema: TableSchema, read_schema: TableSchema) -> dict[str, str | None]:
    """Each column name of ``data_schema`` -> its name in ``read_schema`` (None if dropped)."""
    now = {f.id: f.name for f in read_schema.fields}
    return {f.name: now.get(f.id) for f in data_schema.fields}


def schema_for_time_travel(snapshot_schema: TableSchema, current: TableSchema) -> TableSchema:
    """The schema a read of an older (or newer) snapshot uses, as in Paimon's time travel: the
    columns, keys and id of ``snapshot_schema`` (the schema the snapshot was committed under)
    with the table's current options (``current``). Options that name columns are mapped to the
    snapshot's column names through field ids (a column renamed since keeps its options), and
    options of columns the snapshot's schema lacks are left out."""
    if snapshot_schema.id == current.id:
        return current
    then = {f.id: f.name for f in snapshot_schema.fields}
    names = {f.name: then.get(f.id) for f in current.fields}
    return replace(snapshot_schema, options=rename_columns_in_options(current.options, names))


def file_columns(data_schema: TableSchema, read_schema: TableSchema,
                 columns: Sequence[str] | None = None) -> list[str]:
    """The column names to read from a file written under ``data_schema`` to produce
    ``columns`` (default: all) of ``read_schema``; columns added later are left out.

    Raises SchemaError for a column ``read_schema`` does not have.
    """
    by_id = {f.id: f.name for f in data_schema.fields}
    out = []
    for name in columns if columns is not None else read_schema.field_names:
        target = read_schema.field(name)
        if target is None:
            raise SchemaError(f"unknown column {name!r}; the table has {read_schema.field_names}")
        if target.id in by_id:
            out.append(by_id[target.id])
    return out


def evolve_table(table: pa.Table, data_schema: TableSchema, read_schema: TableSchema,
                 columns: Sequence[str] | None = None) -> pa.Table:
    """``columns`` (default: all) of ``read_schema`` from ``table``, read from a file written
    under ``data_schema`` (columns named as in ``data_schema``; extra columns are ignored).

    Columns are matched by field id: renamed columns take their new name, dropped columns are
    left out, columns added later (or missing from ``table``) are all null, widened types are cast
    (vectorized). ROW fields are matched by id too, at any depth. The result has exactly the
    fields of ``read_schema.arrow_schema()``. Raises SchemaError for an unknown column or data
    that cannot be cast.
    """
    wanted = list(columns) if columns is not None else read_schema.field_names
    target_schema = read_schema.arrow_schema()
    targets = {f.name: f for f in read_schema.fields}
    sources = {f.id: f for f in data_schema.fields}
    present = set(table.column_names)
    arrays, out_fields = [], []
    for name in wanted:
        target = targets.get(name)
        if target is None:
            raise SchemaError(f"unknown column {name!r}; the table has {read_schema.field_names}")
        out_field = target_schema.field(name)
        source = sources.get(target.id)
        if source is None or source.name not in present:
            column = pa.chunked_array([pa.nulls(table.num_rows, out_field.type)], out_field.type)
        else:
            try:
                column = _evolve_column(table.column(source.name), source.type, target.type, out_field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise SchemaError(
                    f"column {name!r}: data written as {source.type} cannot be read as {target.type}: {exc}"
                ) from None
        arrays.append(column)
        out_fields.append(out_field)
    if not arrays:
        return pa.table({"_": pa.nulls(table.num_rows)}).drop_columns(["_"])
    return pa.Table.from_arrays(arrays, schema=pa.schema(out_fields))


def _evolve_column(column: pa.ChunkedArray, source: DataType, target: DataType,
                   arrow_type: pa.DataType) -> pa.ChunkedArray:
    if _needs_restructure(source, target):
        column = pa.chunked_array([_evolve_array(chunk, source, target) for chunk in column.chunks],
                                  to_arrow(target))
    return column if column.type == arrow_type else pc.cast(column, arrow_type)


def _needs_restructure(source: DataType, target: DataType) -> bool:
    """True if nested ROW fields were added, dropped, renamed or reordered between the two types."""
    if source.root is TypeRoot.ROW and target.root is TypeRoot.ROW:
        s_fields, t_fields = source.fields or (), target.fields or ()
        if [(f.id, f.name) for f in s_fields] != [(f.id, f.name) for f in t_fields]:
            return True
        return any(_needs_restructure(a.type, b.type) for a, b in zip(s_fields, t_fields, strict=True))
    if source.root is target.root and source.root in (TypeRoot.ARRAY, TypeRoot.MULTISET, TypeRoot.MAP):
        return any(_needs_restructure(a, b) for a, b in zip(source.children(), target.children(), strict=True))
    return False


def _evolve_array(array: pa.Array, source: DataType, target: DataType) -> pa.Array:
    """One array of ``source`` values as ``to_arrow(target)`` (ROW fields matched by id)."""
    target_type = to_arrow(target)
    mask = array.is_null() if array.null_count else None
    if source.root is TypeRoot.ROW and target.root is TypeRoot.ROW:
        children = {f.id: (f, child) for f, child in zip(source.fields or (), array.flatten(), strict=True)}
        arrays = []
        for f in target.fields or ():
            child_type = to_arrow(f.type)
            if f.id in children:
                source_field, child = children[f.id]
                child = _evolve_array(child, source_field.type, f.type)
            else:
                child = pa.nulls(len(array), child_type)
            arrays.append(child)
        return pa.StructArray.from_arrays(arrays, fields=list(target_type), mask=mask)
    if source.root is target.root and source.root in (TypeRoot.ARRAY, TypeRoot.MULTISET, TypeRoot.MAP):
        if len(array) == 0:
            return pa.array([], target_type)
        # Rebase a sliced array on its own values: Arrow cannot combine sliced offsets and a mask.
        offsets, start = array.offsets, array.offsets[0].as_py()
        children = array.values.slice(start, array.offsets[-1].as_py() - start)
        if start or array.offset or pa.types.is_large_list(array.type):
            offsets = pc.cast(pc.subtract(offsets, pa.scalar(start, offsets.type)), pa.int32())
        if source.root is TypeRoot.ARRAY:
            values = _evolve_array(children, source.element, target.element)  # type: ignore[arg-type]
            return pa.ListArray.from_arrays(offsets, values, type=target_type, mask=mask)
        keys, items = children.flatten()
        key_target = target.key if target.root is TypeRoot.MAP else target.element
        key_source = source.key if source.root is TypeRoot.MAP else source.element
        keys = _evolve_array(keys, key_source, key_target)  # type: ignore[arg-type]
        if source.root is TypeRoot.MAP:
            items = _evolve_array(items, source.value, target.value)  # type: ignore[arg-type]
        return pa.MapArray.from_arrays(offsets, keys, items, type=target_type, mask=mask)
    return array if array.type == target_type else pc.cast(array, target_type)


# -- helpers kept for other modules ------------------------------------------------------------


def type_to_json_value(t: DataType) -> Any:
    """The JSON value of ``t`` in a schema file (see :func:`paimonflow.core.types.type_to_json`)."""
    return type_to_json(t)


def to_arrow_type_from_text(text: str) -> pa.DataType:
    """The Arrow type of an atomic Paimon type string (``"DECIMAL(10, 2)"``)."""
    return to_arrow(parse_type_text(text))
