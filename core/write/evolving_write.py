"""A write that evolves the table's schema for its data, the change and the rows landing together.

``Table.alter(changes)`` then ``Table.write(data)`` publishes the schema first: a write refused
afterwards (a null key, a row outside the partitions an overwrite replaces, a partition value
that is no valid path) or cut short (storage failing, an interrupt while the files are written)
leaves a schema that no snapshot uses and that every reader sees. :func:`write_evolving` orders it
so that a refusal changes nothing:

1. the schema changes the data needs, by the merge rule of :mod:`.evolve` (anything else refused
   in one :class:`~paimonflow.core.errors.SchemaError` line, nothing written);
2. the rows written as data files under the *prospective* schema, not published yet: every check
   the write makes on the values (types, nulls in NOT NULL columns, partition values, row kinds)
   runs here, and so does the check that an overwrite's rows lie in the partitions it replaces;
3. the schema published as the next schema file (create-if-absent). If another writer published
   that id first, the files are deleted and the write is planned again on the newer schema;
4. the files committed as one snapshot of the new schema.

A failure in 1-3 leaves the table as it was: the files written are deleted, no schema is added.
Only a failed commit (step 4: a conflict, storage failing) leaves the new schema without a
snapshot: a compatible change (new nullable columns, safe widenings), the table readable, and a
retry of the write (same commit identity) uses it. A published schema file is never deleted:
another writer may already be writing under it.

Exactly once as ``Table.write``: with ``commit_user`` and ``commit_identifier`` a repeated write
finds its commit and changes nothing. Unlike ``Table.write`` it creates no batch tag
(``tag.automatic-creation=batch``): the caller does, with
:func:`paimonflow.core.maintenance.post_commit.after_batch_write` (this layer is below it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..errors import (
    CommitOutcomeUnknownError,
    SchemaChangeError,
    SchemaError,
    UnsupportedError,
    note_files_removed,
)
from ..predicate import Predicate
from .commit import BATCH_COMMIT_IDENTIFIER, CommitResult, OverwriteSpec
from .conform import to_arrow_table
from .evolve import merge_changes, merged_schema, with_missing_columns_as_null
from .messages import CommitMessage
from .signals import signals_deferred

if TYPE_CHECKING:
    from ..meta.schema import TableSchema
    from ..meta.schema_changes import SchemaChange
    from ..table import Table

#: times a write is planned again after losing the race for the next schema id
SCHEMA_ATTEMPTS = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class EvolvingWriteResult:
    """What :func:`write_evolving` did: ``table`` with the schema the commit used, the commit,
    and the schema changes it published (empty: the data fitted the schema as it was)."""

    table: Table
    commit: CommitResult
    changes: tuple[SchemaChange, ...] = ()


class _SchemaRaceLost(Exception):
    """Another writer published the schema id this write's files were written under."""


def write_evolving(table: Table, data: Any, *, overwrite: bool | Mapping[str, object] | Predicate = False,
                   within: Predicate | None = None, row_kinds: Any = None, commit_user: str | None = None,
                   commit_identifier: int | None = None, what: str = "data") -> EvolvingWriteResult:
    """Write ``data`` (any input ``Table.write`` takes) as one commit, evolving ``table``'s schema
    for it first where the merge rule allows, the schema change and the rows landing together
    (see the module docstring). ``overwrite``, ``row_kinds``, ``commit_user`` and
    ``commit_identifier`` as for ``Table.write``; ``within`` (a predicate on partition columns)
    names the partitions every row must lie in, for a write that is no overwrite (a Dagster asset
    partition appended to); ``what`` names the rows in errors ("data", a Dagster "output").

    Raises :class:`~paimonflow.core.errors.SchemaError` (columns that cannot fit, rows outside
    the overwritten or ``within`` partitions), :class:`~paimonflow.core.errors.DataError` (values
    the table refuses), with nothing changed; :class:`~paimonflow.core.errors.SchemaChangeError` if
    other writers kept changing the schema ``SCHEMA_ATTEMPTS`` times; and what a commit raises.
    """
    frame = to_arrow_table(data)
    identifier = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else int(commit_identifier)
    for _ in range(SCHEMA_ATTEMPTS):
        committer = table.new_commit(commit_user)
        if committer.already_committed(identifier) is not None:  # a repeated write: nothing to do
            return EvolvingWriteResult(table=table, commit=committer.commit([], commit_identifier=identifier))
        changes = merge_changes(table.schema, frame.schema, identifier=table.identifier, what=what)
        target = table
        if changes:  # the same class as ``table`` (the public face, which this layer does not import)
            face: Any = type(table)
            target = face(file_io=table.file_io, path=table.path, identifier=table.identifier,
                          schema=merged_schema(table.schema, changes), branch=table.branch)
        try:
            result = _write(table, target, changes, with_missing_columns_as_null(frame, target.arrow_schema),
                            overwrite=overwrite, within=within, row_kinds=row_kinds,
                            commit_user=committer.commit_user, identifier=identifier)
        except _SchemaRaceLost:
            table = table.refresh()  # plan again on the schema the other writer published
            continue
        return EvolvingWriteResult(table=target, commit=result, changes=tuple(changes))
    raise SchemaChangeError(f"the schema of {table.identifier} changed concurrently {SCHEMA_ATTEMPTS} times while "
                            f"a write evolved it; nothing written: try again")


