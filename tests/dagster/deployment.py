"""A real Dagster deployment on 127.0.0.1 for the tests, as a team runs one: ``dagster-webserver``
(the UI and its GraphQL API) and ``dagster-daemon`` (sensors, schedules, declarative automation,
the run queue) as two separate processes over one ``DAGSTER_HOME`` and a workspace loading the
example definitions (``paimonflow.dags_examples.dagster_definitions``); runs are launched by the
daemon as subprocesses (Dagster's default run launcher). Everything is driven through GraphQL.

Dagster OSS has no login: the webserver listens on 127.0.0.1 only (docs/dagster.md).
One deployment per test run (``tests/dagster/test_deployment.py`` holds it for its module)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.processes import free_port, stop_process, wait_for

BIN = Path(sys.executable).parent
MODULE = "paimonflow.dags_examples.dagster_definitions"
LOCATION = "paimonflow-examples"
REPOSITORY = "__repository__"


@dataclass
class DagsterDeployment:
    """``start()``, then ``graphql(...)``; ``stop()`` ends both processes."""

    env_extra: Mapping[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="paimonflow-dagster-deploy-")))
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "PAIMONFLOW_"))}
        return {**keep, "DAGSTER_HOME": str(self.home), "PATH": f"{BIN}:{keep.get('PATH', '')}",
                "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", **self.env_extra}

    def start(self) -> DagsterDeployment:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "dagster.yaml").write_text(textwrap.dedent("""\
            telemetry:
              enabled: false
            run_coordinator:
              module: dagster.core.run_coordinator
              class: QueuedRunCoordinator
              config:
                max_concurrent_runs: 2
            code_servers:
              local_startup_timeout: 300
            """))
        (self.root / "workspace.yaml").write_text(textwrap.dedent(f"""\
            load_from:
              - python_module:
                  module_name: {MODULE}
                  attribute: defs
                  location_name: {LOCATION}
                  working_directory: {self.root}
            """))
        workspace = ["-w", str(self.root / "workspace.yaml")]
        # the storages made once, before two processes would race to make them (both stamping
        # the sqlite schema: the loser's daemon died with "UNIQUE constraint failed: alembic_version")
        subprocess.run([str(BIN / "dagster"), "instance", "migrate"], env=self.env(), cwd=self.root, check=True,
                       capture_output=True, timeout=300)
        self._spawn("webserver", [str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(self.port), *workspace])
        self._spawn("daemon", [str(BIN / "dagster-daemon"), "run", *workspace])
        wait_for("the webserver to load the example definitions", self._loaded, timeout=300, every=2,
                 log=self.logs)
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 (the process writes to it until stopped)
        self.processes[name] = subprocess.Popen(argv, env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                                                cwd=self.root, start_new_session=True)

    def stop(self) -> None:
        for name in ("daemon", "webserver"):
            if name in self.processes:
                stop_process(self.processes[name])

    def log_tail(self, name: str, chars: int = 4000) -> str:
        path = self.root / f"{name}.log"
        return f"--- {name} ---\n" + (path.read_text(errors="replace")[-chars:] if path.exists() else "")

    def logs(self) -> str:
        return "\n".join(self.log_tail(name) for name in ("webserver", "daemon"))

    # -- GraphQL ------------------------------------------------------------------------------
    def graphql(self, query: str, **variables: Any) -> dict[str, Any]:
        response = httpx.post(f"{self.base_url}/graphql", json={"query": query, "variables": variables}, timeout=60)
        response.raise_for_status()
        body = response.json()
        assert not body.get("errors"), body["errors"]
        return body["data"]

    def _loaded(self) -> bool:
        try:
            data = self.graphql("""{ workspaceOrError { ... on Workspace { locationEntries {
                name locationOrLoadError { __typename ... on PythonError { message } } } } } }""")
        except (httpx.HTTPError, AssertionError):
            return False
        entries = data["workspaceOrError"]["locationEntries"]
        errors = [e["locationOrLoadError"] for e in entries if e["locationOrLoadError"]["__typename"] == "PythonError"]
        assert not errors, f"the example definitions failed to load: {errors}"
        return any(e["locationOrLoadError"]["__typename"] == "RepositoryLocation" for e in entries)

    @property
    def location(self) -> str:
        return LOCATION

    def selector(self, kind: str, name: str) -> dict[str, str]:
        """A ``SensorSelector``/``ScheduleSelector`` of the example location (``kind``: sensor, schedule)."""
        return {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY, f"{kind}Name": name}

    def turn_on(self, kind: str, name: str) -> None:
        """Start a sensor or a schedule (``kind``) as the UI's toggle does."""
        mutation, result = {"sensor": ("startSensor", "Sensor { state: sensorState { status } }"),
                            "schedule": ("startSchedule", "ScheduleStateResult { state: scheduleState { status } }")}[kind]
        data = self.graphql(f"""mutation($s: {kind.title()}Selector!) {{ {mutation}({kind}Selector: $s) {{
            __typename ... on {result} ... on PythonError {{ message }} }} }}""", s=self.selector(kind, name))
        assert data[mutation].get("state", {}).get("status") == "RUNNING", data

    def sensor_status(self, name: str) -> str:
        data = self.graphql("""query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) {
            __typename ... on Sensor { sensorState { status } } } }""",
                            s=self.selector("sensor", name))
        return data["sensorOrError"]["sensorState"]["status"]

    def stop_schedule(self, name: str) -> None:
        data = self.graphql("""query($s: ScheduleSelector!) { scheduleOrError(scheduleSelector: $s) {
            ... on Schedule { scheduleState { id selectorId } } } }""",
                            s=self.selector("schedule", name))
        state = data["scheduleOrError"]["scheduleState"]
        self.graphql("""mutation($id: String!, $sid: String!) { stopRunningSchedule(id: $id, scheduleOriginId: $sid) {
            __typename } }""", id=state["id"], sid=state["selectorId"])

    def launch(self, job: str, tags: Mapping[str, str]) -> str:
        """Launch a run of ``job`` as the UI's launchpad does; its run id."""
        data = self.graphql("""mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
            __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }""",
                            p={"selector": {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY,
                                            "jobName": job},
                               "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]}})
        assert data["launchRun"]["__typename"] == "LaunchRunSuccess", data
        return data["launchRun"]["run"]["runId"]

    def terminate(self, run_id: str) -> None:
        data = self.graphql("""mutation($id: String!) { terminateRun(runId: $id) { __typename
            ... on PythonError { message } } }""", id=run_id)
        assert data["terminateRun"]["__typename"] == "TerminateRunSuccess", data

    def run_status(self, run_id: str) -> str:
        data = self.graphql("""query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }""", id=run_id)
        return data["runOrError"]["status"]

    def runs(self, job: str) -> list[dict[str, Any]]:
        data = self.graphql("""query($job: String!) { runsOrError(filter: {pipelineName: $job}) {
            ... on Runs { results { runId status tags { key value } } } } }""", job=job)
        return data["runsOrError"]["results"]

    def materializations(self, path: list[str]) -> list[dict[str, Any]]:
        data = self.graphql("""query($key: AssetKeyInput!) { assetOrError(assetKey: $key) {
            ... on Asset { assetMaterializations(limit: 100) { runId timestamp tags { key value }
                metadataEntries { label ... on IntMetadataEntry { intValue } } } } } }""", key={"path": path})
        return (data["assetOrError"] or {}).get("assetMaterializations") or []

    def run_messages(self, run_id: str) -> list[tuple[str | None, str]]:
        """Every message event of a run, as ``(step key, message)``, in order."""
        data = self.graphql("""query($id: ID!) { logsForRun(runId: $id) { ... on EventConnection {
            events { ... on MessageEvent { message stepKey } } } } }""", id=run_id)
        return [(e.get("stepKey"), e["message"]) for e in data["logsForRun"]["events"] if e.get("message")]

    def step_failures(self, run_id: str) -> list[tuple[str | None, str | None]]:
        """Each failed step of a run as ``(step key, the description of its dg.Failure)``: the one
        line the UI shows for it."""
        data = self.graphql("""query($id: ID!) { logsForRun(runId: $id) { ... on EventConnection { events {
            ... on ExecutionStepFailureEvent { stepKey failureMetadata { description } } } } } }""", id=run_id)
        return [(e.get("stepKey"), (e.get("failureMetadata") or {}).get("description"))
                for e in data["logsForRun"]["events"] if "failureMetadata" in e]

    def wait_for_run(self, run_id: str, *, timeout: float = 420) -> str:
        """Wait until the run has ended; its status (SUCCESS, FAILURE or CANCELED)."""
        def ended() -> str | None:
            status = self.run_status(run_id)
            return status if status in ("SUCCESS", "FAILURE", "CANCELED") else None

        return wait_for(f"run {run_id} to end", ended, timeout=timeout, every=2, log=self.logs)

    def sensor_ticks(self, name: str, limit: int = 10) -> list[dict[str, Any]]:
        """The sensor's latest ticks, newest first: ``status`` and ``skipReason``."""
        data = self.graphql("""query($s: SensorSelector!, $n: Int) { sensorOrError(sensorSelector: $s) {
            ... on Sensor { sensorState { ticks(limit: $n) { status skipReason } } } } }""",
                            s=self.selector("sensor", name), n=limit)
        return data["sensorOrError"]["sensorState"]["ticks"]

    def wait_for_success(self, job: str, *, count: int = 1, timeout: float = 420) -> list[dict[str, Any]]:
        """Wait until ``job`` has ``count`` finished runs; every one must have succeeded."""
        def finished():
            runs = [r for r in self.runs(job) if r["status"] in ("SUCCESS", "FAILURE", "CANCELED")]
            return runs if len(runs) >= count else None

        runs = wait_for(f"{count} finished run(s) of {job}", finished, timeout=timeout, every=3, log=self.logs)
        failed = [r for r in runs if r["status"] != "SUCCESS"]
        assert not failed, f"{job}: {failed}\n{self.logs()}"
        return runs


__all__ = ["DagsterDeployment"]
