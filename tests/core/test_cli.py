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
    out = invoke("--json", "write", "shop.orders", "-w", wh, str(data))
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


def test_maintenance_verbs(tmp_path):
    wh = str(tmp_path / "wh")
    catalog = Catalog(wh)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    for i in range(5):
        t.write(pa.table({"id": [i], "v": ["x"]}, schema=schema))
    assert invoke("create-tag", "db.t", "-w", wh, "t1", "--snapshot", "2").exit_code == 0
    assert "t1" in invoke("tags", "db.t", "-w", wh).output
    readable = invoke("expire-snapshots", "db.t", "-w", wh, "--retain-min", "2", "--older-than", "0 ms", "--dry-run")
    assert "snapshot_ids\t1,2,3\n" in readable.output  # key<TAB>value lines when not on a terminal
    plan = json.loads(invoke("--json", "expire-snapshots", "db.t", "-w", wh, "--retain-min", "2", "--older-than", "0 ms",
                             "--dry-run").output)
    assert plan["dry_run"] and plan["snapshot_ids"] == [1, 2, 3]
    assert json.loads(invoke("--json", "expire-snapshots", "db.t", "-w", wh, "--retain-min", "2",
                             "--older-than", "0 ms").output)["expired_snapshots"] == 3
    assert json.loads(invoke("--json", "compact", "db.t", "-w", wh).output)["snapshot_id"] == 6
    assert json.loads(invoke("--json", "rollback", "db.t", "-w", wh, "--tag", "t1").output)["target"] == 2
    # below the 1-hour safety floor the CLI refuses (a running writer's new files could go)...
    refused = invoke("remove-orphan-files", "db.t", "-w", wh, "--older-than", "10 min")
    assert refused.exit_code != 0 and "safety floor" in " ".join(refused.output.split())
    # ...unless the floor is lowered on purpose
    assert json.loads(invoke("--json", "remove-orphan-files", "db.t", "-w", wh, "--older-than", "0 ms",
                             "--min-older-than", "0 ms").output)["orphans"] == 0
    assert "r" in invoke("consumers", "db.t", "-w", wh, "--reset", "r=2").output
    assert invoke("rename-tag", "db.t", "-w", wh, "t1", "t2").exit_code == 0
    assert "deleted tag 't2'" in invoke("delete-tag", "db.t", "-w", wh, "t2").output
    assert json.loads(invoke("--json", "expire-tags", "db.t", "-w", wh).output)["expired"] == []
    bad = invoke("create-tag", "db.t", "-w", wh, "../x")
    assert bad.exit_code == 2 and "InvalidNameError" in bad.output
    assert sorted(r["id"] for r in t.read().to_pylist()) == [0, 1]


def test_branch_verbs(tmp_path):
    wh = str(tmp_path / "wh")
    catalog = Catalog(wh)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "a"]}, schema=schema))
    assert invoke("create-tag", "db.t", "-w", wh, "base").exit_code == 0
    out = invoke("create-branch", "db.t", "-w", wh, "dev", "--tag", "base")
    assert out.exit_code == 0 and "db.t$branch_dev" in out.output
    assert invoke("create-branch", "db.t", "-w", wh, "scratch").exit_code == 0
    listed = invoke("branches", "db.t", "-w", wh).output
    assert "dev" in listed and "scratch" in listed and "base" in listed
    # every verb works on a branch through its identifier
    catalog.get_table("db.t$branch_dev").write(pa.table({"id": [3], "v": ["dev"]}, schema=schema))
    assert "2" in invoke("snapshots", "db.t$branch_dev", "-w", wh).output
    assert invoke("rename-branch", "db.t", "-w", wh, "scratch", "tmp").exit_code == 0
    assert invoke("delete-branch", "db.t", "-w", wh, "tmp").exit_code == 0
    done = json.loads(invoke("--json", "fast-forward", "db.t", "-w", wh, "dev").output)
    assert done["copied_snapshots"] == [1, 2]
    assert sorted(r["id"] for r in catalog.get_table("db.t").read().to_pylist()) == [1, 2, 3]
    bad = invoke("create-branch", "db.t", "-w", wh, "123")
    assert bad.exit_code == 2 and "InvalidNameError" in bad.output
    missing = invoke("read", "db.t$branch_nope", "-w", wh)
    assert missing.exit_code == 2 and "BranchNotFoundError" in missing.output


