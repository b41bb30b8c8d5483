"""The feature frontier as a test peer: pypaimon 2.1.0 writes one table per Paimon 2.x feature it
can write (``frontier_driver.py`` has the recipes), every paimonflow operation runs on a fresh
copy of each, and pypaimon must afterwards read what Paimon's rules say, or paimonflow must have
refused in one typed line and changed no file.

One cell per (feature, operation), each with one outcome:

* ``supported``: the operation ran; pypaimon then reads the latest snapshot with the rows (and
  ``_ROW_ID``s, on row-tracking tables) the operation leaves, and tag ``t1`` as before;
* ``refused``: :class:`~paimonflow.core.errors.UnsupportedFeatureError`, one line naming a
  feature of the capability gate and the cell's kind of operation (or "any operation": a table
  that cannot even be opened), and not one file of the table (nor of its external data folders)
  created, changed or deleted; through the CLI, one ``error: UnsupportedFeatureError: ...`` line on
  stderr, exit code 2, no traceback; through a Spark job, one JSON line on stderr naming
  ``UnsupportedFeatureError``, exit code 2, nothing on stdout; through the Spark data source,
  Spark's exception carrying the same one line;
* ``FAILED: <why>``: anything else (wrong rows, an untyped exception, files changed by a refusal
  or a read, a table pypaimon can no longer read).

pypaimon runs three times in all (start-up costs ~1 s; :class:`FrontierOracle` batches its
ops): to write every table, to read each one's baseline, and to check every table once the
operations ran. The CLI cells run as subprocesses in parallel with the in-process cells; the
Spark cells run after the in-process ones, one at a time on the caller's thread, on the
SparkSession given to :func:`run_frontier` (the active one of that thread).
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from paimonflow.core import Catalog, Table
from paimonflow.core.errors import UnsupportedFeatureError
from paimonflow.core.meta.capabilities import Feature as GatedFeature
from paimonflow.core.meta.capabilities import Operation as Gate

from .dataset import canonical
from .oracle import DRIVER, Oracle, PypaimonError, oracle_python

ROW_ID = "_ROW_ID"
TAG = "t1"
NEW_TAG = "pf1"
DATABASE = "db"
SUPPORTED, REFUSED = "supported", "refused"
ANY_OPERATION = "any operation"  # what a refusal to open the table at all names (Catalog.get_table)


@dataclass(frozen=True, slots=True)
class Feature:
    """A table kind of the frontier; ``external``: its data files live in folders outside the
    table, which a copy of the table directory would still point at, so pypaimon writes one such
    table per operation instead of one to copy."""

    name: str
    external: bool = False


FEATURES: tuple[Feature, ...] = (
    Feature("pk_deduplicate"), Feature("pk_deduplicate_partitioned"), Feature("pk_partial_update"),
    Feature("pk_aggregation"), Feature("pk_first_row"), Feature("pk_sequence_field"),
    Feature("pk_deletion_vectors"), Feature("pk_deletion_vectors_partitioned"),
    Feature("pk_changelog_input"), Feature("pk_changelog_lookup"), Feature("pk_changelog_full_compaction"),
    Feature("pk_orc"), Feature("pk_avro"), Feature("append_orc"), Feature("append_avro"),
    Feature("pk_dynamic_bucket"), Feature("pk_postpone_bucket"), Feature("append_fixed_bucket"),
    Feature("append_unaware_bucket"),
    Feature("pk_external_paths", external=True), Feature("append_external_paths", external=True),
    Feature("pk_path_directory"), Feature("append_path_directory"),
    Feature("pk_file_index"), Feature("append_file_index"),
    Feature("append_row_tracking"), Feature("append_row_tracking_partitioned"),
    Feature("append_data_evolution"), Feature("append_data_evolution_dv"),
    Feature("append_global_index"), Feature("append_blob"), Feature("pk_variant"),
)


# -- the tables ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FrontierTable:
    """One frontier table on disk and what pypaimon read from it right after writing it.

    ``latest`` and ``tagged`` (tag ``t1``) include ``_ROW_ID`` when ``row_tracking``; both read
    level-0 files too (see ``frontier_driver.read_rows``): the table's content, which operations
    other than writes and rollbacks keep. ``batch`` and ``tagged_batch`` are what a batch reader
    sees by Paimon's rules: first-row and deletion-vector primary-key tables show only files
    above level 0 (the same rows as ``latest`` and ``tagged`` for every other kind). ``fresh`` holds rows with keys the table does not have, for writes;
    ``postponed`` the rows only the postpone bucket holds.
    """

    feature: str
    warehouse: Path
    identifier: str
    path: Path
    external_dirs: tuple[Path, ...]
    row_tracking: bool
    skips_level0: bool
    latest: pa.Table
    tagged: pa.Table
    batch: pa.Table
    tagged_batch: pa.Table
    fresh: pa.Table
    postponed: pa.Table | None

    def roots(self) -> tuple[Path, ...]:
        """Every folder holding files of this table."""
        return (self.path, *self.external_dirs)

    def copy_to(self, warehouse: Path) -> FrontierTable:
        """This table copied into ``warehouse`` (same identifier, same baseline); only for
        tables without external folders."""
        assert not self.external_dirs, "a copy would share the external data folders"
        target = warehouse / f"{DATABASE}.db" / self.path.name
        shutil.copytree(self.path, target)
        return FrontierTable(feature=self.feature, warehouse=warehouse, identifier=self.identifier, path=target,
                             external_dirs=(), row_tracking=self.row_tracking, skips_level0=self.skips_level0,
                             latest=self.latest, tagged=self.tagged, batch=self.batch,
                             tagged_batch=self.tagged_batch, fresh=self.fresh, postponed=self.postponed)


@dataclass(frozen=True, slots=True)
class OracleOutcome:
    """One pypaimon op's answer: its value (a read's rows) or its error, one line."""

    value: Any = None
    error: str | None = None


class FrontierOracle(Oracle):
    """pypaimon with the frontier ops; :meth:`run_each` reports each op's outcome instead of
    stopping at the first error (a table paimonflow broke is one failed cell, not a failed run)."""

    def make_frontier_table(self, warehouse: Path, identifier: str, feature: str, *, external_root: Path,
                            out_dir: Path) -> int:
        self._ops.append({"op": "make_frontier_table", "warehouse": str(warehouse), "identifier": identifier,
                          "feature": feature, "external_root": str(external_root), "out_dir": str(out_dir)})
        return len(self._ops) - 1

    def read_rows(self, warehouse: Path, identifier: str, *, tag: str | None = None, with_row_id: bool = False,
                  all_levels: bool = True) -> int:
        self._n += 1
        out = self._dir / f"out-{self._n}.arrow"
        self._ops.append({"op": "read_rows", "warehouse": str(warehouse), "identifier": identifier, "tag": tag,
                          "with_row_id": with_row_id, "all_levels": all_levels, "out_ipc": str(out)})
        return len(self._ops) - 1

    def missing_files(self, warehouse: Path, identifier: str, *, tags: Sequence[str]) -> int:
        self._ops.append({"op": "missing_files", "warehouse": str(warehouse), "identifier": identifier,
                          "tags": list(tags)})
        return len(self._ops) - 1

    def run_each(self) -> list[OracleOutcome]:
        """Run the queued ops in one pypaimon process; one outcome per op, in order (a read's
        value is its rows as a pyarrow Table, other ops' their JSON answer)."""
        ops, self._ops, self._reads = self._ops, [], []
        proc = subprocess.run([oracle_python(), str(DRIVER)], input=json.dumps({"ops": ops, "stop_on_error": False}),
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if proc.returncode != 0:
            raise PypaimonError(f"pypaimon driver failed:\n{proc.stderr[-4000:]}")
        results = json.loads(proc.stdout)["results"]
        if len(results) != len(ops):
            raise PypaimonError("pypaimon driver stopped early")
        outcomes = []
        for op, result in zip(ops, results, strict=True):
            if not result["ok"]:
                outcomes.append(OracleOutcome(error=one_line(f"{result['error_type']}: {result['message']}")))
            elif op["op"] == "read_rows":
                outcomes.append(OracleOutcome(value=_read_ipc(op["out_ipc"])))
            else:
                outcomes.append(OracleOutcome(value=result))
        return outcomes


def _read_ipc(path: str) -> pa.Table:
    with pa.OSFile(path, "rb") as f:
        return pa.ipc.open_file(f).read_all()


def build_tables(workdir: Path, features: Sequence[Feature],
                 cells: Sequence[str]) -> dict[tuple[str, str], FrontierTable]:
    """Every frontier table, ready for each cell, from ONE pypaimon process: a table per feature
    in ``workdir/base`` (copied per cell with :meth:`FrontierTable.copy_to`), and a table per
    (feature, cell) for features with external folders. Raises if pypaimon cannot write one."""
    oracle = FrontierOracle(workdir)
    wanted: list[tuple[str, str | None, Path, Path]] = []  # feature, cell (None: base), warehouse, externals
    for feature in features:
        for cell in cells if feature.external else [None]:
            where = workdir / ("base" if cell is None else f"cells/{cell}")
            wanted.append((feature.name, cell, where / "wh", where / "external" / feature.name))
    queued = [oracle.make_frontier_table(warehouse, f"{DATABASE}.{name}", name, external_root=external_root,
                                         out_dir=external_root.parent.parent / "out" / name)
              for name, _, warehouse, external_root in wanted]
    outcomes = oracle.run_each()
    errors = [f"{name}: {outcomes[i].error}" for (name, *_), i in zip(wanted, queued, strict=True)
              if outcomes[i].error]
    if errors:
        raise PypaimonError("pypaimon could not write frontier tables:\n" + "\n".join(errors))
    answers = [outcomes[i].value for i in queued]
    reads = []
    for (name, _, warehouse, _), answer in zip(wanted, answers, strict=True):
        identifier, row_id = f"{DATABASE}.{name}", answer["row_tracking"]
        reads.append((oracle.read_rows(warehouse, identifier, with_row_id=row_id),
                      oracle.read_rows(warehouse, identifier, tag=TAG, with_row_id=row_id),
                      oracle.read_rows(warehouse, identifier, all_levels=False),
                      oracle.read_rows(warehouse, identifier, tag=TAG, all_levels=False)))
    outcomes = oracle.run_each()
    tables: dict[tuple[str, str], FrontierTable] = {}
    bases: dict[str, FrontierTable] = {}
    for (name, cell, warehouse, _), answer, views in zip(wanted, answers, reads, strict=True):
        for i in views:
            if outcomes[i].error:
                raise PypaimonError(f"pypaimon cannot read its own frontier table {name}: {outcomes[i].error}")
        latest, tagged, batch, tagged_batch = (outcomes[i].value for i in views)
        built = FrontierTable(
            feature=name, warehouse=warehouse, identifier=f"{DATABASE}.{name}", path=Path(answer["table_path"]),
            external_dirs=tuple(Path(d) for d in answer["external_dirs"]), row_tracking=answer["row_tracking"],
            skips_level0=answer["skips_level0"], latest=latest, tagged=tagged, batch=batch,
            tagged_batch=tagged_batch, fresh=_read_ipc(answer["fresh_ipc"]),
            postponed=_read_ipc(answer["postponed_ipc"]) if answer["postponed_ipc"] else None)
        if cell is None:
            bases[name] = built
        else:
            tables[name, cell] = built
    for name, base in bases.items():
        for cell in cells:
            tables[name, cell] = base.copy_to(workdir / "cells" / cell / "wh")
    return tables


# -- "changed no file" -----------------------------------------------------------------------

FileState = dict[str, tuple[int, int, str]]


def file_state(roots: Iterable[Path]) -> FileState:
    """Every file under ``roots``: path → (size, mtime_ns, sha1 of the content); every folder
    too (``<path>/`` → (0, 0, "folder")), so that an empty folder created or removed counts."""
    state: FileState = {}
    for root in roots:
        for folder, _, names in os.walk(root):
            state[folder + "/"] = (0, 0, "folder")
            for name in names:
                path = os.path.join(folder, name)
                info = os.stat(path)
                with open(path, "rb") as f:
                    digest = hashlib.sha1(f.read(), usedforsecurity=False).hexdigest()
                state[path] = (info.st_size, info.st_mtime_ns, digest)
    return state


def state_changes(before: FileState, after: FileState) -> str:
    """What changed between two :func:`file_state` results, one line ("" when nothing did)."""
    created = sorted(after.keys() - before.keys())
    deleted = sorted(before.keys() - after.keys())
    changed = sorted(p for p in before.keys() & after.keys() if before[p] != after[p])
    parts = [f"{what} {len(paths)} ({', '.join(Path(p).name for p in paths[:3])})"
             for what, paths in (("created", created), ("deleted", deleted), ("changed", changed)) if paths]
    return "; ".join(parts)


def one_line(text: object, limit: int = 240) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- the operations --------------------------------------------------------------------------


class Expect(enum.Enum):
    """What pypaimon must read after an operation ran (tag ``t1`` always reads as before)."""

    SAME = "same"  # the latest snapshot's rows and row ids unchanged
    FRESH = "fresh"  # the old rows with their row ids, plus the written fresh rows with new row ids
    TAG_AS_LATEST = "tag as latest"  # the latest snapshot reads as tag t1 (a rollback)
    NEW_TAG = "new tag"  # unchanged, and tag pf1 reads as the latest snapshot
    FULL_COMPACTION = "full compaction"  # unchanged but postponed rows now visible; no level-0 file left
    MINOR_COMPACTION = "minor compaction"  # unchanged; postponed rows visible or still waiting


@dataclass(frozen=True, slots=True)
class JobRun:
    """A Spark job run through its command line (``paimonflow.jobs.cli``): exit code 0, or a
    refusal as one JSON line ``{"job", "error", "message"}`` on stderr with exit code 2."""

    job: str
    exit_code: int
    stdout: str
    stderr: str


@dataclass(frozen=True, slots=True)
class EngineError:
    """An exception an engine raised in place of the core's (Spark wraps an error of its data
    source in its own): its type and its whole message, in which a refusal must show as the
    core's one line."""

    type_name: str
    message: str


RunResult = subprocess.CompletedProcess[str] | JobRun | EngineError | pa.Table | None


@dataclass(frozen=True, slots=True)
class Operation:
    """A paimonflow operation on one frontier table and what it must leave.

    ``run`` applies it in process and returns None, or the rows it read (a read: they must be
    pypaimon's batch view ``read_view`` of :class:`FrontierTable`), or the finished CLI process
    (``cli``: exit code 0, or a refusal in one line on stderr with exit code 2), or a
    :class:`JobRun`, or an :class:`EngineError`. ``spark`` operations take the SparkSession as a
    second argument and run on the caller's thread after the in-process ones. ``read_only``
    operations must change no file. ``gate``: the kind of operation the capability
    gate decides for it, which a refusal must name (or "any operation").
    """

    name: str
    run: Callable[..., RunResult]
    expect: Expect = Expect.SAME
    cli: bool = False
    read_only: bool = False
    read_view: str = "batch"
    spark: bool = False
    #: runs other engines' native threads in this process (DuckDB, Polars): only once no CLI cell
    #: is starting a process (a process spawned while their threads ran failed now and then with
    #: EFAULT, "Bad address", on a clean-clone run)
    engines: bool = False
    gate: Gate = field(kw_only=True)


def _table(t: FrontierTable) -> Table:
    return Catalog(str(t.warehouse)).get_table(t.identifier)


def _cli(verb: str, *args: str) -> Callable[[FrontierTable], subprocess.CompletedProcess[str]]:
    def run(t: FrontierTable) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*paimonflow_cli(), verb, t.identifier, "-w", str(t.warehouse), *args],
                              capture_output=True, text=True, timeout=300)
    return run


