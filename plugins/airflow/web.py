"""The table pages: a FastAPI app that Airflow's API server mounts under ``/paimonflow``.

Routes (GET, HTML):

* ``/tables``: the ``paimon`` connections the caller may read, each linking to its tables;
* ``/connections/{connection_id}/tables``: the tables in that connection's warehouse;
* ``/connections/{connection_id}/health/{name}``: the health (:mod:`..health`) of a table,
  ``db.t``, or of one of its branches, ``db.t$branch_b``.

Every route authenticates and authorizes the caller with the dependencies of Airflow's own
connections API: the user comes from the ``Authorization: Bearer <JWT>`` header or the ``_token``
cookie the UI sets (anonymous: 401), and ``requires_access_connection("GET")`` asks the auth
manager whether the user may read that connection, or read connections at all for the landing page
(not allowed: 403). Authorization comes before the connection is looked up, so a caller who may not
read a connection cannot tell whether it exists. Nothing in the request names a path or a
credential: the warehouse and its storage options come from the connection only, and the table
name must be one the core's name parser accepts (``parse_table_name``), naming a table or a
branch, not a system table (400 otherwise). The pages are rendered autoescaping (:mod:`..templating`).

Every error (400, 401, 403, 404, 405, 500, unexpected ones included) is an HTML page in the pages'
layout with its status and one line saying what is wrong: no traceback, path or secret (details go
to the API server log). A caller that asks for JSON (``Accept: application/json`` over
``text/html``) gets Airflow's API shape instead, ``{"detail": "..."}``, with the same status. Every
answer carries :func:`~paimonflow.plugins.templating.page_headers` (the Content-Security-Policy that
lets only the pages' color-mode script run, ``no-store``).

Imports Airflow's API server modules: only the API server imports this module, on the first request
(:class:`paimonflow.plugins.airflow.plugin.PaimonflowPlugin`).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from http import HTTPStatus
from typing import TYPE_CHECKING

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_connection
from airflow.configuration import conf
from airflow.exceptions import AirflowNotFoundException
from airflow.models import Connection
from airflow.secrets.environment_variables import CONN_ENV_PREFIX
from fastapi import Depends, FastAPI, HTTPException, Request, status
from fastapi.responses import HTMLResponse, JSONResponse, Response
from sqlalchemy import select
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException

from paimonflow.core.errors import (
    BranchNotFoundError,
    DatabaseNotFoundError,
    InvalidNameError,
    PaimonflowError,
    TableNotFoundError,
)
from paimonflow.core.names import parse_table_name
from paimonflow.operators.airflow.hook import PaimonHook

from ..health import render_html, table_health
from ..templating import page_headers, render_template
from .provider_info import HEALTH_ROUTE

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
    from sqlalchemy.orm import Session
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from paimonflow.core import Catalog

log = logging.getLogger(__name__)

# Airflow's own dependency: the caller may read the connection of the path's {connection_id}, or
# (on a route without one) may read connections at all, as for GET /api/v2/connections.
MAY_READ_CONNECTION = [Depends(requires_access_connection(method="GET"))]
# a health page asked for something that is not there: 404 (any other error reading it: 500)
MISSING = (DatabaseNotFoundError, TableNotFoundError, BranchNotFoundError)


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


# Airflow's security dependencies answer these; the error page says them for a person.
_SIGN_IN_AGAIN = "sign in to Airflow again, then reload this page."
_AIRFLOW_DETAILS = {
    "Not authenticated": "You are not signed in to Airflow: sign in, then reload this page.",
    "Token Expired": f"Your Airflow session has expired: {_SIGN_IN_AGAIN}",
    "Invalid JWT token": f"Your Airflow session is not valid: {_SIGN_IN_AGAIN}",
}
_UNEXPECTED = "The page could not be made because of an unexpected error; see the API server log."


def _error_line(request: Request, status_code: int, detail: object) -> str:
    """What is wrong, in one line, for the error page (``detail`` never holds a path or a secret:
    the pages' own errors name what the caller asked for and the kind of error only)."""
    detail = " ".join(str(detail if detail is not None else "").split())
    if detail in _AIRFLOW_DETAILS:
        return _AIRFLOW_DETAILS[detail]
    if status_code == status.HTTP_403_FORBIDDEN and detail == "Forbidden":
        connection_id = request.path_params.get("connection_id")
        if connection_id is None:
            return "Your Airflow user may not read connections, and these pages list the connections you may read."
        return (f"Your Airflow user may not read the connection {connection_id!r}; these pages show only "
                "connections you may read.")
    if status_code == status.HTTP_404_NOT_FOUND and detail == HTTPStatus.NOT_FOUND.phrase:
        return "There is no such page."
    if status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        return "These pages only answer GET."
    return detail or HTTPStatus(status_code).phrase


def wants_json(request: Request) -> bool:
    """Whether the caller prefers JSON to HTML: ``application/json`` has a higher quality in its
    ``Accept`` header than ``text/html`` (a browser, ``*/*`` or no header: HTML)."""
    quality: dict[str, float] = {}
    for item in request.headers.get("accept", "").split(","):
        media, *parameters = (part.strip() for part in item.split(";"))
        q = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        media = media.lower()
        quality[media] = max(q, quality.get(media, 0.0))
    return quality.get("application/json", 0.0) > quality.get("text/html", 0.0)


def error_response(request: Request, status_code: int, detail: object,
                   headers: Mapping[str, str] | None = None) -> Response:
    """The answer to an error: the error page (its status, one line) or, for a caller that asks for
    JSON, Airflow's API shape ``{"detail": ...}``; with the same status either way."""
    if wants_json(request):
        return JSONResponse({"detail": detail}, status_code=status_code, headers=headers)
    home = request.scope.get("root_path", "") + "/tables"
    page = render_template("error.html", status=status_code, reason=HTTPStatus(status_code).phrase,
                           message=_error_line(request, status_code, detail), home=home)
    return HTMLResponse(page, status_code=status_code, headers=headers)


class _PageGuard:
    """ASGI middleware of the pages' app (inside Starlette's server-error middleware): adds
    :func:`page_headers` to every answer, and answers an unexpected exception with the 500 error
    page (the traceback goes to the server log) instead of letting it reach Airflow's app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                for name, value in page_headers().items():
                    headers.setdefault(name, value)
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:  # the web boundary: whatever went wrong, the caller gets the error page
            if started:
                raise
            log.exception("paimonflow pages: %s failed", scope.get("path"))
            response = error_response(Request(scope), status.HTTP_500_INTERNAL_SERVER_ERROR, _UNEXPECTED)
            await response(scope, receive, send_with_headers)


def health_table_name(name: str) -> str:
    """``name`` if the health page can show it: a table (``db.t``) or a branch of one
    (``db.t$branch_b``); a 400 for a system table or a name the core's parser refuses."""
    try:
        base, _, system = parse_table_name(name)
    except InvalidNameError as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, _one_line(exc)) from None
    if system is not None:
        raise HTTPException(status.HTTP_400_BAD_REQUEST,
                            f"{name!r} is the system table {system!r}: the health pages show tables ({base!r}) "
                            "and their branches ('<db>.<table>$branch_<branch>')")
    return name


def create_app() -> FastAPI:
    """The pages' FastAPI app (no OpenAPI schema or docs pages: every route needs a user)."""
    app = FastAPI(title="paimonflow tables", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(_PageGuard)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return error_response(request, exc.status_code, exc.detail, exc.headers)

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
        name = health_table_name(identifier)
        catalog = _catalog(connection_id)
        try:
            return render_html(table_health(catalog.get_table(name)))
        except PaimonflowError as exc:
            if isinstance(exc, MISSING):  # their messages name what was asked for, never a path
                raise HTTPException(status.HTTP_404_NOT_FOUND, _one_line(exc)) from None
            raise _unreadable(f"table {name!r} of connection {connection_id!r}", exc) from None

    return app


__all__ = ["create_app", "error_response", "health_table_name", "readable_paimon_connections", "wants_json"]
