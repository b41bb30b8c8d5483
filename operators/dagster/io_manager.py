"""A Dagster IO manager storing asset outputs in Paimon tables and loading them back, with the
conventions of Dagster's database IO managers (see :mod:`.table_slice` for the naming and
partition rules, :mod:`.type_handlers` for the frame types).

Writing an output:

1. The table is created on first write from the output's schema, with ``paimon/primary_keys``,
   ``paimon/partition_keys`` (default: the ``partition_expr`` columns) and ``paimon/options`` from
   the asset's definition metadata; its comment records the asset that owns it, and another asset
   mapped to the same table is refused (nothing written).
2. The schema evolves with the asset: new columns are added (older rows read them as null), a
   column may widen safely (INT -> BIGINT...), a nullable column the output no longer has is
   written as null. Anything else (a narrowed or changed type, a NOT NULL column missing, a new
   key column) fails with one line naming each column, before anything is written. The schema
   change and the rows land together (:mod:`paimonflow.core.write.evolving_write`): an output the
   write refuses (a null key, a row outside its partition) leaves the schema as it was.
3. One commit, by the write mode (``write_mode`` definition metadata, else the IO manager's
   ``write_mode``): ``overwrite`` (the default) replaces exactly the slice (the partitions the
   asset partition(s) select, or the whole table for an unpartitioned asset); ``append`` adds the
   rows (a table without primary keys); ``upsert`` writes them into a primary-key table, whose
   merge engine puts each row in place of the row with its key (``deduplicate``, the default).
   In every mode the rows of a partitioned asset must lie in its partition(s). The commit
   identity comes from the root run and the slice, so a retried step or a re-executed run
   commits nothing new (no append twice).
4. The materialization carries Dagster's standard table metadata (:mod:`.metadata`).

Loading an input reads only the upstream partitions the input maps to (partition pruning) and
only the ``columns`` of the input's metadata.
"""

# No ``from __future__ import annotations``: Dagster reads these annotations at runtime.

import hashlib
import re
from typing import Any, Literal

import dagster as dg
import pyarrow as pa
from pydantic import Field, PrivateAttr

from paimonflow.core.data.types import schema_holding_signed
from paimonflow.core.errors import PaimonflowError, SchemaError, TableNotFoundError
from paimonflow.core.maintenance.post_commit import after_batch_write
from paimonflow.core.meta.capabilities import Operation
from paimonflow.core.predicate import Predicate
from paimonflow.core.write.evolve import merge_changes
from paimonflow.core.write.evolving_write import write_evolving

from .metadata import table_metadata
from .resources import PaimonResource
from .table_slice import TableSlice, table_slice
from .type_handlers import TypeHandler, default_handlers, handler_for

OWNER = "Dagster asset "
#: the definition metadata key choosing an asset's write mode (over the IO manager's ``write_mode``)
WRITE_MODE_KEY = "write_mode"
WRITE_MODES = ("overwrite", "append", "upsert")
WriteMode = Literal["overwrite", "append", "upsert"]


def _fail(message: str) -> dg.Failure:
    return dg.Failure(description=message, allow_retries=False)


