"""A real Airflow deployment on 127.0.0.1 for the tests, as a team runs one: PostgreSQL (Debian's
package) as the metadata database, and Airflow's API server, scheduler (LocalExecutor),
dag-processor and triggerer as separate processes, with the simple auth manager and real users.
The DAG folder is a copy of ``dags_examples/`` (its ``.airflowignore`` included). Nothing of the
test process's Airflow environment leaks in: the connection and Variables are created through the
REST API by the test, like an operator would.

One deployment per test run (``tests/airflow/test_deployment.py`` holds it for its module)."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.processes import free_port, stop_process, wait_for

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
USERS = {"admin": "admin", "operator": "op", "analyst": "viewer"}  # user -> simple auth manager role
SERVICES = ("scheduler", "dag-processor", "triggerer")


class Postgres:
    """A throwaway PostgreSQL cluster on 127.0.0.1 from the Debian package's binaries (``make
    test`` installs them). PostgreSQL refuses to run as root: under root it runs as the package's
    ``postgres`` user. Trust authentication on loopback only; fsync off (a test database)."""

    def __init__(self) -> None:
        self.bindir = self._bindir()
        self.root = Path(tempfile.mkdtemp(prefix="paimonflow-pg-"))
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self._as: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    @staticmethod
    def _bindir() -> Path:
        candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                            key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
        if not candidates:
            raise AssertionError("the deployment tests need PostgreSQL: sudo apt-get install postgresql "
                                 "(make test installs it when run as root)")
        return candidates[-1].parent

    @property
    def url(self) -> str:
        return f"postgresql+psycopg2://airflow@127.0.0.1:{self.port}/airflow"

    def start(self) -> Postgres:
        data = self.root / "data"
        subprocess.run([*self._as, str(self.bindir / "initdb"), "-D", str(data), "-U", "airflow", "-E", "UTF8",
                        "--auth=trust", "--no-sync"], check=True, capture_output=True, timeout=120)
        log = open(self.root / "postgres.log", "wb")  # noqa: SIM115 - the server's lifetime
        self.process = subprocess.Popen(
            [*self._as, str(self.bindir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(self.port),
             "-k", str(self.root), "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        wait_for("PostgreSQL to accept connections", self._create_database, timeout=60, every=0.5,
                 log=lambda: (self.root / "postgres.log").read_text(errors="replace")[-2000:])
        return self

    def _create_database(self) -> bool:
        import psycopg2

        try:
            connection = psycopg2.connect(host="127.0.0.1", port=self.port, user="airflow", dbname="postgres")
        except psycopg2.OperationalError:
            return False
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("CREATE DATABASE airflow")
        connection.close()
        return True

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, sig=signal.SIGINT)  # PostgreSQL's fast shutdown
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class Deployment:
    """Airflow's four processes on one PostgreSQL database, and a REST client per user."""

    home: Path
    warehouse: Path
    landing: Path
    postgres: Postgres = field(default_factory=Postgres)
    port: int = field(default_factory=free_port)
    passwords: dict[str, str] = field(default_factory=lambda: {u: secrets.token_urlsafe(12) for u in USERS})
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    _tokens: dict[str, str] = field(default_factory=dict)

    @property
    def dags(self) -> Path:
        return self.home / "dags"

    @property
    def lineage_file(self) -> Path:
        return self.home / "openlineage.jsonl"

    def lineage_events(self) -> list[dict[str, Any]]:
        """The OpenLineage events the deployment emitted so far."""
        if not self.lineage_file.exists():
            return []
        return [json.loads(line) for line in self.lineage_file.read_text().splitlines() if line.strip()]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The processes' environment: the test process's, minus every Airflow setting of the
        in-process tests (their connections, Variables and database), plus this deployment's."""
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("AIRFLOW", "PAIMONFLOW_", "_AIRFLOW", "PYTEST"))}
        return {
            **base,
            "PATH": f"{BIN}:{base.get('PATH', '')}",
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(self.home / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.postgres.url,
            "AIRFLOW__CORE__FERNET_KEY": self._fernet_key,
            "AIRFLOW__CORE__AUTH_MANAGER":
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{r}" for u, r in USERS.items()),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.home / "passwords.json"),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__API_AUTH__JWT_SECRET": self._jwt_secret,
            "AIRFLOW__API__SECRET_KEY": self._jwt_secret,
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__BASE_URL": self.base_url,
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base_url}/execution/",
            # re-parse each DAG file every 10 s: the asset watcher must survive re-parses
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "10",
            "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "300",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "logs"),
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(self._log_ports[0]),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(self._log_ports[1]),
            # the OpenLineage provider's listener writes every event to a file (one JSON per line)
            "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "append": True,
                                                           "log_file_path": str(self.lineage_file)}),
            "AIRFLOW__OPENLINEAGE__NAMESPACE": "paimonflow-deployment-test",
            "PYTHONUNBUFFERED": "1",
            # the workers' spark-submit (on PATH above) and its Python, as a worker host is set up
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1",
        }

    def __post_init__(self) -> None:
        from cryptography.fernet import Fernet

        self._fernet_key = Fernet.generate_key().decode()
        self._log_ports = (free_port(), free_port())
        self._jwt_secret = secrets.token_urlsafe(48)

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Deployment:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "plugins").mkdir(exist_ok=True)
        (self.home / "logs").mkdir(exist_ok=True)
        shutil.copytree(REPO / "dags_examples", self.dags, ignore=shutil.ignore_patterns("__pycache__"))
        for test_dag in (REPO / "tests" / "airflow" / "deployment_dags").glob("paimon_*.py"):
            shutil.copy(test_dag, self.dags / test_dag.name)  # the deployment tests' own DAGs
        (self.home / "passwords.json").write_text(json.dumps(self.passwords))
        self.postgres.start()
        migrated = subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=self.env(), capture_output=True,
                                  text=True, timeout=600)
        assert migrated.returncode == 0, f"airflow db migrate failed:\n{migrated.stdout[-3000:]}{migrated.stderr[-3000:]}"
        self._spawn("api-server", ["api-server", "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"])
        for service in SERVICES:
            self._spawn(service, [service])
        wait_for("the API server", self._healthy, timeout=180, log=lambda: self.log_tail("api-server"))
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.home / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - the process's lifetime
        self.processes[name] = subprocess.Popen([str(BIN / "airflow"), *argv], env=self.env(), stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def restart(self, name: str) -> None:
        """Stop one process (SIGTERM, as a deployment tool does) and start it again."""
        stop_process(self.processes[name])
        self._spawn(name, [name])

    def stop(self) -> None:
        for process in self.processes.values():
            stop_process(process)
        self.postgres.stop()

    def log_tail(self, name: str, chars: int = 4000) -> str:
        path = self.home / "logs" / f"{name}.log"
        return f"--- {name} ---\n" + (path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)")

    def logs(self) -> str:
        return "\n".join(self.log_tail(name, 2500) for name in ("api-server", *SERVICES))

    def _healthy(self) -> bool:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError(f"airflow {name} exited with {process.returncode}\n{self.log_tail(name)}")
        try:
            return httpx.get(f"{self.base_url}/api/v2/monitor/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    # -- REST -----------------------------------------------------------------------------------

    def token(self, user: str) -> str:
        """A JWT from the simple auth manager's login endpoint (``POST /auth/token``)."""
        if user not in self._tokens:
            response = httpx.post(f"{self.base_url}/auth/token", timeout=30,
                                  json={"username": user, "password": self.passwords[user]})
            assert response.status_code == 201, response.text
            self._tokens[user] = response.json()["access_token"]
        return self._tokens[user]

    def request(self, method: str, path: str, *, user: str | None = "admin", **kwargs: Any) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        if user is not None:
            headers["Authorization"] = f"Bearer {self.token(user)}"
        return httpx.request(method, f"{self.base_url}{path}", headers=headers, timeout=60, **kwargs)

    def api(self, method: str, path: str, *, expect: int = 200, **kwargs: Any) -> Any:
        response = self.request(method, f"/api/v2{path}", **kwargs)
        assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text}"
        return response.json() if response.content else None

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return self.api("GET", f"/dags/{dag_id}/dagRuns", params={"order_by": "run_after", "limit": 100})["dag_runs"]

    def task_instances(self, dag_id: str, run_id: str) -> dict[str, str]:
        found = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
        return {ti["task_id"]: ti["state"] for ti in found}

    def wait_for_run(self, dag_id: str, run_id: str, *, timeout: float = 300,
                     states: tuple[str, ...] = ("success", "failed")) -> dict[str, Any]:
        def finished() -> dict[str, Any] | None:
            run = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")
            return run if run["state"] in states else None

        run = wait_for(f"{dag_id} run {run_id}", finished, timeout=timeout, every=2, log=self.logs)
        assert run["state"] == "success", (f"{dag_id} {run_id}: {run['state']} "
                                           f"{self.task_instances(dag_id, run_id)}\n{self.task_log_tail(dag_id)}")
        return run

    def task_log_tail(self, dag_id: str, chars: int = 3000) -> str:
        logs = sorted((self.home / "logs").glob(f"dag_id={dag_id}/**/*.log"), key=lambda p: p.stat().st_mtime)
        return "\n".join(f"--- {p.relative_to(self.home)} ---\n{p.read_text(errors='replace')[-chars:]}"
                         for p in logs[-3:])

    def trigger(self, dag_id: str, *, logical_date: str | None = None, conf: Mapping[str, Any] | None = None) -> str:
        run = self.api("POST", f"/dags/{dag_id}/dagRuns", json={"logical_date": logical_date, "conf": dict(conf or {})})
        return run["dag_run_id"]

    def set_paused(self, dag_id: str, paused: bool) -> None:
        self.api("PATCH", f"/dags/{dag_id}", json={"is_paused": paused})

    def wait_for_dags(self, *dag_ids: str, timeout: float = 240) -> None:
        def parsed() -> bool:
            known = {d["dag_id"] for d in self.api("GET", "/dags", params={"limit": 100})["dags"]}
            return set(dag_ids) <= known

        wait_for(f"the dag-processor to parse {', '.join(dag_ids)}", parsed, timeout=timeout, every=2,
                 log=lambda: self.log_tail("dag-processor"))
        errors = self.api("GET", "/importErrors")["import_errors"]
        assert not errors, errors
