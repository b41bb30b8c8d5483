"""``paimonflow``: create, describe, write and read Paimon tables from a shell."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pyarrow as pa
import typer

from ..catalog import Catalog
from ..data.types import schema_holding_signed
from ..errors import InvalidArgumentError, SnapshotNotFoundError, WarehouseNotFoundError
from ..write.progress import observe_files
from .contract import ContractGroup, duration_millis, pairs
from .output import Output, text
from .progress import Progress


class CoreCli(ContractGroup):
    global_flags = ("--json", "--debug")
    global_valued = ("--storage-option", "-S")
    program = "paimonflow"


app = typer.Typer(cls=CoreCli, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Inspect and change Apache Paimon tables (filesystem catalog).")
out = Output()
_STORAGE: dict[str, str] = {}


def command(name: str | None = None):
    """Register a verb (errors are the group's: see ``contract.py``)."""
    return app.command(name)


Warehouse = Annotated[str, typer.Option("--warehouse", "-w", envvar="PAIMONFLOW_WAREHOUSE",
                                        help="Warehouse path or URI (file:// or s3://).")]
Identifier = Annotated[str, typer.Argument(help="<database>.<table>")]
DryRun = Annotated[bool, typer.Option(help="Show what would be done; change nothing")]
IfExists = Annotated[bool, typer.Option(help="No error if it exists already")]
RetainMin = Annotated[int | None, typer.Option(help="Keep at least this many (default: the table's *.num-retained.min)")]
RetainMax = Annotated[int | None, typer.Option(help="Keep at most this many (default: the table's *.num-retained.max)")]
MaxDeletes = Annotated[int | None, typer.Option(
    help="Expire at most this many in this run (default: the table's snapshot.expire.limit)")]
Name = Annotated[str, typer.Argument(help="The name")]
OldName = Annotated[str, typer.Argument(help="The current name")]
NewName = Annotated[str, typer.Argument(help="The new name")]


def catalog_of(warehouse: str, *, must_exist: bool = True) -> Catalog:
    from ..fs import storage_options_from_env

    catalog = Catalog(warehouse, storage_options={**storage_options_from_env(), **_STORAGE} or None)
    if must_exist and not catalog.file_io.exists(catalog.warehouse):
        raise WarehouseNotFoundError(f"warehouse {warehouse!r} does not exist; check --warehouse or "
                                     "PAIMONFLOW_WAREHOUSE (create-database creates a new one)")
    return catalog


@app.callback()
def _options(
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON document (errors too, on stderr)")]
    = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an unexpected error")] = False,
    storage_option: Annotated[list[str] | None, typer.Option(
        "--storage-option", "-S", help="Storage option KEY=VALUE (s3.endpoint, ...; docs/storage.md); repeatable. "
        "Credentials: PAIMONFLOW_STORAGE_OPTIONS or the AWS_* environment, not argv")] = None,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=lambda given: _print_version(given),
                                          help="Print paimonflow's version (and pyarrow's and Python's) and exit")]
    = False,
) -> None:
    """Inspect and change Apache Paimon tables (filesystem catalog).

    Global options may come before or after the verb. Errors are one line on stderr, exit code 2.
    """
    out.json = json_output
    _STORAGE.clear()
    _STORAGE.update(pairs(storage_option, "storage option"))


def _print_version(given: bool) -> None:
    if not given:
        return
    import platform
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        ours = installed("paimonflow")
    except PackageNotFoundError:  # run from a source tree that was never installed
        ours = "unknown (not installed)"
    typer.echo(f"paimonflow {ours} (pyarrow {pa.__version__}, Python {platform.python_version()})")
    raise typer.Exit()


def _busy(text: str):
    """A spinner on stderr while a long step runs (stdout stays clean for the result)."""
    from contextlib import nullcontext

    from rich.console import Console

    console = Console(stderr=True)
    return console.status(text, spinner="dots") if console.is_terminal else nullcontext()


def parse_type(text: str) -> pa.DataType:
    from ..meta.schema import to_arrow_type_from_text

    return to_arrow_type_from_text(text)


