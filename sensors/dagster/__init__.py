"""paimonflow.sensors.dagster: Dagster sensors on a table's snapshots (Dagster code only, never
Airflow), deciding with :func:`paimonflow.sensors.rule.decide`:

* :func:`paimon_snapshot_sensor` requests one run per new snapshot range (the downstream
  incremental read);
* :func:`paimon_commit_observer` records commits made anywhere as asset materializations, so
  declarative automation and freshness see them: one per range, or one per partition key the
  range touched for a partitioned asset (:mod:`.partitions` maps the table's partition column to
  the keys).
"""

from .observer import paimon_commit_observer
from .sensor import paimon_snapshot_sensor

__all__ = ["paimon_commit_observer", "paimon_snapshot_sensor"]
