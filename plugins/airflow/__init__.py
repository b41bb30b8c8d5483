"""paimonflow.plugins.airflow: Airflow's registration of paimonflow (Airflow code only, never Dagster).

* ``plugin``: :class:`PaimonflowPlugin` (entry point ``airflow.plugins``): template macros and the
  table pages served by Airflow's API server under ``/paimonflow``;
* ``web``: those pages, a FastAPI app behind Airflow's authentication (imported by the API server
  only, on the first request);
* ``provider_info``: :func:`get_provider_info` (entry point ``apache_airflow_provider``): the
  ``paimon`` connection type and its hook.

The names are loaded on first use: Airflow imports ``provider_info`` while it discovers providers,
which must not build the plugin's web app or import Airflow's plugin manager.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plugin import PaimonflowPlugin, latest_snapshot_id, table_options, tag_snapshot_id
    from .provider_info import get_provider_info

_MODULES = {"PaimonflowPlugin": "plugin", "latest_snapshot_id": "plugin", "tag_snapshot_id": "plugin",
            "table_options": "plugin", "get_provider_info": "provider_info"}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_MODULES[name]}", __name__), name)


__all__ = ["PaimonflowPlugin", "get_provider_info", "latest_snapshot_id", "table_options", "tag_snapshot_id"]
