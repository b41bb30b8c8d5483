"""Airflow DDL operators: create, alter and drop Paimon tables as DAG tasks.

Each is metadata work on the core engine in the task's process (a schema file written or a table
folder deleted; no Spark application starts), through the same core functions as the command
line's ``create-table``, ``alter`` and ``drop-table``: :meth:`Catalog.create_table
<paimonflow.core.catalog.Catalog.create_table>`, :meth:`Table.alter
<paimonflow.core.table.Table.alter>` and :meth:`Catalog.drop_table
<paimonflow.core.catalog.Catalog.drop_table>`.

Every operator is keyword-only; its templated fields are stored as given and checked in
``execute``, before anything is written: bad input fails the task with one typed line
(:mod:`paimonflow.core.errors`) naming the field. Each returns a JSON-able dict to XCom and puts
``{"table", "job", "schema_id"}`` in the extra of the Asset events of its outlets. A retried task
is harmless: an identical table created by the first try is success, changes already in the
schema are not made twice, and a table already dropped is what ``if_missing`` says.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import Asset, BaseOperator

from paimonflow.core.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    SchemaChangeError,
    SchemaError,
    SourceError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

from .hook import PaimonHook
from .links import TableHealthLink

if TYPE_CHECKING:
    import pyarrow as pa

    from paimonflow.core.catalog import Catalog
    from paimonflow.core.data.types import DataType
    from paimonflow.core.meta.schema import Schema, TableSchema
    from paimonflow.core.meta.schema_changes import SchemaChange
    from paimonflow.core.table import Table

IF_EXISTS = ("fail", "ignore", "skip")
IF_MISSING = ("fail", "ignore", "skip")


def _absent(value: object) -> bool:
    """A templated field that was not given: None, or what a template rendering nothing left."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "None"))


def _choice(field: str, value: object, choices: Sequence[str]) -> str:
    text = value.strip() if isinstance(value, str) else value
    if text not in choices:
        raise InvalidArgumentError(f"{field} must be {', '.join(choices[:-1])} or {choices[-1]}, not {value!r}")
    return str(text)


def _document(field: str, value: object) -> object:
    """A templated structured field: the object given, or JSON text (what a template rendering a
    Variable or ``dag_run.conf`` value as text leaves); None when not given."""
    if _absent(value):
        return None
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise InvalidArgumentError(f"{field} must be a list or mapping, or its JSON text: {exc}") from None
    return value


def _names(field: str, value: object) -> list[str]:
    """A templated list of column names: a list, or one text of names separated by commas."""
    if _absent(value):
        return []
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) and i.strip() for i in items):
        raise InvalidArgumentError(f"{field} must be a list of column names or 'a, b', not {value!r}")
    return [i.strip() for i in items]


def _type_of(where: str, value: object) -> DataType:
    """A Paimon type from its SQL text (``"BIGINT NOT NULL"``, ``"DECIMAL(10, 2)"``, ``"INT ARRAY"``)
    or its schema-file JSON object (``{"type": "ARRAY", "element": "INT"}``)."""
    from paimonflow.core.data.types import parse_type
    from paimonflow.core.errors import UnsupportedError

    try:
        return parse_type(value)
    except (SchemaError, UnsupportedError) as exc:
        raise SchemaError(f"{where}: {exc}") from None


