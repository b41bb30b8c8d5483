"""Table schemas: the model (:class:`TableSchema`), the user-facing builder (:class:`Schema`) and
their checks. Files of schemas: :mod:`.schema_manager`; changes: :mod:`.schema_changes`; reading
data written under an older schema: :mod:`paimonflow.core.read.evolution`.

A schema file is the JSON Java Paimon's ``SchemaSerializer`` writes: ``version`` (3), ``id``,
``fields``, ``highestFieldId``, ``partitionKeys``, ``primaryKeys``, ``options``, ``comment`` (only
when set) and ``timeMillis``, in that order, indented by two spaces. pypaimon 2.1.0 writes the same
layout except that it writes ``"comment": null`` (which Java reads back as the text "null") and
the type spellings noted in :mod:`paimonflow.core.data.types`; paimonflow reads both and writes Java's.

Schema ids count up from 0 and every version is a new file published with create-if-absent, so
concurrent writers never overwrite each other. Field ids are never reused: a new column, and
every field nested in it, takes ids above ``highestFieldId``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from ..data.types import (
    UNKEYABLE_ROOTS,
    DataField,
    DataType,
    collect_field_ids,
    field_to_json,
    from_arrow,
    highest_field_id,
    parse_field,
    parse_type_text,
    reassign_field_ids,
    row_of,
    to_arrow,
    type_to_json,
)
from ..data.variant import check_variant_columns
from ..errors import (
    CorruptMetadataError,
    InvalidNameError,
    SchemaError,
)
from ..names import validate_name
from .metafile import load_object

SCHEMA_VERSION = 3
_PAIMON_07_VERSION = 1
_PAIMON_08_VERSION = 2
PRIMARY_KEY_NULLABLE = "primary-key.nullable"


def is_true(value: str | None) -> bool:
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
        keys_nullable = is_true(self.options.get(PRIMARY_KEY_NULLABLE))
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
                description = column[2] if len(column) > 2 else None
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
        keys_nullable = is_true(options.get(PRIMARY_KEY_NULLABLE))
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
                             time_millis=now_millis() if time_millis is None else time_millis)
        validate_table_schema(schema)
        return schema


def now_millis() -> int:
    return int(time.time() * 1000)


def _check_row_tracking(schema: TableSchema) -> None:
    """Paimon's rules: row ids are for append tables without fixed buckets (``bucket = -1``), and
    data evolution needs row tracking."""
    tracking = is_true(schema.options.get("row-tracking.enabled"))
    if tracking and schema.primary_keys:
        raise SchemaError(f"a row-tracking table cannot have a primary key (it has {list(schema.primary_keys)})")
    if tracking and schema.options.get("bucket", "-1").strip() != "-1":
        raise SchemaError(f"a row-tracking table needs bucket = -1, not {schema.options['bucket'].strip()}")
    if is_true(schema.options.get("data-evolution.enabled")) and not tracking:
        raise SchemaError("data-evolution.enabled needs row-tracking.enabled = true")


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
            if types[k].root in UNKEYABLE_ROOTS:
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
    bucket = schema.options.get("bucket", "-1").strip()
    if not schema.primary_keys and bucket.isdigit() and int(bucket) > 0 and not _split_list(schema.options.get("bucket-key")):
        raise SchemaError(f"an append table (no primary key) with 'bucket' = {bucket} needs 'bucket-key' (the columns "
                          "rows are hashed by); or set 'bucket' = -1 for an append table without buckets")
    for k in _split_list(schema.options.get("bucket-key")):
        if k not in types:
            raise SchemaError(f"bucket-key column {k!r} is not a column of the table {names}")
        if k in schema.partition_keys:
            raise SchemaError(f"bucket-key column {k!r} must not be a partition key")
        if schema.primary_keys and k not in schema.primary_keys:
            raise SchemaError(f"bucket-key column {k!r} must be part of the primary key {list(schema.primary_keys)}")
        if types[k].root in UNKEYABLE_ROOTS:
            raise SchemaError(f"bucket-key column {k!r} has nested type {types[k]}")
    _check_row_tracking(schema)
    check_variant_columns(schema.fields, schema.options)


# -- helpers kept for other modules ------------------------------------------------------------


def type_to_json_value(t: DataType) -> Any:
    """The JSON value of ``t`` in a schema file (see :func:`paimonflow.core.data.types.type_to_json`)."""
    return type_to_json(t)


def to_arrow_type_from_text(text: str) -> pa.DataType:
    """The Arrow type of an atomic Paimon type string (``"DECIMAL(10, 2)"``)."""
    return to_arrow(parse_type_text(text))