def _write(table: Table, target: Table, changes: Sequence[SchemaChange], frame: pa.Table, *,
           overwrite: bool | Mapping[str, object] | Predicate, within: Predicate | None, row_kinds: Any,
           commit_user: str, identifier: int) -> CommitResult:
    """Files under ``target``'s schema, then (with ``changes``) that schema published on
    ``table``'s schema files, then the commit; every file deleted if it did not land."""
    spec = target.overwrite_spec(overwrite)  # checked before any file is written
    if within is not None and not within.fields() <= set(target.partition_keys):
        raise SchemaError(f"'within' may only name partition columns; {sorted(within.fields() - set(target.partition_keys))} "
                          f"are not (partition keys are {list(target.partition_keys)})")
    bound_within = target.bind(within)
    if spec is not None and target.options.bucket == -1 and target.primary_keys \
            and not set(target.partition_keys) <= set(target.primary_keys):
        raise UnsupportedError("overwrite of a cross-partition upsert table is not supported yet")
    committer = target.new_commit(commit_user)
    before = target.snapshot_manager.latest_id() or 0
    writer = target.new_write(overwrite=spec is not None, commit_user=commit_user)
    messages = None
    try:
        messages = writer.write_all(frame, row_kinds=row_kinds)
        writer.close()
        _check_partitions(target, messages, spec=spec, within=bound_within)
        if changes:
            _publish(table, changes, target.schema)
        with signals_deferred():  # never cut in half: an interrupt comes once it has landed or failed
            return committer.commit(messages, commit_identifier=identifier, overwrite=spec)
    except CommitOutcomeUnknownError:
        raise  # the snapshot may reference these files: never delete them
    except BaseException as exc:  # Ctrl-C and SIGTERM included
        if messages is None or target.known_not_committed(commit_user, identifier, after=before):
            note_files_removed(exc, writer.abort(include_prepared=True))
        raise
    finally:
        writer.close()


def _check_partitions(table: Table, messages: Sequence[CommitMessage], *, spec: OverwriteSpec | None,
                      within: Predicate | None) -> None:
    """Rows outside the partitions a static or predicate overwrite replaces (the committer's
    rule and message, checked here before the schema is published), or outside ``within``."""
    partitions = sorted({m.partition for m in messages if m.new_files}, key=repr)
    if not partitions:
        return
    keys = list(table.partition_keys)
    for where in (spec.where if spec is not None else None, within):
        if where is None:
            continue
        for p in _outside(table, where, partitions):
            partition = dict(zip(keys, p, strict=True))
            if where is within:
                raise SchemaError(f"rows of partition {partition} lie outside {where.to_arrow()}")
            raise SchemaError(f"overwrite where {where.to_arrow()} got rows of partition {partition}")
    if spec is not None and spec.static:
        for p in partitions:
            actual = dict(zip(keys, p, strict=True))
            if not all(actual[k] == v or str(actual[k]) == str(v) for k, v in spec.static.items()):
                raise SchemaError(f"overwrite of {dict(spec.static)} got rows of partition {list(p)}")


def _outside(table: Table, where: Predicate, partitions: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """The partitions (value tuples) whose values do not satisfy ``where`` (bound to the table)."""
    keys = list(table.partition_keys)
    values = pa.table({k: pa.array([p[i] for p in partitions], table.arrow_schema.field(k).type)
                       for i, k in enumerate(keys)})
    kept = values.append_column("__index", pa.array(range(len(partitions)), pa.int64())).filter(where.to_arrow())
    inside = set(kept.column("__index").to_pylist())
    return [p for i, p in enumerate(partitions) if i not in inside]


def _publish(table: Table, changes: Sequence[SchemaChange], prospective: TableSchema) -> None:
    """Publish ``changes`` as exactly ``prospective`` (the schema the files were written under);
    :class:`_SchemaRaceLost` if another writer published a schema since ``table``'s."""

    def unchanged_since(candidate: TableSchema) -> None:
        if candidate.id != prospective.id:  # schema files are immutable: same id, same base
            raise _SchemaRaceLost

    try:
        table.schema_manager.commit_changes(list(changes), max_attempts=1, validate=unchanged_since)
    except SchemaChangeError:  # lost the create-if-absent of that id, or the newer schema refuses the change
        raise _SchemaRaceLost from None


__all__ = ["SCHEMA_ATTEMPTS", "EvolvingWriteResult", "write_evolving"]