class _TableDdlOperator(BaseOperator):
    """Base: one DDL statement on one table, on the core engine."""

    operator_extra_links = (TableHealthLink(),)
    job: ClassVar[str] = ""
    template_fields: Sequence[str] = ("table", "paimon_conn_id", "warehouse")
    ui_color = "#eaf5e4"

    def __init__(self, *, table: str, paimon_conn_id: str = PaimonHook.default_conn_name,
                 warehouse: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table, self.paimon_conn_id, self.warehouse = table, paimon_conn_id, warehouse

    @cached_property
    def hook(self) -> PaimonHook:
        """The connection's hook (or the embedded default for an explicit ``warehouse=``)."""
        if _absent(self.warehouse):
            return PaimonHook(self.paimon_conn_id)
        return PaimonHook(None, warehouse=str(self.warehouse))

    def run(self, catalog: Catalog) -> dict[str, Any]:
        raise NotImplementedError

    def execute(self, context) -> dict[str, Any]:
        from paimonflow.core.names import parse_table_name

        if not isinstance(self.table, str):
            raise InvalidArgumentError(f"table must be '<database>.<table>', not {self.table!r}")
        self.table = self.table.strip()
        parse_table_name(self.table)
        self.log.info("paimonflow %s on %s", self.job, self.table)
        result = self.run(self.hook.get_conn())
        events = context.get("outlet_events")
        if events is not None:
            for outlet in self.outlets or ():
                if isinstance(outlet, Asset):
                    events[outlet].extra = {"table": self.table, "job": self.job,
                                            "schema_id": result.get("schema_id")}
        self.log.info("result: %s", result)
        return result


# -- creating -----------------------------------------------------------------------------------


def column_specs(columns: object) -> list[tuple[str, DataType, str | None]]:
    """``(name, type, comment)`` of each column of ``columns``: a list of mappings (``name``,
    ``type``, optional ``comment`` and ``nullable``) or one mapping of name to type, the types
    as SQL text or schema-file JSON objects, or the JSON text of either. Raises
    :class:`InvalidArgumentError` for a malformed entry, :class:`SchemaError` for a bad type."""
    value = _document("columns", columns)
    if isinstance(value, Mapping):
        value = [{"name": name, "type": spec} for name, spec in value.items()]
    if not isinstance(value, list | tuple) or not value:
        raise InvalidArgumentError("columns must be a non-empty list of {'name': ..., 'type': ...} or a mapping of "
                                   f"name to type, not {columns!r}")
    specs = []
    for i, item in enumerate(value):
        where = f"columns[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or "type" not in item:
            raise InvalidArgumentError(f"{where} must be a mapping with 'name' and 'type', not {item!r}")
        unknown = sorted(set(item) - {"name", "type", "comment", "nullable"})
        if unknown:
            raise InvalidArgumentError(f"{where} ({item['name']}): unknown keys {unknown} (name, type, comment, "
                                       "nullable)")
        data_type = _type_of(f"column {item['name']!r}", item["type"])
        nullable = item.get("nullable")
        if nullable is not None:
            if not isinstance(nullable, bool):
                raise InvalidArgumentError(f"{where} ({item['name']}): nullable must be true or false")
            data_type = data_type.copy(nullable=nullable)
        comment = item.get("comment")
        if comment is not None and not isinstance(comment, str):
            raise InvalidArgumentError(f"{where} ({item['name']}): comment must be text")
        specs.append((item["name"], data_type, comment))
    return specs


def sample_schema(like: str, storage_options: Mapping[str, str] | None = None) -> pa.Schema:
    """The columns of a sample file, as ``paimonflow create-table --like`` reads them (a Parquet
    or ORC file's schema, a CSV or JSON-lines file's as inferred; unsigned integer columns as the
    signed type holding every value). ``like`` is a file, or a folder whose first data file by
    name is taken; local or on the connection's storage (``s3://``: the file is copied to a
    temporary folder first). Raises :class:`SourceError` naming the path."""
    from paimonflow.core.cli.inputs import KINDS, schema_of
    from paimonflow.core.data.types import schema_holding_signed
    from paimonflow.core.fs import get_file_io

    io = get_file_io(like, storage_options or None)
    if not io.exists(like):
        raise SourceError(f"like: no file or folder at {like}")
    path = like
    if io.status(like).is_dir:
        found = [s.path for s in io.list_dir(like) if not s.is_dir and Path(s.path).suffix.lower() in KINDS
                 and not Path(s.path).name.startswith((".", "_"))]
        if not found:
            raise SourceError(f"like: no {', '.join(sorted(KINDS))} file in {like}")
        path = found[0]
    if "://" not in path or path.startswith("file://"):
        return schema_holding_signed(schema_of(Path(path.removeprefix("file://"))))
    with tempfile.TemporaryDirectory(prefix="paimonflow-like-") as folder:
        local = Path(folder) / ("sample" + Path(path).suffix.lower())
        local.write_bytes(io.read_bytes(path))
        try:
            return schema_holding_signed(schema_of(local))
        except SourceError as exc:
            raise SourceError(str(exc).replace(str(local), path)) from None


def schema_differences(existing: TableSchema, wanted: TableSchema) -> list[str]:
    """What differs between a table's schema and the one a create statement asks for (columns
    with their types and comments, keys, options, comment), one short text each; empty if they
    are the same definition."""
    out = []
    have, want = existing.field_names, wanted.field_names
    if have != want:
        out.append(f"columns {have} in the table, {want} asked")
    wanted_fields = {f.name: f for f in wanted.fields}
    for f in existing.fields:
        other = wanted_fields.get(f.name)
        if other is None:
            continue
        if str(f.type) != str(other.type):
            out.append(f"column {f.name}: {f.type} in the table, {other.type} asked")
        if f.description != other.description:
            out.append(f"column {f.name}: comment {f.description!r} in the table, {other.description!r} asked")
    for what in ("primary_keys", "partition_keys"):
        if list(getattr(existing, what)) != list(getattr(wanted, what)):
            out.append(f"{what.replace('_', ' ')} {list(getattr(existing, what))} in the table, "
                       f"{list(getattr(wanted, what))} asked")
    for key in sorted(set(existing.options) | set(wanted.options)):
        if existing.options.get(key) != wanted.options.get(key):
            out.append(f"option {key}: {existing.options.get(key)!r} in the table, {wanted.options.get(key)!r} asked")
    if existing.comment != wanted.comment:
        out.append(f"comment {existing.comment!r} in the table, {wanted.comment!r} asked")
    return out


class PaimonCreateTableOperator(_TableDdlOperator):
    """Create a table from its columns (``columns=``) or with the columns of a sample data file
    (``like=``), as ``paimonflow create-table`` does.

    Idempotent: an existing table with the same definition (columns, types, comments, keys,
    options, comment; a retry of this task, or the DAG's next run) is success with
    ``created: False``. ``if_exists`` says what a table of that name with another definition
    means: ``"fail"`` (default) raises :class:`~paimonflow.core.errors.TableAlreadyExistsError`
    listing the differences; ``"ignore"`` leaves it as it is (the differences are logged and in
    the result: ``CREATE TABLE IF NOT EXISTS``, for a table whose schema evolves later);
    ``"skip"`` skips the task (and by default its downstream tasks) whenever the table exists,
    whatever its definition. Creation itself is atomic: of two racing creators one creates and
    the other finds the table.

    :param table: ``<database>.<table>``. (templated)
    :param columns: a list of ``{"name", "type", "comment", "nullable"}`` mappings, or a mapping
        of name to type, or the JSON text of either; types are Paimon SQL types (``"BIGINT NOT
        NULL"``, ``"DECIMAL(10, 2)"``, ``"STRING"``, ``"INT ARRAY"``) or schema-file JSON objects
        (``{"type": "MAP", "key": "STRING NOT NULL", "value": "INT"}``). (templated)
    :param like: instead of ``columns``: a Parquet, ORC, CSV or JSON-lines file, or a folder of
        them (its first data file by name), whose columns the table takes. (templated)
    :param primary_keys: column names (a list, or ``"id, dt"``); they become NOT NULL. (templated)
    :param partition_keys: column names. (templated)
    :param options: Paimon table options (``{"bucket": "4"}``), checked strictly. (templated)
    :param comment: the table's comment. (templated)
    :param if_exists: ``"fail"``, ``"ignore"`` or ``"skip"`` (above). (templated)
    :param create_database: create the database first if it does not exist (else a missing
        database fails the task).
    :param paimon_conn_id: the ``paimon`` connection (default ``paimon_default``). (templated)
    :param warehouse: a warehouse instead of the connection. (templated)

    Returns ``{"job": "create-table", "table", "created", "database_created", "schema_id",
    "path", "columns", "primary_keys", "partition_keys", "differences"}``.
    """

    job = "create-table"
    template_fields: Sequence[str] = (*_TableDdlOperator.template_fields, "columns", "like", "primary_keys",
                                      "partition_keys", "options", "comment", "if_exists")
    template_fields_renderers: ClassVar[dict[str, str]] = {"columns": "json", "options": "json"}

    def __init__(self, *, columns: Sequence[Mapping[str, Any]] | Mapping[str, Any] | str | None = None,
                 like: str | None = None, primary_keys: Sequence[str] | str | None = None,
                 partition_keys: Sequence[str] | str | None = None, options: Mapping[str, Any] | str | None = None,
                 comment: str | None = None, if_exists: str = "fail", create_database: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.columns, self.like, self.primary_keys, self.partition_keys = columns, like, primary_keys, partition_keys
        self.options, self.comment, self.if_exists = options, comment, if_exists
        self.create_database = create_database

    def requested_schema(self) -> Schema:
        """The create spec the rendered fields ask for, checked (options strictly, the schema's
        structural rules) before anything is read or written but the sample file."""
        from paimonflow.core.meta.schema import Schema
        from paimonflow.core.options.core import CoreOptions
        from paimonflow.core.options.validate import validate_user_options

        if _absent(self.columns) == _absent(self.like):
            raise InvalidArgumentError("give the columns (columns=) or a sample file (like=), not both")
        options = _document("options", self.options) or {}
        if not isinstance(options, Mapping):
            raise InvalidArgumentError(f"options must be a mapping of Paimon table options, not {self.options!r}")
        checked = validate_user_options(options)
        comment = None if _absent(self.comment) else str(self.comment)
        keys = {"primary_keys": _names("primary_keys", self.primary_keys),
                "partition_keys": _names("partition_keys", self.partition_keys)}
        if _absent(self.like):
            schema = Schema.from_fields(column_specs(self.columns), options=checked, comment=comment, **keys)
        else:
            sample = sample_schema(str(self.like).strip(), self.hook.location(self.table).storage_options)
            schema = Schema.from_arrow(sample, options=checked, comment=comment, **keys)
        CoreOptions.from_map(schema.to_table_schema().options).check_combinations()
        return schema

    def run(self, catalog: Catalog) -> dict[str, Any]:
        from paimonflow.core.names import split_identifier

        if_exists = _choice("if_exists", self.if_exists, IF_EXISTS)
        database, _ = split_identifier(self.table)  # a branch or system table is no table to create
        schema = self.requested_schema()
        wanted = schema.to_table_schema()
        database_created = False
        if self.create_database and not catalog.database_exists(database):
            catalog.create_database(database, ignore_if_exists=True)
            database_created = True
        try:
            table = catalog.create_table(self.table, schema)
        except DatabaseNotFoundError:
            raise DatabaseNotFoundError(f"database {database!r} does not exist; create it first, or give the "
                                        "operator create_database=True") from None
        except TableAlreadyExistsError:
            return self._existing(catalog.get_table(self.table), wanted, if_exists, database_created)
        self.log.info("created table %s at %s", self.table, table.path)
        return self._result(table, created=True, database_created=database_created, differences=[])

    def _existing(self, table: Table, wanted: TableSchema, if_exists: str, database_created: bool) -> dict[str, Any]:
        if if_exists == "skip":
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(f"table {self.table} exists; skipped (if_exists='skip')")
        differences = schema_differences(table.schema, wanted)
        if differences and if_exists == "fail":
            raise TableAlreadyExistsError(f"table {self.table} exists with another definition: "
                                          f"{'; '.join(differences)} (if_exists='ignore' keeps it as it is)")
        if differences:
            self.log.warning("table %s exists with another definition, kept as it is: %s", self.table,
                             "; ".join(differences))
        else:
            self.log.info("table %s exists with this definition: nothing to do", self.table)
        return self._result(table, created=False, database_created=database_created, differences=differences)

    def _result(self, table: Table, *, created: bool, database_created: bool,
                differences: list[str]) -> dict[str, Any]:
        return {"job": self.job, "table": self.table, "created": created, "database_created": database_created,
                "schema_id": table.schema.id, "path": table.path, "columns": table.schema.field_names,
                "primary_keys": list(table.primary_keys), "partition_keys": list(table.partition_keys),
                "differences": differences}


# -- altering -----------------------------------------------------------------------------------

# action: (required keys, optional keys)
ACTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "add_column": (("name", "type"), ("comment", "after", "first")),
    "drop_column": (("name",), ()),
    "rename_column": (("name", "new_name"), ()),
    "update_column_type": (("name", "type"), ()),
    "set_option": (("key", "value"), ()),
    "remove_option": (("key",), ()),
}


def parse_changes(changes: object) -> list[tuple[dict[str, Any], SchemaChange]]:
    """Each change mapping of ``changes`` (a list, or its JSON text) with its core schema change,
    all checked before any is made: the action and its keys, the types, the option keys and
    values. Raises :class:`InvalidArgumentError` (or :class:`SchemaError`,
    :class:`~paimonflow.core.errors.InvalidOptionError`) naming ``changes[i]``."""
    from paimonflow.core.meta.schema_changes import (
        AddColumn,
        ColumnPosition,
        DropColumn,
        RemoveOption,
        RenameColumn,
        SetOption,
        UpdateColumnType,
    )
    from paimonflow.core.options.validate import validate_user_options

    value = _document("changes", changes)
    if not isinstance(value, list | tuple) or not value:
        raise InvalidArgumentError(f"changes must be a non-empty list of {{'action': ...}} mappings, not {changes!r}")
    parsed: list[tuple[dict[str, Any], SchemaChange]] = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping) or item.get("action") not in ACTIONS:
            raise InvalidArgumentError(f"changes[{i}] must be a mapping whose action is one of "
                                       f"{', '.join(ACTIONS)}, not {item!r}")
        action = item["action"]
        where = f"changes[{i}] ({action})"
        required, optional = ACTIONS[action]
        missing = [k for k in required if _absent(item.get(k))]
        unknown = sorted(set(item) - {"action", *required, *optional})
        if missing or unknown:
            raise InvalidArgumentError(f"{where}: " + "; ".join(
                ([f"missing {missing}"] if missing else []) + ([f"unknown keys {unknown}"] if unknown else []))
                + f" (it takes {', '.join((*required, *optional))})")
        for key in ("name", "new_name", "key", "comment", "after"):
            if key in item and not isinstance(item[key], str):
                raise InvalidArgumentError(f"{where}: {key} must be text, not {item[key]!r}")
        change: SchemaChange
        if action == "add_column":
            position = None
            if item.get("first") and not _absent(item.get("after")):
                raise InvalidArgumentError(f"{where}: give first or after, not both")
            if item.get("first"):
                position = ColumnPosition.first()
            elif not _absent(item.get("after")):
                position = ColumnPosition.after(item["after"])
            change = AddColumn(item["name"], _type_of(f"{where} column {item['name']!r}", item["type"]),
                               item.get("comment"), position)
        elif action == "drop_column":
            change = DropColumn(item["name"])
        elif action == "rename_column":
            change = RenameColumn(item["name"], item["new_name"])
        elif action == "update_column_type":
            change = UpdateColumnType(item["name"], _type_of(f"{where} column {item['name']!r}", item["type"]),
                                      keep_nullability=True)
        elif action == "set_option":
            [(key, text)] = validate_user_options({item["key"]: item["value"]}).items()
            change = SetOption(key, text)
        else:
            change = RemoveOption(item["key"])
        parsed.append((dict(item), change))
    return parsed


