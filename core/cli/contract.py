"""The error contract of paimonflow's command lines (``paimonflow`` and the Spark jobs' CLI).

Every failure a user can cause is one line on stderr and exit code 2: ``error: <Kind>: <what and
what to do>``, or with ``--json`` one JSON object ``{"error": <Kind>, "message": ...}``. That covers
paimonflow's typed errors (:class:`~paimonflow.core.errors.PaimonflowError`), the operating
system's refusals (a missing file, a permission) and the command line's own usage errors (a
missing option, a value that is not a number). Anything else is a bug: one line naming it and
exit code 1, with the traceback only under ``--debug``. SIGINT and SIGTERM stop a command: the
write in progress deletes what it created, one line says what was committed (``interrupted:
...``), exit code 130 or 143 (:mod:`paimonflow.core.cli.interrupts`).

Global options (``--json``, ``--debug``, ``--verbose`` and ``-S/--storage-option``) may be given
before or after the verb: :func:`hoist` moves them before it.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Sequence
from typing import Any, ClassVar, overload

import typer
from typer.core import TyperGroup

from ..errors import Interrupted, InvalidArgumentError, PaimonflowError
from .interrupts import describe, signals_interrupt

USER_ERROR = 2
BUG = 1
INTERRUPTED = 130

#: OS errors a user causes (a path that is wrong, a file they cannot read), by what they mean
_OS_ERRORS: dict[type[OSError], str] = {FileNotFoundError: "no such file or directory",
                                        IsADirectoryError: "is a directory",
                                        NotADirectoryError: "not a directory",
                                        PermissionError: "permission denied"}


def _click_errors(name: str) -> tuple[type[BaseException], ...]:
    """Click's exception class ``name``: Typer's bundled copy of Click, and Click itself when
    installed (Typer has raised either, depending on its version)."""
    found = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)


USAGE_ERRORS = _click_errors("UsageError")
CLICK_ERRORS = _click_errors("ClickException")
ABORTS = _click_errors("Abort")


def hoist(args: Sequence[str], flags: Sequence[str], valued: Sequence[str]) -> list[str]:
    """``args`` with the global ``flags`` and ``valued`` options (each with its value) moved in
    front of the verb, in their order; nothing after ``--`` moves."""
    front: list[str] = []
    rest: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        if arg == "--":
            rest.extend(items[i:])
            break
        if arg in flags:
            front.append(arg)
        elif arg in valued and i + 1 < len(items):
            front += [arg, items[i + 1]]
            i += 1
        elif arg.startswith("--") and arg.split("=", 1)[0] in valued:
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest


def pairs(items: list[str] | None, what: str) -> dict[str, str]:
    """``["k=v", ...]`` as a dict; an item without ``=`` is one :class:`InvalidArgumentError`."""
    found: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f"{what} {item!r} must be key=value")
        found[key.strip()] = value
    return found


@overload
def duration_millis(text: str, option: str) -> int: ...
@overload
def duration_millis(text: str | None, option: str) -> int | None: ...


def duration_millis(text: str | None, option: str) -> int | None:
    """A duration option (``'1 h'``, ``'7 d'``, a bare number of milliseconds) in milliseconds;
    None if not given; anything else one :class:`InvalidArgumentError` naming ``option``."""
    from ..options.parse import parse_duration_millis

    if not text:
        return None
    try:
        return parse_duration_millis(text)
    except ValueError as exc:
        raise InvalidArgumentError(f"{option} {text!r}: {exc}") from None


def one_line(text: str) -> str:
    """``text`` on one line (a message with line breaks joined with ``; ``)."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


#: the Python API's parameter names in the core's messages, as the command lines' flags say them
_FLAGS = {"retain_min": "--retain-min", "retain_max": "--retain-max", "max_deletes": "--max-deletes",
          "older_than_millis": "--older-than", "min_older_than_millis": "the safety floor"}
_PARAMETER = re.compile(r"\b(" + "|".join(sorted(_FLAGS, key=len, reverse=True)) + r")\b( \((-?\d+)\))?")
_MILLIS = re.compile(r"\((\d+) ms\)")
_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000), ("ms", 1))


def duration_text(millis: int) -> str:
    """``3600000`` -> ``1 h``: the largest unit that holds it exactly (as durations are written)."""
    for unit, size in _UNITS:
        if millis and millis % size == 0:
            return f"{millis // size} {unit}"
    return f"{millis} ms"


