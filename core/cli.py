"""``paimonflow``: create, describe, write and read Paimon tables from a shell."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Annotated

import pyarrow as pa
import typer
from rich.console import Console
from rich.table import Table as RichTable

from .catalog import Catalog
from .errors import PaimonflowError, SnapshotNotFoundError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Inspect and change Apache Paimon tables (filesystem catalog).")
console = Console()
err_console = Console(stderr=True)


def command(name: str | None = None):
    """Register a command whose paimonflow errors become one red line and exit code 2."""

    def decorate(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except PaimonflowError as exc:
                err_console.print(f"[red]error:[/red] {type(exc).__name__}: {exc}")
                raise typer.Exit(2) from None

        return app.command(name)(run)

    return decorate

Warehouse = Annotated[str, typer.Option("--warehouse", "-w", envvar="PAIMONFLOW_WAREHOUSE",
                                        help="Warehouse path or URI (file:// or s3://).")]
Identifier = Annotated[str, typer.Argument(help="<database>.<table>")]


def _catalog(warehouse: str) -> Catalog:
    return Catalog(warehouse)


def _show(table: pa.Table, title: str | None = None, limit: int | None = None) -> None:
    view = RichTable(title=title, show_lines=False)
    for name in table.column_names:
        view.add_column(name, overflow="fold")
    rows = table.slice(0, limit) if limit is not None else table
    for row in rows.to_pylist():
        view.add_row(*("∅" if v is None else str(v) for v in row.values()))
    console.print(view)
    if limit is not None and table.num_rows > limit:
        console.print(f"[dim]… {table.num_rows - limit} more rows[/dim]")


_OUTPUT = {"json": False}


@app.callback()
def _options(json_output: Annotated[bool, typer.Option("--json", help="Print results as JSON (for scripts)")]
             = False) -> None:
    """Inspect and change Apache Paimon tables (filesystem catalog)."""
    _OUTPUT["json"] = json_output


def _report(result: dict, title: str | None = None) -> None:
    """A result or plan: a readable two-column table, or JSON with ``--json``."""
    if _OUTPUT["json"]:
        console.print_json(json.dumps(result, default=str))
        return
    view = RichTable(title=title, show_header=False)
    view.add_column("", style="bold")
    view.add_column("", overflow="fold")
    for key, value in result.items():
        if isinstance(value, list | tuple):
            shown = ", ".join(str(v) for v in value[:12]) + (f" … ({len(value)} in all)" if len(value) > 12 else "")
            value = shown or "—"
        view.add_row(key.replace("_", " "), "∅" if value is None else str(value))
    console.print(view)


def _busy(text: str):
    """A spinner on stderr while a long step runs (stdout stays clean for the result)."""
    return err_console.status(text, spinner="dots")


def _parse_type(text: str) -> pa.DataType:
    from .meta.schema import to_arrow_type_from_text

    return to_arrow_type_from_text(text)


@command("create-database")
def create_database(name: str, warehouse: Warehouse, ignore_if_exists: bool = False) -> None:
    """Create a database."""
    _catalog(warehouse).create_database(name, ignore_if_exists=ignore_if_exists)
    console.print(f"created database [bold]{name}[/bold]")


@command("list")
def list_(warehouse: Warehouse, database: Annotated[str | None, typer.Argument()] = None) -> None:
    """List databases, or the tables of one database."""
    catalog = _catalog(warehouse)
    for name in catalog.list_tables(database) if database else catalog.list_databases():
        console.print(name)


@command("create-table")
def create_table(
    identifier: Identifier,
    warehouse: Warehouse,
    column: Annotated[list[str], typer.Option("--column", "-c", help="name:TYPE, e.g. id:BIGINT, dt:STRING")],
    primary_key: Annotated[list[str] | None, typer.Option("--primary-key", "-k")] = None,
    partition_key: Annotated[list[str] | None, typer.Option("--partition-key", "-p")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="key=value")] = None,
) -> None:
    """Create a table from column specs."""
    fields = []
    for spec in column:
        name, sep, type_text = spec.partition(":")
        if not sep:
            raise typer.BadParameter(f"column {spec!r} must be name:TYPE")
        fields.append(pa.field(name, _parse_type(type_text)))
    options = dict(o.split("=", 1) for o in option or [])
    table = _catalog(warehouse).create_table(identifier, pa.schema(fields), primary_keys=primary_key or [],
                                             partition_keys=partition_key or [], options=options)
    console.print(f"created table [bold]{table.identifier}[/bold] at {table.path}")


@command()
def describe(identifier: Identifier, warehouse: Warehouse) -> None:
    """Schema, keys, options and the latest snapshot of a table."""
    table = _catalog(warehouse).get_table(identifier)
    view = RichTable(title=f"{identifier} (schema {table.schema.id})")
    view.add_column("id")
    view.add_column("column")
    view.add_column("type")
    for f in table.schema.fields:
        from .meta.schema import type_to_json_value

        view.add_row(str(f.id), f.name, json.dumps(type_to_json_value(f.type)).strip('"'))
    console.print(view)
    console.print(f"primary keys: {list(table.primary_keys) or '—'}   partition keys: {list(table.partition_keys) or '—'}")
    console.print(f"options: {dict(table.schema.options)}")
    latest = table.latest_snapshot()
    console.print("latest snapshot: " + (f"{latest.id} ({latest.commit_kind.value}, {latest.total_record_count} records)"
                                         if latest else "none"))


@command()
def snapshots(identifier: Identifier, warehouse: Warehouse) -> None:
    """The table's snapshots."""
    table = _catalog(warehouse).get_table(identifier)
    _show(table.system_table("snapshots").select(
        ["snapshot_id", "schema_id", "commit_kind", "commit_time", "total_record_count", "delta_record_count",
         "commit_user"]), title=f"{identifier}$snapshots")