def _same_schema(a: TableSchema, b: TableSchema) -> bool:
    """The same schema apart from its id, version and time."""
    from dataclasses import replace

    return replace(a, id=b.id, version=b.version, time_millis=b.time_millis) == b


def _had_column(history: Sequence[TableSchema], name: str, field_id: int | None = None) -> bool:
    return any(f.name == name and (field_id is None or f.id == field_id) for s in history for f in s.fields)


def _in_effect(schema: TableSchema, change: SchemaChange, history: Callable[[], Sequence[TableSchema]]) -> bool:
    """Whether ``schema`` already shows ``change`` made (see :class:`PaimonAlterTableOperator`);
    ``history()``: the table's earlier schemas."""
    from paimonflow.core.data.types import DataType
    from paimonflow.core.meta.schema_changes import (
        AddColumn,
        DropColumn,
        RemoveOption,
        RenameColumn,
        SetOption,
        UpdateColumnType,
    )

    if isinstance(change, SetOption):
        return schema.options.get(change.key) == change.value
    if isinstance(change, RemoveOption):
        return change.key not in schema.options
    if isinstance(change, AddColumn):
        found = schema.field(change.name)
        return found is not None and str(found.type) == str(change.type) and found.description == change.comment
    if isinstance(change, UpdateColumnType):
        found = schema.field(change.name)
        return (found is not None and isinstance(change.type, DataType)
                and str(found.type) == str(change.type.copy(nullable=found.type.nullable)))
    if isinstance(change, DropColumn):
        return schema.field(change.name) is None and _had_column(history(), change.name)
    if isinstance(change, RenameColumn):
        renamed = schema.field(change.new_name)
        return (schema.field(change.name) is None and renamed is not None
                and _had_column(history(), change.name, renamed.id))
    return False


