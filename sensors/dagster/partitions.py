"""Table partitions as Dagster partition keys: which key of an asset's partitions definition a
value of the table's partition column is, for the commit observer (:mod:`.observer`).

A mapping is defined for one partition column and

* a time-window definition (``DailyPartitionsDefinition``, hourly, weekly, monthly...): a STRING
  column holds the key itself, in the definition's format (``2026-11-02`` for a day, as the
  paimonflow write asset and the IO manager write it); a DATE column maps to the window holding
  that day (daily or coarser windows); a TIMESTAMP column to the window holding that instant (a
  timestamp without time zone read in the definition's time zone);
* a ``StaticPartitionsDefinition`` or ``DynamicPartitionsDefinition``: the value as text is the key.

Anything else (multi-partitions, another definition) has no mapping: :func:`partition_mapping`
refuses it when the definitions load, in one line. A value that is no key of the definition
(a day before its start, text in another format) maps to None: the observer reports it as such.
"""

# No ``from __future__ import annotations``: kept like the other Dagster modules of the suite.

from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

import dagster as dg

from paimonflow.core.errors import InvalidArgumentError


@dataclass(frozen=True)
class PartitionMapping:
    """``column`` of the table -> keys of ``partitions_def`` (:func:`partition_mapping` builds it)."""

    column: str
    partitions_def: dg.PartitionsDefinition

    def key(self, value: Any, instance: Any = None) -> str | None:
        """The partition key ``value`` (of the column) is, or None if it is no key of the
        definition. ``instance`` (the sensor's) knows the keys of a dynamic definition."""
        if value is None:
            return None
        definition = self.partitions_def
        if isinstance(definition, dg.TimeWindowPartitionsDefinition):
            key = self._window_key(value, definition)
        else:
            key = value.isoformat() if isinstance(value, date) else str(value)
        if key is None:
            return None
        if isinstance(definition, dg.DynamicPartitionsDefinition):
            return key if instance is None or definition.has_partition_key(key, dynamic_partitions_store=instance) \
                else None
        return key if definition.has_partition_key(key) else None

    def _window_key(self, value: Any, definition: dg.TimeWindowPartitionsDefinition) -> str | None:
        if isinstance(value, str):
            return value
        zone = ZoneInfo(definition.timezone or "UTC")
        if isinstance(value, datetime):
            moment = value if value.tzinfo is not None else value.replace(tzinfo=zone)
        elif isinstance(value, date):
            if "%H" in definition.fmt or "%M" in definition.fmt:
                raise InvalidArgumentError(f"partition column {self.column!r} holds days (DATE) but the asset's "
                                           f"partitions are shorter windows ({definition.fmt}): a day maps to no "
                                           f"single partition key")
            moment = datetime.combine(value, time(), tzinfo=zone)
        else:
            return None
        try:
            return definition.get_partition_key_for_timestamp(moment.timestamp())
        except (ValueError, dg.DagsterInvalidInvocationError):  # before the first window
            return None


def partition_mapping(partitions_def: dg.PartitionsDefinition | None, column: str | None, *,
                      what: str) -> PartitionMapping | None:
    """The mapping of ``column``'s values to ``partitions_def``'s keys (None for an unpartitioned
    asset); :class:`~paimonflow.core.errors.InvalidArgumentError` in one line, naming ``what``
    refuses it, where no mapping is defined."""
    if partitions_def is None:
        if column is not None:
            raise InvalidArgumentError(f"{what}: partition_column {column!r} is given but the asset is not "
                                       f"partitioned (no partitions_def)")
        return None
    kind = type(partitions_def).__name__
    if not isinstance(partitions_def, dg.TimeWindowPartitionsDefinition | dg.StaticPartitionsDefinition
                      | dg.DynamicPartitionsDefinition):
        raise InvalidArgumentError(f"{what}: the asset has {kind} partitions, for which no mapping from a table "
                                   f"partition to a partition key is defined (time windows, static and dynamic "
                                   f"partitions are); observe an unpartitioned asset instead")
    if not column:
        raise InvalidArgumentError(f"{what}: the asset is partitioned ({kind}): give partition_column, the table's "
                                   f"partition column whose values are its partition keys, so each commit is "
                                   f"reported for the partitions it touched")
    return PartitionMapping(column, partitions_def)


__all__ = ["PartitionMapping", "partition_mapping"]
