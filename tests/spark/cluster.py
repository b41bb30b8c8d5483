"""A Spark standalone cluster on 127.0.0.1 from PySpark's own jars: one master and two 1-core
workers started with ``bin/spark-class`` (as ``sbin/start-master.sh`` would, without the daemon
scripts), and the master's JSON status. One cluster per test run (the ``spark_cluster`` fixture
in tests/conftest.py); every test names its applications and finds them in the status. And a
Spark Connect server (``spark_connect``), also one per run.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from paimonflow.jobs.submit import SubmitCommand

SPARK_HOME = os.path.dirname(pyspark.__file__)
BIN = os.path.dirname(sys.executable)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_env(**extra: str) -> dict[str, str]:
    """The environment of every Spark process here: this interpreter for Python workers, 127.0.0.1."""
    return {**os.environ, "SPARK_HOME": SPARK_HOME, "PATH": f"{BIN}:{os.environ['PATH']}",
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1", **extra}


@dataclass
class StandaloneCluster:
    workers: int = 2
    cores_per_worker: int = 1
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="paimonflow-spark-")))
    port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _start(self, name: str, *args: str) -> None:
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115 (closed with the process)
        self.processes.append(subprocess.Popen(
            [os.path.join(SPARK_HOME, "bin", "spark-class"), *args], stdout=log, stderr=subprocess.STDOUT,
            env=spark_env(SPARK_WORKER_DIR=str(self.root / "work"), SPARK_LOG_DIR=str(self.root)),
            start_new_session=True))

    def start(self, timeout_s: float = 120) -> StandaloneCluster:
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.ui_port))
        self.wait(lambda s: s.get("status") == "ALIVE", timeout_s, "the master did not come up")
        for i in range(self.workers):
            self._start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--cores", str(self.cores_per_worker), "--memory", "1g", "--webui-port", "0", self.url)
        self.wait(lambda s: sum(w["state"] == "ALIVE" for w in s["workers"]) == self.workers, timeout_s,
                  "the workers did not register")
        return self

    def status(self) -> dict:
        """The master's JSON status: workers, active and completed applications."""
        return _get_json(f"http://127.0.0.1:{self.ui_port}/json/")

    def worker_status(self, worker: dict) -> dict:
        return _get_json(f"{worker['webuiaddress']}/json/")

    def wait(self, ready, timeout_s: float, message: str) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                status = self.status()
                if ready(status):
                    return status
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"{message} in {timeout_s:.0f} s; logs in {self.root}")
            time.sleep(0.5)

    def application(self, name: str, timeout_s: float = 60) -> dict:
        """The one completed application called ``name`` (the master moves an application to the
        completed list shortly after its driver disconnects)."""
        status = self.wait(lambda s: any(a["name"] == name for a in s["completedapps"]), timeout_s,
                           f"no completed application named {name!r}")
        found = [a for a in status["completedapps"] if a["name"] == name]
        assert len(found) == 1, f"{len(found)} applications named {name!r}"
        return found[0]

    def executors_of(self, app_id: str) -> list[dict]:
        """The executors the workers ran for ``app_id`` (running or finished)."""
        out = []
        for worker in self.status()["workers"]:
            details = self.worker_status(worker)
            out += [{**e, "worker": worker["id"]} for e in details["executors"] + details["finishedexecutors"]
                    if e["appid"] == app_id]
        return out

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()


def _get_json(url: str, attempts: int = 6):
    """GET ``url`` as JSON, retried: on a loaded machine a status page can be slow to answer."""
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return json.load(response)
        except OSError:
            if attempt == attempts - 1:
                raise
            time.sleep(1 + attempt)
    raise AssertionError("unreachable")


SUBMIT_CONF = {"spark.ui.enabled": "false", "spark.executor.memory": "512m", "spark.driver.memory": "512m",
               # schedule once every worker's executor has registered (else one may take all tasks)
               "spark.scheduler.minRegisteredResourcesRatio": "1.0",
               "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s"}


def spark_submit(cluster: StandaloneCluster, name: str, command: SubmitCommand, *,
                 timeout_s: float = 600) -> subprocess.CompletedProcess:
    """Run ``command`` (the integrations' :func:`~paimonflow.jobs.submit.submit_command`) with
    ``spark-submit --master <cluster> --name <name>``, its storage options in the environment."""
    argv = command.argv(spark_submit=os.path.join(BIN, "spark-submit"), master=cluster.url, conf=SUBMIT_CONF,
                        name=name)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=spark_env(**command.env))


@dataclass
class ConnectServer:
    """A Spark Connect server on 127.0.0.1 started from PySpark's jars (as
    ``sbin/start-connect-server.sh`` would, in the foreground): its own driver on ``master``, its UI's
    REST API on ``ui_port``. Clients run in other processes (a Connect client switches the whole
    interpreter to Connect mode)."""

    master: str = "local[2]"
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="paimonflow-connect-")))
    port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 180) -> ConnectServer:
        conf = {"spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": str(self.port),
                "spark.ui.port": str(self.ui_port), "spark.driver.memory": "1g",
                "spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "4"}
        argv = [os.path.join(BIN, "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                "--name", "paimonflow-connect", "--master", self.master]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        log = open(self.root / "connect.log", "wb")  # noqa: SIM115 (closed with the process)
        self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=spark_env(),
                                        start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise TimeoutError(f"the Spark Connect server did not come up; log in {self.root}/connect.log")
            time.sleep(0.5)

    def jobs(self, status: str | None = None) -> list[dict]:
        """The server application's Spark jobs (``status``: running, succeeded, failed...)."""
        base = f"http://127.0.0.1:{self.ui_port}/api/v1/applications"
        (app,) = _get_json_list(base)
        return _get_json_list(f"{base}/{app['id']}/jobs" + (f"?status={status}" if status else ""))

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _get_json_list(url: str) -> list[dict]:
    value = _get_json(url)
    assert isinstance(value, list), value
    return value