def test_expire_changelogs_verb(tmp_path):
    wh = str(tmp_path / "wh")
    catalog = Catalog(wh)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
                                      "write-only": "true",
                                      "changelog.num-retained.min": "20"})
    for i in range(5):
        t.write(pa.table({"id": [i], "v": ["x"]}, schema=schema))
    moved = json.loads(invoke("--json", "expire-snapshots", "db.t", "-w", wh, "--older-than", "0 ms").output)
    assert moved["to_changelog"] == [1, 2, 3, 4]
    plan = json.loads(invoke("--json", "expire-changelogs", "db.t", "-w", wh, "--retain-min", "1", "--older-than",
                             "0 ms", "--dry-run").output)
    assert plan["dry_run"] and plan["changelog_ids"] == [1, 2, 3]
    assert "expired_changelogs\t" in invoke("expire-changelogs", "db.t", "-w", wh, "--retain-min", "1",
                                             "--older-than", "0 ms").output
    assert json.loads(invoke("--json", "expire-changelogs", "db.t", "-w", wh, "--delete-all").output)[
        "expired_changelogs"] == 1


def test_retain_max_alone_is_not_refused_for_the_default_retain_min(tmp_path):
    """``--retain-max 1`` alone keeps one, whatever ``*.num-retained.min`` says (10 for snapshots
    by default, 20 for changelogs here); two given bounds that contradict each other are refused."""
    wh = str(tmp_path / "wh")
    catalog = Catalog(wh)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "input", "write-only": "true",
                                      "changelog.num-retained.min": "20"})
    for i in range(5):
        t.write(pa.table({"id": [i], "v": ["x"]}, schema=schema))
    moved = json.loads(invoke("--json", "expire-snapshots", "db.t", "-w", wh, "--retain-max", "1").output)
    assert moved["to_changelog"] == [1, 2, 3, 4]
    done = json.loads(invoke("--json", "expire-changelogs", "db.t", "-w", wh, "--retain-max", "1").output)
    assert done["changelog_ids"] == [1, 2, 3]  # the latest changelog always stays
    bad = invoke("expire-changelogs", "db.t", "-w", wh, "--retain-min", "3", "--retain-max", "2")
    assert bad.exit_code == 2 and bad.output.count("\n") == 1
    assert "InvalidArgumentError: --retain-max (2) must be at least --retain-min (3)" in bad.output


def _on_a_terminal(*args: str) -> str:
    """What ``paimonflow *args`` prints to a terminal (a pseudo-terminal as its stdout)."""
    import os
    import pty
    import subprocess
    import sys
    from pathlib import Path

    leader, follower = pty.openpty()
    try:
        subprocess.run([str(Path(sys.executable).parent / "paimonflow"), *args], stdout=follower, check=True,
                       timeout=120, env={**os.environ, "COLUMNS": "160", "TERM": "xterm"})
    finally:
        os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end is closed: all read
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return shown.decode()


def test_tables_are_drawn_on_a_terminal_and_tab_separated_in_a_pipe(tmp_path):
    wh = str(tmp_path / "wh")
    catalog = Catalog(wh)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    long_value = "x" * 150  # wider than an 80-column default: whole in a pipe
    t.write(pa.table({"id": [1, 2], "v": [long_value, None]}, schema=schema))
    drawn = _on_a_terminal("read", "db.t", "-w", wh)
    assert "┃" in drawn and "∅" in drawn  # a Rich table, null shown as ∅
    piped = invoke("read", "db.t", "-w", wh).stdout.splitlines()
    assert piped == ["id\tv", f"1\t{long_value}", "2\t"]


def test_version_names_paimonflow_pyarrow_and_python():
    from importlib.metadata import version

    out = invoke("--version")
    assert out.exit_code == 0 and out.output.startswith(f"paimonflow {version('paimonflow')} (pyarrow {pa.__version__}")


def test_create_table_like_a_file_with_unsigned_columns_takes_signed_types_that_hold_them(tmp_path):
    wh = str(tmp_path / "wh")
    sample = tmp_path / "counts.parquet"
    pq.write_table(pa.table({"k": pa.array([1], pa.int64()), "n": pa.array([2**32 - 1], pa.uint32())}), sample)
    assert invoke("create-database", "shop", "-w", wh).exit_code == 0
    out = invoke("create-table", "shop.c", "-w", wh, "--like", str(sample))
    assert out.exit_code == 0, out.output
    assert Catalog(wh).get_table("shop.c").arrow_schema.field("n").type == pa.int64()
    assert invoke("write", "shop.c", "-w", wh, str(sample)).exit_code == 0
    assert Catalog(wh).get_table("shop.c").read().column("n").to_pylist() == [2**32 - 1]