def paimonflow_cli() -> list[str]:
    """The ``paimonflow`` console script of this interpreter's environment (setup.cfg's entry point)."""
    script = Path(sys.executable).with_name("paimonflow")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from paimonflow.core.cli import main; main()"]


def _read(t: FrontierTable) -> pa.Table:
    return _table(t).read()


def _read_tag(t: FrontierTable) -> pa.Table:
    return _table(t).read(tag=TAG)


def _scan_dataset(t: FrontierTable) -> pa.Table:
    """The lazy scan as DuckDB reads it: its pyarrow dataset, queried by DuckDB."""
    import duckdb

    connection = _table(t).scan().to_duckdb("frontier", duckdb.connect())
    return connection.sql("select * from frontier").to_arrow_table()


def _scan_polars(t: FrontierTable) -> pa.Table:
    """The lazy scan as Polars reads it (``scan_pyarrow_dataset``: the scan's ``to_batches``)."""
    return _table(t).scan().to_polars().collect().to_arrow()


def _write(t: FrontierTable) -> None:
    _table(t).write(t.fresh)


def _compact_full(t: FrontierTable) -> None:
    _table(t).compact(full=True)


def _compact_minor(t: FrontierTable) -> None:
    _table(t).compact(full=False)


def _tag(t: FrontierTable) -> None:
    _table(t).tags.create(NEW_TAG)


