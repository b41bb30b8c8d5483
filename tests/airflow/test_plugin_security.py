"""The plugin's pages behind Airflow's authentication, served by Airflow's own API app.

Airflow's ``create_app()`` builds the app as ``airflow api-server`` does, with the simple auth
manager and three users: ``admin`` (role ADMIN) and ``op`` (role OP) may read connections,
``viewer`` (role VIEWER) may not. Tokens come from the auth manager's own login endpoint
(``POST /auth/token``). The plugin is registered by Airflow's plugin manager (entry point
``airflow.plugins``), not mounted by the test. Errors are HTML pages in the pages' layout (JSON
only for a caller that asks for it), as a user sees them in the UI's frame.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import secrets
import shutil
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
USERS = {"admin": "ADMIN", "op": "OP", "viewer": "VIEWER"}
HOSTILE = "<script>alert(1)</script>"
HOSTILE_TAG = "<img src=x onerror=alert(1)>"  # a file name (no '/') another engine could have written
BRANCH = "dev+1"  # a branch of lab.orders ('+' is percent-encoded in its page's URL)
BRANCH_PAGE = "/paimonflow/connections/paimon_lab/health/lab.orders%24branch_dev%2B1"
JSON = {"Accept": "application/json"}

# Every route of the plugin, for a connection that exists and one that does not.
ROUTES = ["/paimonflow/tables", "/paimonflow/connections/paimon_lab/tables",
          "/paimonflow/connections/paimon_lab/health/lab.orders", "/paimonflow/connections/paimon_db/tables",
          "/paimonflow/connections/no_such_conn/tables", "/paimonflow/connections/no_such_conn/health/lab.orders"]


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The connections' warehouse (``lab.orders`` with hostile metadata) and another one that
    no connection names (``other.secret``)."""
    lab, other = tmp_path_factory.mktemp("lab-warehouse"), tmp_path_factory.mktemp("other-warehouse")
    catalog = Catalog(str(lab))
    catalog.create_database("lab")
    orders = catalog.create_table("lab.orders", SCHEMA, primary_keys=["id"], comment=f"orders {HOSTILE}",
                                  options={"bucket": "2", "owner": HOSTILE})
    orders.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    orders.tags.create("v1", snapshot_id=1)
    branch = orders.branches.create(BRANCH, tag="v1")  # snapshot 1 and tag v1, then a commit of its own
    branch.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    tag_dir = Path(orders.path) / "tag"
    shutil.copy(tag_dir / "tag-v1", tag_dir / f"tag-{HOSTILE_TAG}")
    Catalog(str(other)).create_database("other")
    Catalog(str(other)).create_table("other.secret", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    return lab, other


@pytest.fixture(scope="module")
def api(airflow_db: Path, warehouses: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """(Airflow's API app in a test client, the app itself), with the users and connections set up."""
    from airflow.api_fastapi.app import create_app
    from airflow.models import Connection
    from airflow.utils.session import create_session
    from fastapi.testclient import TestClient
    from sqlalchemy import delete

    lab, _ = warehouses
    with pytest.MonkeyPatch.context() as env:
        env.setenv("_AIRFLOW_PROCESS_CONTEXT", "server")  # as airflow.api_fastapi.main sets it: connections from the DB too
        env.setenv("AIRFLOW__CORE__AUTH_MANAGER",
                   "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager")
        env.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "False")
        env.setenv("AIRFLOW__API_AUTH__JWT_SECRET", secrets.token_urlsafe(64))
        env.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", ",".join(f"{u}:{r}" for u, r in USERS.items()))
        env.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE",
                   str(tmp_path_factory.mktemp("auth") / "passwords.json"))
        env.setenv("AIRFLOW_CONN_PAIMON_LAB", json.dumps({"conn_type": "paimon", "host": str(lab)}))
        gone = lab.parent / "gone-warehouse"  # a warehouse that is not there: its pages cannot be read
        env.setenv("AIRFLOW_CONN_PAIMON_GONE", json.dumps({"conn_type": "paimon", "host": str(gone)}))
        with create_session() as session:  # a connection of the metadata database, beside the env ones
            session.add(Connection(conn_id="paimon_db", conn_type="paimon", host=str(lab)))
        try:
            app = create_app()
            with TestClient(app) as client:
                yield client, app
        finally:
            with create_session() as session:
                session.execute(delete(Connection).where(Connection.conn_id == "paimon_db"))


