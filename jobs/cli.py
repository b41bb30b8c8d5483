"""``python -m paimonflow.jobs <job> ...`` and ``spark-submit .../paimonflow/jobs/submit.py <job> ...``:
every job with typed arguments, printing one JSON result line on stdout.

Common options: ``--warehouse`` (or ``PAIMONFLOW_WAREHOUSE``), ``--table db.t`` (``db.t$branch_b``
for a branch), ``--storage-option k=v`` (S3 endpoint...; credentials belong in the environment:
``PAIMONFLOW_STORAGE_OPTIONS``, a JSON object, never on argv), ``--master`` (default: the submit command's, else ``local[2]``)
and ``--conf k=v`` for Spark. Errors print one line on stderr and exit with code 2.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, overload

import typer

from paimonflow.core.cli.contract import (
    BUG,
    USER_ERROR,
    ContractGroup,
    duration_millis,
    one_line,
    pairs,
    user_error,
)
from paimonflow.core.errors import Interrupted, InvalidArgumentError, PaimonflowError, files_removed
from paimonflow.core.options.parse import parse_duration_millis

from .location import TableLocation, storage_options_from_env
from .result import JobResult
from .spark_errors import typed_errors


class JobsCli(ContractGroup):
    """Usage errors and bugs outside a job's run as one JSON line too (``core/cli/contract.py``)."""

    global_flags = ("--debug",)
    always_json = True


app = typer.Typer(cls=JobsCli, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="paimonflow Spark jobs (each prints one JSON result line).")

Warehouse = Annotated[str, typer.Option("--warehouse", "-w", envvar="PAIMONFLOW_WAREHOUSE")]
TableName = Annotated[str, typer.Option("--table", "-t", help="<database>.<table>[$branch_<b>]")]
Master = Annotated[str | None, typer.Option(help="Spark master; default: spark-submit's, else local[2]")]
Conf = Annotated[list[str] | None, typer.Option("--conf", help="Spark setting k=v; repeatable")]
Storage = Annotated[list[str] | None, typer.Option("--storage-option", help="k=v (s3.endpoint, ...); repeatable")]
CommitUser = Annotated[str | None, typer.Option(help="Stable commit user: with --commit-identifier, exactly once")]
CommitId = Annotated[int | None, typer.Option(help="Commit identifier (e.g. the run's logical time)")]
Partition = Annotated[list[str] | None, typer.Option("--partition", help="k=v[,k2=v2]; repeatable")]


_RESULT_FILE: dict[str, str | None] = {"path": None}
_DEBUG = {"on": False}


@app.callback()
def _options(result_file: Annotated[str | None, typer.Option(
        help="Also write the JSON result to this file or storage URI (for callers that cannot read stdout)")] = None,
             debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an unexpected error")]
             = False) -> None:
    """paimonflow Spark jobs (each prints one JSON result line; errors one JSON line on stderr, exit 2)."""
    _RESULT_FILE["path"] = result_file
    _DEBUG["on"] = debug