def _expire_snapshots(t: FrontierTable) -> None:
    _table(t).expire_snapshots(retain_min=1, retain_max=1, older_than_millis=0)


def _expire_changelogs(t: FrontierTable) -> None:
    _table(t).expire_changelogs(retain_min=1, retain_max=1, older_than_millis=0)


def _remove_orphans(t: FrontierTable) -> None:
    _table(t).remove_orphan_files(older_than_millis=0)


def _rollback(t: FrontierTable) -> None:
    _table(t).rollback(tag=TAG)


OPERATIONS: tuple[Operation, ...] = (
    Operation("read", _read, read_only=True, gate=Gate.READ),
    Operation("read_tag", _read_tag, read_only=True, read_view="tagged_batch", gate=Gate.READ),
    Operation("scan_duckdb", _scan_dataset, read_only=True, engines=True, gate=Gate.READ),
    Operation("scan_polars", _scan_polars, read_only=True, engines=True, gate=Gate.READ),
    Operation("write", _write, Expect.FRESH, gate=Gate.WRITE),
    Operation("compact_full", _compact_full, Expect.FULL_COMPACTION, gate=Gate.COMPACT),
    Operation("compact_minor", _compact_minor, Expect.MINOR_COMPACTION, gate=Gate.COMPACT),
    Operation("tag", _tag, Expect.NEW_TAG, gate=Gate.HISTORY),
    Operation("expire_snapshots", _expire_snapshots, gate=Gate.EXPIRE),
    Operation("expire_changelogs", _expire_changelogs, gate=Gate.EXPIRE),
    Operation("remove_orphans", _remove_orphans, gate=Gate.ORPHANS),
    Operation("rollback", _rollback, Expect.TAG_AS_LATEST, gate=Gate.HISTORY),
    Operation("cli_read", _cli("read", "--limit", "0"), cli=True, read_only=True, gate=Gate.READ),
    Operation("cli_compact", _cli("compact"), Expect.FULL_COMPACTION, cli=True, gate=Gate.COMPACT),
    Operation("cli_expire_snapshots", _cli("expire-snapshots", "--retain-min", "1", "--retain-max", "1",
                                           "--older-than", "0"), cli=True, gate=Gate.EXPIRE),
    Operation("cli_remove_orphans", _cli("remove-orphan-files", "--older-than", "0", "--min-older-than", "0"),
              cli=True, gate=Gate.ORPHANS),
)