@command()
def files(identifier: Identifier, warehouse: Warehouse) -> None:
    """Live data files of the latest snapshot."""
    table = _catalog(warehouse).get_table(identifier)
    _show(table.system_table("files").select(
        ["partition", "bucket", "level", "record_count", "file_size_in_bytes", "file_path"]),
        title=f"{identifier}$files")


@command()
def read(
    identifier: Identifier,
    warehouse: Warehouse,
    limit: int = 20,
    snapshot: Annotated[int | None, typer.Option(help="Time travel to a snapshot id.")] = None,
    tag: Annotated[str | None, typer.Option(help="Time travel to a tag.")] = None,
    output: Annotated[Path | None, typer.Option(help="Write all rows to a .parquet or .csv file instead.")] = None,
) -> None:
    """Print rows (or save them to a file)."""
    table = _catalog(warehouse).get_table(identifier)
    rows = table.read(snapshot_id=snapshot, tag=tag)
    if output is not None:
        _save(rows, output)
        console.print(f"wrote {rows.num_rows} rows to {output}")
    else:
        _show(rows, title=identifier, limit=limit)


def _save(rows: pa.Table, path: Path) -> None:
    if path.suffix == ".csv":
        import pyarrow.csv as csv

        csv.write_csv(rows, path)
    else:
        import pyarrow.parquet as pq

        pq.write_table(rows, path)


@command()
def write(
    identifier: Identifier,
    warehouse: Warehouse,
    paths: Annotated[list[Path], typer.Argument(help="Parquet or CSV files")],
    overwrite: bool = False,
) -> None:
    """Write Parquet/CSV files into a table as one commit."""
    table = _catalog(warehouse).get_table(identifier)
    parts = []
    for path in paths:
        if path.suffix == ".csv":
            import pyarrow.csv as csv

            convert = csv.ConvertOptions(column_types=table.arrow_schema)
            parts.append(csv.read_csv(path, convert_options=convert))
        else:
            import pyarrow.parquet as pq

            parts.append(pq.read_table(path))
    data = pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]
    result = table.write(data, overwrite=overwrite)
    _report(result.to_dict())


