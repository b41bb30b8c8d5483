"""paimonflow.sensors.airflow: Airflow's waits on a table's snapshots (Airflow code only, never
Dagster), all deciding with :func:`paimonflow.sensors.rule.decide`.

* :class:`PaimonSnapshotSensor`: poke, reschedule or deferrable; pushes the new snapshot range;
* :class:`PaimonSnapshotTrigger`: the sensor's deferred wait, in the triggerer;
* :class:`PaimonCommitEventTrigger`: the event trigger of an ``AssetWatcher`` (a DAG run per commit).
"""

from .snapshot import (
    PaimonCommitEventTrigger,
    PaimonSnapshotSensor,
    PaimonSnapshotTrigger,
    sensor_asset,
    table_commits_asset,
)

__all__ = ["PaimonCommitEventTrigger", "PaimonSnapshotSensor", "PaimonSnapshotTrigger", "sensor_asset",
           "table_commits_asset"]
