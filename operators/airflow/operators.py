"""Airflow operators: every paimonflow job as a DAG task.

Each operator runs its job on one of three engines (``engine=``, default the connection's, else
``spark``): ``spark`` (the Spark job on the worker's SparkSession: ``local[2]`` unless the worker
is configured for a cluster), ``spark-submit`` (the same job through the Airflow Spark provider's
``SparkSubmitHook`` and the user's Spark connection), or ``core`` (the core alone, for small
tables). Maintenance planning is the same code on every engine. A metadata-only job (tags,
expiries, rollback, branches: :data:`~paimonflow.jobs.registry.METADATA_ONLY_JOBS`) runs on
``core`` unless the operator is given ``engine=`` itself: seconds of work on the driver do not
start a Spark application, which on a standalone cluster would hold its cores meanwhile.

Every operator is keyword-only; templated fields are stored as given and checked in ``execute``.
Every parameter but the boolean flags (``full``, ``dry_run``, ``delete_all``, ``deferrable``) is templated, so a
DAG can take names, ids, timestamps, durations, partition specs, SQL and Spark settings from
``{{ ds }}``, ``params``, ``dag_run.conf`` or XCom; a number or duration may arrive as the text a
template renders (``"42"``, ``"7 d"``) and is converted once, in ``execute``, a bad one failing
with one :class:`~paimonflow.core.errors.InvalidArgumentError` line naming the field.
It returns its job's result (a JSON-able dict) to XCom, adds the snapshot id to the Airflow Asset
events of its outlets (``table_asset(...)`` makes the table's asset), and commits under a commit
user derived from the DAG, task, map index and logical date (or run id), so a retried task never
commits twice and a backfill of older dates is never mistaken for a replay. ``on_kill`` cancels
the Spark job.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import jinja2
from airflow.sdk import Asset, BaseOperator, conf

from paimonflow.core.errors import InvalidArgumentError
from paimonflow.core.options.parse import parse_duration_millis

from .hook import ENGINES, PaimonHook
from .links import TableHealthLink
from .spark_app import SPARK_APP_XCOM, SparkApplicationLink

if TYPE_CHECKING:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
    from pyspark.sql import SparkSession

RUN_IDENTIFIER = 1  # one commit per task run: the run is in the commit user
_INTEGER = re.compile(r"\s*[-+]?[0-9]+\s*")
_ABSENT = ("", "None")  # what a template that rendered nothing (or None) leaves in a field


def _absent(value: object) -> bool:
    """A templated field that was not given: ``None``, or what a template rendering nothing left."""
    return value is None or (isinstance(value, str) and value.strip() in _ABSENT)


def table_asset(warehouse: str, identifier: str) -> Asset:
    """The Airflow Asset of a table: its location as URI, ``paimon/<db.table>`` as name."""
    from paimonflow.core.names import parse_table_name, split_identifier

    base, branch, _ = parse_table_name(identifier)
    database, table = split_identifier(base)
    root = warehouse.rstrip("/")
    if "://" not in root:
        root = "file://" + root
    path = f"{root}/{database}.db/{table}" + ("" if branch == "main" else f"/branch/branch-{branch}")
    return Asset(uri=path, name=f"paimon/{identifier}")


def connection_table_asset(identifier: str, paimon_conn_id: str = "paimon_default") -> Asset:
    """The Airflow Asset of a table known by its connection (``paimon://<conn_id>/<db.table>``,
    named ``paimon/<conn_id>/<db.table>``): what a DAG that takes its warehouse from the connection
    names in ``outlets``, without reading the connection when the DAG file is parsed."""
    from paimonflow.core.names import parse_table_name, split_identifier

    split_identifier(parse_table_name(identifier)[0])  # a bad name fails at parse time
    return Asset(uri=f"paimon://{paimon_conn_id}/{identifier}", name=f"paimon/{paimon_conn_id}/{identifier}")


def commit_user_for(context: Mapping[str, Any]) -> str:
    """``airflow.<dag>.<task>[.m<map index>].<logical date or run id>``, a valid commit user."""
    ti = context["ti"]
    parts = ["airflow", ti.dag_id, ti.task_id]
    if getattr(ti, "map_index", -1) not in (-1, None):
        parts.append(f"m{ti.map_index}")
    logical = context.get("logical_date")
    parts.append(logical.strftime("%Y%m%dT%H%M%S") if logical is not None else str(context.get("run_id")))
    return re.sub(r"[^\w\-.@+~]", "_", ".".join(parts))[:200]


class PaimonJobOperator(BaseOperator):
    """Base: a job on one table. Subclasses name the job and its arguments."""

    operator_extra_links = (TableHealthLink(), SparkApplicationLink())

    job: ClassVar[str] = ""
    commits: ClassVar[bool] = False  # whether the job commits (and so needs a commit identity)
    template_fields: Sequence[str] = ("table", "paimon_conn_id", "aws_conn_id", "warehouse", "engine", "master",
                                      "spark_conf",
                                      "spark_conn_id", "commit_user", "poll_interval")
    template_fields_renderers: ClassVar[dict[str, str]] = {"spark_conf": "json"}
    ui_color = "#e8f4fa"

    def __init__(self, *, table: str, paimon_conn_id: str = PaimonHook.default_conn_name,
                 aws_conn_id: str | None = None, warehouse: str | None = None, engine: str | None = None, master: str | None = None,
                 spark_conf: Mapping[str, str] | None = None, spark_conn_id: str | None = None,
                 commit_user: str | None = None,
                 deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
                 poll_interval: float | str = 5.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # with the spark-submit engine: start the application, free the worker slot, and let the
        # triggerer follow it (spark_app.py); other engines ignore it
        self.deferrable, self.poll_interval = deferrable, poll_interval
        self.table, self.paimon_conn_id, self.warehouse, self.engine = table, paimon_conn_id, warehouse, engine
        # the Amazon provider's connection that gives the S3 credentials (else the paimon connection's
        # aws_conn_id extra, else its own keys): PaimonHook.aws_storage_options
        self.aws_conn_id = aws_conn_id
        self.master, self.spark_conf, self.spark_conn_id = master, spark_conf, spark_conn_id
        # who commits: by default one identity per task run (commit_user_for), so a retry or a
        # cleared run never commits twice; a template such as a per-hour user makes every run of that
        # hour (scheduled, manual, backfilled) commit it at most once
        self.commit_user = commit_user
        self._spark: SparkSession | None = None
        self._finished: tuple[PaimonHook, dict[str, Any]] | None = None  # for the lineage facets
        self._tag: str | None = None  # the Spark job tag of the running job, for on_kill
        self._submit_hook: SparkSubmitHook | None = None
        self.spark_application: dict[str, Any] | None = None  # the submitted application (spark_app.py)

    # -- what subclasses give -------------------------------------------------------------------

    def arguments(self, context) -> dict[str, Any]:
        """The job's keyword arguments (rendered fields, checked here)."""
        return {}

    def run_spark(self, spark, hook: PaimonHook, arguments: dict[str, Any]) -> dict[str, Any]:
        return self._registered(spark, hook, arguments)

    def run_core(self, hook: PaimonHook, arguments: dict[str, Any]) -> dict[str, Any]:
        """Maintenance jobs plan and act on the driver, so without Spark they are the same call."""
        return self._registered(None, hook, arguments)

    def _registered(self, spark, hook: PaimonHook, arguments: dict[str, Any]) -> dict[str, Any]:
        from paimonflow.jobs.registry import run_job

        return run_job(self.job, spark, hook.location(self.table), arguments)

    # -- running --------------------------------------------------------------------------------

    def _hook(self) -> PaimonHook:
        return PaimonHook(None if self.warehouse else self.paimon_conn_id, warehouse=self.warehouse,
                          aws_conn_id=None if _absent(self.aws_conn_id) else str(self.aws_conn_id))

    def metadata_only(self) -> bool:
        """Whether the job is metadata work only (it then runs on ``core`` unless ``engine=`` is given)."""
        from paimonflow.jobs.registry import METADATA_ONLY_JOBS

        return self.job in METADATA_ONLY_JOBS

    def choose_engine(self, hook: PaimonHook) -> str:
        """The engine this task runs on: ``engine=`` when given (rendered to something); else
        ``core`` for a metadata-only job, whatever the connection's engine; else the connection's
        ``engine`` extra (default ``spark``). Not validated here."""
        if not _absent(self.engine):
            return str(self.engine).strip()
        if self.metadata_only():
            return "core"
        return hook.default_engine

    def execute(self, context) -> dict[str, Any]:
        hook = self._hook()
        engine = self.choose_engine(hook)
        if engine not in ENGINES:
            raise InvalidArgumentError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        arguments = self.arguments(context)
        given_user = None if _absent(self.commit_user) else str(self.commit_user).strip()
        if given_user and not self.commits:
            raise InvalidArgumentError(f"{self.job} commits nothing: commit_user does not apply")
        if self.commits:
            arguments.setdefault("commit_user", given_user or commit_user_for(context))
            arguments.setdefault("commit_identifier", RUN_IDENTIFIER)
        self._check_names(arguments)
        self._check_source(hook, arguments)
        self.log.info("paimonflow %s on %s (engine %s)", self.job, self.table, engine)
        if _absent(self.engine) and engine != hook.default_engine:
            self.log.info("a metadata-only job runs on the core engine, not the connection's %r; give the "
                          "operator engine=%r to run it there", hook.default_engine, hook.default_engine)
        done = None if engine == "core" else self._already_committed(hook, arguments)
        if done is not None:
            self.log.info("this task's commit (%s, %s) is already snapshot %s: nothing to run on %s",
                          arguments["commit_user"], arguments["commit_identifier"], done["snapshot_id"], engine)
            result = done
        elif engine == "core":
            result = self.run_core(hook, arguments)
        elif engine == "spark":
            result = self._run_in_spark(hook, arguments, context)
        elif self.deferrable and type(self)._run_submitted is PaimonJobOperator._run_submitted:
            self._defer_submitted(hook, arguments, context)  # raises TaskDeferred
        else:
            result = self._run_submitted(hook, arguments, context)
        return self._finish(context, hook, result)

    def _finish(self, context, hook: PaimonHook, result: dict[str, Any]) -> dict[str, Any]:
        self._emit_asset_events(context, result)
        self._finished = (hook, result)
        self.log.info("result: %s", result)
        return result

    def _already_committed(self, hook: PaimonHook, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """The result of a committing job whose commit (this task's commit user and identifier) is
        already in the table: a retry, a cleared run, a rerun. Found from the snapshots alone, so
        no Spark application starts for it. ``None`` when the job has not committed (or the table
        cannot be opened here: the engine then reports that itself)."""
        from paimonflow.core.errors import PaimonflowError

        user, identifier = arguments.get("commit_user"), arguments.get("commit_identifier")
        if not self.commits or user is None or identifier is None:
            return None
        try:
            snapshot = hook.get_table(self.table).new_commit(str(user)).already_committed(int(identifier))
        except PaimonflowError:
            return None
        if snapshot is None:
            return None
        return {"job": self.job, "table": self.table, "snapshot_id": snapshot.id, "already_committed": True}

    def get_openlineage_facets_on_complete(self, task_instance):
        """OpenLineage facets of the finished job (the OpenLineage provider calls this on success)."""
        from .lineage import operator_lineage

        if self._finished is None:
            return None
        hook, result = self._finished
        return operator_lineage(self, hook, result)

    def _check_source(self, hook: PaimonHook, arguments: Mapping[str, Any]) -> None:
        """Before any engine starts: refuse (or skip) a run whose input is not there."""

    _NAME_ARGUMENTS: ClassVar[dict[str, str]] = {"name": "tag", "tag": "tag", "commit_user": "commit user"}

    def _check_names(self, arguments: Mapping[str, Any]) -> None:
        """Rendered names (``dag_run.conf`` is user input) through the one validator before any
        engine sees them (reliability S1, S7, S12): a spark-submit never starts on a bad name."""
        from paimonflow.core.names import parse_table_name, validate_name

        parse_table_name(self.table)
        for key, kind in self._NAME_ARGUMENTS.items():
            if arguments.get(key) is not None:
                validate_name(kind, arguments[key])
        branch, tag = getattr(self, "branch", None), getattr(self, "tag", None)
        if branch is not None:
            validate_name("branch", branch)
        if tag:  # "": a template that rendered no tag, so none given
            validate_name("tag", tag)

    def _run_in_spark(self, hook: PaimonHook, arguments: dict[str, Any], context) -> dict[str, Any]:
        from paimonflow.jobs.session import cancellable, spark_session

        from .hook import spark_master_from_connection

        master = self.master or spark_master_from_connection(self.spark_conn_id or hook.spark_conn_id)
        self._spark = spark = spark_session(master=master, conf=dict(self.spark_conf or {}))
        label = f"{context['ti'].dag_id}-{context['ti'].task_id}"
        with cancellable(spark, label) as self._tag:  # on_kill interrupts what runs under it
            try:
                return self.run_spark(spark, hook, arguments)
            finally:
                self._tag = None

    def submit_hook(self, hook: PaimonHook, arguments: dict[str, Any], result_file: str, *,
                    name: str | None = None) -> SparkSubmitHook:
        """The ``SparkSubmitHook`` that runs this job: the command of
        :func:`paimonflow.jobs.submit.submit_command` (an argument list, never a shell string, holding
        no storage option) with the Spark connection's options. Storage options (credentials
        included) travel in the ``PAIMONFLOW_STORAGE_OPTIONS`` environment variable of spark-submit
        (reliability S9: never on argv, where ``ps`` and the provider's DEBUG log of the command would
        show them). On YARN/Kubernetes the provider turns environment variables into ``--conf``
        settings: use instance roles or a credential provider there."""
        from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

        from paimonflow.jobs.submit import submit_command

        command = submit_command(self.job, hook.location(self.table), arguments, result_file=result_file)
        # a driver-only job's command asks for no executors; the operator's spark_conf wins key by key
        return SparkSubmitHook(conn_id=self.spark_conn_id or hook.spark_conn_id,
                               conf=command.spark_conf(self.spark_conf),
                               name=name or f"paimonflow-{self.job}", application_args=list(command.application_args),
                               env_vars=dict(command.env) or None)

    def _application_name(self, context) -> str:
        """A name no other application of the master has: the job, the task, a random suffix."""
        import uuid

        ti = context["ti"]
        task = re.sub(r"[^\w\-.]", "_", f"{ti.dag_id}.{ti.task_id}")[:80]
        return f"paimonflow-{self.job}-{task}-{uuid.uuid4().hex[:8]}"

    def _run_submitted(self, hook: PaimonHook, arguments: dict[str, Any], context) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowException

        from paimonflow.jobs.results import ResultFile, raise_if_failed
        from paimonflow.jobs.submit import APPLICATION

        from .spark_app import lookup_application, master_of

        # the driver writes its result to the warehouse's storage: reachable from the driver in client
        # and in cluster deploy mode alike (jobs/results.py)
        location = hook.location(self.table)
        name = self._application_name(context)
        with ResultFile(location.warehouse, location.storage_options) as result:
            self._submit_hook = submit_hook = self.submit_hook(hook, arguments, result.uri, name=name)
            try:
                submit_hook.submit(application=APPLICATION)
            except AirflowException:
                # the provider's "Cannot execute: <command> ... Error code is: 2": the job's own
                # typed line is in the result file, and is the task's error
                raise_if_failed(result.take())
                raise
            record = result.take()
        raise_if_failed(record)
        master = master_of(self.spark_conn_id or hook.spark_conn_id)
        if master.web_ui:
            application = lookup_application(master.web_ui, name)
            if application is not None:
                self._keep_application(context, application)
        return record or {"job": self.job, "table": self.table, "submitted": True}

    def _keep_application(self, context, application: dict[str, Any]) -> None:
        """The application this task ran: for its link (:class:`SparkApplicationLink`) and XCom."""
        self.spark_application = application
        context["ti"].xcom_push(key=SPARK_APP_XCOM, value=application)

    def _defer_submitted(self, hook: PaimonHook, arguments: dict[str, Any], context) -> None:
        """Start the job's ``spark-submit`` detached (client deploy mode, its own session, its
        output in a log file beside the task's temporary files) and defer to the trigger that
        follows its application; :meth:`execute_complete` takes the result."""
        import os
        import subprocess
        import tempfile
        import time

        from paimonflow.jobs.results import ResultFile
        from paimonflow.jobs.submit import submit_command

        from .spark_app import SparkApplicationTrigger, master_of

        location = hook.location(self.table)
        master = master_of(self.spark_conn_id or hook.spark_conn_id)
        name = self._application_name(context)
        uri = ResultFile(location.warehouse, location.storage_options).uri
        command = submit_command(self.job, location, arguments, result_file=uri)
        argv = command.argv(spark_submit=master.spark_binary, master=master.url, name=name,
                            conf={**dict(self.spark_conf or {}), "spark.submit.deployMode": "client"})
        log_path = os.path.join(tempfile.gettempdir(), f"{name}.log")
        with open(log_path, "ab") as log:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       env={**os.environ, **command.env}, start_new_session=True)
        self.log.info("started Spark application %s (spark-submit pid %s, its output in %s); deferring to the "
                      "triggerer", name, process.pid, log_path)
        self.defer(trigger=SparkApplicationTrigger(
            app_name=name, master_web_ui=master.web_ui, result_uri=uri, table=self.table,
            paimon_conn_id=None if self.warehouse else self.paimon_conn_id, warehouse=self.warehouse,
            aws_conn_id=None if _absent(self.aws_conn_id) else str(self.aws_conn_id), submitted_at=time.time(), poll_interval=_seconds("poll_interval", self.poll_interval)),
            method_name="execute_complete")

    def execute_complete(self, context, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the trigger: the application's link, then the job's result or its error."""
        from paimonflow.core.errors import PaimonflowError
        from paimonflow.jobs.results import ResultFile, raise_if_failed

        if event.get("application"):
            self._keep_application(context, event["application"])
        hook = self._hook()
        location = hook.location(self.table)
        with ResultFile(location.warehouse, location.storage_options, uri=event["result_uri"]) as result:
            record = result.take()
        raise_if_failed(record)
        if record is None:
            raise PaimonflowError(event.get("message") or f"{self.job} on {self.table} wrote no result")
        return self._finish(context, hook, record)

    def _emit_asset_events(self, context, result: Mapping[str, Any]) -> None:
        events = context.get("outlet_events")
        if events is None:
            return
        for outlet in self.outlets or ():
            if isinstance(outlet, Asset):
                events[outlet].extra = {"table": self.table, "job": self.job,
                                        "snapshot_id": result.get("snapshot_id")}

    def on_kill(self) -> None:
        if self._spark is not None and self._tag is not None:
            from paimonflow.jobs.session import interrupt

            self.log.info("interrupting the Spark work tagged %s", self._tag)
            interrupt(self._spark, self._tag)
        if self._submit_hook is not None:
            self._submit_hook.on_kill()


def _integer(field: str, value: object) -> int | None:
    """A templated integer field: an int, or the text a template rendered (``"42"``). None, ``""``
    and ``"None"`` (a template that rendered nothing) mean not given; anything else raises
    :class:`InvalidArgumentError` naming the field."""
    if _absent(value):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    raise InvalidArgumentError(f"{field} must be an integer, not {value!r}")


def _millis(field: str, value: object) -> int | None:
    """A templated duration field in milliseconds: an int, or text such as ``"7 d"``, ``"1 h"``,
    ``"30 min"`` (a bare number is milliseconds, as in Paimon). Not given as in :func:`_integer`;
    anything else raises :class:`InvalidArgumentError` naming the field."""
    if _absent(value):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return parse_duration_millis(value)
        except ValueError:
            pass
    raise InvalidArgumentError(f"{field} must be a duration such as '7 d', '1 h', '30 min' or '100 ms', "
                               f"not {value!r}")


def _seconds(field: str, value: object) -> float:
    """A templated number of seconds (``5``, ``"2.5"``); anything else raises
    :class:`InvalidArgumentError` naming the field."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = -1.0
    if not seconds > 0:
        raise InvalidArgumentError(f"{field} must be a positive number of seconds, not {value!r}")
    return seconds


def _items(value: object) -> list[Any]:
    """A templated list field: the list (or tuple) given, or one item (a template rendering one
    partition spec, column or bucket); None or empty: no items."""
    if value is None or value == "":
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


class PaimonWriteOperator(PaimonJobOperator):
    """Write files (``path`` + ``format``), a Spark table or a SQL query into the table, one commit.
    ``mode="overwrite"`` replaces the partitions in the data, or ``overwrite_partition``.

    ``sql`` may name a file ending in ``.sql`` (``"queries/daily.sql"``), looked up in the DAG
    folder and the DAG's ``template_searchpath``: Airflow reads it when it parses the DAG and renders
    its Jinja with the run's context. Only ``sql`` is ever taken for a file: a table ``db.sql``, a
    path or a Spark setting ending in ``.sql`` stays a value.
    """

    job, commits = "write", True
    template_fields = (*PaimonJobOperator.template_fields, "path", "format", "source_table", "sql", "mode",
                       "overwrite_partition", "row_kind_column", "if_missing")
    template_ext: Sequence[str] = (".sql",)
    template_fields_renderers: ClassVar[dict[str, str]] = {**PaimonJobOperator.template_fields_renderers,
                                                           "sql": "sql"}
    _FILE_FIELDS: ClassVar[tuple[str, ...]] = ("sql",)

    def __init__(self, *, path: str | None = None, format: str = "parquet", source_table: str | None = None,
                 sql: str | None = None, mode: str = "append", overwrite_partition: str | None = None,
                 row_kind_column: str | None = None, if_missing: str = "fail", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.path, self.format, self.source_table, self.sql = path, format, source_table, sql
        self.mode, self.overwrite_partition, self.row_kind_column = mode, overwrite_partition, row_kind_column
        self.if_missing = if_missing

    def resolve_template_files(self) -> None:
        """Read ``sql`` from its file when it names one (Airflow calls this when it parses the DAG);
        a file not found stays a name, and rendering then fails naming it. No other field is read."""
        if isinstance(self.sql, str) and self.sql.endswith(tuple(self.template_ext)):
            env = self.get_template_env()
            if env.loader is not None:
                with contextlib.suppress(jinja2.TemplateNotFound):
                    self.sql = env.loader.get_source(env, self.sql)[0]
        self.prepare_template()

    def _do_render_template_fields(self, parent: Any, template_fields: Iterable[str], context: Any,
                                   jinja_env: jinja2.Environment, seen_oids: set[int]) -> None:
        # Airflow renders a plain or a mapped task through this method, and takes every templated
        # string ending in a template_ext for a file name: here only ``sql`` is rendered that way.
        if parent is not self:
            return super()._do_render_template_fields(parent, template_fields, context, jinja_env, seen_oids)
        fields = list(template_fields)
        files = [field for field in fields if field in self._FILE_FIELDS]
        try:
            super()._do_render_template_fields(self, files, context, jinja_env, seen_oids)
        except jinja2.TemplateNotFound as exc:
            raise InvalidArgumentError(f"sql: no file {exc.name!r} in the DAG folder or its template_searchpath") \
                from None
        self.template_ext = ()  # shadows the class's while the other fields render
        try:
            super()._do_render_template_fields(self, [f for f in fields if f not in files], context, jinja_env,
                                               seen_oids)
        finally:
            del self.template_ext

    def arguments(self, context) -> dict[str, Any]:
        if sum(bool(x) for x in (self.path, self.source_table, self.sql)) != 1:
            raise InvalidArgumentError("give exactly one of path, source_table and sql")
        if self.mode not in ("append", "overwrite"):
            raise InvalidArgumentError(f"mode must be append or overwrite, not {self.mode!r}")
        if self.if_missing not in ("fail", "skip"):
            raise InvalidArgumentError(f"if_missing must be fail or skip, not {self.if_missing!r}")
        return {"path": self.path, "format": self.format, "source_table": self.source_table, "sql": self.sql,
                "mode": self.mode, "overwrite_partition": self.overwrite_partition,
                "row_kind_column": self.row_kind_column}

    def _check_source(self, hook: PaimonHook, arguments: Mapping[str, Any]) -> None:
        """A ``path`` with no files: one ``SourceError`` line (``if_missing="fail"``) or a skipped
        task (``"skip"``), before any engine starts. Paths on storage the core cannot open
        (``hdfs://``, ...) are left to the engine."""
        from paimonflow.core.errors import PaimonflowError, SourceError
        from paimonflow.core.fs import get_file_io

        path = arguments.get("path")
        if not path:
            return
        try:
            io = get_file_io(path, hook.location(self.table).storage_options or None)
            missing = not io.exists(path) or (io.status(path).is_dir and not io.list_dir(path))
        except PaimonflowError:
            return
        if not missing:
            return
        if self.if_missing == "skip":
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(f"no source files at {path}; skipped (if_missing='skip')")
        raise SourceError(f"no source files at {path}")

    def run_spark(self, spark, hook, arguments):
        from paimonflow.jobs.write import WriteSource, partition_spec, write

        source = WriteSource(path=arguments["path"], format=arguments["format"],
                             spark_table=arguments["source_table"], sql=arguments["sql"])
        return write(spark, hook.location(self.table), source, mode=arguments["mode"],
                     overwrite_partition=partition_spec(arguments["overwrite_partition"]),
                     row_kind_column=arguments["row_kind_column"], commit_user=arguments["commit_user"],
                     commit_identifier=arguments["commit_identifier"]).to_dict()

    def run_core(self, hook, arguments):
        from paimonflow.jobs.write import partition_spec

        if not arguments["path"]:
            raise InvalidArgumentError("the core engine writes files only (path=); use engine='spark' for "
                                       "Spark tables and SQL")
        table = hook.get_table(self.table)
        data = _read_files(arguments["path"], arguments["format"], table.arrow_schema,
                           storage_options=hook.location(self.table).storage_options,
                           extra_columns=[c for c in [arguments["row_kind_column"]] if c])
        overwrite: bool | dict = False
        if arguments["mode"] == "overwrite":
            overwrite = partition_spec(arguments["overwrite_partition"]) or True
        row_kinds = None
        if arguments["row_kind_column"]:
            row_kinds = data.column(arguments["row_kind_column"])
            data = data.drop_columns([arguments["row_kind_column"]])
        done = table.write(data, overwrite=overwrite, row_kinds=row_kinds, commit_user=arguments["commit_user"],
                           commit_identifier=arguments["commit_identifier"])
        return {"job": "write", "table": self.table, **done.to_dict()}


def _read_files(path: str, format: str, schema, *, storage_options: Mapping[str, str] | None = None,
                extra_columns: Sequence[str] | None = None):
    """The rows of the file at ``path``, or of every file under the directory ``path`` (local, or
    on the connection's storage: ``storage_options``), as the table's columns (``schema``), as
    ``paimonflow write`` reads them (:mod:`paimonflow.core.data.source_files`). CSV and JSON text
    is parsed with the table's column types (as the Spark write job does): types inferred from
    text (``007`` an integer, ``2026-11-21`` a date) would not go into STRING columns. A file
    that does not fit is one ``SchemaError`` naming it and every bad column (a value that does
    not parse: its first one and its record), before anything is written; a file that cannot be
    read, one ``SourceError``. ``extra_columns`` (the row-kind column) may be in the files beside
    the table's; None keeps every other column too, for the write's own check."""
    from paimonflow.core.data.source_files import read_source_files

    return read_source_files(path, format, schema, storage_options=storage_options,
                             extra_columns=None if extra_columns is None else list(extra_columns))


class PaimonCompactOperator(PaimonJobOperator):
    """Compact the table (``full``, or Paimon's universal compaction), buckets in parallel. On a
    postpone-bucket table (``bucket = -2``) it runs Paimon's postpone compaction, which gives the
    rows waiting in ``bucket-postpone`` real buckets (partitions in parallel; ``partitions`` and
    ``buckets`` are refused there, as Paimon refuses them, and ``full`` does not apply)."""

    job, commits = "compact", True
    template_fields = (*PaimonJobOperator.template_fields, "partitions", "buckets")

    def __init__(self, *, full: bool = True, partitions: Sequence[str] | str | None = None,
                 buckets: Sequence[int | str] | int | str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.full, self.partitions, self.buckets = full, partitions, buckets

    def arguments(self, context):
        buckets = [_integer("buckets", bucket) for bucket in _items(self.buckets)]
        return {"full": bool(self.full), "partition": _items(self.partitions) or None,
                "bucket": [b for b in buckets if b is not None] or None}

    def _kwargs(self, arguments):
        from paimonflow.jobs.write import partition_specs

        return {"full": arguments["full"], "partitions": partition_specs(arguments["partition"]),
                "buckets": arguments["bucket"], "commit_user": arguments["commit_user"],
                "commit_identifier": arguments["commit_identifier"]}

    def run_spark(self, spark, hook, arguments):
        from paimonflow.jobs.compact import compact

        return compact(spark, hook.location(self.table), **self._kwargs(arguments)).to_dict()

    def run_core(self, hook, arguments):
        result = hook.get_table(self.table).compact(**self._kwargs(arguments))
        return {"job": "compact", "table": self.table, **result.to_dict()}


class PaimonExpireSnapshotsOperator(PaimonJobOperator):
    """Expire snapshots by the table's options (each overridable); ``dry_run`` plans only."""

    job = "expire-snapshots"
    template_fields = (*PaimonJobOperator.template_fields, "retain_min", "retain_max", "older_than", "max_deletes")

    def __init__(self, *, retain_min: int | str | None = None, retain_max: int | str | None = None,
                 older_than: str | int | None = None, max_deletes: int | str | None = None, dry_run: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.retain_min, self.retain_max, self.older_than = retain_min, retain_max, older_than
        # every operator keeps dry_run as _dry_run: self.dry_run would hide Airflow's BaseOperator.dry_run()
        self.max_deletes, self._dry_run = max_deletes, dry_run

    def arguments(self, context):
        return {"retain_min": _integer("retain_min", self.retain_min),
                "retain_max": _integer("retain_max", self.retain_max),
                "older_than_millis": _millis("older_than", self.older_than),
                "max_deletes": _integer("max_deletes", self.max_deletes), "dry_run": self._dry_run}


class PaimonExpireChangelogsOperator(PaimonJobOperator):
    """Expire long-lived changelogs by the table's ``changelog.*`` options (each overridable)."""

    job = "expire-changelogs"
    template_fields = (*PaimonJobOperator.template_fields, "retain_min", "retain_max", "older_than", "max_deletes")

    def __init__(self, *, retain_min: int | str | None = None, retain_max: int | str | None = None,
                 older_than: str | int | None = None, max_deletes: int | str | None = None,
                 delete_all: bool = False, dry_run: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.retain_min, self.retain_max, self.older_than = retain_min, retain_max, older_than
        self.max_deletes, self.delete_all, self._dry_run = max_deletes, delete_all, dry_run

    def arguments(self, context):
        return {"retain_min": _integer("retain_min", self.retain_min),
                "retain_max": _integer("retain_max", self.retain_max),
                "older_than_millis": _millis("older_than", self.older_than),
                "max_deletes": _integer("max_deletes", self.max_deletes), "delete_all": self.delete_all,
                "dry_run": self._dry_run}


class PaimonExpirePartitionsOperator(PaimonJobOperator):
    """Drop partitions older than ``expiration`` (default ``partition.expiration-time``)."""

    job, commits = "expire-partitions", True
    template_fields = (*PaimonJobOperator.template_fields, "expiration")

    def __init__(self, *, expiration: str | int | None = None, dry_run: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.expiration, self._dry_run = expiration, dry_run

    def arguments(self, context):
        return {"expiration_millis": _millis("expiration", self.expiration), "dry_run": self._dry_run}

    def run_core(self, hook, arguments):
        arguments.pop("commit_identifier", None)
        return super().run_core(hook, arguments)

    def run_spark(self, spark, hook, arguments):
        arguments.pop("commit_identifier", None)
        return super().run_spark(spark, hook, arguments)


class PaimonAnalyzeOperator(PaimonJobOperator):
    """Compute table statistics (an ANALYZE snapshot)."""

    job = "analyze"
    template_fields = (*PaimonJobOperator.template_fields, "columns")

    def __init__(self, *, columns: Sequence[str] | str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.columns = columns

    def arguments(self, context):
        return {"columns": _items(self.columns) or None}


class PaimonCreateTagOperator(PaimonJobOperator):
    """Tag a snapshot (default: the latest); ``name`` is templated, e.g. ``"{{ ds }}"``, and so is
    ``snapshot_id`` (e.g. from the snapshot sensor's XCom; ``"42"`` is read as 42)."""

    job = "create-tag"
    template_fields = (*PaimonJobOperator.template_fields, "name", "snapshot_id", "time_retained")

    def __init__(self, *, name: str, snapshot_id: int | str | None = None, time_retained: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name, self.snapshot_id, self.time_retained = name, snapshot_id, time_retained

    def arguments(self, context):
        return {"name": self.name, "snapshot_id": _integer("snapshot_id", self.snapshot_id),
                "time_retained": self.time_retained or None}

    def run_core(self, hook, arguments):
        table = hook.get_table(self.table)
        existing = table.tags.list().get(arguments["name"])
        if existing is not None and existing.id == (arguments["snapshot_id"] or table.snapshot_manager.latest_id()):
            # a retried task: the tag it made is already there
            return {"job": "create-tag", "table": self.table, "snapshot_id": existing.id,
                    "tag": arguments["name"], "already_existed": True}
        return super().run_core(hook, arguments)

    def run_spark(self, spark, hook, arguments):
        return self.run_core(hook, arguments)


class PaimonDeleteTagOperator(PaimonJobOperator):
    job = "delete-tag"
    template_fields = (*PaimonJobOperator.template_fields, "name")

    def __init__(self, *, name: str, dry_run: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name, self._dry_run = name, dry_run

    def arguments(self, context):
        return {"name": self.name, "dry_run": self._dry_run}


class PaimonExpireTagsOperator(PaimonJobOperator):
    job = "expire-tags"
    template_fields = (*PaimonJobOperator.template_fields, "older_than")

    def __init__(self, *, older_than: str | int | None = None, dry_run: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.older_than, self._dry_run = older_than, dry_run

    def arguments(self, context):
        return {"older_than_millis": _millis("older_than", self.older_than), "dry_run": self._dry_run}


class PaimonRollbackOperator(PaimonJobOperator):
    """Roll the table back to a snapshot, a tag or the snapshot at a time (epoch milliseconds), all
    templated (``snapshot_id="{{ dag_run.conf['snapshot'] }}"``: ``"42"`` is read as 42)."""

    job = "rollback"
    template_fields = (*PaimonJobOperator.template_fields, "snapshot_id", "tag", "timestamp_millis")

    def __init__(self, *, snapshot_id: int | str | None = None, tag: str | None = None,
                 timestamp_millis: int | str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.snapshot_id, self.tag, self.timestamp_millis = snapshot_id, tag, timestamp_millis

    def arguments(self, context):
        return {"snapshot_id": _integer("snapshot_id", self.snapshot_id), "tag": self.tag or None,
                "timestamp_millis": _integer("timestamp_millis", self.timestamp_millis)}


class PaimonRemoveOrphanFilesOperator(PaimonJobOperator):
    """Delete unreferenced files older than ``older_than`` (default 1 day). A window shorter than
    ``min_older_than`` (default 1 hour) is refused: it could delete a running writer's new files."""

    job = "remove-orphan-files"
    template_fields = (*PaimonJobOperator.template_fields, "older_than", "min_older_than")

    def __init__(self, *, older_than: str | int = "1 d", min_older_than: str | int = "1 h", dry_run: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.older_than, self.min_older_than, self._dry_run = older_than, min_older_than, dry_run

    def arguments(self, context):
        return {"older_than_millis": _millis("older_than", self.older_than),
                "min_older_than_millis": _millis("min_older_than", self.min_older_than), "dry_run": self._dry_run}

    def run_core(self, hook, arguments):
        plan = hook.get_table(self.table).remove_orphan_files(**arguments)
        return {"job": self.job, "table": self.table, **plan.to_dict(), "orphans": len(plan.orphans)}


class PaimonReadChangesOperator(PaimonJobOperator):
    """Write the changes of a snapshot range (``start_snapshot`` exclusive, ``end_snapshot``
    inclusive; both templated, e.g. from the snapshot sensor's XCom) to ``output_path``."""

    job = "read-changes"
    template_fields = (*PaimonJobOperator.template_fields, "start_snapshot", "end_snapshot", "output_path", "mode",
                       "output_format")

    def __init__(self, *, start_snapshot: int | str, output_path: str, end_snapshot: int | str | None = None,
                 mode: str = "auto", output_format: str = "parquet", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_snapshot, self.end_snapshot, self.output_path = start_snapshot, end_snapshot, output_path
        self.mode, self.output_format = mode, output_format

    def arguments(self, context):
        start = _integer("start_snapshot", self.start_snapshot)
        if start is None:
            raise InvalidArgumentError("start_snapshot is required (0: from the first snapshot)")
        end = _integer("end_snapshot", self.end_snapshot)
        return {"start_snapshot": start, "end_snapshot": end, "mode": self.mode, "output": self.output_path,
                "output_format": self.output_format}

    def run_core(self, hook, arguments):
        """The same export and result as the Spark job's (jobs/maintenance.py ``read_changes``):
        the output directory on the connection's storage in ``output_format``, and the counts of
        each row kind."""
        import pyarrow.compute as pc

        from paimonflow.core.data.data_file import ROW_KIND_NAMES
        from paimonflow.core.data.export import export_rows
        from paimonflow.core.read.incremental import ROWKIND

        table = hook.get_table(self.table)
        start = arguments["start_snapshot"]
        end = arguments["end_snapshot"] if arguments["end_snapshot"] is not None else \
            table.snapshot_manager.latest_id()
        if end is None:
            raise InvalidArgumentError(f"table {self.table!r} has no snapshot")
        if not 0 <= start < end:
            raise InvalidArgumentError(f"read-changes needs 0 <= start < end, got start {start} and end {end}")
        rows = table.read_changes(start, end, mode=arguments["mode"])
        export_rows(rows, arguments["output"], arguments["output_format"], hook.location(self.table).storage_options)
        counted = pc.value_counts(rows[ROWKIND]).to_pylist() if rows.num_rows else []
        found = {c["values"]: c["counts"] for c in counted}
        kinds = {kind: found[kind] for kind in ROW_KIND_NAMES if found.get(kind)}
        return {"job": self.job, "table": self.table, "snapshot_id": end, "start_snapshot": start,
                "end_snapshot": end, "rows": rows.num_rows, "row_kinds": kinds, "output": arguments["output"]}


class PaimonBranchOperator(PaimonJobOperator):
    """Create (``action="create"``, optionally from ``tag``), delete or fast-forward a branch."""

    job = "branch"
    template_fields = (*PaimonJobOperator.template_fields, "branch", "action", "tag")

    def __init__(self, *, branch: str, action: str = "create", tag: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.branch, self.action, self.tag = branch, action, tag

    def arguments(self, context):
        if self.action not in ("create", "delete", "fast-forward"):
            raise InvalidArgumentError(f"action must be create, delete or fast-forward, not {self.action!r}")
        return {}

    def run_core(self, hook, arguments):
        table = hook.get_table(self.table)
        if self.action == "create":
            branch = table.branches.create(self.branch, tag=self.tag or None)
            return {"job": "create-branch", "table": branch.identifier,
                    "snapshot_id": branch.snapshot_manager.latest_id()}
        if self.action == "delete":
            table.branches.delete(self.branch)
            return {"job": "delete-branch", "table": self.table, "branch": self.branch, "snapshot_id": None}
        done = table.branches.fast_forward(self.branch)
        return {"job": "fast-forward", "table": self.table, "snapshot_id": done.copied_snapshots[-1],
                "removed_snapshots": list(done.removed_snapshots), "copied_snapshots": list(done.copied_snapshots)}

    def metadata_only(self) -> bool:
        return True  # every action (create-branch, delete-branch, fast-forward) is metadata work

    def run_spark(self, spark, hook, arguments):
        return self.run_core(hook, arguments)

    def _run_submitted(self, hook, arguments, context):
        return self.run_core(hook, arguments)  # metadata only: nothing to submit


__all__ = ["PaimonAnalyzeOperator", "PaimonBranchOperator", "PaimonCompactOperator", "PaimonCreateTagOperator",
           "PaimonDeleteTagOperator", "PaimonExpireChangelogsOperator", "PaimonExpirePartitionsOperator", "PaimonExpireSnapshotsOperator",
           "PaimonExpireTagsOperator", "PaimonJobOperator", "PaimonReadChangesOperator",
           "PaimonRemoveOrphanFilesOperator", "PaimonRollbackOperator", "PaimonWriteOperator", "commit_user_for",
           "connection_table_asset", "table_asset"]
