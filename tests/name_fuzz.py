"""What every name-fuzzing test shares (docs/reliability.md, I7): nasty names, a hypothesis
strategy for names, and a fingerprint of a directory tree to prove nothing outside changed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.meta.snapshots import COMMIT_USER_PREFIX

NASTY = ["../x", "..", ".", "a/../../b", "x\x00y", "/abs", "/tmp/pwned", "x/../../snapshot/snapshot-999",
         "../../../../OUTSIDE/pwned", "a\\..\\..\\b", "snapshot-999", "\u2215etc", "\uff0e\uff0e", "x\ny", "~",
         "%2e%2e", "main", "123", "tag-", "ok_name", "d" * 201,
         "{{ 7 * 7 }}", "x; touch pwned"]  # template and shell injection, for the orchestrator entry points
NAMES = (st.text(max_size=20)
         | st.sampled_from(NASTY)
         | st.lists(st.sampled_from(["..", ".", "/", "\\", "\x00", "x", "snapshot", "snapshot-999", "%", "\u00e9"]),
                    min_size=1, max_size=6).map("".join))
SETTINGS = dict(deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def tree(root: Path) -> dict[str, str]:
    """Every directory and file below ``root`` (relative paths), files with their content hash."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirnames:
            out[os.path.normpath(os.path.join(rel, d)) + "/"] = ""
        for f in filenames:
            with open(os.path.join(dirpath, f), "rb") as fh:
                out[os.path.normpath(os.path.join(rel, f))] = hashlib.sha256(fh.read()).hexdigest()
    return out


SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


class Sandbox:
    """A warehouse with one table, ``lab.t`` (one row), inside a folder that a fuzzed name must
    never change (I7): ``state()`` before an attempt, ``check(before, name)`` after it."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "sandbox"
        self.warehouse = self.root / "warehouse"
        catalog = Catalog(str(self.warehouse))
        catalog.create_database("lab")
        self.table = catalog.create_table("lab.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
        self.table.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
        (self.root / "outside.txt").write_text("must stay")
        self._snapshot_dir = Path(self.table.path) / "snapshot"

    def state(self) -> tuple[dict[str, str], set[str]]:
        outside = {k: v for k, v in tree(self.root).items() if not k.startswith("warehouse")}
        return outside, set(os.listdir(self._snapshot_dir))

    def check(self, before: tuple[dict[str, str], set[str]], name: str) -> None:
        outside, snapshots = self.state()
        assert outside == before[0], f"{name!r} touched something outside the warehouse"
        # hints are not snapshots: LATEST, EARLIEST and a commit user's COMMIT-USER-<user>, which
        # names one of that user's snapshots
        hints = {f for f in snapshots if f.startswith(COMMIT_USER_PREFIX)}
        for hint in hints:
            sid = int((Path(self._snapshot_dir) / hint).read_text())
            owner = json.loads((Path(self._snapshot_dir) / f"snapshot-{sid}").read_text())["commitUser"]
            assert hint == f"{COMMIT_USER_PREFIX}{owner}", f"{name!r} wrote a hint that is not its user's"
        assert snapshots - hints <= before[1] | {"LATEST", "EARLIEST"}, f"{name!r} planted a snapshot"
