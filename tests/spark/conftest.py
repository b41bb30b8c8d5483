"""One local[2] SparkSession for the whole test session (starting Spark costs ~10 s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/spark/" in str(item.fspath):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from paimonflow.jobs.session import spark_session

    session = spark_session(master="local[2]", app_name="paimonflow-tests",
                            conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