@command("watch")
def watch_(identifier: Identifier, warehouse: Warehouse, cursor: Annotated[str | None, typer.Option(
        help="The next_observation JSON printed by the previous run.")] = None) -> None:
    """Snapshots committed since a cursor (as JSON; its next_observation is the next cursor)."""
    from .read.watch import Observation, watch

    last = Observation.from_cursor(cursor) if cursor else None
    result = watch(_catalog(warehouse).get_table(identifier).snapshot_manager, last)
    console.print_json(json.dumps(result.to_dict()))  # always JSON: the output is the next cursor


@command("compact")
def compact_(identifier: Identifier, warehouse: Warehouse, full: bool = True,
             partition: Annotated[list[str] | None, typer.Option(help="k=v[,k2=v2]; repeat for several")] = None,
             bucket: Annotated[list[int] | None, typer.Option(help="Only these buckets; repeatable")] = None) -> None:
    """Dedicated compaction (full, or --no-full for Paimon's universal compaction)."""
    specs = [dict(kv.split("=", 1) for kv in p.split(",")) for p in partition] if partition else None
    with _busy(f"compacting {identifier}"):
        result = _catalog(warehouse).get_table(identifier).compact(full=full, partitions=specs, buckets=bucket)
    _report(result.to_dict())


@command("expire-snapshots")
def expire_snapshots_(identifier: Identifier, warehouse: Warehouse,
                      retain_min: int | None = None, retain_max: int | None = None,
                      older_than: Annotated[str | None, typer.Option(help="e.g. '1 h'; default snapshot.time-retained")]
                      = None, max_deletes: int | None = None, dry_run: bool = False) -> None:
    """Expire old snapshots by the table's options (overridable); --dry-run shows the plan."""
    from rich.progress import Progress

    from .options.parse import parse_duration_millis

    table = _catalog(warehouse).get_table(identifier)
    with Progress(console=err_console, transient=True) as bar:
        task = bar.add_task("deleting files", total=None)
        result = table.expire_snapshots(
            retain_min=retain_min, retain_max=retain_max, max_deletes=max_deletes, dry_run=dry_run,
            older_than_millis=parse_duration_millis(older_than) if older_than else None,
            progress=lambda done, total: bar.update(task, completed=done, total=total))
    _report(result.to_dict())


@command("expire-changelogs")
def expire_changelogs_(identifier: Identifier, warehouse: Warehouse,
                       retain_min: int | None = None, retain_max: int | None = None,
                       older_than: Annotated[str | None, typer.Option(help="e.g. '7 d'; default changelog.time-retained")]
                       = None, max_deletes: int | None = None, delete_all: bool = False,
                       dry_run: bool = False) -> None:
    """Expire long-lived changelogs by the table's changelog.* options (overridable)."""
    from .options.parse import parse_duration_millis

    table = _catalog(warehouse).get_table(identifier)
    with _busy(f"expiring changelogs of {identifier}"):
        result = table.expire_changelogs(retain_min=retain_min, retain_max=retain_max, max_deletes=max_deletes,
                                         older_than_millis=parse_duration_millis(older_than) if older_than else None,
                                         delete_all=delete_all, dry_run=dry_run)
    _report(result.to_dict(), title="changelog expiry")


@command("tags")
def tags_(identifier: Identifier, warehouse: Warehouse) -> None:
    """List tags."""
    _show(_catalog(warehouse).get_table(identifier).system_table("tags"), title=f"{identifier}$tags")


@command("create-tag")
def create_tag(identifier: Identifier, warehouse: Warehouse, name: str,
               snapshot: Annotated[int | None, typer.Option(help="Default: the latest snapshot")] = None,
               time_retained: Annotated[str | None, typer.Option(help="Time-to-live, e.g. '7 d'")] = None) -> None:
    """Tag a snapshot."""
    tag = _catalog(warehouse).get_table(identifier).tags.create(name, snapshot_id=snapshot,
                                                                time_retained=time_retained)
    console.print(f"tag {name!r} → snapshot {tag.id}")