@command("create-database")
def create_database(name: Annotated[str, typer.Argument(help="The database")], warehouse: Warehouse,
                    ignore_if_exists: IfExists = False) -> None:
    """Create a database (and the warehouse, if new)."""
    catalog_of(warehouse, must_exist=False).create_database(name, ignore_if_exists=ignore_if_exists)
    out.done(f"created database {name}", {"database": name})


@command("list")
def list_(warehouse: Warehouse, database: Annotated[str | None, typer.Argument(
        help="List this database's tables (default: the databases)")] = None) -> None:
    """List databases, or the tables of one database."""
    catalog = catalog_of(warehouse)
    if database:
        out.lines("tables", catalog.list_tables(database))
    else:
        out.lines("databases", catalog.list_databases())


@command("create-table")
def create_table(
    identifier: Identifier,
    warehouse: Warehouse,
    column: Annotated[list[str] | None, typer.Option(
        "--column", "-c", help="name:TYPE, e.g. id:BIGINT, dt:STRING; repeatable")] = None,
    primary_key: Annotated[list[str] | None, typer.Option(
        "--primary-key", "-k", help="A primary-key column (NOT NULL); repeatable")] = None,
    partition_key: Annotated[list[str] | None, typer.Option(
        "--partition-key", "-p", help="A partition column; repeatable")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="A table option key=value; repeatable")]
    = None,
    like: Annotated[Path | None, typer.Option(
        help="Take the columns from a Parquet, ORC, CSV or JSON-lines file (instead of --column)")] = None,
) -> None:
    """Create a table from column specs, or with the columns of a sample file."""
    if (like is None) == (not column):
        raise InvalidArgumentError("give the columns with --column name:TYPE (repeatable) or --like FILE, not both")
    fields = []
    if like is not None:
        from .inputs import schema_of

        # unsigned columns take the signed type holding every value; a type Paimon lacks is refused, named
        fields = list(schema_holding_signed(schema_of(like)))
    for spec in column or ():
        name, sep, type_text = spec.partition(":")
        if not sep:
            raise InvalidArgumentError(f"column {spec!r} must be name:TYPE, e.g. id:BIGINT")
        fields.append(pa.field(name, parse_type(type_text)))
    options = pairs(option, "table option")
    table = catalog_of(warehouse).create_table(identifier, pa.schema(fields), primary_keys=primary_key or [],
                                             partition_keys=partition_key or [], options=options)
    out.done(f"created table {table.identifier} at {table.path}",
             {"table": table.identifier, "path": table.path, "schema_id": table.schema.id})


@command()
def describe(identifier: Identifier, warehouse: Warehouse) -> None:
    """Schema, keys, options and the latest snapshot of a table."""
    from ..meta.schema import type_to_json_value

    table = catalog_of(warehouse).get_table(identifier)
    latest = table.latest_snapshot()
    described = {
        "table": identifier, "schema_id": table.schema.id,
        "columns": [{"id": f.id, "name": f.name, "type": str(type_to_json_value(f.type)).strip('"')}
                    for f in table.schema.fields],
        "primary_keys": list(table.primary_keys), "partition_keys": list(table.partition_keys),
        "options": dict(table.schema.options),
        "latest_snapshot": None if latest is None else {
            "id": latest.id, "commit_kind": latest.commit_kind.value, "total_record_count": latest.total_record_count}}
    if out.json:
        out.document(described)
        return
    out.rows(described["columns"], title=f"{identifier} (schema {table.schema.id})")
    typer.echo(f"primary keys: {', '.join(table.primary_keys) or '—'}   "
               f"partition keys: {', '.join(table.partition_keys) or '—'}")
    typer.echo(f"options: {text(described['options']) or '—'}")
    # total_record_count counts the rows in the files, before merging (an upsert's old rows too)
    typer.echo("latest snapshot: " + (f"{latest.id} ({latest.commit_kind.value}, {latest.total_record_count} "
                                      "rows in its files before merging)" if latest else "none"))


