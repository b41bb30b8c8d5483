"""Partition expiry by partition values (with a pattern and a Java formatter) or update time."""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidOptionError

NOW = datetime(2026, 11, 23, 12, 0).timestamp()


@pytest.fixture
def catalog(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def test_values_time_with_the_default_formatter(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    t = catalog.create_table("db.p", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", "partition.expiration-time": "2 d"})
    t.write(pa.table({"id": [1, 2, 3, 4], "dt": ["2026-11-19", "2026-11-20", "2026-11-22", "not-a-date"]},
                     schema=schema))
    plan = t.expire_partitions(dry_run=True, clock=lambda: NOW)
    assert [p["dt"] for p in plan.expired] == ["2026-11-19", "2026-11-20"] and plan.snapshot_id is None
    assert [p["dt"] for p in plan.unparsable] == ["not-a-date"]  # never dropped by guess
    done = t.expire_partitions(clock=lambda: NOW)
    assert done.snapshot_id is not None
    assert sorted(r["dt"] for r in t.read().to_pylist()) == ["2026-11-22", "not-a-date"]
    assert t.expire_partitions(clock=lambda: NOW).expired == ()


def test_pattern_over_several_fields_and_a_java_formatter(catalog):
    schema = pa.schema([("v", pa.int64()), pa.field("year", pa.int32(), nullable=False),
                        pa.field("md", pa.string(), nullable=False)])
    t = catalog.create_table("db.q", schema, partition_keys=["year", "md"], options={
        "partition.expiration-time": "30 d", "partition.timestamp-pattern": "$year$md",
        "partition.timestamp-formatter": "yyyyMMdd"})
    t.write(pa.table({"v": [1, 2], "year": [2026, 2025], "md": ["1120", "0101"]}, schema=schema))
    done = t.expire_partitions(clock=lambda: NOW)
    assert [(p["year"], p["md"]) for p in done.expired] == [(2025, "0101")]
    assert t.read().column("year").to_pylist() == [2026]


def test_update_time_strategy_and_bad_options(catalog):
    schema = pa.schema([("v", pa.int64()), pa.field("dt", pa.string(), nullable=False)])
    t = catalog.create_table("db.u", schema, partition_keys=["dt"], options={
        "partition.expiration-time": "1 h", "partition.expiration-strategy": "update-time"})
    t.write(pa.table({"v": [1], "dt": ["x"]}, schema=schema))
    assert t.expire_partitions(dry_run=True).expired == ()  # just written
    later = datetime.now().timestamp() + 7200
    assert [p["dt"] for p in t.expire_partitions(clock=lambda: later).expired] == ["x"]
    assert t.read().num_rows == 0
    plain = catalog.create_table("db.none", schema, partition_keys=["dt"])
    plain.write(pa.table({"v": [1], "dt": ["x"]}, schema=schema))
    with pytest.raises(InvalidOptionError, match="expiration-time"):
        plain.expire_partitions()
