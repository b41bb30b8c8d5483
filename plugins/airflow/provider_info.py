"""Airflow provider registration (entry point ``apache_airflow_provider``): the ``paimon``
connection type and its hook. The plugin (macros, the table-health page) registers through the
``airflow.plugins`` entry point, which Airflow loads without ``lazy_load_providers = False``."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def _version() -> str:
    try:
        return version("paimonflow")
    except PackageNotFoundError:  # running from a source tree
        return "0.0.0"


def get_provider_info() -> dict:
    return {
        "package-name": "paimonflow",
        "name": "paimonflow (Apache Paimon)",
        "description": "Run the whole life of Apache Paimon tables: writes, compaction, expiry, tags, "
                       "branches, snapshot sensors, on Spark or the paimonflow core.",
        "versions": [_version()],
        "connection-types": [{"connection-type": "paimon",
                              "hook-class-name": "paimonflow.operators.airflow.hook.PaimonHook"}],
        "plugins": [{"name": "paimonflow", "plugin-class": "paimonflow.plugins.airflow.plugin.PaimonflowPlugin"}],
    }