@command()
def snapshots(identifier: Identifier, warehouse: Warehouse) -> None:
    """The table's snapshots."""
    table = catalog_of(warehouse).get_table(identifier)
    out.rows(table.system_table("snapshots").select(
        ["snapshot_id", "schema_id", "commit_kind", "commit_time", "total_record_count", "delta_record_count",
         "commit_user"]), title=f"{identifier}$snapshots")


@command()
def files(identifier: Identifier, warehouse: Warehouse) -> None:
    """Live data files of the latest snapshot."""
    table = catalog_of(warehouse).get_table(identifier)
    out.rows(table.system_table("files").select(
        ["partition", "bucket", "level", "record_count", "file_size_in_bytes", "file_path"]),
        title=f"{identifier}$files")


@command()
def read(
    identifier: Identifier,
    warehouse: Warehouse,
    limit: Annotated[int, typer.Option(help="Rows to print (0: all)")] = 20,
    snapshot: Annotated[int | None, typer.Option(help="Time travel to a snapshot id.")] = None,
    tag: Annotated[str | None, typer.Option(help="Time travel to a tag.")] = None,
    output: Annotated[Path | None, typer.Option(help="Write all rows to a .parquet or .csv file instead.")] = None,
    column: Annotated[list[str] | None, typer.Option(
        help="Only these columns (row-tracking tables also have _ROW_ID and _SEQUENCE_NUMBER); repeatable")] = None,
    columns: Annotated[str | None, typer.Option(help="Only these columns, comma-separated (as --column)")] = None,
    filter_text: Annotated[str | None, typer.Option("--filter", help=(
        "Only the rows a condition selects, e.g. \"dt = '2026-11-21' AND amount > 10\" (docs/cli.md)"))] = None,
    timestamp: Annotated[str | None, typer.Option(help=(
        "Time travel to the snapshot at or before an ISO 8601 time, e.g. 2026-11-21T08:00:00+00:00 "
        "(without a zone: this machine's)"))] = None,
) -> None:
    """Print rows (or save them to a file)."""
    if limit < 0:
        raise InvalidArgumentError(f"--limit must be 0 (all rows) or more, not {limit}")
    if output is not None and output.suffix.lower() not in (".csv", ".parquet"):
        raise InvalidArgumentError(f"--output {output}: give a .parquet or .csv file name")
    if sum(x is not None for x in (snapshot, tag, timestamp)) > 1:
        raise InvalidArgumentError("give at most one of --snapshot, --tag and --timestamp")
    if columns is not None:
        column = [*(column or ()), *(c.strip() for c in columns.split(",") if c.strip())]
    at = _iso_time(timestamp, "--timestamp") if timestamp is not None else None
    table = catalog_of(warehouse).get_table(identifier)
    where = None
    if filter_text is not None:
        from .expressions import parse_filter

        where = parse_filter(filter_text, "--filter", table.read_schema(snapshot_id=snapshot, tag=tag,
                                                                        timestamp=at).arrow_schema())
    chosen: dict[str, Any] = {"snapshot_id": snapshot, "tag": tag, "timestamp": at, "columns": column, "filter": where}
    # rows stream split by split: --output writes them as they come, --limit stops reading once
    # it has them (memory: a split, not the table)
    batches = table.to_batches(**chosen)
    if output is not None:
        with Progress.for_terminal(f"reading {identifier} into {output.name}", json_output=out.json) as progress:
            written = _save(batches, output, lambda: table.read(**chosen).schema, progress=progress)
        out.done(f"wrote {written} rows to {output}", {"rows_written": written, "path": str(output)})
        return
    shown: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        shown.append(batch)
        count += batch.num_rows
        if limit and count > limit:  # one row past the limit tells there are more
            break
    rows = pa.Table.from_batches(shown) if shown else table.read(**chosen)
    out.rows(rows.slice(0, limit) if limit else rows, title=identifier, more=bool(limit) and count > limit)


