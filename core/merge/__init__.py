"""Paimon merge engines over Arrow tables, vectorized; every merge of the write buffer, merge-on-read,
compaction and the changelog producers goes through them.

``merge(table, key_columns, spec)`` folds a table sorted by key and sequence into one row per
key, as Paimon's ``deduplicate``, ``first-row``, ``partial-update`` and ``aggregation`` merge
functions do; ``spec_from_options`` builds the spec from table options.
"""

from paimonflow.core.merge.aggregates import AGGREGATE_FUNCTIONS, RETRACTABLE, FieldAggregate
from paimonflow.core.merge.engines import (
    AggregationSpec,
    DeduplicateSpec,
    FirstRowSpec,
    MergeSpec,
    PartialUpdateSpec,
    SequenceGroup,
    aggregation,
    deduplicate,
    first_row,
    merge,
    partial_update,
    spec_from_options,
)

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "RETRACTABLE",
    "AggregationSpec",
    "DeduplicateSpec",
    "FieldAggregate",
    "FirstRowSpec",
    "MergeSpec",
    "PartialUpdateSpec",
    "SequenceGroup",
    "aggregation",
    "deduplicate",
    "first_row",
    "merge",
    "partial_update",
    "spec_from_options",
]