@command("delete-tag")
def delete_tag(identifier: Identifier, warehouse: Warehouse, name: str, dry_run: bool = False) -> None:
    """Delete a tag (and the files of its expired snapshot that nothing else needs)."""
    with _busy(f"deleting tag {name!r}"):
        done = _catalog(warehouse).get_table(identifier).tags.delete(name, dry_run=dry_run)
    console.print(f"{'would delete' if dry_run else 'deleted'} tag {name!r}; {len(done.freed_files)} file(s) freed")


@command("rename-tag")
def rename_tag(identifier: Identifier, warehouse: Warehouse, old: str, new: str) -> None:
    """Rename a tag."""
    _catalog(warehouse).get_table(identifier).tags.rename(old, new)
    console.print(f"renamed tag {old!r} to {new!r}")


@command("expire-tags")
def expire_tags(identifier: Identifier, warehouse: Warehouse, older_than: Annotated[str | None, typer.Option(
        help="Also tags without a TTL older than this, e.g. '30 d'")] = None, dry_run: bool = False) -> None:
    """Delete tags whose time-to-live ran out."""
    from .options.parse import parse_duration_millis

    names = _catalog(warehouse).get_table(identifier).tags.expire(
        older_than_millis=parse_duration_millis(older_than) if older_than else None, dry_run=dry_run)
    _report({"expired": names, "dry_run": dry_run})


@command("auto-tag")
def auto_tag(identifier: Identifier, warehouse: Warehouse) -> None:
    """Create the automatic tags due now (tag.automatic-creation) and trim by tag.num-retained-max."""
    with _busy("creating automatic tags"):
        result = _catalog(warehouse).get_table(identifier).run_auto_tag()
    if _OUTPUT["json"]:
        console.print_json(json.dumps(result.to_dict()))
        return
    view = RichTable(title=f"{identifier}: automatic tags")
    for column in ("action", "tag", "snapshot"):
        view.add_column(column)
    for name, snapshot_id in result.created:
        view.add_row("created", name, str(snapshot_id))
    for name, snapshot_id in result.deleted:
        view.add_row("deleted", name, str(snapshot_id))
    console.print(view)
    console.print(f"{len(result.created)} created, {len(result.deleted)} deleted, "
                  f"{result.freed_files} file(s) freed")


@command("rollback")
def rollback_(identifier: Identifier, warehouse: Warehouse,
              snapshot: Annotated[int | None, typer.Option()] = None,
              tag: Annotated[str | None, typer.Option()] = None,
              timestamp_millis: Annotated[int | None, typer.Option()] = None) -> None:
    """Roll back to a snapshot, a tag or a time (later snapshots and tags are removed)."""
    with _busy(f"rolling back {identifier}"):
        done = _catalog(warehouse).get_table(identifier).rollback(snapshot_id=snapshot, tag=tag,
                                                                  timestamp_millis=timestamp_millis)
    _report({"target": done.target, "removed_snapshots": list(done.removed_snapshots),
             "removed_tags": list(done.removed_tags), "deleted_files": done.deleted_files}, title="rollback")


@command("branches")
def branches_(identifier: Identifier, warehouse: Warehouse) -> None:
    """List branches (open one as <database>.<table>$branch_<name> in every other verb)."""
    _show(_catalog(warehouse).get_table(identifier).system_table("branches"), title=f"{identifier}$branches")


@command("create-branch")
def create_branch(identifier: Identifier, warehouse: Warehouse, name: str,
                  tag: Annotated[str | None, typer.Option(help="Start from this tag; default: empty")] = None,
                  ignore_if_exists: bool = False) -> None:
    """Create a branch, empty (main's schema) or from a tag."""
    branch = _catalog(warehouse).get_table(identifier).branches.create(name, tag=tag,
                                                                       ignore_if_exists=ignore_if_exists)
    console.print(f"branch {name!r} → {branch.identifier} (latest snapshot {branch.snapshot_manager.latest_id()})")


