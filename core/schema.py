"""Table schemas: the ``schema/schema-N`` files, creating schemas, evolving them, and reading
old data files by field id."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .errors import CorruptMetadataError, FileNotFoundStorageError, SchemaChangeError, SchemaError
from .names import validate_name
from .types import (
    DataField,
    DataType,
    field_to_json,
    from_arrow,
    highest_nested_id,
    is_safe_widening,
    parse_field,
    parse_type_text,
    to_arrow,
    type_to_json,
)

SCHEMA_VERSION = 3
_UNSUPPORTED_KEY_ROOTS = ("ARRAY", "MAP", "MULTISET", "ROW")


def type_to_json_value(t: DataType) -> Any:
    return type_to_json(t)


def to_arrow_type_from_text(text: str) -> pa.DataType:
    return to_arrow(parse_type_text(text))


@dataclass(frozen=True, slots=True, kw_only=True)
class TableSchema:
    """One version of a table's schema, as stored in ``schema/schema-<id>``."""

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
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """Primary key minus partition keys (what data files and bucketing use)."""
        trimmed = tuple(k for k in self.primary_keys if k not in self.partition_keys)
        if self.primary_keys and not trimmed:
            raise SchemaError("the primary key must contain at least one column that is not a partition key")
        return trimmed

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        configured = self.options.get("bucket-key")
        if configured:
            return tuple(k.strip() for k in configured.split(",") if k.strip())
        return self.trimmed_primary_keys

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(f.name, to_arrow(f.type), f.type.nullable) for f in self.fields])

    # -- JSON --------------------------------------------------------------------------------

    def to_json(self) -> bytes:
        doc = {
            "version": self.version,
            "id": self.id,
            "fields": [field_to_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
            "comment": self.comment,
            "timeMillis": self.time_millis,
        }
        return json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes, path: str = "<schema>") -> TableSchema:
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CorruptMetadataError(path, f"not valid JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise CorruptMetadataError(path, "a schema must be a JSON object")
        try:
            fields = tuple(parse_field(f) for f in doc["fields"])
            schema_id = doc["id"]
            if not isinstance(schema_id, int) or isinstance(schema_id, bool):
                raise TypeError("id must be an integer")
            options = doc.get("options") or {}
            if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
                raise TypeError("options must map strings to strings")
            return cls(
                version=int(doc.get("version", 1)),
                id=schema_id,
                fields=fields,
                highest_field_id=int(doc.get("highestFieldId", highest_nested_id(fields))),
                partition_keys=tuple(doc.get("partitionKeys") or ()),
                primary_keys=tuple(doc.get("primaryKeys") or ()),
                options=dict(options),
                comment=doc.get("comment"),
                time_millis=int(doc.get("timeMillis") or 0),
            )
        except (KeyError, TypeError, ValueError, SchemaError) as exc:
            raise CorruptMetadataError(path, f"invalid schema: {exc}") from None


# -- creating ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Schema:
    """What a user asks for when creating a table."""

    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None

    @classmethod
    def from_arrow(cls, schema: pa.Schema, *, primary_keys: Sequence[str] = (), partition_keys: Sequence[str] = (),
                   options: Mapping[str, str] | None = None, comment: str | None = None) -> Schema:
        counter = [0]
        fields = []
        for f in schema:
            validate_name("column", f.name)
            fid = counter[0]
            counter[0] += 1
            try:
                paimon_type = from_arrow(f.type, f.nullable, counter)
            except SchemaError as exc:
                raise SchemaError(f"column {f.name!r}: {exc}") from None
            fields.append(DataField(id=fid, name=f.name, type=paimon_type))
        return cls(fields=tuple(fields), partition_keys=tuple(partition_keys), primary_keys=tuple(primary_keys),
                   options=dict(options or {}), comment=comment)

    def to_table_schema(self, schema_id: int = 0) -> TableSchema:
        names = [f.name for f in self.fields]
        if not names:
            raise SchemaError("a table needs at least one column")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SchemaError(f"duplicate column names: {dupes}")
        for kind, keys in (("primary key", self.primary_keys), ("partition key", self.partition_keys)):
            if len(set(keys)) != len(keys):
                raise SchemaError(f"duplicate {kind} columns: {list(keys)}")
            missing = [k for k in keys if k not in names]
            if missing:
                raise SchemaError(f"{kind} columns {missing} are not columns of the table ({names})")
        fields = list(self.fields)
        for i, f in enumerate(fields):
            if f.name in self.primary_keys:
                if f.type.root in _UNSUPPORTED_KEY_ROOTS:
                    raise SchemaError(f"primary key column {f.name!r} has type {f.type.root}, which cannot be a key")
                fields[i] = replace(f, type=f.type.copy(nullable=False))
            if f.name in self.partition_keys and f.type.root in _UNSUPPORTED_KEY_ROOTS:
                raise SchemaError(f"partition column {f.name!r} has type {f.type.root}, which cannot be a partition")
        schema = TableSchema(
            id=schema_id,
            fields=tuple(fields),
            highest_field_id=highest_nested_id(fields),
            partition_keys=tuple(self.partition_keys),
            primary_keys=tuple(self.primary_keys),
            options=dict(self.options),
            comment=self.comment,
            time_millis=int(time.time() * 1000),
        )
        if schema.primary_keys:
            schema.trimmed_primary_keys  # noqa: B018 - validates
            outside = [k for k in schema.partition_keys if k not in schema.primary_keys]
            if outside and str(schema.options.get("bucket", "-1")).strip() != "-1":
                # Paimon's SchemaValidation.validateBucket: cross-partition update needs dynamic buckets.
                raise SchemaError(
                    f"the primary key {list(schema.primary_keys)} does not include the partition keys {outside}: "
                    "a cross-partition update table needs bucket = -1 (dynamic bucket mode); "
                    "add the partition keys to the primary key"
                )
        for k in (x.strip() for x in (self.options.get("sequence.field") or "").split(",") if x.strip()):
            if k not in names:
                raise SchemaError(f"sequence.field column {k!r} is not a column of the table")
        for k in schema.bucket_keys:
            if k not in names:
                raise SchemaError(f"bucket-key column {k!r} is not a column of the table")
            if schema.primary_keys and k not in schema.trimmed_primary_keys:
                raise SchemaError(f"bucket-key column {k!r} must be part of the primary key (minus partition keys)")
        return schema


# -- evolution ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SetOption:
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class RemoveOption:
    key: str


@dataclass(frozen=True, slots=True)
class AddColumn:
    name: str
    type: DataType | pa.DataType
    comment: str | None = None
    after: str | None = None  # None = last; "" = first


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str


@dataclass(frozen=True, slots=True)
class RenameColumn:
    name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class UpdateColumnType:
    name: str
    type: DataType | pa.DataType


@dataclass(frozen=True, slots=True)
class UpdateComment:
    comment: str | None


SchemaChange = SetOption | RemoveOption | AddColumn | DropColumn | RenameColumn | UpdateColumnType | UpdateComment

_IMMUTABLE_OPTIONS = ("bucket", "merge-engine", "primary-key", "partition", "bucket-key", "sequence.field",
                      "rowkind.field")


def _as_paimon(t: DataType | pa.DataType, nullable: bool = True) -> DataType:
    return t if isinstance(t, DataType) else from_arrow(t, nullable)


def apply_changes(schema: TableSchema, changes: Sequence[SchemaChange]) -> TableSchema:
    """The next schema after ``changes`` (validated; raises SchemaChangeError naming the problem)."""
    fields = list(schema.fields)
    options = dict(schema.options)
    comment = schema.comment
    highest = schema.highest_field_id
    keys = set(schema.primary_keys) | set(schema.partition_keys)

    def index(name: str) -> int:
        for i, f in enumerate(fields):
            if f.name == name:
                return i
        raise SchemaChangeError(f"column {name!r} does not exist")

    for change in changes:
        if isinstance(change, SetOption):
            if change.key in _IMMUTABLE_OPTIONS and options.get(change.key) != change.value:
                raise SchemaChangeError(f"option {change.key!r} cannot be changed on an existing table")
            options[change.key] = change.value
        elif isinstance(change, RemoveOption):
            if change.key in _IMMUTABLE_OPTIONS:
                raise SchemaChangeError(f"option {change.key!r} cannot be removed from an existing table")
            options.pop(change.key, None)
        elif isinstance(change, AddColumn):
            validate_name("column", change.name)
            if any(f.name == change.name for f in fields):
                raise SchemaChangeError(f"column {change.name!r} already exists")
            new_type = _as_paimon(change.type)
            if not new_type.nullable:
                raise SchemaChangeError(f"cannot add NOT NULL column {change.name!r}: existing rows have no value")
            highest += 1
            fid = highest
            if new_type.root == "ROW":
                counter = [highest + 1]
                new_type = from_arrow(to_arrow(new_type), True, counter)
                highest = counter[0] - 1
            new_field = DataField(id=fid, name=change.name, type=new_type, description=change.comment)
            if change.after is None:
                fields.append(new_field)
            elif change.after == "":
                fields.insert(0, new_field)
            else:
                fields.insert(index(change.after) + 1, new_field)
        elif isinstance(change, DropColumn):
            if change.name in keys:
                raise SchemaChangeError(f"cannot drop primary key or partition column {change.name!r}")
            fields.pop(index(change.name))
            if not fields:
                raise SchemaChangeError("cannot drop the last column")
        elif isinstance(change, RenameColumn):
            validate_name("column", change.new_name)
            if change.name in keys:
                raise SchemaChangeError(f"cannot rename primary key or partition column {change.name!r}")
            if any(f.name == change.new_name for f in fields):
                raise SchemaChangeError(f"column {change.new_name!r} already exists")
            i = index(change.name)
            fields[i] = replace(fields[i], name=change.new_name)
        elif isinstance(change, UpdateColumnType):
            i = index(change.name)
            if change.name in keys:
                raise SchemaChangeError(f"cannot change the type of primary key or partition column {change.name!r}")
            old = fields[i].type
            new = _as_paimon(change.type, old.nullable)
            if not is_safe_widening(old, new):
                raise SchemaChangeError(
                    f"cannot change column {change.name!r} from {type_to_json(old)} to {type_to_json(new)}: "
                    "only safe widening is allowed"
                )
            fields[i] = replace(fields[i], type=new)
        elif isinstance(change, UpdateComment):
            comment = change.comment
        else:
            raise SchemaChangeError(f"unknown schema change {change!r}")
    return TableSchema(id=schema.id + 1, fields=tuple(fields), highest_field_id=highest,
                       partition_keys=schema.partition_keys, primary_keys=schema.primary_keys, options=options,
                       comment=comment, time_millis=int(time.time() * 1000))


class SchemaManager:
    """Reads and writes ``<table>/schema/schema-<id>`` (atomically, with create-if-absent)."""

    def __init__(self, file_io, table_path: str) -> None:
        from .fs import join

        self._file_io = file_io
        self.directory = join(table_path, "schema")
        self._join = join

    def path(self, schema_id: int) -> str:
        return self._join(self.directory, f"schema-{schema_id}")

    def list_ids(self) -> list[int]:
        ids = []
        for status in self._file_io.list_dir(self.directory):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            if name.startswith("schema-") and name[7:].isdigit():
                ids.append(int(name[7:]))
        return sorted(ids)

    def schema(self, schema_id: int) -> TableSchema:
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
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def create(self, schema: TableSchema) -> bool:
        """Publish ``schema-<id>``; False if it already exists."""
        return self._file_io.create_if_absent(self.path(schema.id), schema.to_json())

    def commit_changes(self, changes: Sequence[SchemaChange], max_attempts: int = 10) -> TableSchema:
        for _ in range(max_attempts):
            current = self.latest()
            if current is None:
                raise SchemaError("the table has no schema")
            nxt = apply_changes(current, changes)
            from .options import CoreOptions

            CoreOptions.from_map(nxt.options)
            if self.create(nxt):
                return nxt
        raise SchemaChangeError("schema changed concurrently too often; try again")


# -- reading old files -------------------------------------------------------------------------


def evolve_table(table: pa.Table, data_schema: TableSchema, read_schema: TableSchema,
                 columns: Sequence[str] | None = None) -> pa.Table:
    """Columns ``columns`` (default: all) of ``read_schema`` from ``table`` written under ``data_schema``.

    Fields are matched by id: renamed columns take their new name, columns added later are null,
    widened types are cast (vectorized).
    """
    wanted = list(columns) if columns is not None else read_schema.field_names
    by_id = {f.id: f for f in data_schema.fields}
    arrays, out_fields = [], []
    n = table.num_rows
    for name in wanted:
        target = read_schema.field(name)
        if target is None:
            raise SchemaError(f"unknown column {name!r}")
        target_type = to_arrow(target.type)
        source = by_id.get(target.id)
        if source is None or source.name not in table.column_names:
            column = pa.nulls(n, target_type)
        else:
            column = table.column(source.name)
            if column.type != target_type:
                column = pc.cast(column, target_type)
        arrays.append(column)
        out_fields.append(pa.field(name, target_type, target.type.nullable))
    return pa.Table.from_arrays(arrays, schema=pa.schema(out_fields)) if arrays else pa.table({})
