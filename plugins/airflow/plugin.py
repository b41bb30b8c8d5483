"""The Airflow plugin: template macros and the table-health page.

Macros (``{{ macros.paimonflow.latest_snapshot_id('shop.orders') }}``): ``latest_snapshot_id``,
``tag_snapshot_id``, ``table_options``; each takes ``conn_id=`` (default ``paimon_default``) or
``warehouse=``. The page is a FastAPI app served by Airflow's API server under ``/paimonflow``:
``/paimonflow/tables`` lists the tables of the connection's warehouse, and
``/paimonflow/health/<db>.<table>`` shows a table's health with pictures (``plugins/health.py``).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin


def _table(identifier: str, conn_id: str = "paimon_default", warehouse: str | None = None):
    from paimonflow.operators.airflow.hook import PaimonHook

    return PaimonHook(None if warehouse else conn_id, warehouse=warehouse).get_table(identifier)


def latest_snapshot_id(table: str, conn_id: str = "paimon_default", warehouse: str | None = None) -> int | None:
    return _table(table, conn_id, warehouse).snapshot_manager.latest_id()


def tag_snapshot_id(table: str, tag: str, conn_id: str = "paimon_default", warehouse: str | None = None) -> int:
    return _table(table, conn_id, warehouse).tags.get(tag).id


def table_options(table: str, conn_id: str = "paimon_default", warehouse: str | None = None) -> dict[str, str]:
    return dict(_table(table, conn_id, warehouse).schema.options)


def create_app():
    """The FastAPI app of the health pages."""
    from fastapi import FastAPI, HTTPException
    from fastapi.responses import HTMLResponse

    from paimonflow.core.errors import PaimonflowError

    from ..health import render_html, table_health

    app = FastAPI(title="paimonflow table health")

    @app.get("/tables", response_class=HTMLResponse)
    def tables(conn_id: str = "paimon_default", warehouse: str | None = None) -> str:
        from paimonflow.operators.airflow.hook import PaimonHook

        catalog = PaimonHook(None if warehouse else conn_id, warehouse=warehouse).get_conn()
        links = [f"{db}.{t}" for db in catalog.list_databases() for t in catalog.list_tables(db)]
        items = "".join(f'<li><a href="health/{name}">{name}</a></li>' for name in links)
        return f"<!doctype html><html><body><h1>paimonflow tables</h1><ul>{items}</ul></body></html>"

    @app.get("/health/{identifier}", response_class=HTMLResponse)
    def health(identifier: str, conn_id: str = "paimon_default", warehouse: str | None = None) -> str:
        try:
            return render_html(table_health(_table(identifier, conn_id, warehouse)))
        except PaimonflowError as exc:
            raise HTTPException(status_code=404, detail=f"{type(exc).__name__}: {exc}") from None

    return app


class PaimonflowPlugin(AirflowPlugin):
    # AirflowPlugin declares these lists as attributes, not ClassVars (so no ClassVar here: RUF012 off)
    name = "paimonflow"
    macros = [latest_snapshot_id, tag_snapshot_id, table_options]  # noqa: RUF012

    fastapi_apps = [  # noqa: RUF012
        {"app": create_app(), "url_prefix": "/paimonflow", "name": "paimonflow table health"}]

    external_views = [  # noqa: RUF012
        {"name": "Paimon tables", "href": "/paimonflow/tables", "destination": "nav", "category": "browse",
         "url_route": "paimonflow"}]