# -- one cell --------------------------------------------------------------------------------


@dataclass(slots=True)
class Cell:
    """One (feature, operation): its outcome so far and the pypaimon ops that will judge it."""

    table: FrontierTable
    operation: Operation
    outcome: str = ""
    checks: dict[str, int] = field(default_factory=dict)  # what → index of the queued pypaimon op


REFUSAL = re.compile(r"table (?P<table>\S+) uses (?P<feature>.+), which paimonflow does not support for "
                     r"(?P<operation>.+); nothing was changed")
CLI_REFUSAL = "error: UnsupportedFeatureError: "
#: the core's refusal inside an engine's exception (Spark quotes the Python worker's traceback)
ENGINE_REFUSAL = re.compile(r"UnsupportedFeatureError: (table \S+ uses .+?; nothing was changed)")


def run_cell(cell: Cell, spark: Any = None) -> None:
    """Apply the cell's operation to its table (a ``spark`` operation on ``spark``); set the
    outcome to ``refused`` or ``FAILED: ...`` when it did not run cleanly, else leave it empty for
    :func:`judge` once pypaimon has read."""
    table, operation = cell.table, cell.operation
    before = file_state(table.roots())
    try:
        done = operation.run(table, spark) if operation.spark else operation.run(table)
    except UnsupportedFeatureError as exc:
        cell.outcome = _refusal_outcome(cell, str(exc), before, exc)
        return
    except Exception as exc:
        cell.outcome = f"FAILED: {type(exc).__name__}: {one_line(exc)}"
        return
    if isinstance(done, EngineError) or (isinstance(done, subprocess.CompletedProcess) and done.returncode != 0) \
            or (isinstance(done, JobRun) and done.exit_code != 0):
        line, failure = refusal_line(done)
        cell.outcome = f"FAILED: {failure}" if line is None else _refusal_outcome(cell, line, before)
        return
    changed = state_changes(before, file_state(table.roots())) if operation.read_only else ""
    if changed:
        cell.outcome = f"FAILED: a read {changed}"
    elif isinstance(done, pa.Table):  # a read: Paimon's batch view, as pypaimon read it
        expected = getattr(table, operation.read_view)
        lacking = sorted(set(expected.column_names) - set(done.column_names))
        if lacking:
            cell.outcome = f"FAILED: read lacks columns {lacking}"
        elif problem := same_rows(done.select(expected.column_names), expected):
            cell.outcome = f"FAILED: read {problem}"


