"""The operators' link to the plugin's table-health page. The route is the one the plugin serves
(``PAGES_PREFIX`` and ``HEALTH_ROUTE`` of ``plugins/airflow/provider_info.py``, which imports
nothing heavy), so the link and the page cannot drift apart."""

from __future__ import annotations

from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

from paimonflow.core.errors import InvalidNameError
from paimonflow.core.names import parse_table_name
from paimonflow.plugins.airflow.provider_info import HEALTH_ROUTE, PAGES_PREFIX


def health_path(conn_id: str, table: str) -> str:
    """The table-health page of a table (``db.t``) or branch (``db.t$branch_b``) known by its
    connection, from the API server's root."""
    return PAGES_PREFIX + HEALTH_ROUTE.format(connection_id=quote(conn_id, safe=""), identifier=quote(table, safe=""))


def has_health_page(table: object) -> bool:
    """Whether the page can show ``table``: a name the core parses (``parse_table_name``) that
    names a table or one of its branches, not a system table."""
    try:
        return parse_table_name(table)[2] is None
    except InvalidNameError:
        return False


class TableHealthLink(BaseOperatorLink):
    """The task's table (or branch) on the plugin's table-health page (behind Airflow's login, like
    the page). Airflow 3 evaluates the link on the worker when the task ends, with the rendered
    operator, and keeps it in XCom; a table given by ``warehouse=`` (no connection) has no page, nor
    has a system table or a name the core refuses, so no link."""

    name = "Paimon table health"

    def get_link(self, operator, *, ti_key) -> str:
        from airflow.configuration import conf

        if getattr(operator, "warehouse", None) or not getattr(operator, "paimon_conn_id", None):
            return ""
        if not has_health_page(getattr(operator, "table", None)):
            return ""
        return conf.get("api", "base_url", fallback="").rstrip("/") + health_path(operator.paimon_conn_id,
                                                                                  operator.table)


__all__ = ["TableHealthLink", "has_health_page", "health_path"]