def job(name: str):
    """Register a job: build the session, run, print the result; paimonflow errors exit 2."""

    def decorate(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with _pipes() as pipes:  # None unless launched by Dagster Pipes
                code = _run_job(name, fn, args, kwargs, pipes)
            if code:
                raise typer.Exit(code)

        return app.command(name)(run)

    return decorate


@contextmanager
def _pipes() -> Iterator[Any]:
    """A Dagster Pipes session when Dagster launched this job through Pipes (jobs/pipes.py), else None."""
    if "DAGSTER_PIPES_CONTEXT" not in os.environ:
        yield None
        return
    try:
        from paimonflow.jobs.pipes import pipes_session
    except ImportError:  # dagster-pipes is not installed beside the driver
        print("launched through Dagster Pipes, but dagster-pipes is not installed here: reporting to stdout only",
              file=sys.stderr, flush=True)
        yield None
        return
    with pipes_session(storage_options_from_env()) as pipes:
        yield pipes


def _run_job(name: str, fn, args, kwargs, pipes) -> int:
    """Run the job; print its result (and hand it to Pipes and the result file); the exit code."""
    _SIGNALLED.clear()
    try:
        with ExitStack() as running, typed_errors():  # a user's mistake Spark reported, typed
            running.enter_context(_sigterm_interrupts())
            _RUNNING.update(job=name, stack=running)
            result = with_master(fn(*args, **kwargs))
    except PaimonflowError as exc:
        _fail(name, type(exc).__name__, one_line(str(exc)), pipes)
        return USER_ERROR
    except KeyboardInterrupt as stop:  # SIGINT or SIGTERM: its Spark work was interrupted on the way out
        _fail(name, "JobInterrupted", _interrupted_message(stop), pipes)
        return stop.exit_code if isinstance(stop, Interrupted) else 130
    except Exception as exc:
        if _SIGNALLED and not isinstance(exc, PaimonflowError):
            # the interrupt was raised inside a library call that turned it into its own error
            # (Py4J: a signal during a call shuts its socket, and the next call fails)
            signalled = Interrupted(_SIGNALLED[0])
            signalled.files_removed = files_removed(exc)  # what the write deleted when the error passed
            _fail(name, "JobInterrupted", f"{_interrupted_message(signalled)} ({type(exc).__name__} on the "
                  "way out)", pipes)
            return signalled.exit_code
        if _STOPPED_CONTEXT in str(exc):  # the master killed the application (a killed task), or lost it
            _fail(name, "JobInterrupted", "the Spark application was stopped from outside (killed through its "
                  "master, or its cluster lost it) before the job finished", pipes)
            return USER_ERROR
        found = user_error(exc)  # a missing file, a permission
        if found is not None:
            kind, message = found
            _fail(name, kind, message, pipes)
            return USER_ERROR
        if _DEBUG["on"]:
            raise
        _fail(name, "InternalError", f"{type(exc).__name__}: {one_line(str(exc))} — this is a bug in paimonflow; "
              "rerun with --debug for the traceback and report it", pipes)
        return BUG
    text = result.to_json()
    print(text)
    if pipes is not None:
        pipes.log.info(f"paimonflow {name} finished on {result.master}")
        pipes.report_custom_message(result.to_dict())
    if _RESULT_FILE["path"]:  # a path or a URI on the warehouse's storage (jobs/results.py)
        from paimonflow.jobs.results import write_result

        try:
            write_result(_RESULT_FILE["path"], text, storage_options_from_env())
        except PaimonflowError as exc:
            _fail(name, type(exc).__name__, f"the job finished, but its result was not written: {exc}", pipes)
            return 2
    return 0


def _fail(name: str, error: str, message: str, pipes=None) -> None:
    """One JSON line on stderr; the same record in the result file, so that a submitter that only
    sees spark-submit's exit code (the Airflow Spark provider) fails with the job's own line."""
    record = json.dumps({"job": name, "error": error, "message": message})
    print(record, file=sys.stderr, flush=True)
    if pipes is not None:
        pipes.log.error(f"{error}: {message}")
    if _RESULT_FILE["path"]:
        from paimonflow.jobs.results import write_result

        with contextlib.suppress(PaimonflowError, OSError):  # the error on stderr is the one that counts
            write_result(_RESULT_FILE["path"], record, storage_options_from_env())


def _interrupted_message(stop: KeyboardInterrupt) -> str:
    if not isinstance(stop, Interrupted):
        return "interrupted; the job's Spark work was cancelled"
    if stop.committed_snapshot is not None:  # held back during the commit (signals_deferred), which landed
        return f"interrupted by {stop.signal_name} after the commit: snapshot {stop.committed_snapshot} is committed"
    return (f"interrupted by {stop.signal_name}; the job's Spark work was cancelled and the "
            f"{stop.files_removed} uncommitted files its tasks had written were removed")


_STOPPED_CONTEXT = "stopped SparkContext"  # Spark's words for a call on a context its cluster stopped
_SIGNALLED: list[int] = []  # the SIGTERMs this job received (a library may turn the interrupt into its own error)


def _terminated(signum, frame) -> None:
    _SIGNALLED.append(signum)
    raise Interrupted(signum)


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While a job runs, SIGTERM (a scheduler killing its task) interrupts it like SIGINT, so its
    Spark work is cancelled; the previous handler is back afterwards. Only the main thread can
    handle signals; a job run from another thread (a test runner) keeps the process's handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminated)
    stopped = threading.Event()
    watcher = threading.Thread(target=_watch_parent, args=(os.getppid(), stopped), daemon=True,
                               name="paimonflow-parent-watch")
    watcher.start()
    try:
        yield
    finally:
        stopped.set()
        signal.signal(signal.SIGTERM, previous)


def _watch_parent(parent: int, stopped: threading.Event, every: float = 1.0) -> None:
    """SIGTERM to this process once its parent is gone. Under spark-submit the Python driver is a
    child of the SparkSubmit JVM; a scheduler stopping the submission (Dagster Pipes' SIGINT, an
    Airflow task's kill) ends the JVM only, and the orphaned driver would otherwise go on, perhaps
    to commit. Reparenting is how an orphan shows (``os.getppid()`` changes)."""
    while not stopped.wait(every):
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)
            return


