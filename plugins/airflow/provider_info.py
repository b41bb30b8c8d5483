"""Airflow provider registration (entry point ``apache_airflow_provider``): everything Airflow
learns about paimonflow without importing it.

* the ``paimon`` connection type, its hook, and its form, declared as Airflow 3.3 reads it from
  provider info (``ui-field-behaviour``: the standard fields relabelled, hidden or given
  placeholders; ``conn-fields``: the extra fields, stored under their names in the connection's
  extra JSON, which is where :class:`~paimonflow.operators.airflow.hook.PaimonHook` reads them);
* the integration and the modules of its hooks, operators, sensors and triggers;
* the plugin (macros, the table-health page), which also registers through the ``airflow.plugins``
  entry point, loaded without ``lazy_load_providers = False``.

This module is plain data: Airflow imports it in every process that discovers providers, so it
imports no hook, operator or Airflow module. The hook's ``get_ui_field_behaviour`` is built from
the same constants (:func:`ui_field_behaviour`), so the form has one description.
"""

from __future__ import annotations

import copy
from importlib.metadata import PackageNotFoundError, version
from typing import Any

INTEGRATION = "Apache Paimon"
CONNECTION_TYPE = "paimon"
HOOK_NAME = "Apache Paimon (paimonflow)"
HOOK_CLASS = "paimonflow.operators.airflow.hook.PaimonHook"

ENGINES = ("spark", "core", "spark-submit")
"""The operators' engines, and the choices of the connection's ``engine`` field (first: the default)."""
DEFAULT_SPARK_CONN_ID = "spark_default"

# -- the connection form ------------------------------------------------------------------------
# Standard fields: host is the warehouse URI, login/password the S3 access and secret keys (or an
# AWS connection, the extra field aws_conn_id, gives them). The schema and port are not read (a URI
# connection's scheme is joined back to the host by the hook).
HIDDEN_FIELDS = ("schema", "port")
RELABELING = {"host": "Warehouse URI", "login": "S3 access key", "password": "S3 secret key"}
PLACEHOLDERS = {
    "host": "s3://lake/warehouse or /data/warehouse",
    "login": "empty: the AWS connection below, else the default AWS credential chain",
    "password": "the secret key of the access key",
}

# Extra fields, each stored in the extra JSON under its name (the storage option key the hook
# passes on, or the hook's own setting); an empty field is not stored. Anything else (for
# example ``s3.verify-conditional-writes``) still goes into the extra JSON by hand.
CONN_FIELDS: dict[str, dict[str, Any]] = {
    "s3.endpoint": {
        "label": "S3 endpoint",
        "description": "URL of an S3-compatible store (MinIO, Ceph...), e.g. http://minio:9000. Empty for AWS S3.",
        "schema": {"type": ["string", "null"]},
    },
    "s3.region": {
        "label": "S3 region",
        "description": "e.g. eu-west-1. Empty: the AWS default (environment, profile).",
        "schema": {"type": ["string", "null"]},
    },
    "s3.path-style-access": {
        "label": "S3 path-style access",
        "description": "Address buckets as <endpoint>/<bucket>, as most S3-compatible stores need. "
                       "Unset: botocore decides.",
        "schema": {"type": ["boolean", "null"]},
    },
    "s3.session-token": {
        "label": "S3 session token",
        "description": "With temporary credentials (STS). Masked in task logs, like the secret key.",
        "schema": {"type": ["string", "null"], "format": "password"},
    },
    "aws_conn_id": {
        "label": "AWS connection",
        "description": "An Amazon Web Services connection (Amazon provider) that gives the S3 credentials "
                       "(its keys, profile, role to assume or the default chain), endpoint and region, instead "
                       "of the keys here. Empty: the keys above, else the default AWS credential chain.",
        "schema": {"type": ["string", "null"]},
    },
    "engine": {
        "label": "Default engine",
        "description": "Where operators without engine= run their job: spark (the worker's SparkSession), "
                       "core (no Spark, for small tables) or spark-submit (through the Spark connection).",
        "schema": {"type": "string", "enum": list(ENGINES), "default": ENGINES[0]},
    },
    "spark_conn_id": {
        "label": "Spark connection",
        "description": f"The Spark connection of the spark-submit engine (default {DEFAULT_SPARK_CONN_ID}).",
        "schema": {"type": ["string", "null"]},
    },
}

