"""A spark-submit'ed paimonflow job as a Spark application the task follows without holding a
worker slot, and the task's link to it.

A deferrable operator (``deferrable=True`` with the ``spark-submit`` engine) starts
``spark-submit`` detached on the worker (client deploy mode: Spark runs no Python application in
a standalone cluster's deploy mode), names the application uniquely and defers to
:class:`SparkApplicationTrigger`. The trigger, in the triggerer, follows the application in the
standalone master's JSON status (``<master web UI>/json/``) and the job's result file on the
warehouse's storage (:mod:`paimonflow.jobs.results`), which the driver writes on success and on a
typed failure alike. The task resumes on a worker to read the result, or fails with the job's own
one-line error. Killing the task (mark failed, clear) kills the application through the master.

The master's web UI comes from the Spark connection: its ``master_web_ui`` extra
(``http://spark-master:8080``), else ``http://<host>:8080``, the standalone default.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow.sdk import BaseOperatorLink
from airflow.triggers.base import BaseTrigger, TriggerEvent

SPARK_APP_XCOM = "spark_application"
"""The XCom key of the application a task ran: ``{"id", "name", "state", "url", "master_web_ui"}``."""

DEFAULT_UI_PORT = 8080
_CSRF = re.compile(r'name="csrfToken"\s+value="([0-9A-Za-z]+)"')
SPARK_BINARIES = ("spark-submit", "spark2-submit", "spark3-submit")
FINISHED_STATES = frozenset({"FINISHED", "FAILED", "KILLED", "UNKNOWN"})


@dataclass(frozen=True, slots=True)
class SparkMaster:
    """Where a Spark connection submits (``url``) and where its standalone master shows its
    applications (``web_ui``; ``None`` when the master is not a standalone one)."""

    url: str | None
    web_ui: str | None
    spark_binary: str = "spark-submit"


def master_of(conn_id: str) -> SparkMaster:
    """The :class:`SparkMaster` of an Airflow Spark connection (see the module's doc)."""
    from airflow.exceptions import AirflowNotFoundException
    from airflow.sdk import BaseHook

    from .hook import spark_master_from_connection

    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return SparkMaster(None, None)
    extra = conn.extra_dejson or {}
    url = spark_master_from_connection(conn_id)
    ui = extra.get("master_web_ui")
    if not ui and url and url.startswith("spark://"):
        host = url.removeprefix("spark://").split(",")[0].split(":")[0]
        ui = f"http://{host}:{DEFAULT_UI_PORT}"
    binary = str(extra.get("spark-binary") or "spark-submit")
    if binary not in SPARK_BINARIES:  # as the Spark provider: a connection never names any program to run
        from paimonflow.core.errors import InvalidArgumentError

        raise InvalidArgumentError(f"the Spark connection {conn_id!r}: spark-binary must be one of "
                                   f"{', '.join(SPARK_BINARIES)}, not {binary!r}")
    return SparkMaster(url, str(ui).rstrip("/") if ui else None, binary)


def application_named(status: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """The application called ``name`` in a master's JSON status (running first, then completed)."""
    for key in ("activeapps", "completedapps"):
        for app in status.get(key) or ():
            if app.get("name") == name:
                return dict(app)
    return None


def application_record(app: Mapping[str, Any], web_ui: str) -> dict[str, Any]:
    """What the task keeps of an application (its XCom and its link)."""
    return {"id": app.get("id"), "name": app.get("name"), "state": app.get("state"),
            "url": f"{web_ui}/app/?appId={app.get('id')}", "master_web_ui": web_ui}


async def master_status(web_ui: str) -> dict[str, Any]:
    import httpx

    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.get(f"{web_ui}/json/")
        response.raise_for_status()
        return response.json()


def lookup_application(web_ui: str, name: str) -> dict[str, Any] | None:
    """The record of the application called ``name`` (blocking; ``None`` if the master does not
    know it or cannot be reached: a link is a convenience, never a reason to fail a task)."""
    import httpx

    try:
        status = httpx.get(f"{web_ui}/json/", timeout=15).json()
    except (httpx.HTTPError, ValueError):
        return None
    app = application_named(status, name)
    return application_record(app, web_ui) if app else None


class SparkApplicationLink(BaseOperatorLink):
    """The task's Spark application on its standalone master's web UI. Airflow 3 evaluates a link
    once, on the worker, with the operator that ran the task: the operator keeps the application
    it learned (:attr:`spark_application`, also pushed as the ``spark_application`` XCom); a task
    that submitted nothing has no link, and nothing is looked up for it."""

    name = "Spark application"

    def get_link(self, operator, *, ti_key) -> str:
        record = getattr(operator, "spark_application", None)
        return str(record.get("url") or "") if isinstance(record, Mapping) else ""


class SparkApplicationTrigger(BaseTrigger):
    """Follows one submitted paimonflow job until its result file appears or its application ends.

    Serialized with names only (the application's, the table's and the connections', the result
    file's URI): no storage option or credential goes into the trigger's row; the storage options
    are read again from the ``paimon`` connection where the trigger runs. A triggerer restart
    re-creates the trigger from these and goes on following the same application."""

    def __init__(self, *, app_name: str, master_web_ui: str | None, result_uri: str, table: str,
                 paimon_conn_id: str | None, warehouse: str | None, submitted_at: float,
                 aws_conn_id: str | None = None,
                 poll_interval: float = 5.0, register_timeout: float = 600.0, grace: float = 30.0) -> None:
        super().__init__()
        self.app_name, self.master_web_ui, self.result_uri = app_name, master_web_ui, result_uri
        self.table, self.paimon_conn_id, self.warehouse = table, paimon_conn_id, warehouse
        self.aws_conn_id = aws_conn_id
        self.submitted_at, self.poll_interval = submitted_at, poll_interval
        self.register_timeout, self.grace = register_timeout, grace

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"app_name": self.app_name, "master_web_ui": self.master_web_ui, "result_uri": self.result_uri,
                 "table": self.table, "paimon_conn_id": self.paimon_conn_id, "warehouse": self.warehouse,
                 "aws_conn_id": self.aws_conn_id, "submitted_at": self.submitted_at, "poll_interval": self.poll_interval,
                 "register_timeout": self.register_timeout, "grace": self.grace})

    def _result_written(self) -> bool:
        from paimonflow.core.fs import get_file_io

        from .hook import PaimonHook

        hook = PaimonHook(None if self.warehouse else self.paimon_conn_id, warehouse=self.warehouse,
                          aws_conn_id=self.aws_conn_id)
        options = hook.location(self.table).storage_options
        return get_file_io(self.result_uri, dict(options) or None).exists(self.result_uri)

    async def _application(self) -> dict[str, Any] | None:
        """The application's record, or None (not registered yet, no master UI, master unreachable)."""
        import httpx

        if not self.master_web_ui:
            return None
        try:
            app = application_named(await master_status(self.master_web_ui), self.app_name)
        except (httpx.HTTPError, ValueError) as exc:
            self.log.warning("the Spark master at %s did not answer: %s", self.master_web_ui, exc)
            return None
        return application_record(app, self.master_web_ui) if app else None

    def _event(self, status: str, application: dict[str, Any] | None, message: str | None = None) -> TriggerEvent:
        return TriggerEvent({"status": status, "application": application, "message": message,
                             "result_uri": self.result_uri})

    async def run(self):
        from paimonflow.core.errors import StorageError

        app: dict[str, Any] | None = None
        ended_at: float | None = None
        while True:
            try:
                written = await asyncio.to_thread(self._result_written)
            except StorageError as exc:  # an object store's bad minute: the next poll tries again
                self.log.warning("looking for the result of %s: %s", self.app_name, exc)
                written = False
            except Exception as exc:  # the connection went away, a bad warehouse: the task fails with it
                yield self._event("error", app, f"{type(exc).__name__}: {exc}")
                return
            found = await self._application()
            app = found or app
            if written:
                yield self._event("done", app)
                return
            now = time.time()
            if app is not None and app.get("state") in FINISHED_STATES:
                # the driver writes its result before its SparkContext stops; give storage a moment
                ended_at = ended_at or now
                if now - ended_at > self.grace:
                    yield self._event("error", app, f"Spark application {app['id']} ({self.app_name}) ended "
                                                    f"{app.get('state')} without a result")
                    return
            elif app is None and now - self.submitted_at > self.register_timeout:
                where = f"the master at {self.master_web_ui}" if self.master_web_ui else "any master"
                yield self._event("error", None, f"{self.app_name} wrote no result and is not an application of "
                                                 f"{where} after {self.register_timeout:.0f} s")
                return
            await asyncio.sleep(self.poll_interval)

    async def on_kill(self) -> None:
        """The task was killed by a user: kill the application through the master (its driver
        then stops, committing nothing it had not committed)."""
        import httpx

        app = await self._application()
        if app is None or app.get("state") in FINISHED_STATES or not self.master_web_ui:
            return
        async with httpx.AsyncClient(timeout=15) as client:
            # the master's kill form carries a CSRF token (Spark 4): read it from the front page
            page = (await client.get(f"{self.master_web_ui}/")).text
            token = _CSRF.search(page)
            form = {"id": app["id"], "terminate": "true", **({"csrfToken": token.group(1)} if token else {})}
            response = await client.post(f"{self.master_web_ui}/app/kill/", data=form)
        # the master answers a kill with a redirect to its front page; a refusal (spark.ui.killEnabled
        # off) or an error is a plain status
        if response.status_code >= 400:
            self.log.warning("the Spark master refused to kill %s: HTTP %s", app["id"], response.status_code)
        else:
            self.log.info("killed Spark application %s (%s)", app["id"], self.app_name)


__all__ = ["SPARK_APP_XCOM", "SparkApplicationLink", "SparkApplicationTrigger", "SparkMaster", "application_named",
           "application_record", "lookup_application", "master_of"]
