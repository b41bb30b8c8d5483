"""``paimonflow maintain`` (issue 40): the plan as a table or JSON (``--dry-run``), the plan run on
the core engine with progress, and bad input as one typed line (exit 2, nothing on stdout)."""

from __future__ import annotations

import json
import shlex

import pytest
from typer.testing import CliRunner

from paimonflow.core.cli import app
from paimonflow.core.cli.maintain import run_plan
from paimonflow.core.maintenance.planner import plan_warehouse
from paimonflow.core.maintenance.policy import MaintenancePolicy
from tests.core.maintenance.test_planner import build_warehouse
from tests.files import tree


def invoke(*argv: str):
    return CliRunner().invoke(app, list(argv), catch_exceptions=False, env={"PAIMONFLOW_WAREHOUSE": None})


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """A generated warehouse (read only here), and a policy file excluding staging.*."""
    root = tmp_path_factory.mktemp("maintain")
    _, due = build_warehouse(root / "wh")
    (root / "policy.json").write_text(json.dumps({"exclude": ["staging.*"], "priorities": {"shop.orders_*": 5}}))
    invoke("maintain", "-w", str(root / "wh"), "--dry-run")  # may repair stale EARLIEST hints once
    return root, due


def test_dry_run_prints_the_plan_and_changes_nothing(planned):
    root, due = planned
    wh, policy = str(root / "wh"), str(root / "policy.json")
    before = tree(root / "wh")
    as_json = invoke("maintain", "-w", wh, "--policy", policy, "--dry-run", "--json")
    assert as_json.exit_code == 0, as_json.output
    document = json.loads(as_json.stdout)
    planned_actions = {(a["table"], a["action"]) for a in document["actions"]}
    assert planned_actions == {(t, a) for t, actions in due.items() for a in actions}
    assert [a["table"] for a in document["actions"][:3]] == ["shop.orders_2", "shop.orders_1", "shop.orders_0"]
    assert {s["table"] for s in document["skipped"]} == {"staging.tmp", "logs.evolving"}
    assert {t["table"] for t in document["tables"]} == set(due) and as_json.stderr == ""
    text = invoke("maintain", "-w", wh, "--policy", policy, "--dry-run", "--tables", "shop.orders_*")
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0] == "table\taction\turgency\tpriority\toption\twhy"
    assert [line.split("\t")[:2] for line in lines[1:]] == [[f"shop.orders_{i}", "compact"] for i in (2, 1, 0)]
    assert "num-sorted-run.compaction-trigger (3)" in lines[1]
    assert text.stderr.splitlines()[-1].startswith("planned 3 action(s) over 3 table(s) in ")
    everything = invoke("maintain", "-w", wh, "--dry-run")  # no policy: staging.tmp is planned too
    assert any(line.startswith("staging.tmp\tcompact\t") for line in everything.stdout.splitlines())
    assert "skipped logs.evolving: UnsupportedFeatureError: " in everything.stderr
    assert tree(root / "wh") == before


def test_maintain_runs_the_plan_with_progress_and_leaves_nothing_due(tmp_path):
    _, due = build_warehouse(tmp_path / "wh")
    wh = str(tmp_path / "wh")
    (tmp_path / "policy.toml").write_text('exclude = ["staging.*"]\n[budget]\n"concurrent-compactions" = 2\n')
    done = invoke("maintain", "-w", wh, "--policy", str(tmp_path / "policy.toml"))
    assert done.exit_code == 0, done.output
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert rows[0] == ["table", "action", "status", "detail"]
    count = sum(len(actions) for actions in due.values())
    assert len(rows) == count + 1 and {r[2] for r in rows[1:]} == {"done"}
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == count and progress[-1].startswith(f"[{count}/{count}] ")
    compacted = next(r for r in rows if r[:2] == ["shop.orders_2", "compact"])
    assert compacted[3].startswith("14 file(s) rewritten into 2, snapshot 8")  # 7 level-0 files in each bucket
    again = invoke("maintain", "-w", wh, "--policy", str(tmp_path / "policy.toml"), "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["results"] == []


def test_an_action_that_fails_is_reported_and_the_others_run(tmp_path):
    catalog, _ = build_warehouse(tmp_path / "wh")
    policy = MaintenancePolicy(exclude=("staging.*",))
    plan = plan_warehouse(catalog, "shop.orders_*", policy=policy)
    catalog.drop_table("shop.orders_1")  # gone between planning and running
    outcomes = run_plan(catalog, plan, policy=policy)
    assert [(o.table, o.status) for o in outcomes] == [
        ("shop.orders_2", "done"), ("shop.orders_1", "failed"), ("shop.orders_0", "done")]
    assert outcomes[1].detail.startswith("TableNotFoundError: ")


BAD = [
    ("a warehouse that does not exist", "maintain -w {root}/nowhere --dry-run", "WarehouseNotFoundError"),
    ("a database that does not exist", "maintain -w {wh} --tables nowhere.* --dry-run", "DatabaseNotFoundError"),
    ("a policy file that does not exist", "maintain -w {wh} --policy {root}/none.json --dry-run",
     "FileNotFoundError"),
    ("a policy that does not parse", "maintain -w {wh} --policy {root}/broken.json --dry-run",
     "InvalidArgumentError"),
    ("a policy of an unknown kind", "maintain -w {wh} --policy {root}/policy.ini --dry-run", "InvalidArgumentError"),
    ("a policy with an unknown key", "maintain -w {wh} --policy {root}/unknown.json --dry-run",
     "InvalidArgumentError"),
    ("a policy default that is no duration", "maintain -w {wh} --policy {root}/bad-default.toml --dry-run",
     "InvalidOptionError"),
]


@pytest.mark.parametrize(("what", "template", "kind"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_typed_line(planned, what, template, kind):
    root, _ = planned
    (root / "broken.json").write_text("{exclude: [")
    (root / "policy.ini").write_text("[policy]\n")
    (root / "unknown.json").write_text('{"windows": ["01:00-05:00"]}')
    (root / "bad-default.toml").write_text('[defaults]\n"snapshot.time-retained" = "soon"\n')
    before = tree(root / "wh")
    argv = shlex.split(template.format(root=root, wh=root / "wh"))
    result = invoke(*argv)
    assert (result.exit_code, result.stdout) == (2, ""), result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {kind}: ") and len(line) < 400, line
    as_json = invoke(*argv, "--json")
    assert (as_json.exit_code, as_json.stdout) == (2, "")
    assert json.loads(as_json.stderr) == {"error": kind, "message": line.split(": ", 2)[2]}
    assert tree(root / "wh") == before