def snake_keys(value: Any) -> Any:
    """``value`` with every mapping key in snake_case (``mergedRecordCount`` -> ``merged_record_count``),
    the one key style of every verb's output; column names (the keys of ``col_stats``) are kept."""
    import re

    if not isinstance(value, dict):
        return value
    out_: dict[str, Any] = {}
    for key, item in value.items():
        snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()
        if snake == "col_stats" and isinstance(item, dict):
            out_[snake] = {column: snake_keys(stats) for column, stats in item.items()}
        else:
            out_[snake] = snake_keys(item)
    return out_


def commit_document(result) -> dict:
    """A commit's result as the command line shows it: a commit without an identity (the batch
    default, ``Long.MAX_VALUE`` as in Paimon) has ``commit_identifier`` null."""
    from ..write.commit import BATCH_COMMIT_IDENTIFIER

    document = result.to_dict()
    if document.get("commit_identifier") == BATCH_COMMIT_IDENTIFIER:
        document["commit_identifier"] = None
    return document


def _iso_time(given: str, flag: str):
    """An ISO 8601 time (``2026-11-21T08:00:00+00:00``, ``2026-11-21 08:00``, ``2026-11-21``); one
    without a zone is this machine's local time, as Paimon's ``scan.timestamp`` reads it."""
    from datetime import datetime

    try:
        when = datetime.fromisoformat(given.strip())
    except ValueError:
        raise InvalidArgumentError(f"{flag} {given!r} is not an ISO 8601 time, e.g. 2026-11-21T08:00:00+00:00") \
            from None
    return when if when.tzinfo is not None else when.astimezone()