def _refusal_outcome(cell: Cell, line: str, before: FileState, exc: UnsupportedFeatureError | None = None) -> str:
    """``refused``, or ``FAILED: ...`` when the refusal changed a file or is not the one line it must be."""
    changed = state_changes(before, file_state(cell.table.roots()))
    problem = refusal_problem(line, cell.operation, cell.table.identifier, exc)
    return (f"FAILED: refused but {changed}" if changed else
            f"FAILED: refusal {problem}" if problem else REFUSED)


def refusal_problem(message: str, operation: Operation, table: str,
                    exc: UnsupportedFeatureError | None = None) -> str:
    """What is wrong with a refusal of ``operation`` on ``table`` ("" when nothing is): one line,
    as :data:`REFUSAL` spells it, naming the table, a feature of the capability gate, and the
    operation's ``gate`` or "any operation" (a table that cannot be opened at all); with ``exc``,
    ``.feature`` and ``.operation`` set."""
    if "\n" in message.strip():
        return "is not one line"
    if exc is not None and not (getattr(exc, "feature", None) and getattr(exc, "operation", None)):
        return "lacks .feature or .operation"
    match = REFUSAL.fullmatch(message.strip())
    if match is None:
        return f"does not read 'table X uses F, which paimonflow does not support for O; nothing was changed': " \
               f"{one_line(message, 160)}"
    if match["table"] != table:
        return f"names table {match['table']!r}, not {table!r}"
    feature = match["feature"]
    if not any(feature == known or feature.startswith(f"{known} (") for known in GatedFeature):
        return f"names no feature of the capability gate: {one_line(feature, 120)!r}"
    if match["operation"] not in (operation.gate.value, ANY_OPERATION):
        return f"names the operation {match['operation']!r}, not {operation.gate.value!r} (nor {ANY_OPERATION!r})"
    return ""


_TRACE_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)\s*$')
_TRACE_ERROR = re.compile(r"^[\w.]*(Error|Exception|Exit|Interrupt)\b.*$")