_RUNNING: dict = {"job": None, "stack": None}


def with_master(result: JobResult) -> JobResult:
    """``result`` naming the master of the session the job ran on."""
    from pyspark.sql import SparkSession

    from .spark_info import master_of

    active = SparkSession.getActiveSession()
    return result if active is None or result.master else replace(result, master=master_of(active))


def _spark(master: str | None, conf: list[str] | None):
    """The job's session; the Spark work the job starts carries its job tag, interrupted if the job is."""
    from .session import cancellable, spark_session

    spark = spark_session(master=master, conf=pairs(conf, "--conf"))
    if _RUNNING["stack"] is not None:
        _RUNNING["stack"].enter_context(cancellable(spark, _RUNNING["job"] or "job"))
    return spark


def _location(warehouse: str, table: str, storage: list[str] | None) -> TableLocation:
    """``--storage-option`` pairs over those of ``PAIMONFLOW_STORAGE_OPTIONS`` (how callers pass secrets)."""
    return TableLocation(warehouse, table, {**storage_options_from_env(), **pairs(storage, "--storage-option")})


@overload
def _age_millis(text: str, option: str = ...) -> int: ...
@overload
def _age_millis(text: str | None, option: str = ...) -> int | None: ...


def _age_millis(text: str | None, option: str = "--older-than") -> int | None:
    """``--older-than`` as a duration (``'1 d'``), or as Apache Paimon's procedures take it, a
    timestamp (``'2026-11-20 00:00:00'``, local time): the age of that instant now; None if not given."""
    if not text:
        return None
    try:
        return parse_duration_millis(text)
    except ValueError:
        pass
    try:
        instant = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidArgumentError(f"{option} takes a duration ('1 d', '30 min') or a timestamp "
                                   f"('2026-11-20 00:00:00'), not {text!r}") from None
    age = int((datetime.now(instant.tzinfo) - instant).total_seconds() * 1000)
    if age < 0:
        raise InvalidArgumentError(f"{option} {text!r} is in the future")
    return age


