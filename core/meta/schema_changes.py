"""Schema evolution: the typed changes (:class:`SetOption`, :class:`AddColumn`, :class:`RenameColumn`,
...) and :func:`apply_changes`, which turns a schema and a list of changes into the next schema
with Paimon's rules (field ids never reused, only safe type widenings, immutable options refused).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import pyarrow as pa

from ..data.types import (
    DataField,
    DataType,
    TypeRoot,
    from_arrow,
    highest_field_id,
    is_safe_widening,
    reassign_field_ids,
)
from ..errors import (
    InvalidNameError,
    SchemaChangeError,
)
from ..names import validate_name
from .schema import PRIMARY_KEY_NULLABLE, TableSchema, is_true, now_millis, validate_table_schema

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
    """Widen a non-key column's type (only :func:`~paimonflow.core.data.types.is_safe_widening` changes).

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
            if position is None and is_true(self.options.get("add-column-before-partition")):
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
        comment=state.comment, time_millis=now_millis() if time_millis is None else time_millis)
    validate_table_schema(result)
    return result
