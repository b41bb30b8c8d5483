"""Spark's pushed filters (``pyspark.sql.datasource.Filter``) as core predicates, for pruning
partitions and files by statistics. Filters on nested fields or with values the core cannot
compare are skipped (None): Spark applies every filter to the rows anyway."""

from __future__ import annotations

from pyspark.sql import datasource as ds

from paimonflow.core.predicate import Predicate, col

_COMPARE = {
    ds.EqualTo: lambda c, v: c == v,
    ds.GreaterThan: lambda c, v: c > v,
    ds.GreaterThanOrEqual: lambda c, v: c >= v,
    ds.LessThan: lambda c, v: c < v,
    ds.LessThanOrEqual: lambda c, v: c <= v,
}


def to_predicate(spark_filter) -> Predicate | None:
    kind = type(spark_filter)
    if kind is ds.Not:
        inner = to_predicate(spark_filter.child)
        return None if inner is None else ~inner
    attribute = getattr(spark_filter, "attribute", None)
    if attribute is None or len(attribute) != 1:
        return None  # no column (And, Or) or a nested field: not pruned
    name = attribute[0]
    if kind in _COMPARE:
        value = spark_filter.value
        if value is None or isinstance(value, list | dict | tuple):
            return None
        return _COMPARE[kind](col(name), value)
    if kind is ds.In:
        values = [v for v in spark_filter.value if v is not None]
        return col(name).isin(values) if values and len(values) == len(spark_filter.value) else None
    if kind is ds.IsNull:
        return col(name).is_null()
    if kind is ds.IsNotNull:
        return col(name).is_not_null()
    return None
