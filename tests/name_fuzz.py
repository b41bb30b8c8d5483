"""What every name-fuzzing test shares (docs/reliability.md, I7): nasty names, a hypothesis
strategy for names, and a fingerprint of a directory tree to prove nothing outside changed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from hypothesis import HealthCheck
from hypothesis import strategies as st

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
