"""The progress line of ``write``, ``read --output`` and ``compact``: on a terminal only, with the
final counts of the work done; nothing on a pipe or with ``--json``."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console

from paimonflow.core import Catalog
from paimonflow.core.cli.progress import Progress, human_bytes
from paimonflow.core.write.progress import observe_files

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
ROWS = 30_000


def _data(rows: int = ROWS, start: int = 0) -> pa.Table:
    ids = list(range(start, start + rows))
    return pa.table({"id": ids, "dt": [f"2026-11-{1 + i % 3:02d}" for i in ids], "v": [f"v{i}" for i in ids]},
                    schema=SCHEMA)


def _table(tmp_path, name: str = "t"):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db", ignore_if_exists=True)
    return catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "2"})


def _counts(text: str) -> tuple[int, int]:
    """(rows, files) of the last progress line in ``text`` (terminal escapes stripped)."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    found = re.findall(r"([\d,]+) rows, [\d.]+ (?:B|KiB|MiB|GiB|TiB), ([\d,]+) files?", plain)
    assert found, plain
    rows, files = found[-1]
    return int(rows.replace(",", "")), int(files.replace(",", ""))


def _cli(args: list[str], *, terminal: bool) -> tuple[int, str, str]:
    """Run ``paimonflow args`` in a child process, stderr on a pseudo-terminal (or a pipe)."""
    command = [sys.executable, "-c", "from paimonflow.core.cli import main; main()", *args]
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    if not terminal:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr
    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    stdout = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=120)
    os.close(leader)
    return code, stdout, seen.decode(errors="replace")


def test_write_read_output_and_compact_show_their_final_counts_on_a_terminal(tmp_path):
    table = _table(tmp_path)
    source = tmp_path / "in.parquet"
    pq.write_table(_data(), source)
    warehouse = str(tmp_path / "wh")

    code, _, terminal = _cli(["write", "db.t", "-w", warehouse, str(source)], terminal=True)
    assert code == 0, terminal
    files = table.system_table("files")
    assert _counts(terminal) == (ROWS, files.num_rows)
    assert "writing db.t" in terminal

    table.write(_data(10_000))  # a second level-0 run for the compaction to rewrite
    code, _, terminal = _cli(["compact", "db.t", "-w", warehouse], terminal=True)
    assert code == 0, terminal
    after = table.system_table("files")
    assert _counts(terminal) == (ROWS, after.num_rows)

    target = tmp_path / "out.parquet"
    code, _, terminal = _cli(["read", "db.t", "-w", warehouse, "--output", str(target)], terminal=True)
    assert code == 0, terminal
    assert _counts(terminal) == (ROWS, 1)
    assert pq.read_metadata(target).num_rows == ROWS


def test_nothing_is_shown_on_a_pipe_or_with_json(tmp_path):
    _table(tmp_path)
    source = tmp_path / "in.parquet"
    pq.write_table(_data(), source)
    warehouse = str(tmp_path / "wh")
    code, stdout, stderr = _cli(["write", "db.t", "-w", warehouse, str(source)], terminal=False)
    assert code == 0 and stderr == "", stderr
    assert "snapshot_id" in stdout
    code, _, terminal = _cli(["--json", "write", "db.t", "-w", warehouse, str(source)], terminal=True)
    assert code == 0
    assert "rows," not in terminal
    code, stdout, stderr = _cli(["read", "db.t", "-w", warehouse, "--output", str(tmp_path / "o.csv")],
                                terminal=False)
    assert code == 0 and stderr == "", stderr


def test_progress_counts_files_reported_by_writer_threads(tmp_path):
    """In-process, the console forced to be a terminal: the shown line has the rows and files of
    every data file the write stored, and nothing is counted after the block."""
    table = _table(tmp_path)
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200)
    with Progress("writing db.t", enabled=True, console=console) as progress, \
            observe_files(table.path, progress.files_written):
        table.write(_data())
    files = table.system_table("files")
    assert (progress.rows, progress.files) == (ROWS, files.num_rows)
    assert progress.bytes == sum(files.column("file_size_in_bytes").to_pylist())
    assert _counts(buffer.getvalue()) == (ROWS, files.num_rows)
    table.write(_data(10, start=ROWS))  # not observed any more
    assert progress.rows == ROWS


def test_disabled_progress_prints_nothing():
    buffer = io.StringIO()
    with Progress("x", enabled=False, console=Console(file=buffer, force_terminal=True)) as progress:
        progress.add(rows=5, bytes=10, files=1)
    assert buffer.getvalue() == ""
    assert progress.line().startswith("x: 5 rows, 10 B, 1 file,")
    assert human_bytes(1536) == "1.5 KiB"
