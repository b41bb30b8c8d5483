"""Name fuzzing at every core and CLI entry point (reference/reliability.md §5.2 I7, §5.3 A12, S1, S3, S7).

Names from hypothesis ``text()`` (with ``/ \\ .. NUL`` and unicode mixed in) plus a fixed list of
nasty ones (``../x``, ``..``, ``.``, ``a/../../b``, ``x\\x00y``, absolute paths, ``snapshot-999``
planting through ``x/../../snapshot/snapshot-999``) go through database and table identifiers, tag,
branch and consumer names, commit users, ``db.t$branch_<b>`` identifiers, and partition values in
writes (which are escaped values, not path components). The CLI gets the fixed list.

Oracle: the name validator's ``InvalidNameError`` (any other ``PaimonflowError`` only for a valid
name, e.g. a tag that does not exist), or the operation stays inside the table root: the whole tree
*around* the warehouse (``sandbox/``, the warehouse being ``sandbox/warehouse``) is compared before
and after (nothing outside the warehouse created, modified or deleted), and inside the warehouse
only the paths the operation is meant to touch change (``tag/tag-<name>``, ``branch/branch-<name>``,
``consumer/consumer-<name>``, ``<name>.db``..., a ``dt=<escaped value>`` directory). The snapshot
directory never gains a file it should not (no planted ``snapshot-999``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from typer.testing import CliRunner

from paimonflow.core import Catalog
from paimonflow.core.cli import app
from paimonflow.core.data.partition import escape_path_name
from paimonflow.core.errors import InvalidNameError, PaimonflowError
from paimonflow.core.names import validate_name
from tests.name_fuzz import NAMES, NASTY, SETTINGS, tree

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])



def valid(kind: str, name: str) -> bool:
    try:
        return validate_name(kind, name) == name
    except InvalidNameError:
        return False


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.warehouse = root / "warehouse"
        catalog = Catalog(str(self.warehouse))
        catalog.create_database("db")
        t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "1"})
        t.write(pa.table({"dt": ["a"], "id": [1], "v": ["x"]}, schema=SCHEMA))
        t.tags.create("keep", snapshot_id=1)
        (root / "outside.txt").write_text("must stay")
        self.table_dir = Path(t.path)

    def catalog(self) -> Catalog:
        return Catalog(str(self.warehouse))

    def run(self, name: str, label: str, call: Callable[[], object], kind: str,
            allowed: Callable[[str], bool]) -> str:
        """Run one entry point; check containment; return 'refused', 'typed' or 'done'."""
        outside_before = {p: h for p, h in tree(self.root).items() if not p.startswith("warehouse")}
        above_before = (sorted(os.listdir(self.root.parent)), sorted(os.listdir(self.root.parent.parent)))
        inside_before = tree(self.warehouse)
        outcome = "done"
        try:
            call()
        except InvalidNameError:
            outcome = "refused"
        except PaimonflowError as exc:
            assert valid(kind, name) or kind == "partition value", f"{label}({name!r}): {type(exc).__name__}: {exc}"
            outcome = "typed"
        after = tree(self.root)
        assert {p: h for p, h in after.items() if not p.startswith("warehouse")} == outside_before, (
            f"{label}({name!r}) touched something outside the warehouse")
        assert (sorted(os.listdir(self.root.parent)), sorted(os.listdir(self.root.parent.parent))) == above_before, (
            f"{label}({name!r}) created or deleted something above the sandbox")
        inside_after = tree(self.warehouse)
        changed = {p for p in set(inside_before) | set(inside_after) if inside_before.get(p) != inside_after.get(p)}
        if outcome != "done" or (kind != "partition value" and not valid(kind, name)):
            assert outcome != "done" or not changed, f"{label}: invalid {kind} {name!r} accepted, changed {changed}"
        bad = sorted(p for p in changed if not allowed(p))
        assert not bad, f"{label}({name!r}) changed unexpected paths {bad}"
        planted = [p for p in changed if "/snapshot/" in p and p.rsplit("/", 1)[-1].startswith("snapshot-")]
        assert label.startswith(("write", "commit")) or not planted, f"{label}({name!r}) planted {planted}"
        return outcome


def _entry_points(box: Sandbox, name: str) -> list[tuple[str, str, Callable[[], object], Callable[[str], bool]]]:
    """(label, name kind, call, which changed warehouse paths are allowed)."""
    c = box.catalog()
    t = c.get_table("db.t")
    tbl = "db.db/t/"
    rows = pa.table({"dt": ["a"], "id": [7], "v": ["y"]}, schema=SCHEMA)

    def under(*prefixes: str) -> Callable[[str], bool]:
        return lambda p: p.startswith(prefixes)

    def commit_paths(p: str) -> bool:
        return p.startswith((tbl + "snapshot/", tbl + "manifest/", tbl + "dt=")) or p in (tbl + "snapshot/",)

    def partition_paths(p: str) -> bool:
        if not commit_paths(p):
            return False
        if p.startswith(tbl + "dt="):
            segment = p[len(tbl):].split("/", 1)[0].rstrip("/")
            # empty or whitespace-only values are the default partition, as in Java's PartitionPathUtils
            expected = "dt=" + (escape_path_name(name) if name.strip() else "__DEFAULT_PARTITION__")
            assert segment in ("dt=a", expected), (name, p)  # escaped: one path segment, never a path
        return True

    return [
        ("create_database", "database", lambda: c.create_database(name, ignore_if_exists=True),
         under(f"{name}.db")),
        ("create_table db", "database", lambda: c.create_table(f"{name}.t", SCHEMA, ignore_if_exists=True),
         under(f"{name}.db/")),
        ("create_table table", "table", lambda: c.create_table(f"db.{name}", SCHEMA, ignore_if_exists=True),
         under(f"db.db/{name}")),
        ("get_table", "table", lambda: c.get_table(f"db.{name}"), lambda p: False),
        ("drop_table", "table", lambda: c.drop_table(f"db.{name}", ignore_if_not_exists=True),
         under(f"db.db/{name}")),
        ("branch identifier", "branch", lambda: c.get_table(f"db.t$branch_{name}"), lambda p: False),
        ("create_tag", "tag", lambda: t.tags.create(name, snapshot_id=1, ignore_if_exists=True),
         under(f"{tbl}tag/tag-{name}")),
        ("read tag", "tag", lambda: t.read(tag=name), lambda p: False),
        ("delete_tag", "tag", lambda: t.tags.delete(name), under(f"{tbl}tag/tag-{name}")),
        ("create_branch", "branch", lambda: t.branches.create(name, ignore_if_exists=True),
         under(f"{tbl}branch/")),
        ("delete_branch", "branch", lambda: t.branches.delete(name), under(f"{tbl}branch/")),
        ("record consumer", "consumer", lambda: t.consumer_manager.record(name, 1),
         under(f"{tbl}consumer/consumer-{name}", f"{tbl}consumer/")),
        ("delete consumer", "consumer", lambda: t.consumer_manager.delete(name),
         under(f"{tbl}consumer/consumer-{name}")),
        ("commit user", "commit user", lambda: t.write(rows, commit_user=name, commit_identifier=1),
         commit_paths),
        ("write partition value", "partition value",
         lambda: t.write(pa.table({"dt": [name], "id": [8], "v": ["z"]}, schema=SCHEMA)), partition_paths),
    ]


@pytest.mark.slow
def test_fuzzed_names_at_every_core_entry_point_stay_inside_the_table(tmp_path: Path, reliability) -> None:
    box = Sandbox(tmp_path / "sandbox")
    counts = {"names": 0, "refused": 0, "done": 0, "typed": 0}
    boxes = [box]

    @settings(max_examples=reliability.scale(25, 1000), **SETTINGS)
    @given(name=NAMES)
    def run(name: str) -> None:
        counts["names"] += 1
        if counts["names"] % 50 == 0:  # a fresh sandbox now and then: valid names grow the tree it scans
            boxes.append(Sandbox(tmp_path / f"sandbox{len(boxes)}"))
        for label, kind, call, allowed in _entry_points(boxes[-1], name):
            counts[boxes[-1].run(name, label, call, kind, allowed)] += 1

    for name in NASTY:
        counts["names"] += 1
        for label, kind, call, allowed in _entry_points(box, name):
            counts[box.run(name, label, call, kind, allowed)] += 1
    run()
    # the table still reads; the tag made at the start is intact
    t = box.catalog().get_table("db.t")
    assert t.tags.get("keep").id == 1 and t.read().num_rows >= 1
    assert (box.root / "outside.txt").read_text() == "must stay"
    reliability.record(names=counts["names"], examples=counts["names"] * 15)
    assert counts["refused"] > 0 and counts["done"] > 0


CLI_CALLS = [
    ("create-database", lambda w, n: ["create-database", n, "-w", w], "database"),
    ("create-tag", lambda w, n: ["create-tag", "db.t", n, "-w", w, "--snapshot", "1"], "tag"),
    ("delete-tag", lambda w, n: ["delete-tag", "db.t", n, "-w", w], "tag"),
    ("rename-tag", lambda w, n: ["rename-tag", "db.t", "keep", n, "-w", w], "tag"),
    ("create-branch", lambda w, n: ["create-branch", "db.t", n, "-w", w], "branch"),
    ("delete-branch", lambda w, n: ["delete-branch", "db.t", n, "-w", w], "branch"),
    ("consumers reset", lambda w, n: ["consumers", "db.t", "-w", w, "--reset", f"{n}=1"], "consumer"),
    ("read tag", lambda w, n: ["read", "db.t", "-w", w, "--tag", n], "tag"),
    ("describe", lambda w, n: ["describe", f"db.{n}", "-w", w], "table"),
    ("rollback tag", lambda w, n: ["rollback", "db.t", "-w", w, "--tag", n], "tag"),
]


@pytest.mark.slow
def test_nasty_names_through_the_cli(tmp_path: Path, reliability) -> None:
    box = Sandbox(tmp_path / "sandbox")
    runner = CliRunner()
    count = 0
    for name in NASTY:
        if "\x00" in name:  # argv cannot carry a NUL (the OS refuses it before paimonflow sees it)
            continue
        for label, argv, kind in CLI_CALLS:
            count += 1
            outside_before = {p: h for p, h in tree(box.root).items() if not p.startswith("warehouse")}
            snapshots_before = sorted(os.listdir(box.table_dir / "snapshot"))
            inside_before = tree(box.warehouse)
            with contextlib.suppress(SystemExit):
                result = runner.invoke(app, argv(str(box.warehouse), name))
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                label, name, repr(result.exception))
            assert {p: h for p, h in tree(box.root).items() if not p.startswith("warehouse")} == outside_before
            assert sorted(os.listdir(box.table_dir / "snapshot")) == snapshots_before or label == "rollback tag"
            if not valid(kind, name):
                assert result.exit_code == 2 and "InvalidNameError" in result.output, (label, name, result.output)
                assert tree(box.warehouse) == inside_before, (label, name)
            # put the tag back if a valid rename moved it
            t = box.catalog().get_table("db.t")
            if "keep" not in t.tags.list():
                t.tags.create("keep", snapshot_id=1)
    reliability.record(names=count)