# -- what the provider holds ----------------------------------------------------------------------
HOOK_MODULES = ("paimonflow.operators.airflow.hook",)
OPERATOR_MODULES = ("paimonflow.operators.airflow.operators", "paimonflow.operators.airflow.ddl",
                    "paimonflow.operators.airflow.checks", "paimonflow.operators.airflow.warehouse")
SENSOR_MODULES = ("paimonflow.sensors.airflow.snapshot",)
TRIGGER_MODULES = ("paimonflow.sensors.airflow.snapshot", "paimonflow.operators.airflow.spark_app")
PLUGIN_CLASS = "paimonflow.plugins.airflow.plugin.PaimonflowPlugin"


def ui_field_behaviour() -> dict[str, Any]:
    """The standard fields' behaviour in the shape of ``BaseHook.get_ui_field_behaviour`` (and of
    Airflow's ``ProvidersManager.field_behaviours``): ``hidden_fields``, ``relabeling``,
    ``placeholders``. Fresh containers on every call."""
    return {"hidden_fields": list(HIDDEN_FIELDS), "relabeling": dict(RELABELING),
            "placeholders": dict(PLACEHOLDERS)}


def _version() -> str:
    try:
        return version("paimonflow")
    except PackageNotFoundError:  # running from a source tree
        return "0.0.0"


EXTRA_LINK = "paimonflow.operators.airflow.links.TableHealthLink"  # every operator's link to its table's page
# a job operator's link to the Spark application it submitted (operators/airflow/spark_app.py)
SPARK_LINK = "paimonflow.operators.airflow.spark_app.SparkApplicationLink"
# where Airflow's API server mounts the plugin's pages, and a table's health within them: the plugin
# serves it (plugin.py, web.py) and the operators' link points at it (operators/airflow/links.py)
PAGES_PREFIX = "/paimonflow"
HEALTH_ROUTE = "/connections/{connection_id}/health/{identifier}"


def _modules(modules: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"integration-name": INTEGRATION, "python-modules": list(modules)}]


def get_provider_info() -> dict[str, Any]:
    """The provider info Airflow validates against its ``provider_info.schema.json``."""
    return {
        "package-name": "paimonflow",
        "name": "paimonflow (Apache Paimon)",
        "description": "Run the whole life of Apache Paimon tables: writes, compaction, expiry, tags, "
                       "branches, snapshot sensors, on Spark or the paimonflow core.",
        "versions": [_version()],
        "integrations": [{"integration-name": INTEGRATION, "external-doc-url": "https://paimon.apache.org/",
                          "tags": ["apache"]}],
        "hooks": _modules(HOOK_MODULES),
        "operators": _modules(OPERATOR_MODULES),
        "sensors": _modules(SENSOR_MODULES),
        "triggers": _modules(TRIGGER_MODULES),
        "connection-types": [{
            "connection-type": CONNECTION_TYPE,
            "hook-class-name": HOOK_CLASS,
            "hook-name": HOOK_NAME,
            "ui-field-behaviour": {"hidden-fields": list(HIDDEN_FIELDS), "relabeling": dict(RELABELING),
                                   "placeholders": dict(PLACEHOLDERS)},
            "conn-fields": copy.deepcopy(CONN_FIELDS),
        }],
        "plugins": [{"name": "paimonflow", "plugin-class": PLUGIN_CLASS}],
        "extra-links": [EXTRA_LINK, SPARK_LINK],
    }


__all__ = ["CONNECTION_TYPE", "CONN_FIELDS", "ENGINES", "HEALTH_ROUTE", "HOOK_NAME", "PAGES_PREFIX", "get_provider_info", "ui_field_behaviour"]
