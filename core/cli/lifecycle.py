"""The verbs that end, rename, empty and reshape tables: ``drop-table``, ``drop-database``,
``rename-table``, ``truncate``, ``delete --where`` and ``alter``. Registered on the one app of
``verbs.py`` (imported there), with its error contract."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import InvalidArgumentError
from .contract import pairs
from .expressions import parse_filter
from .verbs import Identifier, Warehouse, catalog_of, command, commit_document, out, parse_type

CommitUser = Annotated[str | None, typer.Option(
    help="Commit user of an exactly-once change (with --commit-identifier): a repeat commits nothing")]
CommitIdentifier = Annotated[int | None, typer.Option(
    help="Commit identifier of an exactly-once change (with --commit-user)")]


def _identity(user: str | None, identifier: int | None) -> tuple[str | None, int | None]:
    if (user is None) != (identifier is None):
        raise InvalidArgumentError("give --commit-user and --commit-identifier together (an exactly-once commit), "
                                   "or neither")
    return user, identifier


@command("drop-table")
def drop_table(identifier: Identifier, warehouse: Warehouse,
               if_exists: Annotated[bool, typer.Option(help="No error if the table does not exist")] = False) -> None:
    """Drop a table: its folder and every file in it (there is no undo)."""
    catalog = catalog_of(warehouse)
    existed = catalog.table_exists(identifier)
    catalog.drop_table(identifier, ignore_if_not_exists=if_exists)
    out.done(f"dropped table {identifier}" if existed else f"table {identifier} did not exist",
             {"table": identifier, "dropped": existed})


@command("drop-database")
def drop_database(name: Annotated[str, typer.Argument(help="The database")], warehouse: Warehouse,
                  cascade: Annotated[bool, typer.Option(help="Drop its tables too (else it must be empty)")] = False,
                  if_exists: Annotated[bool, typer.Option(help="No error if it does not exist")] = False) -> None:
    """Drop a database (with --cascade, and every table in it)."""
    catalog = catalog_of(warehouse)
    existed = catalog.database_exists(name)
    catalog.drop_database(name, ignore_if_not_exists=if_exists, cascade=cascade)
    out.done(f"dropped database {name}" if existed else f"database {name} did not exist",
             {"database": name, "dropped": existed})


@command("rename-table")
def rename_table(identifier: Identifier, new_name: Annotated[str, typer.Argument(help="<database>.<table>")],
                 warehouse: Warehouse) -> None:
    """Rename a table (one atomic rename of its folder, on a local disk)."""
    table = catalog_of(warehouse).rename_table(identifier, new_name)
    out.done(f"renamed table {identifier} to {table.identifier}", {"old": identifier, "new": table.identifier})


@command("truncate")
def truncate(identifier: Identifier, warehouse: Warehouse, commit_user: CommitUser = None,
             commit_identifier: CommitIdentifier = None) -> None:
    """Delete every row (one OVERWRITE snapshot; older snapshots still read them until expired)."""
    user, number = _identity(commit_user, commit_identifier)
    table = catalog_of(warehouse).get_table(identifier)
    out.result(commit_document(table.truncate(commit_user=user, commit_identifier=number)))


@command("delete")
def delete(identifier: Identifier, warehouse: Warehouse,
           where: Annotated[str, typer.Option(help="The rows to delete, e.g. \"dt = '2026-11-21' AND id IN (1, 2)\"")],
           commit_user: CommitUser = None, commit_identifier: CommitIdentifier = None) -> None:
    """Delete the rows a condition selects (primary-key tables with the deduplicate merge engine)."""
    user, number = _identity(commit_user, commit_identifier)
    table = catalog_of(warehouse).get_table(identifier)
    result = table.delete(parse_filter(where, "--where", table.arrow_schema), commit_user=user,
                          commit_identifier=number)
    if result is None:
        out.done("no row matches: nothing deleted", {"snapshot_id": None, "deleted_rows": 0})
        return
    out.result(commit_document(result))


@command("alter")
def alter(
    identifier: Identifier,
    warehouse: Warehouse,
    add_column: Annotated[list[str] | None, typer.Option(
        help="name:TYPE, a new nullable column (older rows read null); repeatable")] = None,
    drop_column: Annotated[list[str] | None, typer.Option(help="A column to drop; repeatable")] = None,
    rename_column: Annotated[list[str] | None, typer.Option(help="old:new; repeatable")] = None,
    widen: Annotated[list[str] | None, typer.Option(
        help="name:TYPE, a safe widening (INT to BIGINT, FLOAT to DOUBLE...); repeatable")] = None,
    nullable: Annotated[list[str] | None, typer.Option(help="A column to make nullable; repeatable")] = None,
    column_comment: Annotated[list[str] | None, typer.Option(help="name:text; repeatable")] = None,
    comment: Annotated[str | None, typer.Option(help="The table's comment")] = None,
    set_option: Annotated[list[str] | None, typer.Option("--set", help="A table option key=value; repeatable")]
    = None,
    unset_option: Annotated[list[str] | None, typer.Option("--unset", help="A table option to remove; repeatable")]
    = None,
) -> None:
    """Change the schema, comment or options, all at once as one new schema (or nothing)."""
    from ..meta.schema_changes import (
        AddColumn,
        DropColumn,
        RemoveOption,
        RenameColumn,
        SetOption,
        UpdateColumnComment,
        UpdateColumnNullability,
        UpdateColumnType,
        UpdateComment,
    )

    def split(text: str, flag: str, what: str) -> tuple[str, str]:
        name, sep, rest = text.partition(":")
        if not sep or not name or not rest:
            raise InvalidArgumentError(f"{flag} {text!r} must be {what}")
        return name, rest

    changes: list = []
    for text in add_column or ():
        name, type_text = split(text, "--add-column", "name:TYPE, e.g. note:STRING")
        changes.append(AddColumn(name, parse_type(type_text)))
    changes += [DropColumn(name) for name in drop_column or ()]
    for text in rename_column or ():
        changes.append(RenameColumn(*split(text, "--rename-column", "old:new")))
    for text in widen or ():
        name, type_text = split(text, "--widen", "name:TYPE, e.g. qty:BIGINT")
        changes.append(UpdateColumnType(name, parse_type(type_text)))
    changes += [UpdateColumnNullability(name, True) for name in nullable or ()]
    for text in column_comment or ():
        changes.append(UpdateColumnComment(*split(text, "--column-comment", "name:text")))
    if comment is not None:
        changes.append(UpdateComment(comment))
    changes += [SetOption(k, v) for k, v in pairs(set_option, "--set").items()]
    changes += [RemoveOption(key) for key in unset_option or ()]
    if not changes:
        raise InvalidArgumentError("alter needs at least one change: --add-column, --drop-column, --rename-column, "
                                   "--widen, --nullable, --column-comment, --comment, --set or --unset")
    table = catalog_of(warehouse).get_table(identifier).alter(changes)
    out.done(f"altered {identifier}: schema {table.schema.id}, {len(changes)} change(s)",
             {"table": identifier, "schema_id": table.schema.id, "changes": len(changes)})
