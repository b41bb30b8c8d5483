"""The Airflow plugin: template macros and the table pages.

Macros (``{{ macros.paimonflow.latest_snapshot_id('shop.orders') }}``): ``latest_snapshot_id``,
``tag_snapshot_id``, ``table_options``; each takes ``conn_id=`` (default ``paimon_default``) or
``warehouse=`` (DAG code is trusted). The pages are served by Airflow's API server under
``/paimonflow`` behind Airflow's authentication, for users who may read the connection
(:mod:`.web`): ``/paimonflow/tables`` lists the ``paimon`` connections the user may read,
``/paimonflow/connections/<conn_id>/tables`` a connection's tables and
``/paimonflow/connections/<conn_id>/health/<db>.<table>`` a table's health with pictures
(``plugins/health.py``), ``.../health/<db>.<table>$branch_<branch>`` a branch's. Errors are pages
too, and the pages take the Airflow UI's light or dark mode.

The nav entry *Browse -> Paimon tables* is an external view: Airflow 3.3's plugin interface gives
external views (and React apps) no permission of their own, and the UI lists them for every user
who may read plugins, so a user who may not read connections sees the entry and gets the 403 page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow.plugins_manager import AirflowPlugin

from .provider_info import PAGES_PREFIX

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send


def _table(identifier: str, conn_id: str = "paimon_default", warehouse: str | None = None):
    from paimonflow.operators.airflow.hook import PaimonHook

    return PaimonHook(None if warehouse else conn_id, warehouse=warehouse).get_table(identifier)


def latest_snapshot_id(table: str, conn_id: str = "paimon_default", warehouse: str | None = None) -> int | None:
    return _table(table, conn_id, warehouse).snapshot_manager.latest_id()


def tag_snapshot_id(table: str, tag: str, conn_id: str = "paimon_default", warehouse: str | None = None) -> int:
    return _table(table, conn_id, warehouse).tags.get(tag).id


def table_options(table: str, conn_id: str = "paimon_default", warehouse: str | None = None) -> dict[str, str]:
    return dict(_table(table, conn_id, warehouse).schema.options)


class _PagesApp:
    """The pages' ASGI app, built on its first request.

    Airflow imports this module wherever it loads plugins (task workers too, for the macros); only
    the API server serves the pages, so only it imports Airflow's API security modules (:mod:`.web`).
    """

    def __init__(self) -> None:
        self._app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            from .web import create_app

            self._app = create_app()
        await self._app(scope, receive, send)


class PaimonflowPlugin(AirflowPlugin):
    # AirflowPlugin declares these lists as attributes, not ClassVars (so no ClassVar here: RUF012 off)
    name = "paimonflow"
    macros = [latest_snapshot_id, tag_snapshot_id, table_options]  # noqa: RUF012

    fastapi_apps = [  # noqa: RUF012
        {"app": _PagesApp(), "url_prefix": PAGES_PREFIX, "name": "paimonflow table health"}]

    external_views = [  # noqa: RUF012
        {"name": "Paimon tables", "href": f"{PAGES_PREFIX}/tables", "destination": "nav", "category": "browse",
         "url_route": "paimonflow"}]