@pytest.fixture(scope="module")
def tokens(api) -> dict[str, str]:
    """A JWT per user, from the simple auth manager's login endpoint and its generated passwords."""
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

    client, _ = api
    passwords = SimpleAuthManager.get_passwords()
    out = {}
    for user in USERS:
        response = client.post("/auth/token", json={"username": user, "password": passwords[user]})
        assert response.status_code == 201, response.text
        out[user] = response.json()["access_token"]
    return out


def get(api, path: str, user: str | None = None, tokens: dict[str, str] | None = None, *,
        headers: dict[str, str] | None = None, **kwargs):
    client, _ = api
    sent = {"Authorization": f"Bearer {tokens[user]}"} if user and tokens else {}
    return client.get(path, headers={**sent, **(headers or {})}, **kwargs)


def error_line(response, status: int) -> str:
    """The one line an error page says, once checked that it is the pages' HTML error page with
    ``status``: the layout (and its color mode), no traceback."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html"), response.headers
    body = response.text
    assert f"<h1>{status} · {HTTPStatus(status).phrase}</h1>" in body
    assert 'localStorage.getItem("theme")' in body and "--bg:" in body  # the pages' layout
    assert "Traceback" not in body and 'File "' not in body
    [line] = re.findall(r'<p class="error">(.*?)</p>', body, flags=re.S)
    assert "\n" not in line
    return html.unescape(line)


def test_the_pages_are_mounted_by_airflows_plugin_manager(api):
    from airflow import plugins_manager
    from starlette.routing import Mount

    from paimonflow.plugins.airflow.plugin import PaimonflowPlugin

    _, app = api
    [entry] = PaimonflowPlugin.fastapi_apps
    loaded = [p for p in plugins_manager._get_plugins()[0] if isinstance(p, PaimonflowPlugin)]
    assert [type(p.source).__name__ for p in loaded] == ["EntryPointSource"]
    mounts = [r for r in app.routes if isinstance(r, Mount) and r.path == "/paimonflow"]
    assert [m.app for m in mounts] == [entry["app"]]


@pytest.mark.parametrize("path", ROUTES)
def test_anonymous_callers_get_a_401_page_like_airflows_own_api(api, path):
    for airflow in ("/api/v2/connections", "/api/v2/connections/paimon_lab"):  # Airflow's API: JSON, untouched
        assert get(api, airflow).status_code == 401 and get(api, airflow).json() == {"detail": "Not authenticated"}
    assert error_line(get(api, path), 401) == "You are not signed in to Airflow: sign in, then reload this page."
    json_error = get(api, path, headers=JSON)  # what an API client asks for
    assert json_error.status_code == 401 and json_error.json() == {"detail": "Not authenticated"}


@pytest.mark.parametrize("path", [*ROUTES, "/api/v2/connections"])
def test_a_forged_token_is_refused_like_airflows_own_api(api, path):
    client, _ = api
    response = client.get(path, headers={"Authorization": "Bearer not.a.jwt"})
    airflow = client.get("/api/v2/connections", headers={"Authorization": "Bearer not.a.jwt"})
    assert response.status_code == airflow.status_code == 403
    if path.startswith("/paimonflow/"):
        assert error_line(response, 403).startswith("Your Airflow session is not valid: sign in to Airflow again")


@pytest.mark.parametrize("path", [*ROUTES, "/api/v2/connections"])
def test_a_user_who_may_not_read_connections_gets_403(api, tokens, path):
    """VIEWER may read DAGs but not connections: 403 everywhere, whether the connection exists
    or not (the answer does not tell)."""
    response = get(api, path, "viewer", tokens)
    if path.startswith("/api/"):
        assert response.status_code == 403 and response.json() == {"detail": "Forbidden"}
        return
    line = error_line(response, 403)
    assert line.startswith("Your Airflow user may not read"), line
    if "/connections/" in path:  # the same answer whether the connection exists or not
        conn_id = path.split("/")[3]
        assert line == (f"Your Airflow user may not read the connection {conn_id!r}; these pages show only "
                        "connections you may read.")
    json_error = get(api, path, "viewer", tokens, headers=JSON)
    assert json_error.status_code == 403 and json_error.json() == {"detail": "Forbidden"}


@pytest.mark.parametrize("user", ["admin", "op"])
def test_users_who_may_read_connections_see_their_tables(api, tokens, user):
    assert get(api, "/api/v2/connections", user, tokens).status_code == 200
    landing = get(api, "/paimonflow/tables", user, tokens)
    assert landing.status_code == 200 and landing.headers["content-type"].startswith("text/html")
    assert 'href="connections/paimon_lab/tables"' in landing.text
    assert 'href="connections/paimon_db/tables"' in landing.text  # from the metadata database
    assert "spark_local" not in landing.text and "paimon_secret" in landing.text  # paimon connections only
    for conn_id in ("paimon_lab", "paimon_db"):
        tables = get(api, f"/paimonflow/connections/{conn_id}/tables", user, tokens)
        assert tables.status_code == 200 and 'href="health/lab.orders"' in tables.text
    page = get(api, "/paimonflow/connections/paimon_lab/health/lab.orders", user, tokens)
    assert page.status_code == 200
    assert "Table health: lab.orders" in page.text and "<svg" in page.text and ">v1<" in page.text


def test_the_ui_session_cookie_authenticates_too(api, tokens):
    client, _ = api
    client.cookies.set("_token", tokens["op"])
    try:
        assert client.get("/paimonflow/connections/paimon_lab/health/lab.orders").status_code == 200
        client.cookies.set("_token", tokens["viewer"])
        assert client.get("/paimonflow/connections/paimon_lab/health/lab.orders").status_code == 403
    finally:
        client.cookies.clear()


def test_hostile_metadata_is_rendered_escaped(api, tokens):
    page = get(api, "/paimonflow/connections/paimon_lab/health/lab.orders", "admin", tokens)
    assert page.status_code == 200
    body = page.text
    assert body.count("<script") == 1 and "<img" not in body  # the one script: the layout's color mode
    assert body.index("<script>") < body.index("</head>") and "<script>alert" not in body
    assert f"orders {html.escape(HOSTILE)}" in body  # the table comment
    assert f"<td>owner</td><td>{html.escape(HOSTILE)}</td>" in body  # an option value
    assert f"<td>{html.escape(HOSTILE_TAG)}</td>" in body  # a tag name
    assert body.count("<svg") == 2 and body.count("</svg>") == 2  # the pictures are still markup


def test_the_retained_range_says_expired_only_when_snapshots_expired(api, tokens):
    body = get(api, "/paimonflow/connections/paimon_lab/health/lab.orders", "admin", tokens).text
    assert "Retained snapshots 1..1." in body and "earlier ones expired" not in body


@pytest.mark.parametrize("conn_id", ["no_such_conn", "spark_local"])
def test_a_connection_that_is_missing_or_not_paimon_is_a_one_line_404(api, tokens, conn_id):
    for path in (f"/paimonflow/connections/{conn_id}/tables", f"/paimonflow/connections/{conn_id}/health/lab.orders"):
        assert error_line(get(api, path, "admin", tokens), 404) == f"no paimon connection {conn_id!r}"


@pytest.mark.parametrize("identifier", ["%2E%2E", "lab.%2E%2E", "%2E%2E.orders", "lab", "lab.orders.x",
                                        "lab.orders$branch_", "lab.orders$branch_x$", "lab.orders$x$y",
                                        "lab.orders%5C..", "lab.%00", "lab.%20orders"])
def test_an_invalid_identifier_is_a_one_line_400(api, tokens, identifier):
    path = f"/paimonflow/connections/paimon_lab/health/{identifier}"
    assert error_line(get(api, path, "admin", tokens), 400).startswith("invalid ")
    json_error = get(api, path, "admin", tokens, headers=JSON)
    assert json_error.status_code == 400 and json_error.json()["detail"].startswith("invalid ")


@pytest.mark.parametrize(("identifier", "system"), [("lab.orders$snapshots", "snapshots"),
                                                    ("lab.orders%24branch_dev%2B1%24files", "files")])
def test_a_system_table_is_a_400_page_that_says_so(api, tokens, identifier, system):
    line = error_line(get(api, f"/paimonflow/connections/paimon_lab/health/{identifier}", "admin", tokens), 400)
    assert line.startswith("'lab.orders$") and f"is the system table {system!r}" in line
    assert "the health pages show tables ('lab.orders') and their branches" in line


def test_a_branch_has_its_own_health_page(api, tokens):
    page = get(api, BRANCH_PAGE, "op", tokens)
    assert page.status_code == 200, page.text
    body = page.text
    assert f"Table health: lab.orders$branch_{BRANCH}" in body
    assert f"Branch <strong>{BRANCH}</strong> of <a href=\"lab.orders\">lab.orders</a>" in body
    assert "Retained snapshots 1..2." in body  # the branch's own commit: snapshot 2
    assert ">v1<" in body and f"<strong>{BRANCH}</strong> (this page)" in body
    main = get(api, "/paimonflow/connections/paimon_lab/health/lab.orders", "op", tokens).text
    assert "Retained snapshots 1..1." in main  # main did not see the branch's commit
    assert f'<a href="lab.orders%24branch_dev%2B1">{BRANCH}</a>' in main  # a relative link to the branch page


def test_a_missing_branch_is_a_one_line_404(api, tokens):
    response = get(api, "/paimonflow/connections/paimon_lab/health/lab.orders$branch_nope", "admin", tokens)
    assert error_line(response, 404) == "branch 'nope' of table 'lab.orders' does not exist"


def test_the_operators_link_opens_the_page_of_its_table_or_branch(api, tokens):
    from paimonflow.operators.airflow.links import TableHealthLink

    def link(table: str) -> str:
        operator = SimpleNamespace(paimon_conn_id="paimon_lab", warehouse=None, table=table)
        return TableHealthLink().get_link(operator, ti_key=None)

    assert link(f"lab.orders$branch_{BRANCH}").endswith(BRANCH_PAGE)
    assert get(api, BRANCH_PAGE, "op", tokens).status_code == 200
    assert get(api, link("lab.orders")[link("lab.orders").index("/paimonflow/"):], "op", tokens).status_code == 200
    # no page, so no link: a system table, a name the core refuses
    assert link("lab.orders$snapshots") == link("lab.orders$branch_b$files") == link("lab..orders") == ""


@pytest.mark.parametrize("tail", ["..%2F..%2Fother-warehouse", "lab.orders%2F..%2F..", "..%2Fother.secret",
                                  "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd"])
def test_a_path_traversal_reaches_no_page(api, tokens, tail):
    response = get(api, f"/paimonflow/connections/paimon_lab/health/{tail}", "admin", tokens)
    assert response.status_code in (400, 404), response.text
    assert "Table health" not in response.text and "other.secret" not in response.text


def test_a_missing_table_is_a_one_line_404(api, tokens):
    response = get(api, "/paimonflow/connections/paimon_lab/health/lab.nope", "admin", tokens)
    assert error_line(response, 404) == "table 'lab.nope' does not exist"


def test_warehouse_from_the_request_has_no_effect(api, tokens, warehouses):
    _, other = warehouses
    query = {"warehouse": str(other), "conn_id": "paimon_lab"}
    tables = get(api, "/paimonflow/connections/paimon_lab/tables", "admin", tokens, params=query)
    assert tables.status_code == 200 and "lab.orders" in tables.text and "other.secret" not in tables.text
    secret = get(api, "/paimonflow/connections/paimon_lab/health/other.secret", "admin", tokens, params=query)
    assert error_line(secret, 404) == "table 'other.secret' does not exist"
    landing = get(api, "/paimonflow/tables", "admin", tokens, params=query)
    assert landing.status_code == 200 and "other" not in landing.text
    # the route of earlier versions that took the warehouse from the query string is gone
    assert get(api, "/paimonflow/health/other.secret", "admin", tokens, params=query).status_code == 404


def test_an_unreadable_warehouse_is_a_500_page_without_its_path(api, tokens, warehouses):
    lab, _ = warehouses
    response = get(api, "/paimonflow/connections/paimon_gone/tables", "admin", tokens)
    assert error_line(response, 500) == ("the warehouse of connection 'paimon_gone' could not be read "
                                         "(WarehouseNotFoundError); see the API server log")
    table = get(api, "/paimonflow/connections/paimon_gone/health/lab.orders", "admin", tokens)
    assert error_line(table, 404) == "table 'lab.orders' does not exist"
    for body in (response.text, table.text):
        assert str(lab.parent) not in body and "gone-warehouse" not in body


def test_an_unexpected_error_is_a_500_page_and_the_traceback_goes_to_the_log(api, tokens, warehouses, monkeypatch,
                                                                            caplog):
    from paimonflow.plugins.airflow import web

    lab, _ = warehouses

    def broken(table):
        raise RuntimeError(f"bug near {lab}/secret-key=AKIA0")

    monkeypatch.setattr(web, "table_health", broken)
    response = get(api, "/paimonflow/connections/paimon_lab/health/lab.orders", "admin", tokens)
    assert error_line(response, 500) == ("The page could not be made because of an unexpected error; "
                                         "see the API server log.")
    assert str(lab) not in response.text and "AKIA0" not in response.text and "RuntimeError" not in response.text
    assert any(r.exc_info and "AKIA0" in str(r.exc_info[1]) for r in caplog.records)  # the log has it
    json_error = get(api, "/paimonflow/connections/paimon_lab/health/lab.orders", "admin", tokens, headers=JSON)
    assert json_error.status_code == 500 and "AKIA0" not in json_error.text


def test_an_unknown_page_or_method_is_an_error_page(api, tokens):
    response = get(api, "/paimonflow/connections/paimon_lab/nope", "admin", tokens)
    assert error_line(response, 404) == "There is no such page."
    assert '<a href="/paimonflow/tables">All paimon connections</a>' in response.text  # the way back
    client, _ = api
    response = client.post("/paimonflow/tables", headers={"Authorization": f"Bearer {tokens['admin']}"})
    assert error_line(response, 405) == "These pages only answer GET."


def test_errors_are_json_only_for_a_caller_that_prefers_json(api):
    client, _ = api
    for accept in ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "*/*", "",  # a browser...
                   "application/json;q=0.5, text/html", "application/json;q=x, text/html;q=0.2"):
        assert error_line(client.get("/paimonflow/tables", headers={"Accept": accept}), 401), accept
    for accept in ("application/json", "text/html;q=0.1, application/json", "application/JSON, */*"):
        response = client.get("/paimonflow/tables", headers={"Accept": accept})
        assert response.status_code == 401 and response.json() == {"detail": "Not authenticated"}, accept


def _script_hash(body: str) -> str:
    [script] = re.findall(r"<script>(.*?)</script>", body, flags=re.S)
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


@pytest.mark.parametrize(("path", "user", "status"), [
    ("/paimonflow/tables", "admin", 200), ("/paimonflow/connections/paimon_lab/tables", "op", 200),
    ("/paimonflow/connections/paimon_lab/health/lab.orders", "op", 200), (BRANCH_PAGE, "op", 200),
    ("/paimonflow/tables", None, 401), ("/paimonflow/tables", "viewer", 403),
    ("/paimonflow/connections/paimon_lab/health/lab..x", "admin", 400),
    ("/paimonflow/connections/no_such_conn/tables", "admin", 404)])
def test_every_page_follows_the_airflow_ui_color_mode_and_runs_no_other_script(api, tokens, path, user, status):
    """The Airflow 3 UI keeps its color mode in localStorage["theme"] (next-themes; "light", "dark"
    or "system") and marks <html> with the class: the pages do the same, colours are CSS variables
    switched by that class (or by prefers-color-scheme without script), and the Content-Security-
    Policy lets that one script run and nothing else (rendered in Chromium:
    test_page_color_mode.py)."""
    response = get(api, path, user, tokens)
    assert response.status_code == status
    body = response.text
    assert 'window.localStorage.getItem("theme")' in body and 'root.classList.add(mode)' in body
    assert 'window.addEventListener("storage"' in body and '"(prefers-color-scheme: dark)"' in body
    assert ":root{color-scheme:light;--bg:#ffffff;--fg:#000000;" in body
    assert ":root.dark{color-scheme:dark;--bg:#000000;--fg:#fafafa;" in body
    assert "@media (prefers-color-scheme: dark){:root:not(.light){color-scheme:dark;--bg:#000000;" in body
    assert "html,body{background:var(--bg);color:var(--fg)}" in body and "#222" not in body
    policy = response.headers["content-security-policy"]
    assert f"script-src {_script_hash(body)};" in policy and "default-src 'none'" in policy
    assert "frame-ancestors 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    assert response.headers["x-content-type-options"] == "nosniff" and response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("path", ["/paimonflow/docs", "/paimonflow/openapi.json", "/paimonflow/redoc"])
def test_no_schema_or_docs_pages_are_served(api, path):
    assert get(api, path).status_code == 404


def test_credential_like_table_options_are_redacted():
    """paimonflow refuses storage settings as table options, but a table another engine wrote may
    hold them: the report shows their keys, never their values."""
    from paimonflow.plugins.health import Health, render_html, shown_options

    options = shown_options({"fs.s3a.secret.key": "S3CR3T", "s3.access-key": "AKIA1", "my.password": "pw",
                             "bucket": "4", "owner": "team <a>"})
    assert options == {"bucket": "4", "fs.s3a.secret.key": "<redacted>", "my.password": "<redacted>",
                       "owner": "team <a>", "s3.access-key": "<redacted>"}
    body = render_html(Health(table="lab.t", options=options))
    assert "S3CR3T" not in body and "AKIA1" not in body and ">pw<" not in body
    assert "<td>fs.s3a.secret.key</td><td>&lt;redacted&gt;</td>" in body and "team &lt;a&gt;" in body