def engine_failure(error: EngineError) -> str:
    """An engine's exception in one line: its type, and where it quotes a Python traceback, the
    error that ended it and the line that raised it (``AssertionError at jobs/datasource.py:233
    in read: assert ...``)."""
    lines = error.message.splitlines()
    raised = [i for i, line in enumerate(lines) if _TRACE_ERROR.match(line.strip())]
    frames = [i for i, line in enumerate(lines) if _TRACE_FRAME.match(line)]
    if not raised or not frames:
        return f"{error.type_name}: {one_line(error.message)}"
    frame = _TRACE_FRAME.match(lines[frames[-1]])
    assert frame is not None
    where = f"{Path(frame['file']).parent.name}/{Path(frame['file']).name}:{frame['line']} in {frame['function']}"
    code = lines[frames[-1] + 1].strip() if frames[-1] + 1 < len(lines) else ""
    return one_line(f"{error.type_name}: {lines[raised[-1]].strip()} at {where}: {code}")


def refusal_line(done: subprocess.CompletedProcess[str] | JobRun | EngineError) -> tuple[str | None, str]:
    """The refusal line of a CLI run or a Spark job that did not exit 0, or of an engine's
    exception: ``(line, "")`` to be checked by :func:`refusal_problem`, or ``(None, why)`` when it
    is no refusal at all (another error, a traceback, more than one line, another exit code)."""
    if isinstance(done, EngineError):
        found = ENGINE_REFUSAL.findall(done.message)
        return (found[-1], "") if found else (None, engine_failure(done))
    stderr, code = (done.stderr, done.returncode) if isinstance(done, subprocess.CompletedProcess) else \
        (done.stderr, done.exit_code)
    lines = [line for line in stderr.splitlines() if line.strip()]
    last = one_line(lines[-1]) if lines else "no message"
    if "Traceback" in stderr:
        return None, f"traceback on stderr: {last}"
    if code != 2 or len(lines) != 1:
        return None, f"exit {code}: {last}"
    if isinstance(done, subprocess.CompletedProcess):
        if not lines[0].startswith(CLI_REFUSAL):
            return None, f"exit {code}: {last}"
        return lines[0].removeprefix(CLI_REFUSAL), ""
    try:
        error = json.loads(lines[0])
    except ValueError:
        return None, f"exit {code}, not one JSON line: {last}"
    if done.stdout.strip():
        return None, f"exit {code} with output on stdout: {one_line(done.stdout)}"
    if not isinstance(error, dict) or error.get("error") != "UnsupportedFeatureError" or error.get("job") != done.job:
        return None, f"exit {code}: {last}"
    return str(error.get("message", "")), ""


def queue_checks(cell: Cell, oracle: FrontierOracle) -> None:
    """Queue the pypaimon ops that judge a cell whose operation ran: every file the snapshots
    and tags reference still there, the latest snapshot's rows, tag t1's rows, and what the
    operation's :class:`Expect` adds (tag pf1; the batch view after a full compaction of a
    table whose batch reads skip level 0)."""
    t, expect = cell.table, cell.operation.expect
    rid = t.row_tracking
    tags = [TAG, NEW_TAG] if expect is Expect.NEW_TAG else [TAG]
    cell.checks["files"] = oracle.missing_files(t.warehouse, t.identifier, tags=tags)
    cell.checks["latest"] = oracle.read_rows(t.warehouse, t.identifier, with_row_id=rid)
    cell.checks["tag"] = oracle.read_rows(t.warehouse, t.identifier, tag=TAG, with_row_id=rid)
    if expect is Expect.NEW_TAG:
        cell.checks["new_tag"] = oracle.read_rows(t.warehouse, t.identifier, tag=NEW_TAG, with_row_id=rid)
    if expect is Expect.FULL_COMPACTION and t.skips_level0:
        cell.checks["batch_view"] = oracle.read_rows(t.warehouse, t.identifier, with_row_id=rid, all_levels=False)


def judge(cell: Cell, outcomes: Sequence[OracleOutcome]) -> None:
    """Set the outcome of a cell whose operation ran, from the answers to :func:`queue_checks`."""
    t, expect = cell.table, cell.operation.expect
    files = outcomes[cell.checks["files"]]
    if files.error is None and files.value["missing"]:  # the most precise finding first
        lost = [line.replace(f"{t.warehouse}/", "") for line in files.value["missing"]]
        count = len({line.split(": ", 1)[-1] for line in lost})
        cell.outcome = f"FAILED: {count} referenced file(s) gone, e.g. {one_line(lost[0], 160)}"
        return
    got = {}
    for what, i in cell.checks.items():
        if outcomes[i].error:
            cell.outcome = f"FAILED: pypaimon cannot read {what} after it: {outcomes[i].error}"
            return
        got[what] = outcomes[i].value
    latest = got["latest"]
    problems = {f"tag {TAG}": same_rows(got["tag"], t.tagged)}
    if expect is Expect.FRESH:
        problems["after the write"] = rows_after_write(latest, t)
    elif expect is Expect.TAG_AS_LATEST:
        problems["latest"] = same_rows(latest, t.tagged)
    elif expect in (Expect.FULL_COMPACTION, Expect.MINOR_COMPACTION) and t.postponed is not None:
        shown = pa.concat_tables([t.latest, t.postponed.select(t.latest.column_names)])
        waiting = expect is Expect.MINOR_COMPACTION and not same_rows(latest, t.latest)
        problems["latest"] = "" if waiting else same_rows(latest, shown)
    else:
        problems["latest"] = same_rows(latest, t.latest)
    if "new_tag" in got:
        problems[f"tag {NEW_TAG}"] = same_rows(got["new_tag"], t.latest)
    if "batch_view" in got:
        problems["batch view"] = same_rows(got["batch_view"], latest)
    found = [f"{what}: {problem}" for what, problem in problems.items() if problem]
    cell.outcome = f"FAILED: {'; '.join(found)}" if found else SUPPORTED


