"""Dagster resources: a Paimon catalog and a Spark engine.

``PaimonResource(warehouse=..., storage=S3Storage(...))`` opens catalogs and tables; storage is a
discriminated union (``LocalStorage`` or ``S3Storage``), and secrets come from the environment
with ``dg.EnvVar("...")`` (never from code or table options). ``SparkResource`` runs the
paimonflow Spark jobs: in-process on a local session by default, or through ``spark-submit`` when
``submit=True`` (the master then comes from ``master``, e.g. ``yarn`` or ``k8s://...``). Given the
op's or asset's ``context``, a submission runs through Dagster Pipes (:mod:`.pipes`): the driver's
log lines and result come back as Pipes messages, spark-submit's output streams into the step's
logs, and terminating the run stops the submission. A metadata-only job (tags, expiries, rollback,
branches, consumers: :data:`~paimonflow.jobs.registry.METADATA_ONLY_JOBS`) runs on the core in
the step's process unless ``metadata_jobs_on_core=False``: it would start a Spark application
(under ``submit=True`` one that a standalone master gives every free core) for seconds of work.

One Spark session per process: the steps of a run that share a process (Dagster's in-process
executor, what :func:`~.assets.paimon_table`'s maintenance job uses) share one session, started
by the first Spark step; each step then logs the application it ran on and whether an earlier
step started it. Steps in processes of their own (the multiprocess executor) start a local Spark
each, unless ``master`` is a Spark Connect URL (``sc://host:15002``): every step is then a thin
client of that one server, with no JVM of its own. ``submit=True`` makes every Spark step its own
application on the cluster (a driver each).
"""

# No ``from __future__ import annotations`` here: Dagster reads these annotations at runtime.

import subprocess
import sys
from pathlib import Path
from typing import Any, Literal, Union

import dagster as dg
from pydantic import Field, PrivateAttr

from paimonflow.core import Catalog
from paimonflow.jobs.location import TableLocation


class LocalStorage(dg.Config):
    kind: Literal["local"] = "local"


class S3Storage(dg.Config):
    kind: Literal["s3"] = "s3"
    endpoint: str | None = None
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None

    def options(self) -> dict[str, str]:
        pairs = {"s3.endpoint": self.endpoint, "s3.region": self.region, "s3.access-key": self.access_key,
                 "s3.secret-key": self.secret_key, "s3.session-token": self.session_token}
        return {k: v for k, v in pairs.items() if v}


class PaimonResource(dg.ConfigurableResource):
    """A warehouse: ``warehouse`` path or URI, and how to reach its storage."""

    warehouse: str
    storage: Union[LocalStorage, S3Storage] = Field(default_factory=LocalStorage, discriminator="kind")  # noqa: UP007

    def storage_options(self) -> dict[str, str]:
        return self.storage.options() if isinstance(self.storage, S3Storage) else {}

    def catalog(self) -> Catalog:
        return Catalog(self.warehouse, storage_options=self.storage_options() or None)

    def table(self, identifier: str):
        return self.catalog().get_table(identifier)

    def location(self, identifier: str) -> TableLocation:
        return TableLocation(self.warehouse, identifier, self.storage_options())


