"""Dagster tests: a warehouse and landing folder of their own. The example definitions read
PAIMONFLOW_WAREHOUSE / PAIMONFLOW_LANDING when imported, so the ``defs_module`` fixture imports
them with these values set (and puts the environment back afterwards)."""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(tempfile.mkdtemp(prefix="paimonflow-dagster-"))
WAREHOUSE, LANDING = ROOT / "warehouse", ROOT / "landing"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/dagster/" in str(item.fspath):
            item.add_marker(pytest.mark.dagster)


@pytest.fixture(scope="module")
def dagster_env() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("PAIMONFLOW_WAREHOUSE", "PAIMONFLOW_LANDING")}
    os.environ.update({"PAIMONFLOW_WAREHOUSE": str(WAREHOUSE), "PAIMONFLOW_LANDING": str(LANDING)})
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def import_definitions():
    """The example definitions, (re)imported with this suite's warehouse."""
    import paimonflow.dags_examples.dagster_definitions as module

    return importlib.reload(module)
