"""The child side of the crash-at-every-step harness (test_storage_faults.py).

Runs one scenario with a SIGKILL planned at one storage operation. Imported by the forkserver
ahead of time, so each child starts in milliseconds instead of re-importing pyarrow.
"""

from __future__ import annotations

from pathlib import Path

from paimonflow.core.fs import LocalFileIO
from tests.reliability import test_storage_faults as harness
from tests.reliability.faulty_io import FaultPlan, FaultyFileIO


def run(root: str, scenario_name: str, offset: int, fault: str) -> None:
    scenario = next(s for s in harness.SCENARIOS if s.name == scenario_name)
    faulty = FaultyFileIO(LocalFileIO())
    table = harness.open_table(Path(root), scenario.table, faulty)
    faulty.plan = FaultPlan(at={len(faulty.operations) + offset: fault})
    scenario.act(table)
