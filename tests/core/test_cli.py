"""The ``paimonflow`` command line, run in-process with Typer's runner on a real warehouse."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.csv as csv
import pyarrow.parquet as pq
from typer.testing import CliRunner

from paimonflow.core import Catalog
from paimonflow.core.cli import app

runner = CliRunner()  # stdout and stderr mixed into .output


def invoke(*args: str):
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result


def test_create_write_describe_read(tmp_path):
    wh = str(tmp_path / "wh")
    assert invoke("create-database", "shop", "-w", wh).exit_code == 0
    out = invoke("create-table", "shop.orders", "-w", wh, "-c", "id:BIGINT NOT NULL", "-c", "dt:STRING NOT NULL",
                 "-c", "amount:DOUBLE", "-k", "id", "-k", "dt", "-p", "dt", "-o", "bucket=2")
    assert out.exit_code == 0, out.output
    data = tmp_path / "orders.parquet"
    pq.write_table(pa.table({"id": [1, 2], "dt": ["a", "b"], "amount": [1.5, 2.5]}), data)
    out = invoke("write", "shop.orders", "-w", wh, str(data))
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["snapshot_id"] == 1
    csv_file = tmp_path / "more.csv"
    csv.write_csv(pa.table({"id": [2], "dt": ["b"], "amount": [9.0]}), csv_file)
    assert invoke("write", "shop.orders", "-w", wh, str(csv_file)).exit_code == 0
    table = Catalog(wh).get_table("shop.orders")
    assert sorted((r["id"], r["amount"]) for r in table.read().to_pylist()) == [(1, 1.5), (2, 9.0)]

    described = invoke("describe", "shop.orders", "-w", wh).output
    assert "amount" in described and "bucket" in described and "latest snapshot: 2" in described
    assert "APPEND" in invoke("snapshots", "shop.orders", "-w", wh).output
    assert "bucket" in invoke("files", "shop.orders", "-w", wh).output
    assert "1.5" in invoke("read", "shop.orders", "-w", wh, "--snapshot", "1").output
    saved = tmp_path / "out.parquet"
    assert invoke("read", "shop.orders", "-w", wh, "--output", str(saved)).exit_code == 0
    assert pq.read_table(saved).num_rows == 2
    assert invoke("list", "-w", wh).output.split() == ["shop"]
    assert invoke("list", "-w", wh, "shop").output.split() == ["orders"]


def test_errors_are_one_clear_line_and_exit_2(tmp_path):
    wh = str(tmp_path / "wh")
    invoke("create-database", "shop", "-w", wh)
    result = runner.invoke(app, ["describe", "shop.missing", "-w", wh])
    assert result.exit_code == 2
    assert "does not exist" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["create-table", "shop.t", "-w", wh, "-c", "id:BIGINT", "-o", "bukket=1"])
    assert result.exit_code == 2 and "bukket" in result.output
