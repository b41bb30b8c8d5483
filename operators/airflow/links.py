"""The operators' link to the plugin's table-health page. The route is the one the plugin serves
(``PAGES_PREFIX`` and ``HEALTH_ROUTE`` of ``plugins/airflow/provider_info.py``, which imports
nothing heavy), so the link and the page cannot drift apart."""

from __future__ import annotations

from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

from paimonflow.plugins.airflow.provider_info import HEALTH_ROUTE, PAGES_PREFIX


def health_path(conn_id: str, table: str) -> str:
    """The table-health page of a table known by its connection, from the API server's root."""
    return PAGES_PREFIX + HEALTH_ROUTE.format(connection_id=quote(conn_id, safe=""), identifier=quote(table, safe=""))


class TableHealthLink(BaseOperatorLink):
    """The task's table on the plugin's table-health page (behind Airflow's login, like the page).
    Airflow 3 evaluates the link on the worker when the task ends, with the rendered operator, and
    keeps it in XCom; a table given by ``warehouse=`` (no connection) has no page, so no link."""

    name = "Paimon table health"

    def get_link(self, operator, *, ti_key) -> str:
        from airflow.configuration import conf

        if getattr(operator, "warehouse", None) or not getattr(operator, "paimon_conn_id", None):
            return ""
        return conf.get("api", "base_url", fallback="").rstrip("/") + health_path(operator.paimon_conn_id,
                                                                                  operator.table)


__all__ = ["TableHealthLink", "health_path"]