def same_rows(got: pa.Table, expected: pa.Table) -> str:
    """"" when both hold the same rows (multisets; column order aside; ``_ROW_ID`` included),
    else what differs, one line."""
    columns = sorted(expected.column_names)
    if sorted(got.column_names) != columns:
        return f"columns {sorted(got.column_names)} instead of {columns}"
    a, b = canonical(got, columns), canonical(expected, columns)
    return "" if a == b else f"{len(a)} rows instead of {len(b)}: {_difference(a, b)}"


def _difference(got: list[tuple], expected: list[tuple]) -> str:
    extra, lacking = Counter(got) - Counter(expected), Counter(expected) - Counter(got)
    parts = []
    if lacking:
        parts.append(f"missing {one_line(list(lacking.elements())[:2], 120)}")
    if extra:
        parts.append(f"unexpected {one_line(list(extra.elements())[:2], 120)}")
    return ", ".join(parts) or "same rows, different order"


def rows_after_write(latest: pa.Table, t: FrontierTable) -> str:
    """"" when ``latest`` holds ``t``'s rows (with their row ids) and ``t.fresh`` (with new,
    distinct row ids on a row-tracking table), else what differs. On a postpone-bucket table
    the fresh rows may instead wait in the postpone bucket, invisible."""
    columns = sorted(set(t.latest.column_names) - {ROW_ID})
    if sorted(latest.column_names) != sorted(t.latest.column_names):
        return f"columns {sorted(latest.column_names)} instead of {sorted(t.latest.column_names)}"
    if t.postponed is not None and not same_rows(latest, t.latest):
        return ""  # written to the postpone bucket
    expected = pa.concat_tables([t.latest.select(columns), t.fresh.select(columns)])
    if problem := same_rows(latest.select(columns), expected):
        return problem
    if not t.row_tracking:
        return ""
    everything = sorted(latest.column_names)
    lost = Counter(canonical(t.latest, everything)) - Counter(canonical(latest, everything))
    if lost:
        return f"old rows lost their {ROW_ID}: {one_line(list(lost.elements())[:2], 120)}"
    old_ids = t.latest.column(ROW_ID).to_pylist()
    new_ids = Counter(latest.column(ROW_ID).to_pylist()) - Counter(old_ids)
    if not new_ids or None in new_ids or max(new_ids.values()) > 1 or set(new_ids) & set(old_ids):
        return f"new rows got {ROW_ID}s {sorted(new_ids.elements(), key=repr)} (old ones: {sorted(old_ids)})"
    return ""


