"""The plugin's pages behind Airflow's authentication, served by Airflow's own API app.

Airflow's ``create_app()`` builds the app as ``airflow api-server`` does, with the simple auth
manager and three users: ``admin`` (role ADMIN) and ``op`` (role OP) may read connections,
``viewer`` (role VIEWER) may not. Tokens come from the auth manager's own login endpoint
(``POST /auth/token``). The plugin is registered by Airflow's plugin manager (entry point
``airflow.plugins``), not mounted by the test.
"""

from __future__ import annotations

import html
import json
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
USERS = {"admin": "ADMIN", "op": "OP", "viewer": "VIEWER"}
HOSTILE = "<script>alert(1)</script>"
HOSTILE_TAG = "<img src=x onerror=alert(1)>"  # a file name (no '/') another engine could have written

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


def get(api, path: str, user: str | None = None, tokens: dict[str, str] | None = None, **kwargs):
    client, _ = api
    headers = {"Authorization": f"Bearer {tokens[user]}"} if user and tokens else {}
    return client.get(path, headers=headers, **kwargs)


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


@pytest.mark.parametrize("path", [*ROUTES, "/api/v2/connections", "/api/v2/connections/paimon_lab"])
def test_anonymous_callers_get_401_like_airflows_own_api(api, path):
    response = get(api, path)
    assert response.status_code == 401, (path, response.text)
    assert response.json() == {"detail": "Not authenticated"}


@pytest.mark.parametrize("path", [*ROUTES, "/api/v2/connections"])
def test_a_forged_token_is_refused_like_airflows_own_api(api, path):
    client, _ = api
    response = client.get(path, headers={"Authorization": "Bearer not.a.jwt"})
    airflow = client.get("/api/v2/connections", headers={"Authorization": "Bearer not.a.jwt"})
    assert response.status_code == airflow.status_code == 403


@pytest.mark.parametrize("path", [*ROUTES, "/api/v2/connections"])
def test_a_user_who_may_not_read_connections_gets_403(api, tokens, path):
    """VIEWER may read DAGs but not connections: 403 everywhere, whether the connection exists
    or not (the answer does not tell)."""
    response = get(api, path, "viewer", tokens)
    assert response.status_code == 403, (path, response.text)
    assert response.json() == {"detail": "Forbidden"}


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
    assert "<script" not in body and "<img" not in body
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
        response = get(api, path, "admin", tokens)
        assert response.status_code == 404
        assert response.json() == {"detail": f"no paimon connection {conn_id!r}"}


@pytest.mark.parametrize("identifier", ["%2E%2E", "lab.%2E%2E", "%2E%2E.orders", "lab", "lab.orders.x",
                                        "lab.orders$branch_x", "lab.orders%5C..", "lab.%00", "lab.%20orders"])
def test_an_invalid_identifier_is_a_one_line_400(api, tokens, identifier):
    response = get(api, f"/paimonflow/connections/paimon_lab/health/{identifier}", "admin", tokens)
    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith("invalid ") and "\n" not in response.json()["detail"]


@pytest.mark.parametrize("tail", ["..%2F..%2Fother-warehouse", "lab.orders%2F..%2F..", "..%2Fother.secret",
                                  "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd"])
def test_a_path_traversal_reaches_no_page(api, tokens, tail):
    response = get(api, f"/paimonflow/connections/paimon_lab/health/{tail}", "admin", tokens)
    assert response.status_code in (400, 404), response.text
    assert "Table health" not in response.text and "other.secret" not in response.text


def test_a_missing_table_is_a_one_line_404(api, tokens):
    response = get(api, "/paimonflow/connections/paimon_lab/health/lab.nope", "admin", tokens)
    assert response.status_code == 404 and response.json() == {"detail": "table 'lab.nope' does not exist"}


def test_warehouse_from_the_request_has_no_effect(api, tokens, warehouses):
    _, other = warehouses
    query = {"warehouse": str(other), "conn_id": "paimon_lab"}
    tables = get(api, "/paimonflow/connections/paimon_lab/tables", "admin", tokens, params=query)
    assert tables.status_code == 200 and "lab.orders" in tables.text and "other.secret" not in tables.text
    secret = get(api, "/paimonflow/connections/paimon_lab/health/other.secret", "admin", tokens, params=query)
    assert secret.status_code == 404 and secret.json() == {"detail": "table 'other.secret' does not exist"}
    landing = get(api, "/paimonflow/tables", "admin", tokens, params=query)
    assert landing.status_code == 200 and "other" not in landing.text
    # the route of earlier versions that took the warehouse from the query string is gone
    assert get(api, "/paimonflow/health/other.secret", "admin", tokens, params=query).status_code == 404


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