class PaimonIOManager(dg.ConfigurableIOManager):
    """Asset outputs in Paimon tables: ``<database>.<last key part>`` (see the module docstring).

    Examples:
        ``PaimonIOManager(paimon=PaimonResource(warehouse="s3://lake/wh"))`` replaces each asset's
        slice on every materialization; ``PaimonIOManager(..., write_mode="append")`` appends
        instead, and an asset overrides it with ``metadata={"write_mode": "upsert"}``."""

    paimon: dg.ResourceDependency[PaimonResource]
    database: str | None = Field(
        default=None, description="Database for every asset (default: the asset key's prefix, else 'default')")
    write_mode: WriteMode = Field(
        default="overwrite",
        description="How an output is committed, unless its definition metadata says otherwise ('write_mode'): "
                    "'overwrite' replaces the asset's slice (its partitions, or the whole table); 'append' adds "
                    "the rows (a table without primary keys); 'upsert' writes them into a primary-key table, each "
                    "row replacing the row with its key (by the table's merge engine)")
    _handlers: list[TypeHandler] = PrivateAttr(default_factory=default_handlers)

    # -- writing ------------------------------------------------------------------------------
    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if obj is None:
            return
        handler = handler_for(self._handlers, type(obj))
        if handler is None:
            raise _fail(f"PaimonIOManager cannot store a {type(obj).__name__}; it stores "
                        f"{', '.join(h.name for h in self._handlers)} frames")
        name = context.asset_key.to_user_string() if context.has_asset_key else context.name
        mode = self._mode(context, name)
        try:
            slice_ = table_slice(context, context, database=self.database)
            data = handler.to_arrow(obj)
            table = self._table_for_output(context, slice_, data, mode)
            _check_partitioned_by(table, slice_)
            _check_mode(table.identifier, table.primary_keys, mode)
            where = slice_.predicate(table.arrow_schema)
            table.capabilities.require(Operation.WRITE)  # before the schema changes for the write
            _check_fits(table, data)  # the columns, in one line naming each, before any file is written
            # overwrite: the slice, or the whole table; else the rows must lie in the slice
            overwrite: Predicate | dict | bool = (where if where is not None else {}) if mode == "overwrite" else False
            written = write_evolving(table, data, overwrite=overwrite, within=None if mode == "overwrite" else where,
                                     commit_user=_commit_user(context, slice_), commit_identifier=1, what="output")
            table, result = written.table, after_batch_write(written.table, written.commit)
        except PaimonflowError as err:
            raise _fail(f"{name}: {err}") from None
        meta: dict[str, Any] = {"paimon/write_mode": mode, "paimon/rows_written": data.num_rows}
        if mode == "overwrite":
            # the slice holds the output's rows (one per key for a primary-key table), the whole
            # table when the asset is unpartitioned; a partitioned one's table count comes from metadata
            rows = data.group_by(list(table.primary_keys)).aggregate([]).num_rows if table.primary_keys \
                else data.num_rows
            meta.update(table_metadata(table, snapshot_id=result.snapshot_id, committed=not result.already_committed,
                                       partition_rows=rows if slice_.partitioned else None,
                                       rows=None if slice_.partitioned else rows))
        else:  # rows added to what was there: the table's count only where its metadata knows it
            meta.update(table_metadata(table, snapshot_id=result.snapshot_id, committed=not result.already_committed))
        context.add_output_metadata(meta)

    def _mode(self, context: dg.OutputContext, name: str) -> WriteMode:
        mode = _plain(context.definition_metadata).get(WRITE_MODE_KEY, self.write_mode)
        if mode not in WRITE_MODES:
            raise _fail(f"{name}: write_mode {mode!r} is not one of {', '.join(WRITE_MODES)} (nothing written)")
        return mode

    def _table_for_output(self, context: dg.OutputContext, slice_: TableSlice, data: pa.Table, mode: str):
        catalog = self.paimon.catalog()
        owner = OWNER + (context.asset_key.to_user_string() if context.has_asset_key else f"op output {slice_.table}")
        try:
            table = catalog.get_table(slice_.identifier)
        except TableNotFoundError:
            meta = _plain(context.definition_metadata)
            partition_keys = list(meta.get("paimon/partition_keys") or [d.column for d in slice_.dimensions])
            primary_keys = list(meta.get("paimon/primary_keys") or [])
            if primary_keys:
                primary_keys += [k for k in partition_keys if k not in primary_keys]
            _check_mode(slice_.identifier, primary_keys, mode)  # before the table is made
            keys = {*primary_keys, *partition_keys}
            # unsigned columns (polars' len() is u32) take the signed type holding every value
            schema = pa.schema([f.with_nullable(False) if f.name in keys else f
                                for f in schema_holding_signed(data.schema)])
            options = dict(meta.get("paimon/options") or ({"bucket": "1"} if primary_keys else {}))
            catalog.create_database(slice_.database, ignore_if_exists=True)
            table = catalog.create_table(slice_.identifier, schema, primary_keys=primary_keys,
                                         partition_keys=partition_keys, options=options, comment=owner,
                                         ignore_if_exists=True)
        comment = table.schema.comment or ""
        if comment.startswith(OWNER) and comment != owner:
            raise _fail(f"{slice_.identifier} holds {comment[len(OWNER):]!r}; {owner[len(OWNER):]!r} maps to the same "
                        f"table: give one of them a 'schema' metadata value or another key (nothing written)")
        return table

    # -- loading ------------------------------------------------------------------------------
    def load_input(self, context: dg.InputContext) -> Any:
        wanted = context.dagster_type.typing_type if context.dagster_type is not None else Any
        handler = handler_for(self._handlers, wanted) or (self._handlers[0] if wanted in (Any, object) else None)
        if handler is None:
            raise _fail(f"PaimonIOManager cannot load a {getattr(wanted, '__name__', wanted)}; it loads "
                        f"{', '.join(h.name for h in self._handlers)} frames")
        try:
            slice_ = table_slice(context, context.upstream_output, database=self.database)
            try:
                table = self.paimon.table(slice_.identifier)
            except TableNotFoundError:
                raise _fail(f"{slice_.identifier} has not been materialized yet") from None
            rows = table.read(columns=list(slice_.columns) if slice_.columns else None,
                              filter=slice_.predicate(table.arrow_schema))
        except PaimonflowError as err:
            raise _fail(f"loading {context.asset_key.to_user_string() if context.has_asset_key else context.name}: "
                        f"{err}") from None
        return handler.from_arrow(rows, wanted)