def test_a_tables_whole_life_from_the_command_line(tmp_path):
    """Issue 38, item 1: create from a sample file, write with a static partition, row kinds and an
    exactly-once identity, read with a filter, columns, a tag and a time, alter, delete, truncate,
    rename and drop, each checked through the core."""
    wh = str(tmp_path / "wh")
    sample = tmp_path / "sample.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "dt": ["a", "a", "b"],
                             "amount": [1.0, 20.0, 30.0]}), sample)
    assert invoke("create-database", "shop", "-w", wh).exit_code == 0
    out = invoke("create-table", "shop.o", "-w", wh, "--like", str(sample), "-k", "id", "-k", "dt", "-p", "dt",
                 "-o", "bucket=1")
    assert out.exit_code == 0, out.output
    catalog = Catalog(wh)
    assert catalog.get_table("shop.o").arrow_schema.names == ["id", "dt", "amount"]
    write = ["write", "shop.o", "-w", wh, str(sample), "--commit-user", "loader", "--commit-identifier", "1"]
    assert json.loads(invoke("--json", *write).output)["snapshot_id"] == 1
    assert json.loads(invoke("--json", *write).output)["already_committed"] is True  # exactly once
    assert invoke("create-tag", "shop.o", "-w", wh, "first").exit_code == 0
    b_only = tmp_path / "b.parquet"
    pq.write_table(pa.table({"id": pa.array([9], pa.int64()), "dt": ["b"], "amount": [9.0]}), b_only)
    out = invoke("write", "shop.o", "-w", wh, str(b_only), "--partition", "dt=b")
    assert out.exit_code == 0, out.output
    table = catalog.get_table("shop.o")
    assert sorted(table.read().column("id").to_pylist()) == [1, 2, 9]  # partition b replaced
    gone = tmp_path / "gone.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "dt": ["a"], "amount": [1.0]}), gone)
    assert invoke("write", "shop.o", "-w", wh, str(gone), "--delete").exit_code == 0
    assert sorted(catalog.get_table("shop.o").read().column("id").to_pylist()) == [2, 9]
    rows = json.loads(invoke("--json", "read", "shop.o", "-w", wh, "--filter", "dt = 'a' OR amount > 5",
                             "--columns", "id,amount").output)
    assert sorted(r["id"] for r in rows) == [2, 9] and set(rows[0]) == {"id", "amount"}
    old = json.loads(invoke("--json", "read", "shop.o", "-w", wh, "--tag", "first", "--filter", "id = 3").output)
    assert [r["id"] for r in old] == [3]
    first_time = catalog.get_table("shop.o").snapshot_manager.snapshot(1).time_millis
    from datetime import UTC, datetime

    iso = datetime.fromtimestamp(first_time / 1000 + 0.0005, UTC).isoformat()
    assert len(json.loads(invoke("--json", "read", "shop.o", "-w", wh, "--timestamp", iso).output)) == 3
    out = invoke("alter", "shop.o", "-w", wh, "--add-column", "note:STRING", "--widen", "amount:DOUBLE",
                 "--set", "snapshot.num-retained.min=5", "--comment", "orders")
    assert out.exit_code == 0, out.output
    altered = catalog.get_table("shop.o")
    assert "note" in altered.arrow_schema.names and altered.schema.comment == "orders"
    assert altered.options.raw["snapshot.num-retained.min"] == "5"
    out = invoke("--json", "delete", "shop.o", "-w", wh, "--where", "id = 2")
    assert out.exit_code == 0, out.output
    assert catalog.get_table("shop.o").read().column("id").to_pylist() == [9]
    assert json.loads(invoke("--json", "delete", "shop.o", "-w", wh, "--where", "id = 777").output)["deleted_rows"] == 0
    assert invoke("truncate", "shop.o", "-w", wh).exit_code == 0
    assert catalog.get_table("shop.o").read().num_rows == 0
    assert invoke("rename-table", "shop.o", "shop.orders", "-w", wh).exit_code == 0
    assert catalog.list_tables("shop") == ["orders"]
    assert invoke("drop-table", "shop.orders", "-w", wh).exit_code == 0
    assert invoke("drop-database", "shop", "-w", wh).exit_code == 0
    assert Catalog(wh).list_databases() == []