class SparkResource(dg.ConfigurableResource):
    """Where the Spark jobs run: a local session (default ``local[2]``), or ``spark-submit``;
    metadata-only jobs on the core, without Spark, unless ``metadata_jobs_on_core=False``.

    Examples:
        ``SparkResource(master="spark://spark-master:7077", submit=True)``: writes, compactions,
        orphan removal and incremental reads are submitted; tags, expiries and rollbacks run on
        the core. ``SparkResource(..., submit=True, metadata_jobs_on_core=False)`` submits them
        too (each then an application that asks for no executors).
        ``SparkResource(master="sc://spark-connect:15002")``: every Spark step of every run is a
        client of one Spark Connect server (no JVM per step, whatever the executor)."""

    master: str = "local[2]"
    conf: dict[str, str] = Field(default_factory=dict)
    submit: bool = False
    spark_submit: str = "spark-submit"
    metadata_jobs_on_core: bool = Field(
        default=True,
        description="Run the metadata-only jobs (paimonflow.jobs.registry.METADATA_ONLY_JOBS: tags, expiries, "
                    "rollback, branches, consumers) on the core in the step's process instead of Spark; False "
                    "runs them as every other job (submitted with submit=True).")
    _session: Any = PrivateAttr(default=None)

    def session(self):
        """The process's Spark session: the one running (started by an earlier step of the run in
        this process, or by a launcher), else a new one on ``master`` with ``conf``."""
        if self._session is None:
            from paimonflow.jobs.session import spark_session

            self._session = spark_session(master=self.master, conf=self.conf)
        return self._session

    def _session_for(self, context: Any, job: str, table: str):
        """:meth:`session`, saying in the step's log which application the step runs on and
        whether an earlier step in this process started it (one session per in-process run)."""
        session = self.session()
        if context is not None:
            from paimonflow.jobs.spark_info import master_of

            app = str(session.conf.get("spark.app.id", None) or "?")
            shared = app in _SESSIONS_USED
            _SESSIONS_USED.add(app)
            context.log.info(f"paimonflow {job} {table}: on Spark application {app} ({master_of(session)}), "
                             + ("shared with the earlier steps in this process" if shared
                                else "first used by this step in this process"))
        return session

    def run(self, job: str, paimon: PaimonResource, table: str, arguments: dict[str, Any], *,
            context: Any = None) -> dict[str, Any]:
        """Run a paimonflow job (``write``, ``compact``, ``expire-snapshots``...) and return its result;
        with ``context`` (an op or asset execution context) a submission goes through Dagster Pipes.
        A metadata-only job runs on the core (:meth:`runs_on_core`)."""
        on_core = self.runs_on_core(job)
        if on_core and context is not None:
            context.log.info(f"paimonflow {job} {table}: a metadata-only job, run on the core "
                             f"(metadata_jobs_on_core=False runs it on Spark)")
        if self.submit and not on_core and context is not None:
            return self._piped(context, job, paimon, table, arguments)
        if self.submit and not on_core:
            return self._submitted(job, paimon, table, arguments)
        from paimonflow.core.errors import PaimonflowError
        from paimonflow.jobs.registry import run_job

        try:
            spark = None if on_core else self._session_for(context, job, table)
            return run_job(job, spark, paimon.location(table), arguments)
        except PaimonflowError as err:  # a mistake a user can make (a missing source...): one line
            raise dg.Failure(description=f"{job} {table}: {type(err).__name__}: {err}", allow_retries=False) \
                from None

    def runs_on_core(self, job: str) -> bool:
        """Whether ``job`` runs on the core, without Spark: a metadata-only job while
        ``metadata_jobs_on_core`` (the default)."""
        from paimonflow.jobs.registry import METADATA_ONLY_JOBS

        return self.metadata_jobs_on_core and job in METADATA_ONLY_JOBS

    def _command(self, job: str, location, arguments, result_file: str | None) -> tuple[list[str], dict[str, str]]:
        """spark-submit's argv and environment for ``job``: credentials travel in the environment
        (``submit_command``'s env), never on argv (reliability S9); ``conf`` wins over the settings
        the job asks for (a driver-only job asks for no executors)."""
        from paimonflow.jobs.submit import submit_command

        command = submit_command(job, location, arguments, result_file=result_file)
        argv = command.argv(spark_submit=self.spark_submit, master=self.master, conf=self.conf,
                            name=f"paimonflow-{job}")
        return argv, {**_submit_env(), **command.env}

    def _submitted(self, job, paimon, table, arguments) -> dict[str, Any]:
        from paimonflow.jobs.results import ResultFile

        location = paimon.location(table)
        # the driver's result comes back through the warehouse (jobs/results.py)
        with ResultFile(location.warehouse, location.storage_options) as result_file:
            argv, env = self._command(job, location, arguments, result_file.uri)
            proc = subprocess.run(argv, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise dg.Failure(description=f"spark-submit {job} failed (exit {proc.returncode})",
                                 metadata={"stderr": dg.MetadataValue.text(proc.stderr[-4000:])})
            result = result_file.take()
        if result is None:
            raise dg.Failure(description=f"spark-submit {job} succeeded but its driver wrote no result")
        return result

    def _piped(self, context, job, paimon, table, arguments) -> dict[str, Any]:
        from .pipes import WarehouseContextInjector, WarehouseMessageReader

        location = paimon.location(table)
        argv, env = self._command(job, location, arguments, None)  # the result comes as a Pipes message
        client = dg.PipesSubprocessClient(
            context_injector=WarehouseContextInjector(location.warehouse, location.storage_options),
            message_reader=WarehouseMessageReader(location.warehouse, location.storage_options),
            forward_termination=True)
        invocation = client.run(context=context, command=argv, env=env)
        results = [m for m in invocation.get_custom_messages() if isinstance(m, dict) and m.get("job") == job]
        if not results:
            raise dg.Failure(description=f"spark-submit {job} succeeded but its driver reported no result through "
                                         f"Dagster Pipes")
        return results[-1]


#: Spark applications a step of this process has run on (the log says when a step shares one)
_SESSIONS_USED: set[str] = set()


def _submit_env() -> dict[str, str]:
    import os

    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}


__all__ = ["LocalStorage", "PaimonResource", "S3Storage", "SparkResource"]
