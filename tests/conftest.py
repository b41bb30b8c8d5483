"""Shared fixtures. Keep this small: fixtures used by one test module live in that module."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.s3server import S3TestServer

# -- Spark: one local[2] session for the whole run (starting Spark costs ~10 s) --------------------


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from paimonflow.jobs.session import spark_session

    session = spark_session(master="local[2]", app_name="paimonflow-tests",
                            conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()

# -- S3: moto's server on 127.0.0.1, requests serialized (tests/s3server.py) ---------------------


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the S3 server carries the ``s3`` marker even if it forgot to say so."""
    for item in items:
        if "s3_test_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.s3)


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
