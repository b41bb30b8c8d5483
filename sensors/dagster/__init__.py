"""paimonflow.sensors.dagster: the Dagster sensor on a table's snapshots (Dagster code only, never
Airflow): :func:`paimon_snapshot_sensor` requests one run per new snapshot range, deciding with
:func:`paimonflow.sensors.rule.decide`."""

from .sensor import paimon_snapshot_sensor

__all__ = ["paimon_snapshot_sensor"]
