"""pypaimon 2.1.0 reads a table whose expired snapshots became long-lived changelogs, and its own
ChangelogManager parses our changelog/changelog-<id> files and hints."""

from __future__ import annotations

import json
import os
import subprocess

import pyarrow as pa
import pytest

from paimonflow.core import Catalog

from .oracle import Oracle, canonical, oracle_python

pytestmark = pytest.mark.interop

_SCRIPT = """
import json, sys
from pypaimon.common.file_io import FileIO
from pypaimon.changelog.changelog_manager import ChangelogManager
table = sys.argv[1]
m = ChangelogManager(FileIO.get(table), table)
earliest, latest = m.earliest_long_lived_changelog_id(), m.latest_long_lived_changelog_id()
out = {"earliest": earliest, "latest": latest, "changelogs": []}
for cid in range(earliest, latest + 1):
    c = m.long_lived_changelog(cid)
    out["changelogs"].append({"id": c.id, "kind": str(c.commit_kind), "changelog_list": c.changelog_manifest_list})
json.dump(out, sys.stdout)
"""


def test_pypaimon_reads_our_changelogs_and_the_table_after_decoupled_expiry(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema, primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "input", "write-only": "true",
                                      "snapshot.num-retained.min": "2", "changelog.num-retained.min": "20"})
    for i in range(6):
        t.write(pa.table({"id": [i, 9], "v": [f"c{i}"] * 2}, schema=schema))
    t.expire_snapshots(older_than_millis=0)
    proc = subprocess.run([oracle_python(), "-c", _SCRIPT, t.path], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)
    assert (seen["earliest"], seen["latest"]) == (1, 4)
    assert [c["id"] for c in seen["changelogs"]] == [1, 2, 3, 4]
    from paimonflow.core.meta.changelogs import ChangelogManager

    mine = ChangelogManager(t.file_io, t.path)
    assert [c["changelog_list"] for c in seen["changelogs"]] == [
        mine.try_changelog(i).changelog_manifest_list for i in range(1, 5)]
    oracle = Oracle(tmp_path)
    oracle.read(wh, "db.t")
    (theirs,) = oracle.run()
    assert canonical(theirs) == canonical(t.read())
