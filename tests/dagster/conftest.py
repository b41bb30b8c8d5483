"""Dagster tests: the example definitions read PAIMONFLOW_WAREHOUSE / PAIMONFLOW_LANDING at import,
so both point at one scratch directory for the whole run."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(tempfile.mkdtemp(prefix="paimonflow-dagster-"))
WAREHOUSE, LANDING = ROOT / "warehouse", ROOT / "landing"
os.environ["PAIMONFLOW_WAREHOUSE"] = os.environ.get("PAIMONFLOW_WAREHOUSE", str(WAREHOUSE))
os.environ["PAIMONFLOW_LANDING"] = os.environ.get("PAIMONFLOW_LANDING", str(LANDING))
WAREHOUSE, LANDING = Path(os.environ["PAIMONFLOW_WAREHOUSE"]), Path(os.environ["PAIMONFLOW_LANDING"])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/dagster/" in str(item.fspath):
            item.add_marker(pytest.mark.dagster)