@job("write")
def write_(warehouse: Warehouse, table: TableName,
           path: Annotated[str | None, typer.Option(help="Files to read")] = None,
           format: Annotated[str, typer.Option(help="parquet, csv, json or orc")] = "parquet",
           source_table: Annotated[str | None, typer.Option(help="A Spark table")] = None,
           sql: Annotated[str | None, typer.Option(help="A Spark SQL query")] = None,
           mode: Annotated[str, typer.Option(help="append or overwrite")] = "append",
           overwrite_partition: Annotated[str | None, typer.Option(help="k=v[,k2=v2]: static overwrite")] = None,
           row_kind_column: Annotated[str | None, typer.Option(help="Column with +I/-U/+U/-D")] = None,
           commit_user: CommitUser = None, commit_identifier: CommitId = None,
           parallelism: Annotated[int | None, typer.Option(help="Writer tasks (default: twice the session's default parallelism)")] = None,
           master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Write files, a Spark table or a query into a table (one commit)."""
    from .write import WriteSource, partition_spec, write

    return write(_spark(master, conf), _location(warehouse, table, storage_option),
                 WriteSource(path=path, format=format, spark_table=source_table, sql=sql), mode=mode,
                 overwrite_partition=partition_spec(overwrite_partition), row_kind_column=row_kind_column,
                 commit_user=commit_user, commit_identifier=commit_identifier, parallelism=parallelism)


@job("compact")
def compact_(warehouse: Warehouse, table: TableName, full: bool = True, partition: Partition = None,
             bucket: Annotated[list[int] | None, typer.Option(help="Only these buckets; repeatable")] = None,
             commit_user: CommitUser = None, commit_identifier: CommitId = None,
             master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Compact buckets in parallel on executors (full, or --no-full for universal compaction)."""
    from .compact import compact
    from .write import partition_specs

    return compact(_spark(master, conf), _location(warehouse, table, storage_option), full=full,
                   partitions=partition_specs(partition), buckets=bucket, commit_user=commit_user,
                   commit_identifier=commit_identifier)


@job("expire-snapshots")
def expire_snapshots_(warehouse: Warehouse, table: TableName, retain_min: int | None = None,
                      retain_max: int | None = None,
                      older_than: Annotated[str | None, typer.Option(help="A duration ('1 h') or a timestamp ('2026-11-20 00:00:00')")] = None,
                      max_deletes: int | None = None, dry_run: bool = False,
                      master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Expire snapshots by the table's options (each overridable)."""
    from .maintenance import expire_snapshots

    return expire_snapshots(_spark(master, conf), _location(warehouse, table, storage_option),
                            retain_min=retain_min, retain_max=retain_max, older_than_millis=_age_millis(older_than),
                            max_deletes=max_deletes, dry_run=dry_run)


@job("expire-changelogs")
def expire_changelogs_(warehouse: Warehouse, table: TableName, retain_min: int | None = None,
                       retain_max: int | None = None,
                       older_than: Annotated[str | None, typer.Option(help="A duration ('7 d') or a timestamp ('2026-11-20 00:00:00')")] = None,
                       max_deletes: int | None = None, delete_all: bool = False, dry_run: bool = False,
                       master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Expire long-lived changelogs by the table's changelog.* options."""
    from .maintenance import expire_changelogs

    return expire_changelogs(_spark(master, conf), _location(warehouse, table, storage_option),
                             retain_min=retain_min, retain_max=retain_max, older_than_millis=_age_millis(older_than),
                             max_deletes=max_deletes, delete_all=delete_all, dry_run=dry_run)


@job("expire-partitions")
def expire_partitions_(warehouse: Warehouse, table: TableName,
                       expiration: Annotated[str | None, typer.Option(help="Default partition.expiration-time")]
                       = None, dry_run: bool = False, commit_user: CommitUser = None,
                       master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Drop partitions older than the expiration time."""
    from .maintenance import expire_partitions

    return expire_partitions(_spark(master, conf), _location(warehouse, table, storage_option),
                             expiration_millis=duration_millis(expiration, "--expiration"), dry_run=dry_run, commit_user=commit_user)


@job("analyze")
def analyze_(warehouse: Warehouse, table: TableName,
             column: Annotated[list[str] | None, typer.Option(help="Only these columns")] = None,
             commit_user: CommitUser = None, master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Compute table statistics (an ANALYZE snapshot)."""
    from .maintenance import analyze

    return analyze(_spark(master, conf), _location(warehouse, table, storage_option), columns=column,
                   commit_user=commit_user)


@job("create-tag")
def create_tag_(warehouse: Warehouse, table: TableName, name: Annotated[str, typer.Option()],
                snapshot: int | None = None, timestamp_millis: int | None = None,
                time_retained: Annotated[str | None, typer.Option(help="e.g. '7 d'")] = None,
                master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Tag a snapshot (default: the latest)."""
    from .maintenance import create_tag

    return create_tag(_spark(master, conf), _location(warehouse, table, storage_option), name=name,
                      snapshot_id=snapshot, timestamp_millis=timestamp_millis, time_retained=time_retained)


@job("delete-tag")
def delete_tag_(warehouse: Warehouse, table: TableName, name: Annotated[str, typer.Option()], dry_run: bool = False,
                master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Delete a tag (and files of its expired snapshot nothing else needs)."""
    from .maintenance import delete_tag

    return delete_tag(_spark(master, conf), _location(warehouse, table, storage_option), name=name, dry_run=dry_run)


@job("rename-tag")
def rename_tag_(warehouse: Warehouse, table: TableName, name: Annotated[str, typer.Option()],
                new_name: Annotated[str, typer.Option()], master: Master = None, conf: Conf = None,
                storage_option: Storage = None):
    """Rename a tag."""
    from .maintenance import rename_tag

    return rename_tag(_spark(master, conf), _location(warehouse, table, storage_option), name=name, new_name=new_name)


@job("replace-tag")
def replace_tag_(warehouse: Warehouse, table: TableName, name: Annotated[str, typer.Option()],
                 snapshot: int | None = None,
                 time_retained: Annotated[str | None, typer.Option(help="e.g. '7 d'")] = None,
                 master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Point an existing tag at another snapshot (default: the latest)."""
    from .maintenance import replace_tag

    return replace_tag(_spark(master, conf), _location(warehouse, table, storage_option), name=name,
                       snapshot_id=snapshot, time_retained=time_retained)


@job("create-branch")
def create_branch_(warehouse: Warehouse, table: TableName, branch: Annotated[str, typer.Option()],
                   tag: Annotated[str | None, typer.Option(help="Create it from this tag (default: empty)")] = None,
                   master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Create a branch, empty or from a tag."""
    from .maintenance import create_branch

    return create_branch(_spark(master, conf), _location(warehouse, table, storage_option), branch=branch, tag=tag)


@job("delete-branch")
def delete_branch_(warehouse: Warehouse, table: TableName, branch: Annotated[str, typer.Option()],
                   master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Delete a branch."""
    from .maintenance import delete_branch

    return delete_branch(_spark(master, conf), _location(warehouse, table, storage_option), branch=branch)


@job("rename-branch")
def rename_branch_(warehouse: Warehouse, table: TableName, branch: Annotated[str, typer.Option()],
                   new_name: Annotated[str, typer.Option()], master: Master = None, conf: Conf = None,
                   storage_option: Storage = None):
    """Rename a branch."""
    from .maintenance import rename_branch

    return rename_branch(_spark(master, conf), _location(warehouse, table, storage_option), branch=branch,
                         new_name=new_name)


@job("fast-forward")
def fast_forward_(warehouse: Warehouse, table: TableName, branch: Annotated[str, typer.Option()],
                  master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Make the main branch equal to a branch."""
    from .maintenance import fast_forward

    return fast_forward(_spark(master, conf), _location(warehouse, table, storage_option), branch=branch)


@job("reset-consumer")
def reset_consumer_(warehouse: Warehouse, table: TableName, consumer_id: Annotated[str, typer.Option()],
                    next_snapshot: Annotated[int | None, typer.Option(help="Omit to delete the consumer")] = None,
                    master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Point a consumer at a snapshot, or delete it."""
    from .maintenance import reset_consumer

    return reset_consumer(_spark(master, conf), _location(warehouse, table, storage_option), consumer_id=consumer_id,
                          next_snapshot=next_snapshot)


@job("clear-consumers")
def clear_consumers_(warehouse: Warehouse, table: TableName,
                     including: Annotated[str, typer.Option(help="Regular expression of ids to delete")] = ".*",
                     excluding: Annotated[str | None, typer.Option(help="Regular expression of ids to keep")] = None,
                     master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Delete consumers by id pattern."""
    from .maintenance import clear_consumers

    return clear_consumers(_spark(master, conf), _location(warehouse, table, storage_option), including=including,
                           excluding=excluding)


@job("expire-tags")
def expire_tags_(warehouse: Warehouse, table: TableName,
                 older_than: Annotated[str | None, typer.Option(help="Also tags without TTL older than this")]
                 = None, dry_run: bool = False, master: Master = None, conf: Conf = None,
                 storage_option: Storage = None):
    """Delete tags whose time-to-live ran out."""
    from .maintenance import expire_tags

    return expire_tags(_spark(master, conf), _location(warehouse, table, storage_option),
                       older_than_millis=_age_millis(older_than), dry_run=dry_run)


@job("auto-tag")
def auto_tag_(warehouse: Warehouse, table: TableName, master: Master = None, conf: Conf = None,
              storage_option: Storage = None):
    """Create the automatic tags that are due (tag.automatic-creation), trimming old ones."""
    from .maintenance import auto_tag

    return auto_tag(_spark(master, conf), _location(warehouse, table, storage_option))


@job("rollback")
def rollback_(warehouse: Warehouse, table: TableName, snapshot: int | None = None, tag: str | None = None,
              timestamp_millis: int | None = None, master: Master = None, conf: Conf = None,
              storage_option: Storage = None):
    """Roll back to a snapshot, a tag or a time."""
    from .maintenance import rollback

    return rollback(_spark(master, conf), _location(warehouse, table, storage_option), snapshot_id=snapshot, tag=tag,
                    timestamp_millis=timestamp_millis)


@job("remove-orphan-files")
def remove_orphan_files_(warehouse: Warehouse, table: TableName,
                         older_than: Annotated[str, typer.Option(help="Only files older than this: a duration ('1 d') or a timestamp")] = "1 d",
                         min_older_than: Annotated[str, typer.Option(help="Refuse a shorter --older-than (the longest a writer keeps files uncommitted, plus clock skew)")] = "1 h",
                         dry_run: bool = False, master: Master = None, conf: Conf = None,
                         storage_option: Storage = None):
    """Delete unreferenced files, listing and deleting on executors."""
    from .maintenance import remove_orphan_files

    return remove_orphan_files(_spark(master, conf), _location(warehouse, table, storage_option),
                               older_than_millis=_age_millis(older_than),
                               min_older_than_millis=duration_millis(min_older_than, "--min-older-than"), dry_run=dry_run)


@job("read-changes")
def read_changes_(warehouse: Warehouse, table: TableName, start: Annotated[int, typer.Option()],
                  output: Annotated[str, typer.Option(help="Where to write the changes")],
                  end: int | None = None, mode: str = "auto", output_format: str = "parquet",
                  master: Master = None, conf: Conf = None, storage_option: Storage = None):
    """Write the changes of a snapshot range (with rowkind) to files."""
    from .maintenance import read_changes

    return read_changes(_spark(master, conf), _location(warehouse, table, storage_option), start_snapshot=start,
                        end_snapshot=end, mode=mode, output=output, output_format=output_format)


def main(argv: list[str] | None = None) -> None:
    app(args=argv)


if __name__ == "__main__":
    main()