def _save(batches, path: Path, empty_schema, *, progress: Progress | None = None) -> int:
    """Write ``batches`` to ``path`` (.csv or .parquet) as they come, through a temporary file
    beside it that is renamed at the end: a failed read leaves no partial file. Returns the rows
    (counted into ``progress`` batch by batch: rows, Arrow bytes, and the file once it is in place)."""
    import contextlib
    import os
    import tempfile

    import pyarrow.csv as csv
    import pyarrow.parquet as pq

    directory = path.parent if str(path.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    rows, writer = 0, None
    try:
        for batch in batches:
            if writer is None:
                writer = (csv.CSVWriter(temporary, batch.schema) if path.suffix.lower() == ".csv"
                          else pq.ParquetWriter(temporary, batch.schema))
            writer.write_batch(batch)
            rows += batch.num_rows
            if progress is not None:
                progress.add(rows=batch.num_rows, bytes=batch.nbytes)
        if writer is None:  # no rows: the file still has the columns
            schema = empty_schema()
            writer = csv.CSVWriter(temporary, schema) if path.suffix.lower() == ".csv" else pq.ParquetWriter(
                temporary, schema)
        writer.close()
        os.replace(temporary, path)
        if progress is not None:
            progress.add(files=1)
    except BaseException:
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return rows


@command()
def write(
    identifier: Identifier,
    warehouse: Warehouse,
    paths: Annotated[list[Path], typer.Argument(help="Parquet, ORC, CSV (with a header) or JSON-lines files")],
    overwrite: Annotated[bool, typer.Option(
        help="Replace the partitions the rows are in (dynamic-partition-overwrite), or the whole table")] = False,
    partition: Annotated[str | None, typer.Option(
        help="k=v[,k2=v2]: replace exactly this partition (a static overwrite); the rows must lie in it")] = None,
    row_kind: Annotated[str | None, typer.Option(
        help="The kind of every row of a primary-key table: +I, -U, +U or -D (default +I, an upsert)")] = None,
    delete: Annotated[bool, typer.Option(help="The rows are deletions (--row-kind -D)")] = False,
    commit_user: Annotated[str | None, typer.Option(
        help="Commit user of an exactly-once write (with --commit-identifier): a repeat commits nothing")] = None,
    commit_identifier: Annotated[int | None, typer.Option(
        help="Commit identifier of an exactly-once write (with --commit-user)")] = None,
) -> None:
    """Write files into a table as one commit (all or nothing; Ctrl-C removes what it wrote)."""
    from ..write.commit import BATCH_COMMIT_IDENTIFIER, new_commit_user
    from .inputs import read_input
    from .interrupts import commit_outcome

    if (commit_user is None) != (commit_identifier is None):
        raise InvalidArgumentError("give --commit-user and --commit-identifier together (an exactly-once write), "
                                   "or neither")
    if delete and row_kind not in (None, "-D"):
        raise InvalidArgumentError(f"--delete writes -D rows; it cannot go with --row-kind {row_kind}")
    if partition is not None and overwrite:
        raise InvalidArgumentError("--partition replaces one partition; --overwrite replaces those the rows are "
                                   "in: give one of them")
    kinds = "-D" if delete else row_kind
    if kinds is not None and kinds not in ("+I", "-U", "+U", "-D"):
        raise InvalidArgumentError(f"--row-kind must be +I, -U, +U or -D, not {kinds!r}")
    spec: bool | dict[str, str] = pairs(partition.split(","), "--partition") if partition is not None else overwrite
    table = catalog_of(warehouse).get_table(identifier)
    user = commit_user or new_commit_user(table.options.commit_user_prefix)
    number = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier
    before = table.snapshot_manager.latest_id() or 0
    with commit_outcome(lambda: table.committed_snapshot(user, number, after=before)):
        parts = [read_input(path, table.arrow_schema) for path in paths]
        try:
            data = pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InvalidArgumentError(f"the files do not share their columns' types: {exc}") from None
        with Progress.for_terminal(f"writing {identifier}", json_output=out.json) as progress, \
                observe_files(table.path, progress.files_written):
            result = table.write(data, overwrite=spec, row_kinds=kinds, commit_user=user,
                                 commit_identifier=commit_identifier)
        out.result(commit_document(result))


@command("watch")
def watch_(identifier: Identifier, warehouse: Warehouse, cursor: Annotated[str | None, typer.Option(
        help="The next_observation JSON printed by the previous run.")] = None) -> None:
    """Snapshots committed since a cursor (as JSON; its next_observation is the next cursor)."""
    from ..read.watch import Observation, watch

    last = Observation.from_cursor(cursor) if cursor else None
    result = watch(catalog_of(warehouse).get_table(identifier).snapshot_manager, last)
    out.document(result.to_dict())  # always JSON: the output is the next cursor


def _partitions(texts: list[str] | None) -> list[dict[str, str]] | None:
    """``--partition k=v[,k2=v2]`` values as partition specs."""
    return [pairs(text.split(","), "--partition") for text in texts] if texts else None


@command("compact")
def compact_(identifier: Identifier, warehouse: Warehouse, full: Annotated[bool, typer.Option(
                 help="One sorted run per bucket (--no-full: Paimon's universal compaction)")] = True,
             partition: Annotated[list[str] | None, typer.Option(help="k=v[,k2=v2]; repeat for several")] = None,
             bucket: Annotated[list[int] | None, typer.Option(help="Only these buckets; repeatable")] = None) -> None:
    """Dedicated compaction (full, or --no-full for Paimon's universal compaction)."""
    from ..meta.snapshots import CommitKind
    from ..write.commit import BATCH_COMMIT_IDENTIFIER, new_commit_user
    from .interrupts import commit_outcome

    specs = _partitions(partition)
    table = catalog_of(warehouse).get_table(identifier)
    user, before = new_commit_user(table.options.commit_user_prefix), table.snapshot_manager.latest_id() or 0
    with commit_outcome(lambda: table.committed_snapshot(user, BATCH_COMMIT_IDENTIFIER, after=before,
                                                         kinds=(CommitKind.COMPACT,))):
        with Progress.for_terminal(f"compacting {identifier}", json_output=out.json) as progress, \
                observe_files(table.path, progress.files_written):
            result = table.compact(full=full, partitions=specs, buckets=bucket, commit_user=user)
        out.result(result.to_dict())


@command("expire-snapshots")
def expire_snapshots_(identifier: Identifier, warehouse: Warehouse,
                      retain_min: RetainMin = None, retain_max: RetainMax = None,
                      older_than: Annotated[str | None, typer.Option(help="e.g. '1 h'; default snapshot.time-retained")]
                      = None, max_deletes: MaxDeletes = None, dry_run: DryRun = False) -> None:
    """Expire old snapshots by the table's options (overridable); --dry-run shows the plan."""
    from rich.console import Console
    from rich.progress import Progress

    table = catalog_of(warehouse).get_table(identifier)
    older = duration_millis(older_than, "--older-than")
    with Progress(console=Console(stderr=True), transient=True, disable=out.json) as bar:
        task = bar.add_task("deleting files", total=None)
        result = table.expire_snapshots(
            retain_min=retain_min, retain_max=retain_max, max_deletes=max_deletes, dry_run=dry_run,
            older_than_millis=older, progress=lambda done, total: bar.update(task, completed=done, total=total))
    out.result(result.to_dict())
    if result.more_due and not out.json:  # (on stderr: stdout keeps the result alone)
        typer.echo(f"up to {result.more_due} more snapshot(s) are due beyond this run's cap (--max-deletes, "
                   "else snapshot.expire.limit): run expire-snapshots again", err=True)


@command("expire-changelogs")
def expire_changelogs_(identifier: Identifier, warehouse: Warehouse,
                       retain_min: RetainMin = None, retain_max: RetainMax = None,
                       older_than: Annotated[str | None, typer.Option(help="e.g. '7 d'; default changelog.time-retained")]
                       = None, max_deletes: MaxDeletes = None, delete_all: Annotated[bool, typer.Option(
                           help="Delete every changelog (a table no longer decoupled)")] = False,
                       dry_run: DryRun = False) -> None:
    """Expire long-lived changelogs by the table's changelog.* options (overridable)."""
    table = catalog_of(warehouse).get_table(identifier)
    older = duration_millis(older_than, "--older-than")
    with _busy(f"expiring changelogs of {identifier}"):
        result = table.expire_changelogs(retain_min=retain_min, retain_max=retain_max, max_deletes=max_deletes,
                                         older_than_millis=older, delete_all=delete_all, dry_run=dry_run)
    out.result(result.to_dict(), title="changelog expiry")


@command("tags")
def tags_(identifier: Identifier, warehouse: Warehouse) -> None:
    """List tags."""
    out.rows(catalog_of(warehouse).get_table(identifier).system_table("tags"), title=f"{identifier}$tags")


@command("create-tag")
def create_tag(identifier: Identifier, warehouse: Warehouse, name: Name,
               snapshot: Annotated[int | None, typer.Option(help="Default: the latest snapshot")] = None,
               time_retained: Annotated[str | None, typer.Option(help="Time-to-live, e.g. '7 d'")] = None) -> None:
    """Tag a snapshot."""
    tag = catalog_of(warehouse).get_table(identifier).tags.create(name, snapshot_id=snapshot,
                                                                time_retained=time_retained)
    out.done(f"tag {name!r} → snapshot {tag.id}", {"tag": name, "snapshot_id": tag.id})


@command("delete-tag")
def delete_tag(identifier: Identifier, warehouse: Warehouse, name: Name, dry_run: DryRun = False) -> None:
    """Delete a tag (and the files of its expired snapshot that nothing else needs)."""
    table = catalog_of(warehouse).get_table(identifier)
    with _busy(f"deleting tag {name!r}"):
        done = table.tags.delete(name, dry_run=dry_run)
    out.done(f"{'would delete' if dry_run else 'deleted'} tag {name!r}; {len(done.freed_files)} file(s) freed",
             {"tag": name, "snapshot_id": done.snapshot_id, "freed_files": list(done.freed_files), "dry_run": dry_run})


@command("rename-tag")
def rename_tag(identifier: Identifier, warehouse: Warehouse, old: OldName, new: NewName) -> None:
    """Rename a tag."""
    catalog_of(warehouse).get_table(identifier).tags.rename(old, new)
    out.done(f"renamed tag {old!r} to {new!r}", {"old": old, "new": new})


@command("expire-tags")
def expire_tags(identifier: Identifier, warehouse: Warehouse, older_than: Annotated[str | None, typer.Option(
        help="Also tags without a TTL older than this, e.g. '30 d'")] = None, dry_run: DryRun = False) -> None:
    """Delete tags whose time-to-live ran out."""
    table = catalog_of(warehouse).get_table(identifier)
    names = table.tags.expire(older_than_millis=duration_millis(older_than, "--older-than"), dry_run=dry_run)
    out.result({"expired": names, "dry_run": dry_run})


@command("auto-tag")
def auto_tag(identifier: Identifier, warehouse: Warehouse) -> None:
    """Create the automatic tags due now (tag.automatic-creation) and trim by tag.num-retained-max."""
    table = catalog_of(warehouse).get_table(identifier)
    with _busy("creating automatic tags"):
        result = table.run_auto_tag()
    if out.json:
        out.document(result.to_dict())
        return
    out.rows([{"action": action, "tag": name, "snapshot": snapshot_id}
              for action, found in (("created", result.created), ("deleted", result.deleted))
              for name, snapshot_id in found], title=f"{identifier}: automatic tags",
             columns=["action", "tag", "snapshot"])
    typer.echo(f"{len(result.created)} created, {len(result.deleted)} deleted, {result.freed_files} file(s) freed")


@command("rollback")
def rollback_(identifier: Identifier, warehouse: Warehouse,
              snapshot: Annotated[int | None, typer.Option(help="Roll back to this snapshot id")] = None,
              tag: Annotated[str | None, typer.Option(help="Roll back to this tag's snapshot")] = None,
              timestamp_millis: Annotated[int | None, typer.Option(
                  help="Roll back to the snapshot at or before this time (epoch milliseconds)")] = None) -> None:
    """Roll back to a snapshot, a tag or a time (later snapshots and tags are removed)."""
    table = catalog_of(warehouse).get_table(identifier)
    with _busy(f"rolling back {identifier}"):
        done = table.rollback(snapshot_id=snapshot, tag=tag, timestamp_millis=timestamp_millis)
    out.result({"target": done.target, "removed_snapshots": list(done.removed_snapshots),
                "removed_tags": list(done.removed_tags), "deleted_files": done.deleted_files}, title="rollback")


@command("branches")
def branches_(identifier: Identifier, warehouse: Warehouse) -> None:
    """List branches (open one as <database>.<table>$branch_<name> in every other verb)."""
    out.rows(catalog_of(warehouse).get_table(identifier).system_table("branches"), title=f"{identifier}$branches")


@command("create-branch")
def create_branch(identifier: Identifier, warehouse: Warehouse, name: Name,
                  tag: Annotated[str | None, typer.Option(help="Start from this tag; default: empty")] = None,
                  ignore_if_exists: IfExists = False) -> None:
    """Create a branch, empty (main's schema) or from a tag."""
    branch = catalog_of(warehouse).get_table(identifier).branches.create(name, tag=tag,
                                                                       ignore_if_exists=ignore_if_exists)
    latest = branch.snapshot_manager.latest_id()
    out.done(f"branch {name!r} → {branch.identifier} (latest snapshot {latest})",
             {"branch": name, "table": branch.identifier, "latest_snapshot": latest})


@command("delete-branch")
def delete_branch(identifier: Identifier, warehouse: Warehouse, name: Name) -> None:
    """Delete a branch (files only it wrote become orphans for remove-orphan-files)."""
    catalog_of(warehouse).get_table(identifier).branches.delete(name)
    out.done(f"deleted branch {name!r}", {"branch": name, "deleted": True})


@command("rename-branch")
def rename_branch(identifier: Identifier, warehouse: Warehouse, old: OldName, new: NewName) -> None:
    """Rename a branch."""
    catalog_of(warehouse).get_table(identifier).branches.rename(old, new)
    out.done(f"renamed branch {old!r} to {new!r}", {"old": old, "new": new})


@command("fast-forward")
def fast_forward(identifier: Identifier, warehouse: Warehouse,
                 branch: Annotated[str, typer.Argument(help="The branch whose history the table takes")]) -> None:
    """Make the main branch equal to BRANCH (main's later snapshots and tags are replaced)."""
    table = catalog_of(warehouse).get_table(identifier)
    with _busy(f"fast-forwarding main to {branch!r}"):
        done = table.branches.fast_forward(branch)
    out.result({"branch": done.branch, "from_snapshot": done.from_snapshot,
                "removed_snapshots": list(done.removed_snapshots), "copied_snapshots": list(done.copied_snapshots),
                "removed_tags": list(done.removed_tags), "copied_tags": list(done.copied_tags)}, title="fast-forward")


@command("remove-orphan-files")
def remove_orphan_files_(identifier: Identifier, warehouse: Warehouse,
                         older_than: Annotated[str, typer.Option(help="Only files older than this")] = "1 d",
                         min_older_than: Annotated[str, typer.Option(help="Refuse a shorter --older-than (the longest a writer keeps files uncommitted, plus clock skew)")] = "1 h",
                         dry_run: DryRun = False) -> None:
    """Delete files no snapshot or tag references (dry run first!)."""
    table = catalog_of(warehouse).get_table(identifier)
    older, minimum = duration_millis(older_than, "--older-than"), duration_millis(min_older_than, "--min-older-than")
    if older is None or minimum is None:
        raise InvalidArgumentError("--older-than and --min-older-than must not be empty")
    with _busy("collecting referenced files and listing the table"):
        plan = table.remove_orphan_files(older_than_millis=older, min_older_than_millis=minimum, dry_run=dry_run)
    if plan.orphans and not out.json:
        out.rows(pa.table({"orphan": list(plan.orphans)}), title="orphan files", limit=20)
    out.result(plan.to_dict())


@command("expire-partitions")
def expire_partitions_(identifier: Identifier, warehouse: Warehouse,
                       expiration: Annotated[str | None, typer.Option(help="Default partition.expiration-time")] = None,
                       dry_run: DryRun = False) -> None:
    """Drop partitions older than the expiration time (by their values, or update time)."""
    table = catalog_of(warehouse).get_table(identifier)
    result = table.expire_partitions(expiration_millis=duration_millis(expiration, "--expiration"), dry_run=dry_run)
    out.result(result.to_dict())


@command("analyze")
def analyze_(identifier: Identifier, warehouse: Warehouse,
             column: Annotated[list[str] | None, typer.Option(help="Only these columns; repeatable")] = None) -> None:
    """Compute table statistics and commit them as an ANALYZE snapshot."""
    from ..maintenance.statistics import read_statistics

    table = catalog_of(warehouse).get_table(identifier)
    table.analyze(column)
    statistics = read_statistics(table.refresh())
    if statistics is None:  # an empty table: nothing to analyze
        raise SnapshotNotFoundError(f"{identifier} has no snapshot to analyze")
    out.result(snake_keys(statistics))  # (Paimon's statistics file spells them in camelCase)


@command("consumers")
def consumers_(identifier: Identifier, warehouse: Warehouse,
               reset: Annotated[str | None, typer.Option(help="id=next_snapshot, or id= to delete")] = None) -> None:
    """List consumers (their next snapshot), or reset one."""
    manager = catalog_of(warehouse).get_table(identifier).consumer_manager
    if reset:
        cid, sep, value = reset.partition("=")
        if not sep or not cid or not (value.isdigit() or value == ""):
            raise InvalidArgumentError(f"--reset {reset!r} must be id=<next snapshot id>, or id= to delete")
        manager.reset(cid, int(value) if value else None)
    found = manager.list()
    out.rows([{"consumer": name, "next_snapshot": c.next_snapshot} for name, c in found.items()],
             title=f"{identifier} consumers", columns=["consumer", "next_snapshot"])


def main() -> None:
    app()


if __name__ == "__main__":
    main()
