"""paimonflow.sensors: waiting for a table's new snapshots, on the core's one watch rule.

* :mod:`paimonflow.sensors.rule` (framework-free, exported here): :func:`decide`, the one decision
  every sensor takes (has data of the wanted commit kinds arrived, which range is new, was the
  table rolled back or expired past the observation);
* :mod:`paimonflow.sensors.airflow`: the Airflow sensor, its deferrable trigger and the
  ``AssetWatcher`` event trigger;
* :mod:`paimonflow.sensors.dagster`: the Dagster cursor sensor.

Importing this package imports neither Airflow nor Dagster.
"""

from .rule import DATA_KINDS, Decision, decide

__all__ = ["DATA_KINDS", "Decision", "decide"]
