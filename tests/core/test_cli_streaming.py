"""``paimonflow read`` streams (issue 37, item 3): ``--limit N`` stops reading once it has its
rows, ``--output`` writes batches as they come through a temporary file (a failed read leaves
none), both in memory bounded by a split, not the table."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from paimonflow.core import Catalog
from paimonflow.core.cli import app
from paimonflow.core.read.scan import SplitReader

runner = CliRunner()
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _appended(tmp_path, commits: int = 12, rows: int = 1000) -> str:
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})
    for i in range(commits):
        ids = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
        table.write(pa.table({"id": ids, "v": pc.cast(ids, pa.string())}, schema=SCHEMA))
    return warehouse


def _files_opened(monkeypatch) -> list[str]:
    opened: list[str] = []
    real = SplitReader._file_batches

    def counting(self, split, f, needed):
        opened.append(f.file_name)
        return real(self, split, f, needed)

    monkeypatch.setattr(SplitReader, "_file_batches", counting)
    return opened


def test_read_limit_reads_only_the_files_it_needs(tmp_path, monkeypatch):
    warehouse = _appended(tmp_path)
    opened = _files_opened(monkeypatch)
    result = runner.invoke(app, ["--json", "read", "db.t", "-w", warehouse, "--limit", "3"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)) == 3
    assert len(opened) == 1  # of 12 files: the first batch held the rows
    opened.clear()
    everything = runner.invoke(app, ["--json", "read", "db.t", "-w", warehouse, "--limit", "0"])
    assert len(json.loads(everything.output)) == 12_000 and len(opened) == 12


def test_read_output_streams_every_row_and_an_empty_read_keeps_the_columns(tmp_path):
    warehouse = _appended(tmp_path, commits=5)
    for suffix, load in ((".parquet", pq.read_table), (".csv", csv.read_csv)):
        target = tmp_path / f"all{suffix}"
        result = runner.invoke(app, ["--json", "read", "db.t", "-w", warehouse, "--output", str(target)])
        assert json.loads(result.output)["rows_written"] == 5000
        assert sorted(load(target).column("id").to_pylist()) == list(range(5000))
    empty = Catalog(warehouse)
    empty.create_table("db.e", SCHEMA)
    target = tmp_path / "empty.parquet"
    assert runner.invoke(app, ["read", "db.e", "-w", warehouse, "--output", str(target)]).exit_code == 0
    assert pq.read_table(target).schema.names == ["id", "v"] and pq.read_table(target).num_rows == 0


def test_a_read_failing_midway_leaves_no_output_file(tmp_path, monkeypatch):
    warehouse = _appended(tmp_path, commits=3)
    real = SplitReader._file_batches
    calls = []

    def failing(self, split, f, needed):
        calls.append(f)
        if len(calls) == 2:
            raise OSError("disk gone")
        return real(self, split, f, needed)

    monkeypatch.setattr(SplitReader, "_file_batches", failing)
    target = tmp_path / "out.parquet"
    result = runner.invoke(app, ["read", "db.t", "-w", warehouse, "--output", str(target)])
    assert result.exit_code != 0
    assert list(tmp_path.glob("*out.parquet*")) == []  # neither the file nor its temporary


_PEAK = """
import json, sys
from paimonflow.core import Catalog
from paimonflow.core.cli import app
mode, warehouse, target = sys.argv[1:4]
if mode == "load":
    Catalog(warehouse).get_table("db.big").read()
else:
    args = ["read", "db.big", "-w", warehouse] + (["--limit", "1"] if mode == "limit" else ["--output", target])
    try:
        app(args, standalone_mode=False)
    except SystemExit:
        pass
# VmHWM: this process's own peak (ru_maxrss would carry the forking parent's over exec)
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps(int(peak.split()[1])))
"""


@pytest.mark.slow
def test_limit_and_output_stay_in_bounded_memory_on_a_table_larger_than_it(tmp_path):
    """A 16-file table of about 400 MB in Arrow: loading it whole takes its size; ``--limit 1``
    and ``--output`` peak at a fraction of that (one file's batches at a time)."""
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.big", SCHEMA, options={"write-only": "true"})
    for i in range(16):
        ids = pa.array(range(i * 500_000, (i + 1) * 500_000), pa.int64())
        table.write(pa.table({"id": ids, "v": pc.binary_join_element_wise(pc.cast(ids, pa.string()), "x" * 30, "-")},
                             schema=SCHEMA))
    size_mb = table.read(columns=["id", "v"]).nbytes / 2**20
    assert size_mb > 350

    def peak(mode: str) -> float:
        proc = subprocess.run([sys.executable, "-c", _PEAK, mode, warehouse, str(tmp_path / "out.parquet")],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return int(proc.stdout.strip().splitlines()[-1]) / 1024  # VmHWM is in KiB

    loaded, limited, streamed = peak("load"), peak("limit"), peak("output")
    assert loaded - limited > 0.6 * size_mb, (loaded, limited, size_mb)
    assert loaded - streamed > 0.5 * size_mb, (loaded, streamed, size_mb)
    assert pq.read_metadata(tmp_path / "out.parquet").num_rows == 8_000_000