def plan_changes(table: Table, parsed: Sequence[tuple[dict[str, Any], SchemaChange]]
                 ) -> tuple[list[tuple[dict[str, Any], SchemaChange]], list[dict[str, Any]]]:
    """``(to make, already made)``: the changes that the table's latest schema does not show yet,
    each checked by the core's rules (in order, on the schema the ones before it make), and the
    mappings of those it already shows. Pure but for reading schema files; raises
    :class:`~paimonflow.core.errors.SchemaChangeError` naming the change the table refuses.

    When the latest schema is exactly what the whole list makes of the schema before it (the
    try that made it failed after committing), every change is already made."""
    from paimonflow.core.meta.schema_changes import apply_changes

    current = table.schema
    manager = table.schema_manager
    ids = [i for i in manager.list_ids() if i < current.id]
    if ids and ids[-1] == current.id - 1:
        try:
            if _same_schema(apply_changes(manager.schema(ids[-1]), [c for _, c in parsed]), current):
                return [], [given for given, _ in parsed]
        except SchemaError:  # SchemaChangeError included: not what the list makes of it
            pass
    earlier: list[TableSchema] = []

    def history() -> list[TableSchema]:
        if not earlier and ids:
            earlier.extend(manager.schema(i) for i in ids)
        return earlier

    pending, done = [], []
    state = current
    for i, (given, change) in enumerate(parsed):
        if _in_effect(state, change, history):
            done.append(given)
            continue
        try:
            state = apply_changes(state, [change])
        except SchemaChangeError as exc:
            raise SchemaChangeError(f"changes[{i}] ({given['action']}) on {table.identifier}: {exc}") from None
        pending.append((given, change))
    return pending, done


