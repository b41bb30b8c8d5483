"""``PaimonTableComponent``: a Paimon table's write asset, health checks, maintenance job and
schedule, and its commit observer, from a few lines of YAML (``defs.yaml``)::

    type: paimonflow.plugins.dagster.PaimonTableComponent
    attributes:
      table: shop.returns
      source: "{{ env.PAIMONFLOW_LANDING }}/returns/{partition}"
      partitions: {type: daily, start: "2026-11-01"}
      partition_column: dt
      maintenance_cron: "0 3 * * *"
      freshness: "1 d"

It builds on :func:`paimonflow.operators.dagster.paimon_table` (the same assets, checks and jobs as
Python definitions get) and :func:`paimonflow.sensors.dagster.paimon_commit_observer`. The
``paimon`` and ``spark`` resources come from the project (a ``resources`` definitions file), as
for every Dagster component sharing them. ``dg scaffold defs paimonflow.plugins.dagster.PaimonTableComponent
<path>`` writes a ``defs.yaml`` to start from.
"""

# No ``from __future__ import annotations``: Dagster resolves these annotations at runtime.

import textwrap
from datetime import timedelta
from typing import Literal

import dagster as dg

from paimonflow.core.errors import InvalidArgumentError
from paimonflow.core.options.parse import parse_duration_millis
from paimonflow.operators.dagster import TableSpec, paimon_table, table_asset_key
from paimonflow.sensors.dagster import paimon_commit_observer


class Partitions(dg.Model):
    """Time partitions of the table's asset: one per ``hourly`` or ``daily`` window from ``start``."""

    type: Literal["hourly", "daily"]
    start: str
    timezone: str = "UTC"


class PaimonTableScaffolder(dg.Scaffolder):
    """``dg scaffold defs``: a ``defs.yaml`` naming a table, its source and its maintenance."""

    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        request.target_path.mkdir(parents=True, exist_ok=True)
        (request.target_path / "defs.yaml").write_text(textwrap.dedent(f"""\
            type: {request.type_name}
            attributes:
              table: my_database.my_table          # the Paimon table (create it first)
              source: /landing/my_table/{{partition}}  # files the write asset loads
              format: parquet
              partitions: {{type: daily, start: "2026-01-01"}}
              partition_column: dt                 # each asset partition overwrites this table partition
              maintenance_cron: "0 2 * * *"
              freshness: "1 d"                     # a freshness policy and a 'fresh' health check
            """))


@dg.scaffold_with(PaimonTableScaffolder)
class PaimonTableComponent(dg.Component, dg.Model, dg.Resolvable):
    """A Paimon table's life in Dagster: write asset, health checks, maintenance job and schedule,
    and a sensor reporting commits made elsewhere as the asset's materializations (one per day or
    hour a commit touched, read from ``partition_column``, for a partitioned table)."""

    table: str
    source: str | None = None
    format: str = "parquet"
    partitions: Partitions | None = None
    partition_column: str | None = None
    maintenance_cron: str = "0 2 * * *"
    tag_time_retained: str = "30 d"
    orphan_older_than: str = "1 d"
    orphan_min_older_than: str = "1 h"
    max_small_file_fraction: float = 0.5
    max_level0_runs: int = 5
    min_snapshots: int = 1
    tag_days: int = 0
    freshness: str | None = None
    observe_commits: bool = True

    def _millis(self, name: str) -> int:
        text = getattr(self, name)
        try:
            return parse_duration_millis(text)
        except ValueError as err:
            raise InvalidArgumentError(f"PaimonTableComponent {self.table}: {name} {text!r} is not a duration: "
                                       f"{err}") from None

    def spec(self) -> TableSpec:
        """The :class:`TableSpec` the YAML describes (durations checked here, one line if bad)."""
        for name in ("tag_time_retained", "orphan_older_than", "orphan_min_older_than"):
            self._millis(name)
        freshness = timedelta(milliseconds=self._millis("freshness")) if self.freshness else None
        return TableSpec(table=self.table, source=self.source, format=self.format,
                         partitions_def=_partitions_def(self.partitions), partition_column=self.partition_column,
                         maintenance_cron=self.maintenance_cron, tag_time_retained=self.tag_time_retained,
                         orphan_older_than=self.orphan_older_than, orphan_min_older_than=self.orphan_min_older_than,
                         max_small_file_fraction=self.max_small_file_fraction, max_level0_runs=self.max_level0_runs,
                         min_snapshots=self.min_snapshots, tag_days=self.tag_days, freshness=freshness)

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        spec = self.spec()
        parts = paimon_table(spec)
        sensors = [self._observer(spec)] if self.observe_commits else []
        return dg.Definitions(assets=parts["assets"], asset_checks=parts["asset_checks"], jobs=parts["jobs"],
                              schedules=parts["schedules"], sensors=sensors)

    def _observer(self, spec: TableSpec) -> dg.SensorDefinition:
        """The commit observer: per partition key for a partitioned asset, read from
        ``partition_column`` (a partitioned table without one is refused here, in one line)."""
        if spec.partitions_def is not None and not self.partition_column:
            raise InvalidArgumentError(
                f"PaimonTableComponent {self.table}: the commit observer reports each commit for the partitions it "
                f"touched, which needs partition_column (the table column holding the partition key); set "
                f"partition_column, or observe_commits: false")
        return paimon_commit_observer(self.table, table_asset_key(self.table), partitions_def=spec.partitions_def,
                                      partition_column=self.partition_column if spec.partitions_def else None)


def _partitions_def(partitions: Partitions | None) -> dg.PartitionsDefinition | None:
    if partitions is None:
        return None
    if partitions.type == "hourly":
        return dg.HourlyPartitionsDefinition(start_date=partitions.start, timezone=partitions.timezone)
    return dg.DailyPartitionsDefinition(start_date=partitions.start, timezone=partitions.timezone)


__all__ = ["PaimonTableComponent", "PaimonTableScaffolder"]
