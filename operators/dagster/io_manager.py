"""A Dagster IO manager storing asset outputs in Paimon tables and loading them back.

Outputs may be pyarrow Tables or pandas DataFrames. The table is ``<database>.<last key part>``;
it is created on first write from the output's schema, with ``primary_keys``, ``partition_keys``
and ``options`` taken from the asset's definition metadata (``paimon/primary_keys`` ...). A
partitioned asset maps its partition key to the table partition ``<partition column>=<key>`` and
each materialization overwrites exactly that partition (idempotent); an unpartitioned asset
overwrites the whole table. Commits carry a commit identity from the run and partition, so
re-executing a run commits nothing new.
"""

# No ``from __future__ import annotations``: Dagster reads these annotations at runtime.

import re

import dagster as dg
import pyarrow as pa
from pydantic import Field

from paimonflow.core.errors import TableNotFoundError
from paimonflow.core.predicate import col

from .resources import PaimonResource


class PaimonIOManager(dg.ConfigurableIOManager):
    paimon: dg.ResourceDependency[PaimonResource]
    database: str = "dagster"
    partition_column: str = Field(default="partition", description="Column holding the asset partition key")

    def _identifier(self, key: dg.AssetKey) -> str:
        name = re.sub(r"[^\w\-]", "_", key.path[-1])
        return f"{self.database}.{name}"

    def _metadata(self, context) -> dict:
        definition = getattr(context, "definition_metadata", None) or {}
        return {k: (v.value if hasattr(v, "value") else v) for k, v in definition.items()}

    def handle_output(self, context: dg.OutputContext, obj) -> None:
        if obj is None:
            return
        table_data = obj if isinstance(obj, pa.Table) else pa.Table.from_pandas(obj, preserve_index=False)
        identifier = self._identifier(context.asset_key)
        catalog = self.paimon.catalog()
        meta = self._metadata(context)
        partition = context.partition_key if context.has_asset_partitions else None
        if partition is not None:
            table_data = table_data.append_column(self.partition_column,
                                                  pa.array([partition] * table_data.num_rows, pa.string()))
        catalog.create_database(self.database, ignore_if_exists=True)
        partition_keys = [self.partition_column] if partition is not None else list(meta.get("paimon/partition_keys", []))
        primary_keys = list(meta.get("paimon/primary_keys", []))
        if primary_keys and partition is not None and self.partition_column not in primary_keys:
            primary_keys.append(self.partition_column)
        schema = table_data.schema
        if primary_keys or partition_keys:
            schema = pa.schema([f.with_nullable(False) if f.name in {*primary_keys, *partition_keys} else f
                                for f in schema])
        table = catalog.create_table(identifier, schema, primary_keys=primary_keys, partition_keys=partition_keys,
                                     options=dict(meta.get("paimon/options", {"bucket": "1"} if primary_keys else {})),
                                     ignore_if_exists=True)
        run = getattr(getattr(context, "step_context", None), "dagster_run", None)
        root = (run.root_run_id or run.run_id) if run is not None else context.run_id
        user = re.sub(r"[^\w\-.@+~]", "_", f"dagster.io.{identifier}.{partition or 'all'}.{root}")[:200]
        overwrite = {self.partition_column: partition} if partition is not None else True
        result = table.write(table_data.cast(table.arrow_schema), overwrite=overwrite, commit_user=user,
                             commit_identifier=1)
        context.add_output_metadata({"paimon/table": identifier, "paimon/snapshot_id": result.snapshot_id or 0,
                                     "rows": table_data.num_rows})

    def load_input(self, context: dg.InputContext):
        key = context.upstream_output.asset_key if context.upstream_output is not None else context.asset_key
        identifier = self._identifier(key)
        try:
            table = self.paimon.table(identifier)
        except TableNotFoundError:
            raise dg.Failure(f"{identifier} has not been materialized yet") from None
        if context.has_asset_partitions:
            keys = context.asset_partition_keys
            rows = table.read(filter=col(self.partition_column).isin(list(keys)))
        else:
            rows = table.read()
        wanted = context.dagster_type.typing_type if context.dagster_type is not None else None
        if getattr(wanted, "__name__", "") == "DataFrame":
            return rows.to_pandas()
        return rows


__all__ = ["PaimonIOManager"]