@command("delete-branch")
def delete_branch(identifier: Identifier, warehouse: Warehouse, name: str) -> None:
    """Delete a branch (files only it wrote become orphans for remove-orphan-files)."""
    _catalog(warehouse).get_table(identifier).branches.delete(name)
    console.print(f"deleted branch {name!r}")


@command("rename-branch")
def rename_branch(identifier: Identifier, warehouse: Warehouse, old: str, new: str) -> None:
    """Rename a branch."""
    _catalog(warehouse).get_table(identifier).branches.rename(old, new)
    console.print(f"renamed branch {old!r} to {new!r}")


@command("fast-forward")
def fast_forward(identifier: Identifier, warehouse: Warehouse, branch: str) -> None:
    """Make the main branch equal to BRANCH (main's later snapshots and tags are replaced)."""
    with _busy(f"fast-forwarding main to {branch!r}"):
        done = _catalog(warehouse).get_table(identifier).branches.fast_forward(branch)
    _report({"branch": done.branch, "from_snapshot": done.from_snapshot,
             "removed_snapshots": list(done.removed_snapshots), "copied_snapshots": list(done.copied_snapshots),
             "removed_tags": list(done.removed_tags), "copied_tags": list(done.copied_tags)}, title="fast-forward")


@command("remove-orphan-files")
def remove_orphan_files_(identifier: Identifier, warehouse: Warehouse,
                         older_than: Annotated[str, typer.Option(help="Only files older than this")] = "1 d",
                         min_older_than: Annotated[str, typer.Option(help="Refuse a shorter --older-than (the longest a writer keeps files uncommitted, plus clock skew)")] = "1 h",
                         dry_run: bool = False) -> None:
    """Delete files no snapshot or tag references (dry run first!)."""
    from .options.parse import parse_duration_millis

    with _busy("collecting referenced files and listing the table"):
        plan = _catalog(warehouse).get_table(identifier).remove_orphan_files(
            older_than_millis=parse_duration_millis(older_than),
            min_older_than_millis=parse_duration_millis(min_older_than), dry_run=dry_run)
    if plan.orphans:
        _show(pa.table({"orphan": list(plan.orphans)}), title="orphan files", limit=20)
    _report(plan.to_dict())


@command("expire-partitions")
def expire_partitions_(identifier: Identifier, warehouse: Warehouse,
                       expiration: Annotated[str | None, typer.Option(help="Default partition.expiration-time")] = None,
                       dry_run: bool = False) -> None:
    """Drop partitions older than the expiration time (by their values, or update time)."""
    from .options.parse import parse_duration_millis

    result = _catalog(warehouse).get_table(identifier).expire_partitions(
        expiration_millis=parse_duration_millis(expiration) if expiration else None, dry_run=dry_run)
    _report(result.to_dict())


@command("analyze")
def analyze_(identifier: Identifier, warehouse: Warehouse,
             column: Annotated[list[str] | None, typer.Option(help="Only these columns; repeatable")] = None) -> None:
    """Compute table statistics and commit them as an ANALYZE snapshot."""
    from .maintenance.statistics import read_statistics

    table = _catalog(warehouse).get_table(identifier)
    table.analyze(column)
    statistics = read_statistics(table.refresh())
    if statistics is None:  # an empty table: nothing to analyze
        raise SnapshotNotFoundError(f"{identifier} has no snapshot to analyze")
    _report(statistics)


@command("consumers")
def consumers_(identifier: Identifier, warehouse: Warehouse,
               reset: Annotated[str | None, typer.Option(help="id=next_snapshot, or id= to delete")] = None) -> None:
    """List consumers (their next snapshot), or reset one."""
    manager = _catalog(warehouse).get_table(identifier).consumer_manager
    if reset:
        cid, _, value = reset.partition("=")
        manager.reset(cid, int(value) if value else None)
    found = manager.list()
    _show(pa.table({"consumer": list(found), "next_snapshot": [c.next_snapshot for c in found.values()]}),
          title=f"{identifier} consumers")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