class PaimonAlterTableOperator(_TableDdlOperator):
    """Change a table's schema and options: every change given is made at once, as one new
    schema (or none), through :meth:`Table.alter <paimonflow.core.table.Table.alter>`.

    ``changes`` is a list of mappings, each with an ``action``:

    * ``{"action": "add_column", "name", "type", "comment"?, "after"? | "first"?: true}``: a
      nullable column (older rows read null);
    * ``{"action": "drop_column", "name"}``;
    * ``{"action": "rename_column", "name", "new_name"}``;
    * ``{"action": "update_column_type", "name", "type"}``: a safe widening (INT to BIGINT, FLOAT
      to DOUBLE, longer VARCHAR...); the column keeps its nullability;
    * ``{"action": "set_option", "key", "value"}``, ``{"action": "remove_option", "key"}``.

    Checked up front, before anything is written: the shape of each change, its types and option
    values, then every change by the core's rules on the table's schema (keys, immutable options,
    unsafe type changes...): a bad one fails the task with one line naming ``changes[i]`` and
    nothing is changed.

    Idempotent on retries: a change the latest schema already shows is left out, and when none is
    left no schema is written (``changed: False``). Recognised as made: an option set to that
    value or absent; a column of that name with that type (and comment); a column of that type;
    a dropped column that is absent and was in an earlier schema; a renamed column whose new name
    holds the field the old name had in an earlier schema. And when the latest schema is exactly
    what the whole list makes of the one before it (the try that made it failed afterwards), the
    whole list is made, chains such as an add then a rename of the same column included. What is
    not recognised is attempted and refused by the core in one line (a column added by someone
    else with another type: ``column 'x' already exists``).

    :param table: ``<database>.<table>`` (or ``db.t$branch_b``: the branch's schema). (templated)
    :param changes: the list above, or its JSON text. (templated)
    :param paimon_conn_id: the ``paimon`` connection (default ``paimon_default``). (templated)
    :param warehouse: a warehouse instead of the connection. (templated)

    Returns ``{"job": "alter-table", "table", "changed", "schema_id", "previous_schema_id",
    "applied", "already_applied"}`` (the change mappings as given).
    """

    job = "alter-table"
    template_fields: Sequence[str] = (*_TableDdlOperator.template_fields, "changes")
    template_fields_renderers: ClassVar[dict[str, str]] = {"changes": "json"}

    def __init__(self, *, changes: Sequence[Mapping[str, Any]] | str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.changes = changes

    def run(self, catalog: Catalog) -> dict[str, Any]:
        parsed = parse_changes(self.changes)
        table = catalog.get_table(self.table)
        previous = table.schema.id
        pending, done = plan_changes(table, parsed)
        if done:
            self.log.info("already made, left out: %s", done)
        if pending:
            table = table.alter([change for _, change in pending])
            self.log.info("schema %s of %s: %d change(s)", table.schema.id, self.table, len(pending))
        return {"job": self.job, "table": self.table, "changed": bool(pending), "schema_id": table.schema.id,
                "previous_schema_id": previous, "applied": [given for given, _ in pending], "already_applied": done}


# -- dropping -----------------------------------------------------------------------------------


class PaimonDropTableOperator(_TableDdlOperator):
    """Drop a table: its folder and every file in it (snapshots, tags, branches, data). There is
    no undo.

    ``if_missing`` says what a table that does not exist means: ``"fail"`` (default) raises
    :class:`~paimonflow.core.errors.TableNotFoundError`; ``"ignore"`` is success with
    ``dropped: False`` (what a retry after the drop finds: use it for clean-up tasks);
    ``"skip"`` skips the task.

    :param table: ``<database>.<table>``. (templated)
    :param if_missing: ``"fail"``, ``"ignore"`` or ``"skip"``. (templated)
    :param paimon_conn_id: the ``paimon`` connection (default ``paimon_default``). (templated)
    :param warehouse: a warehouse instead of the connection. (templated)

    Returns ``{"job": "drop-table", "table", "dropped"}``.
    """

    job = "drop-table"
    template_fields: Sequence[str] = (*_TableDdlOperator.template_fields, "if_missing")

    def __init__(self, *, if_missing: str = "fail", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.if_missing = if_missing

    def run(self, catalog: Catalog) -> dict[str, Any]:
        from paimonflow.core.names import split_identifier

        if_missing = _choice("if_missing", self.if_missing, IF_MISSING)
        split_identifier(self.table)  # a branch is deleted with PaimonBranchOperator, not dropped here
        if not catalog.table_exists(self.table):
            if if_missing == "skip":
                from airflow.sdk.exceptions import AirflowSkipException

                raise AirflowSkipException(f"table {self.table} does not exist; skipped (if_missing='skip')")
            if if_missing == "fail":
                raise TableNotFoundError(f"table {self.table!r} does not exist (if_missing='ignore' accepts that)")
            return {"job": self.job, "table": self.table, "dropped": False}
        catalog.drop_table(self.table, ignore_if_not_exists=True)
        self.log.info("dropped table %s", self.table)
        return {"job": self.job, "table": self.table, "dropped": True}


__all__ = ["ACTIONS", "IF_EXISTS", "IF_MISSING", "PaimonAlterTableOperator", "PaimonCreateTableOperator",
           "PaimonDropTableOperator", "column_specs", "parse_changes", "plan_changes", "sample_schema",
           "schema_differences"]