def in_flag_terms(message: str) -> str:
    """A core message as the command line says it: parameters by their flags (``retain_max (1)``
    -> ``--retain-max (1)``) and milliseconds as durations (``older_than_millis (1000)`` ->
    ``--older-than (1 s)``, ``(3600000 ms)`` -> ``(1 h)``)."""
    def flag(found: re.Match) -> str:
        name, value = found.group(1), found.group(3)
        if value is None:
            return _FLAGS[name]
        shown = duration_text(int(value)) if name.endswith("_millis") and int(value) >= 0 else value
        return f"{_FLAGS[name]} ({shown})"

    return _MILLIS.sub(lambda m: f"({duration_text(int(m.group(1)))})", _PARAMETER.sub(flag, message))


def user_error(exc: BaseException) -> tuple[str, str] | None:
    """(kind, message) for a failure the user caused, or None for a bug."""
    if isinstance(exc, PaimonflowError):
        return type(exc).__name__, in_flag_terms(one_line(str(exc)))
    for kind, meaning in _OS_ERRORS.items():
        if isinstance(exc, kind):
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            return kind.__name__, f"{where}{meaning}"
    return None


def emit_error(kind: str, message: str, *, as_json: bool, **fields: Any) -> None:
    """The one error line on stderr: text, or a JSON object with ``as_json``."""
    if as_json:
        print(json.dumps({**fields, "error": kind, "message": message}), file=sys.stderr, flush=True)
    else:
        typer.secho("error: ", fg="red", err=True, nl=False)
        typer.echo(f"{kind}: {message}", err=True)


class _Stopped(BaseException):
    """An :class:`Interrupted` carried past Click, which turns a KeyboardInterrupt into a silent exit 130."""

    def __init__(self, stop: Interrupted) -> None:
        super().__init__(stop.signal_name)
        self.stop = stop


def emit_interrupted(stop: Interrupted, *, as_json: bool, **fields: Any) -> None:
    """The one line of an interrupted command on stderr."""
    if as_json:
        print(json.dumps({**fields, "error": "Interrupted", "message": describe(stop), "signal": stop.signal_name,
                          "files_removed": stop.files_removed, "committed_snapshot": stop.committed_snapshot}),
              file=sys.stderr, flush=True)
    else:
        print(f"interrupted: {describe(stop)}", file=sys.stderr, flush=True)


class ContractGroup(TyperGroup):
    """A Typer group that keeps the error contract: global options anywhere, usage errors and
    user errors as one line (exit 2), bugs as one line (exit 1) unless ``--debug``."""

    global_flags: ClassVar[tuple[str, ...]] = ("--json", "--debug")
    global_valued: ClassVar[tuple[str, ...]] = ()
    always_json: ClassVar[bool] = False  # the jobs' CLI prints every error as JSON
    program: ClassVar[str | None] = None  # the name usage errors point at (default: as invoked)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        argv = hoist(sys.argv[1:] if args is None else args, self.global_flags, self.global_valued)
        as_json, debug = self.always_json or "--json" in argv, "--debug" in argv
        try:
            code = super().main(argv or ["--help"], self.program or prog_name, complete_var, standalone_mode=False,
                                **extra)
        except _Stopped as stopped:
            emit_interrupted(stopped.stop, as_json=as_json)
            code = stopped.stop.exit_code
        except USAGE_ERRORS as exc:
            context = getattr(exc, "ctx", None)
            verb = context.command_path if context is not None else (prog_name or self.name)
            emit_error("UsageError", f"{one_line(exc.format_message())} (see '{verb} --help')",  # type: ignore[attr-defined]
                       as_json=as_json)
            code = USER_ERROR
        except CLICK_ERRORS as exc:
            emit_error(type(exc).__name__, one_line(exc.format_message()), as_json=as_json)  # type: ignore[attr-defined]
            code = exc.exit_code  # type: ignore[attr-defined]
        except ABORTS:
            code = INTERRUPTED
        except Exception as exc:
            found = user_error(exc)
            if found is not None:
                emit_error(*found, as_json=as_json)
                code = USER_ERROR
            elif debug:
                raise
            else:
                emit_error("InternalError", f"{type(exc).__name__}: {one_line(str(exc))} — this is a bug in "
                           "paimonflow; rerun with --debug for the traceback and report it", as_json=as_json)
                code = BUG
        if standalone_mode:
            sys.exit(code or 0)
        return code

    def invoke(self, ctx: Any) -> Any:
        """Run the command with SIGINT and SIGTERM raising :class:`Interrupted` (reported by :meth:`main`)."""
        try:
            with signals_interrupt():
                return super().invoke(ctx)
        except Interrupted as stop:
            raise _Stopped(stop) from None
