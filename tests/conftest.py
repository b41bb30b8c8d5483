"""Shared fixtures. Keep this small: fixtures used by one test module live in that module."""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.s3server import S3TestServer

T = TypeVar("T")

# -- Spark: one local[2] session for the whole run (starting Spark costs ~10 s) --------------------


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from paimonflow.jobs.session import spark_session

    session = spark_session(master="local[2]", app_name="paimonflow-tests",
                            conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()



@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[object]:
    """A Spark standalone master and two 1-core workers on 127.0.0.1 (tests/spark/cluster.py), one
    per test run, started on first use."""
    from tests.spark.cluster import StandaloneCluster

    cluster = StandaloneCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def spark_connect() -> Iterator[object]:
    """A Spark Connect server on 127.0.0.1 (tests/spark/cluster.py), one per test run, started on first use."""
    from tests.spark.cluster import ConnectServer

    server = ConnectServer().start()
    try:
        yield server
    finally:
        server.stop()

# -- S3: moto's server on 127.0.0.1, requests serialized (tests/s3server.py) ---------------------


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the S3 server carries the ``s3`` marker even if it forgot to say so, and one
    that uses the ``reliability`` fixture the ``reliability`` marker (``make reliability-long`` selects it)."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "s3_test_server" in fixtures:
            item.add_marker(pytest.mark.s3)
        if "reliability" in fixtures:
            item.add_marker(pytest.mark.reliability)


@pytest.fixture(scope="session")
def s3_test_server() -> Iterator[S3TestServer]:
    """The in-process S3 test server (started once per session, on first use)."""
    with S3TestServer() as server:
        yield server


@pytest.fixture(scope="session")
def s3_server(s3_test_server: S3TestServer) -> str:
    """The endpoint URL of the S3 test server, ``http://127.0.0.1:<port>``."""
    return s3_test_server.endpoint_url


@pytest.fixture
def s3_storage_options(s3_test_server: S3TestServer) -> dict[str, str]:
    """Storage options (``s3.endpoint``, credentials...) for a Catalog or ``get_file_io``."""
    return s3_test_server.storage_options()


@pytest.fixture
def s3_bucket(s3_test_server: S3TestServer) -> Iterator[str]:
    """A fresh, empty bucket; deleted with its content afterwards."""
    name = f"test-{uuid.uuid4().hex[:20]}"
    s3_test_server.create_bucket(name)
    yield name
    s3_test_server.delete_bucket(name)


# -- Reliability programme: tiers and recorded counts (docs/reliability.md) ------------------------

RELIABILITY_TIER = os.environ.get("PAIMONFLOW_RELIABILITY_TIER", "fast")
if RELIABILITY_TIER not in ("fast", "long"):
    raise RuntimeError(f"PAIMONFLOW_RELIABILITY_TIER must be 'fast' or 'long', not {RELIABILITY_TIER!r}")
RELIABILITY_RESULTS = Path(os.environ.get("PAIMONFLOW_RELIABILITY_RESULTS", "build/reliability"))

_reliability_counts: dict[str, Counter[str]] = {}
_reliability_failed: set[str] = set()


class Reliability:
    """What a reliability harness needs: its tier's parameters and a place to report its counts.

    ``scale(fast, long)`` picks the parameter for the tier chosen by ``PAIMONFLOW_RELIABILITY_TIER``
    (``fast`` in ``make test``, ``long`` in ``make reliability-long``). ``record(commits=3, ...)``
    adds to this test's counts (commits, kills, faults, corruptions, races...), which the run prints
    at the end and writes to ``build/reliability/results-<tier>.json``.
    """

    def __init__(self, nodeid: str) -> None:
        self.tier = RELIABILITY_TIER
        self.long = RELIABILITY_TIER == "long"
        self._counts = _reliability_counts.setdefault(nodeid, Counter())

    def scale(self, fast: T, long: T) -> T:
        return long if self.long else fast

    def record(self, **counts: int) -> None:
        self._counts.update({k: int(v) for k, v in counts.items()})


@pytest.fixture
def reliability(request: pytest.FixtureRequest) -> Reliability:
    return Reliability(request.node.nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed and report.nodeid in _reliability_counts:
        _reliability_failed.add(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _reliability_counts:
        return
    totals: Counter[str] = Counter()
    for counts in _reliability_counts.values():
        totals.update(counts)
    failed = sorted(_reliability_failed)
    summary = {
        "tier": RELIABILITY_TIER,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "tests": len(_reliability_counts),
        "failed_tests": failed,
        "totals": dict(sorted(totals.items())),
        "per_test": {n: dict(sorted(c.items())) for n, c in sorted(_reliability_counts.items())},
    }
    RELIABILITY_RESULTS.mkdir(parents=True, exist_ok=True)
    out = RELIABILITY_RESULTS / f"results-{RELIABILITY_TIER}.json"
    out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    terminalreporter.write_sep("-", f"reliability ({RELIABILITY_TIER} tier): {len(_reliability_counts)} harnesses, "
                                    f"{len(failed)} failed; written to {out}")
    terminalreporter.write_line(", ".join(f"{k} {v:,}" for k, v in sorted(totals.items())))