def test_the_documented_life_of_a_table_runs_line_by_line(tmp_path, monkeypatch):
    """docs/cli.md's "A table's whole life" block, each line run in order (optional ``[...]``
    parts left out) on a warehouse ``wh`` with the input files it names: every line exits 0."""
    import re
    import shlex
    from datetime import UTC, datetime, timedelta
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    block = doc.split("## A table's whole life", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [line.split("  #", 1)[0] for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    monkeypatch.chdir(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        ("amount", pa.float64()), ("qty", pa.int32())])
    rows = pa.table({"id": [1, 2, 7], "dt": ["2026-11-21", "2026-11-21", "2026-11-20"], "amount": [5.0, 20.0, 1.0],
                     "qty": pa.array([1, 2, 3], pa.int32())}, schema=schema)
    for name in ("sample", "hour", "gone"):
        pq.write_table(rows, tmp_path / f"{name}.parquet")
    pq.write_table(rows.filter(pa.compute.equal(rows["dt"], "2026-11-21")), tmp_path / "day.parquet")
    csv.write_csv(rows.slice(0, 1), tmp_path / "rows.csv")
    assert invoke("create-database", "shop", "-w", "wh").exit_code == 0
    ran = 0
    for line in lines:
        # (the example's time made a second from now: after the writes)
        now = (datetime.now(UTC) + timedelta(seconds=1)).isoformat(timespec="seconds")
        argv = shlex.split(re.sub(r"\d{4}-\d\d-\d\dT[\d:]+\+00:00", now, re.sub(r"\[[^\]]*\]", "", line)))
        assert argv[0] == "paimonflow", line
        out = invoke(*argv[1:])
        assert out.exit_code == 0, f"{line}\n{out.output}"
        ran += 1
    assert ran >= 14 and not Catalog(str(tmp_path / "wh")).list_databases()


def test_every_option_and_argument_has_help_text():
    import click
    import typer.main

    group = typer.main.get_command(app)
    context = click.Context(group)
    missing = [f"{name} {p.name}" for name in group.list_commands(context)
               for p in group.get_command(context, name).params
               if p.name != "help" and not (getattr(p, "help", None) or "").strip()]
    assert not missing, missing


def test_output_speaks_no_python(tmp_path):
    """Issue 38, item 2: piped text has no Python reprs (lists, dicts, True/False), times are ISO
    8601 with their zone, JSON keys are snake_case (analyze too), a commit without an identity shows
    none, errors name flags and durations, and a capped expiry says more are due."""
    import re

    wh = str(tmp_path / "wh")
    invoke("create-database", "shop", "-w", wh)
    invoke("create-table", "shop.o", "-w", wh, "-c", "id:BIGINT NOT NULL", "-c", "dt:STRING NOT NULL", "-k", "id",
           "-k", "dt", "-p", "dt", "-o", "bucket=2", "-o", "snapshot.num-retained.min=1")
    data = tmp_path / "a.parquet"
    pq.write_table(pa.table({"id": [1, 2], "dt": ["a", "b"]}), data)
    written = invoke("write", "shop.o", "-w", wh, str(data)).output
    assert "already_committed\tfalse" in written and "commit_identifier\t\n" in written
    assert "9223372036854775807" not in written and "False" not in written
    described = invoke("describe", "shop.o", "-w", wh).output
    assert "primary keys: id, dt" in described and "options: bucket=2, snapshot.num-retained.min=1" in described
    assert "[" not in described and "{" not in described
    snapshots = invoke("snapshots", "shop.o", "-w", wh).output
    assert re.search(r"\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00\t", snapshots), snapshots
    analyzed = json.loads(invoke("--json", "analyze", "shop.o", "-w", wh).output)
    assert "merged_record_count" in analyzed and "col_stats" in analyzed and "null_count" in analyzed["col_stats"]["id"]
    bad = invoke("expire-snapshots", "shop.o", "-w", wh, "--retain-max", "1", "--retain-min", "3")
    assert "--retain-max (1) must be at least --retain-min (3)" in bad.output
    floor = invoke("remove-orphan-files", "shop.o", "-w", wh, "--older-than", "10 min")
    assert "--older-than (10 min) is below the safety floor (1 h)" in " ".join(floor.output.split())
    for _ in range(4):
        invoke("write", "shop.o", "-w", wh, str(data))
    capped = invoke("expire-snapshots", "shop.o", "-w", wh, "--older-than", "0 s", "--max-deletes", "2")
    more = Catalog(wh).get_table("shop.o").snapshot_manager.latest_id() - 3  # all but the latest, after 1 and 2
    assert capped.exit_code == 0 and f"more_due\t{more}" in capped.output and more > 0, capped.output
    assert f"up to {more} more snapshot(s) are due" in capped.output
    rest = invoke("--json", "expire-snapshots", "shop.o", "-w", wh, "--older-than", "0 s")
    assert json.loads(rest.output)["more_due"] == 0 and json.loads(rest.output)["expired_snapshots"] == more
