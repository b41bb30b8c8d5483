"""The table pages: a FastAPI app that Airflow's API server mounts under ``/paimonflow``.

Routes (GET, HTML):

* ``/tables``: the ``paimon`` connections the caller may read, each linking to its tables;
* ``/connections/{connection_id}/tables``: the tables in that connection's warehouse;
* ``/connections/{connection_id}/health/{db.table}``: one table's health (:mod:`..health`).

Every route authenticates and authorizes the caller with the dependencies of Airflow's own
connections API: the user comes from the ``Authorization: Bearer <JWT>`` header or the ``_token``
cookie the UI sets (anonymous: 401), and ``requires_access_connection("GET")`` asks the auth
manager whether the user may read that connection, or read connections at all for the landing page
(not allowed: 403). Authorization comes before the connection is looked up, so a caller who may not
read a connection cannot tell whether it exists. Nothing in the request names a path or a
credential: the warehouse and its storage options come from the connection only, and the table
identifier must be a valid ``<database>.<table>`` (the core's name validator; 400 otherwise).
Errors answer with a one-line message and no traceback. The pages are rendered autoescaping
(:mod:`..templating`).

Imports Airflow's API server modules: only the API server imports this module, on the first request
(:class:`paimonflow.plugins.airflow.plugin.PaimonflowPlugin`).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from typing import TYPE_CHECKING

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_connection
from airflow.configuration import conf
from airflow.exceptions import AirflowNotFoundException
from airflow.models import Connection
from airflow.secrets.environment_variables import CONN_ENV_PREFIX
from fastapi import Depends, FastAPI, HTTPException, status
from fastapi.responses import HTMLResponse
from sqlalchemy import select

from paimonflow.core.errors import InvalidNameError, PaimonflowError
from paimonflow.core.names import split_identifier
from paimonflow.operators.airflow.hook import PaimonHook

from ..health import render_html, table_health
from ..templating import render_template
from .provider_info import HEALTH_ROUTE

if TYPE_CHECKING:
    from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
    from sqlalchemy.orm import Session

    from paimonflow.core import Catalog

log = logging.getLogger(__name__)

# Airflow's own dependency: the caller may read the connection of the path's {connection_id}, or
# (on a route without one) may read connections at all, as for GET /api/v2/connections.
MAY_READ_CONNECTION = [Depends(requires_access_connection(method="GET"))]


def readable_paimon_connections(user: BaseUser, session: Session) -> list[str]:
    """Ids of the ``paimon`` connections ``user`` may read (GET), sorted.

    Candidates are the metadata database's ``paimon`` connections and the ``AIRFLOW_CONN_*``
    environment variables; each is authorized as ``requires_access_connection`` does for its page
    (in multi-team mode with the team the database gives it) and kept only when the lookup the pages
    use finds it and finds it of type ``paimon``. Connections of other secrets backends cannot be
    listed; their pages are still reachable by URL.
    """
    candidates = set(session.scalars(select(Connection.conn_id).where(Connection.conn_type == PaimonHook.conn_type)))
    candidates |= {key[len(CONN_ENV_PREFIX):].lower() for key in os.environ if key.startswith(CONN_ENV_PREFIX)}
    teams = (Connection.get_conn_id_to_team_name_mapping(list(candidates), session=session)
             if conf.getboolean("core", "multi_team") else {})
    by_team: dict[str | None, set[str]] = defaultdict(set)
    for conn_id in candidates:
        by_team[teams.get(conn_id)].add(conn_id)
    manager = get_auth_manager()
    readable: set[str] = set()
    for team, conn_ids in by_team.items():
        readable |= manager.filter_authorized_connections(conn_ids=conn_ids, user=user, method="GET", team_name=team)
    return sorted(c for c in readable if _paimon_connection_exists(c))


def _paimon_connection_exists(conn_id: str) -> bool:
    try:
        return PaimonHook.get_connection(conn_id).conn_type == PaimonHook.conn_type
    except AirflowNotFoundException:
        return False


def _catalog(conn_id: str) -> Catalog:
    """The catalog of the ``paimon`` connection ``conn_id``; 404 when there is no such connection.

    Call only once the caller is authorized to read ``conn_id``."""
    if not _paimon_connection_exists(conn_id):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no paimon connection {conn_id!r}")
    try:
        return PaimonHook(conn_id).get_conn()
    except PaimonflowError as exc:
        raise _unreadable(f"the warehouse of connection {conn_id!r}", exc) from None


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _unreadable(what: str, exc: Exception) -> HTTPException:
    """A 500 naming ``what`` and the error's kind; the details (paths, endpoints) go to the server log."""
    log.warning("paimonflow pages: %s could not be read", what, exc_info=exc)
    return HTTPException(status.HTTP_500_INTERNAL_SERVER_ERROR,
                         f"{what} could not be read ({type(exc).__name__}); see the API server log")


def create_app() -> FastAPI:
    """The pages' FastAPI app (no OpenAPI schema or docs pages: every route needs a user)."""
    app = FastAPI(title="paimonflow tables", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/tables", response_class=HTMLResponse, dependencies=MAY_READ_CONNECTION)
    def connections(user: GetUserDep, session: SessionDep) -> str:
        return render_template("connections.html", connections=readable_paimon_connections(user, session))

    @app.get("/connections/{connection_id}/tables", response_class=HTMLResponse, dependencies=MAY_READ_CONNECTION)
    def tables(connection_id: str) -> str:
        catalog = _catalog(connection_id)
        try:
            names = [f"{db}.{t}" for db in catalog.list_databases() for t in catalog.list_tables(db)]
        except PaimonflowError as exc:
            raise _unreadable(f"the warehouse of connection {connection_id!r}", exc) from None
        return render_template("tables.html", conn_id=connection_id, tables=names)

    @app.get(HEALTH_ROUTE, response_class=HTMLResponse,
             dependencies=MAY_READ_CONNECTION)
    def health(connection_id: str, identifier: str) -> str:
        try:
            split_identifier(identifier)
        except InvalidNameError as exc:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, _one_line(exc)) from None
        catalog = _catalog(connection_id)
        try:
            return render_html(table_health(catalog.get_table(identifier)))
        except PaimonflowError as exc:
            if isinstance(exc, LookupError):  # no such database or table
                raise HTTPException(status.HTTP_404_NOT_FOUND, _one_line(exc)) from None
            raise _unreadable(f"table {identifier!r} of connection {connection_id!r}", exc) from None

    return app


__all__ = ["create_app", "readable_paimon_connections"]