def _plain(metadata: Any) -> dict:
    return {k: (v.value if isinstance(v, dg.MetadataValue) else v) for k, v in dict(metadata or {}).items()}


def _commit_user(context: dg.OutputContext, slice_: TableSlice) -> str:
    """``dagster.io.<table>.<slice>.<digest>.<root run id>``: a re-executed run (same root run)
    finds its landed commit; the digest keeps slices apart that read the same once sanitized."""
    run = context.step_context.dagster_run
    root = run.root_run_id or run.run_id
    described = slice_.describe()  # first..last key of each dimension: the digest covers every key
    digest = hashlib.sha1(repr([(d.column, d.keys) for d in slice_.dimensions]).encode()).hexdigest()[:8]
    readable = re.sub(r"[^\w\-.@+~]", "_", described)[:80]
    return f"dagster.io.{slice_.identifier}.{readable}.{digest}.{root}"


def _check_partitioned_by(table, slice_: TableSlice) -> None:
    not_keys = [d.column for d in slice_.dimensions if d.column not in table.partition_keys]
    if not_keys:
        raise _fail(f"{table.identifier} is not partitioned by {not_keys} (its partition keys are "
                    f"{list(table.partition_keys)}): a partition of the asset must be a partition of the table")


def _check_mode(identifier: str, primary_keys, mode: str) -> None:
    if mode == "upsert" and not primary_keys:
        raise _fail(f"write_mode 'upsert' replaces rows by primary key, but {identifier} has no primary key (give "
                    f"the asset 'paimon/primary_keys' metadata before its table is made, or write_mode 'append') "
                    f"(nothing written)")
    if mode == "append" and primary_keys:
        raise _fail(f"write_mode 'append' adds rows, but {identifier} has primary keys {list(primary_keys)}: a row "
                    f"replaces the row with its key; use write_mode 'upsert' (nothing written)")


def _check_fits(table, data: pa.Table) -> None:
    """The output's columns against the table's by the core's merge rule
    (:mod:`paimonflow.core.write.evolve`): a failure listing every incompatible column, before
    any change."""
    try:
        merge_changes(table.schema, data.schema, identifier=table.identifier, what="output")
    except SchemaError as err:
        raise _fail(str(err)) from None


__all__ = ["WRITE_MODES", "WRITE_MODE_KEY", "PaimonIOManager"]
