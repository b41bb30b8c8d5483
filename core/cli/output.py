"""How ``paimonflow`` prints: one JSON document with ``--json``; tab-separated text when stdout is
not a terminal (a pipe, a file: every value whole, nothing wrapped); Rich tables on a terminal."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import typer

NULL = "∅"


def _json_default(value: object) -> object:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return _iso(value)
    return str(value)  # decimals


def _iso(value: dt.datetime | dt.date | dt.time) -> str:
    """ISO 8601: an instant with its zone (``2026-11-28T15:42:09.928+00:00``), a wall-clock
    timestamp (a TIMESTAMP column, no zone) without one; milliseconds unless finer digits matter."""
    if isinstance(value, dt.datetime | dt.time):
        return value.isoformat(timespec="milliseconds" if value.microsecond % 1000 == 0 else "microseconds")
    return value.isoformat()


def text(value: object) -> str:
    """A value as people read it, never a Python repr: true/false, ISO times, ``k=v`` pairs, lists
    joined by commas, bytes in hex."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return _iso(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ",".join(text(v) for v in value)
    return str(value)


def _cell(value: object) -> str:
    """A value in a tab-separated line: null as empty, tabs and line breaks escaped."""
    return text(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


@dataclass
class Output:
    """The current invocation's output settings (``--json``), and the printers every verb uses."""

    json: bool = False

    @staticmethod
    def _terminal() -> bool:
        return typer.get_text_stream("stdout").isatty()

    def _console(self):
        from rich.console import Console

        return Console()

    def document(self, value: object) -> None:
        """One JSON document on stdout."""
        typer.echo(json.dumps(value, default=_json_default, indent=2 if self._terminal() else None))

    def rows(self, table: pa.Table | Sequence[Mapping[str, Any]], *, title: str | None = None,
             limit: int | None = None, columns: Sequence[str] | None = None, more: bool = False) -> None:
        """A table of rows: a JSON array of objects; TSV with a header line; or a Rich table.
        ``more``: rows beyond these exist, uncounted (a read that stopped at its limit)."""
        total = table.num_rows if isinstance(table, pa.Table) else len(table)
        if isinstance(table, pa.Table):  # only the rows shown become Python values
            columns = columns or table.column_names
            records = (table.slice(0, limit) if limit is not None else table).to_pylist()
        else:
            records = list(table)[:limit] if limit is not None else list(table)
            columns = columns or (list(records[0]) if records else [])
        if self.json:
            self.document(records)
            return
        if not self._terminal():
            typer.echo("\t".join(columns))
            for record in records:
                typer.echo("\t".join(_cell(record.get(c)) for c in columns))
            return
        from rich.table import Table as RichTable

        view = RichTable(title=title)
        for name in columns:
            view.add_column(name, overflow="fold")
        for record in records:
            view.add_row(*(NULL if record.get(c) is None else text(record.get(c)) for c in columns))
        console = self._console()
        console.print(view)
        if total > len(records):
            console.print(f"[dim]… {total - len(records)} more rows (--limit)[/dim]")
        elif more:
            console.print("[dim]… more rows (--limit 0 shows all)[/dim]")

    def result(self, result: Mapping[str, Any], *, title: str | None = None) -> None:
        """A result or plan: a JSON object; ``key<TAB>value`` lines; or a two-column Rich table."""
        if self.json:
            self.document(dict(result))
            return
        if not self._terminal():
            for key, value in result.items():
                typer.echo(f"{key}\t{_cell(value)}")
            return
        from rich.table import Table as RichTable

        view = RichTable(title=title, show_header=False)
        view.add_column("", style="bold")
        view.add_column("", overflow="fold")
        for key, value in result.items():
            if isinstance(value, list | tuple):
                shown = ", ".join(text(v) for v in value[:12]) + (f" … ({len(value)} in all)" if len(value) > 12 else "")
                value = shown or "—"
            view.add_row(key.replace("_", " "), NULL if value is None else text(value))
        self._console().print(view)

    def done(self, sentence: str, result: Mapping[str, Any]) -> None:
        """What a verb did: ``sentence`` for people, ``result`` as the JSON document."""
        if self.json:
            self.document(dict(result))
        else:
            typer.echo(sentence)

    def lines(self, key: str, names: Sequence[str]) -> None:
        """A list of names: one per line, or ``{key: [...]}``."""
        if self.json:
            self.document({key: list(names)})
        else:
            for name in names:
                typer.echo(name)
