"""Paimon's bucket as a Spark expression (jobs/bucket_expr.py) against the core's hash, which the
Java and pypaimon interop tests hold to Paimon's: the same bucket for every value, every integer
type and several keys, and no expression where one would be wrong."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from paimonflow.core.data.bucket import bucket_ids
from paimonflow.jobs.bucket_expr import bucket_expression

TYPES = {"tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64()}


def edge_and_random(dtype: np.dtype, n: int) -> np.ndarray:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(11)
    edges = np.array([0, 1, -1, info.min, info.max, info.min + 1, info.max - 1], dtype=dtype)
    return np.concatenate([edges, rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)])


@pytest.mark.parametrize("buckets", [1, 3, 8, 1000])
def test_the_spark_expression_gives_the_cores_bucket_for_every_integer_type(spark, buckets):
    columns = {name: edge_and_random(np.dtype(t.to_pandas_dtype()), 20_000) for name, t in TYPES.items()}
    arrow = pa.table({f"k_{n}": pa.array(v, TYPES[n]) for n, v in columns.items()})
    df = spark.createDataFrame(arrow.to_pandas())
    for name, t in TYPES.items():
        field = pa.field(f"k_{name}", t, nullable=False)
        expression = bucket_expression([field], dict(df.dtypes), buckets)
        assert expression is not None
        got = np.array([r[0] for r in df.selectExpr(expression).collect()])
        assert np.array_equal(got, bucket_ids([arrow.column(field.name)], buckets)), name
    # a key of several fields: one BinaryRow of all of them
    fields = [pa.field(f"k_{n}", TYPES[n], nullable=False) for n in ("bigint", "int", "tinyint")]
    got = np.array([r[0] for r in df.selectExpr(bucket_expression(fields, dict(df.dtypes), buckets)).collect()])
    assert np.array_equal(got, bucket_ids([arrow.column(f.name) for f in fields], buckets))


def test_keys_it_cannot_express_are_left_to_the_core():
    key = pa.field("id", pa.int64(), nullable=False)
    assert bucket_expression([key], {"id": "bigint"}, 8) is not None
    assert bucket_expression([key.with_nullable(True)], {"id": "bigint"}, 8) is None  # null bits
    assert bucket_expression([key], {"id": "int"}, 8) is None  # the source needs a cast first
    assert bucket_expression([pa.field("s", pa.string(), nullable=False)], {"s": "string"}, 8) is None
    assert bucket_expression([key], {"id": "bigint"}, -1) is None and bucket_expression([], {}, 8) is None


def test_a_key_of_more_than_56_fields_has_the_longer_header(spark):
    """Beyond 56 fields the null bits need a second header word (``binary_row.header_size``)."""
    width = 60
    df = spark.range(-300, 300).selectExpr(*[f"id * {i + 1} as c{i}" for i in range(width)])
    fields = [pa.field(f"c{i}", pa.int64(), nullable=False) for i in range(width)]
    got = np.array([r[0] for r in df.selectExpr(bucket_expression(fields, dict(df.dtypes), 5)).collect()])
    ids = np.arange(-300, 300, dtype=np.int64)
    assert np.array_equal(got, bucket_ids([pa.array(ids * (i + 1)) for i in range(width)], 5))