# -- the matrix ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Matrix:
    """Outcomes by (feature, operation), with the features and operations in order."""

    features: tuple[str, ...]
    operations: tuple[str, ...]
    outcomes: dict[tuple[str, str], str]
    seconds: float
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase: build, in process, ...

    def failures(self) -> list[str]:
        """One line per failed cell: ``feature × operation: why``."""
        return [f"{f} × {o}: {self.outcomes[f, o].removeprefix('FAILED: ')}" for f in self.features
                for o in self.operations if self.outcomes[f, o].startswith("FAILED")]

    def counts(self) -> dict[str, int]:
        kinds = Counter("FAILED" if v.startswith("FAILED") else v for v in self.outcomes.values())
        return {k: kinds.get(k, 0) for k in (SUPPORTED, REFUSED, "FAILED")}

    def markdown(self) -> str:
        """The table (rows: features, columns: operations; a failed cell shows as **FAILED**) and
        a line of counts: the same text for the same outcomes (no timings, no paths), as
        docs/format.md shows it."""
        def short(value: str) -> str:
            return "**FAILED**" if value.startswith("FAILED") else value

        lines = [f"| feature | {' | '.join(self.operations)} |", "|---|" + "---|" * len(self.operations)]
        lines += [f"| {f} | {' | '.join(short(self.outcomes[f, o]) for o in self.operations)} |"
                  for f in self.features]
        counts = self.counts()
        lines += ["", f"{counts[SUPPORTED]} supported, {counts[REFUSED]} refused, {counts['FAILED']} failed "
                  f"({len(self.outcomes)} cells)."]
        return "\n".join(lines) + "\n"

    def report(self) -> str:
        """:meth:`markdown` with the run's time per phase and every failed cell with its reason."""
        phases = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in self.phases.items())
        lines = [self.markdown(), f"Ran in {self.seconds:.0f} s ({phases})."]
        if self.failures():
            lines += ["", "## Failed cells", ""] + [f"- {line}" for line in self.failures()]
        return "\n".join(lines) + "\n"

    def write(self, folder: Path) -> None:
        """``matrix.md`` (:meth:`report`) and ``matrix.json`` (every cell, the counts, the
        timings) into ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "matrix.md").write_text(self.report())
        document = {"counts": self.counts(), "cells": len(self.outcomes), "seconds": round(self.seconds, 1),
                    "phases": self.phases,
                    "features": list(self.features), "operations": list(self.operations),
                    "outcomes": {f: {o: self.outcomes[f, o] for o in self.operations} for f in self.features}}
        (folder / "matrix.json").write_text(json.dumps(document, indent=2) + "\n")


def run_frontier(workdir: Path, features: Sequence[Feature] = FEATURES,
                 operations: Sequence[Operation] = OPERATIONS, *, spark: Any = None) -> Matrix:
    """Build the frontier with pypaimon, run every operation on its own copy of every table
    (CLI operations in parallel with the in-process ones, then the ``spark`` operations one at a
    time on this thread, then, once every CLI cell is done, the ``engines`` ones), judge each cell with pypaimon. ``spark``: the SparkSession, this
    thread's active one (the jobs take the active session; without one they would start a
    second); required when an operation is a ``spark`` one."""
    import time

    start = time.perf_counter()
    phases: dict[str, float] = {}

    def lap(phase: str) -> None:
        phases[phase] = time.perf_counter() - start - sum(phases.values())

    if any(op.spark for op in operations):
        _require_active_session(spark)
    workdir = Path(tempfile.mkdtemp(dir=workdir, prefix="frontier-"))
    tables = build_tables(workdir, features, [op.name for op in operations])
    lap("build")
    cells = [Cell(tables[f.name, op.name], op) for f in features for op in operations]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        running = [pool.submit(run_cell, cell) for cell in cells if cell.operation.cli]
        for cell in cells:
            if not cell.operation.cli and not cell.operation.spark and not cell.operation.engines:
                run_cell(cell)
        lap("in process")
        for cell in cells:
            if cell.operation.spark:
                run_cell(cell, spark)
        lap("spark")
        for future in running:
            future.result()
        lap("cli (waiting)")
    for cell in cells:
        if cell.operation.engines:
            run_cell(cell)
    lap("other engines")
    oracle = FrontierOracle(workdir)
    judged = [cell for cell in cells if not cell.outcome]
    for cell in judged:
        queue_checks(cell, oracle)
    outcomes = oracle.run_each() if judged else []
    for cell in judged:
        judge(cell, outcomes)
    lap("judge")
    return Matrix(features=tuple(f.name for f in features), operations=tuple(op.name for op in operations),
                  outcomes={(c.table.feature, c.operation.name): c.outcome for c in cells},
                  seconds=time.perf_counter() - start,
                  phases={k: round(v, 1) for k, v in phases.items()})


def _require_active_session(spark: Any) -> None:
    """Refuse to run Spark operations on anything but this thread's active SparkSession."""
    from pyspark.sql import SparkSession

    if spark is None or SparkSession.getActiveSession() is not spark:
        raise ValueError("the spark operations need spark=<this thread's active SparkSession>: the jobs "
                         "take the active session and would otherwise start another")


def check_doc_section(doc: Path, begin: str, end: str, wanted: str) -> None:
    """``doc``'s text between the ``begin`` and ``end`` markers must be ``wanted`` (a matrix);
    ``PAIMONFLOW_UPDATE_DOCS=1`` rewrites it instead. The assertion shows the difference."""
    import difflib

    text = doc.read_text()
    current = re.search(re.escape(begin) + r"\n(.*?)" + re.escape(end), text, re.S)
    assert current is not None, f"{doc.name} has no {begin!r} ... {end!r} section"
    if os.environ.get("PAIMONFLOW_UPDATE_DOCS") == "1":
        doc.write_text(text[:current.start(1)] + wanted + text[current.end(1):])
        return
    diff = "\n".join(difflib.unified_diff(current.group(1).splitlines(), wanted.splitlines(), doc.name,
                                          "this run", lineterm="", n=0))
    assert current.group(1) == wanted, f"{doc.name}'s section {begin!r} is stale: rerun with " \
                                       f"PAIMONFLOW_UPDATE_DOCS=1\n{diff}"
