"""Merge engines: the worked examples of the design seeds (003, 004), Paimon's delete rules, and
property tests comparing each vectorized engine with a per-record reference fold written here
from the Java ``MergeFunction``/``FieldAggregator`` semantics."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimonflow.core.errors import DataError, InvalidOptionError, UnsupportedError
from paimonflow.core.merge import (
    AggregationSpec,
    DeduplicateSpec,
    FieldAggregate,
    FirstRowSpec,
    PartialUpdateSpec,
    SequenceGroup,
    merge,
    spec_from_options,
)

SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
INS, UB, UA, D = 0, 1, 2, 3


def kv_table(fields: Sequence[tuple[str, pa.DataType]], rows: Sequence[tuple[Any, ...]],
             kinds: Sequence[int] | None = None) -> pa.Table:
    """Rows in arrival order (sequence = position), sorted by the first field (the key), stably."""
    kinds = list(kinds) if kinds is not None else [INS] * len(rows)
    order = sorted(range(len(rows)), key=lambda i: rows[i][0])
    columns = {name: pa.array([rows[i][c] for i in order], type_) for c, (name, type_) in enumerate(fields)}
    columns[SEQ] = pa.array(order, pa.int64())
    columns[KIND] = pa.array([kinds[i] for i in order], pa.int8())
    return pa.table(columns)


def values(table: pa.Table) -> list[tuple[Any, ...]]:
    names = [n for n in table.column_names if n not in (SEQ, KIND)]
    return [tuple(row[n] for n in names) for row in table.to_pylist()]


# -- worked examples of the seeds ----------------------------------------------------------------


def test_aggregation_example_max_and_sum() -> None:
    table = kv_table([("product_id", pa.int64()), ("price", pa.float64()), ("sales", pa.int64())],
                     [(1, 23.0, 15), (1, 30.2, 20)])
    spec = spec_from_options({"merge-engine": "aggregation", "fields.price.aggregate-function": "max",
                              "fields.sales.aggregate-function": "sum"})
    merged = merge(table, ["product_id"], spec)
    assert values(merged) == [(1, 30.2, 35)]
    assert merged.column(KIND).to_pylist() == [INS]
    assert merged.column(SEQ).to_pylist() == [1]


def test_partial_update_example_null_skipping() -> None:
    table = kv_table([("k", pa.int32()), ("price", pa.float64()), ("n", pa.int32()), ("text", pa.string())],
                     [(1, 23.0, 10, None), (1, None, None, "This is a book"), (1, 25.2, None, None)])
    merged = merge(table, ["k"], spec_from_options({"merge-engine": "partial-update"}))
    assert values(merged) == [(1, 25.2, 10, "This is a book")]
    assert merged.column(KIND).to_pylist() == [INS]
    assert merged.column(SEQ).to_pylist() == [2]


def test_partial_update_unset_fields_stay_null_or_take_default() -> None:
    fields = [("k", pa.int32()), ("a", pa.int32()), ("b", pa.int32()), ("c", pa.int32())]
    table = kv_table(fields, [(1, 1, None, None), (1, None, None, 1)])
    assert values(merge(table, ["k"], spec_from_options({"merge-engine": "partial-update"}))) == [(1, 1, None, 1)]
    with_default = spec_from_options({"merge-engine": "partial-update", "fields.b.default-value": "0"})
    assert values(merge(table, ["k"], with_default)) == [(1, 1, 0, 1)]


SG_FIELDS = [("k", pa.int32()), ("a", pa.int32()), ("b", pa.int32()), ("g_1", pa.int32()),
             ("c", pa.int32()), ("d", pa.int32()), ("g_2", pa.int32())]


def test_sequence_group_example() -> None:
    spec = spec_from_options({"merge-engine": "partial-update", "fields.g_1.sequence-group": "a,b",
                              "fields.g_2.sequence-group": "c,d"})
    rows = [(1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, None)]
    assert values(merge(kv_table(SG_FIELDS, rows), ["k"], spec)) == [(1, 2, 2, 2, 1, 1, 1)]
    rows.append((1, 3, 3, 1, 3, 3, 3))
    assert values(merge(kv_table(SG_FIELDS, rows), ["k"], spec)) == [(1, 2, 2, 2, 3, 3, 3)]


def test_multi_field_sequence_group_example() -> None:
    fields = [*SG_FIELDS, ("g_3", pa.int32())]
    spec = spec_from_options({"merge-engine": "partial-update", "fields.g_1.sequence-group": "a,b",
                              "fields.g_2,g_3.sequence-group": "c,d"})
    assert spec == PartialUpdateSpec(sequence_groups=(
        SequenceGroup(sequence_fields=("g_1",), fields=("a", "b")),
        SequenceGroup(sequence_fields=("g_2", "g_3"), fields=("c", "d"))))
    rows = [(1, 1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, 1, None)]
    assert values(merge(kv_table(fields, rows), ["k"], spec)) == [(1, 2, 2, 2, 1, 1, 1, 1)]
    rows.append((1, 3, 3, 1, 3, 3, 3, 1))
    assert values(merge(kv_table(fields, rows), ["k"], spec)) == [(1, 2, 2, 2, 3, 3, 3, 1)]


def test_sequence_group_takes_nulls_from_the_winning_record() -> None:
    spec = PartialUpdateSpec(sequence_groups=(SequenceGroup(sequence_fields=("g_1",), fields=("a", "b")),))
    rows = [(1, 1, 1, 1, 5, 5, 5), (1, None, 7, 2, None, 6, 6)]
    assert values(merge(kv_table(SG_FIELDS, rows), ["k"], spec)) == [(1, None, 7, 2, 5, 6, 6)]


def test_partial_update_with_aggregate_functions_example() -> None:
    fields = [("k", pa.int32()), ("a", pa.int32()), ("b", pa.int32()), ("c", pa.int32()), ("d", pa.int32())]
    spec = spec_from_options({"merge-engine": "partial-update", "fields.a.sequence-group": "b",
                              "fields.b.aggregate-function": "first_value", "fields.c.sequence-group": "d",
                              "fields.d.aggregate-function": "sum"})
    rows = [(1, 1, 1, None, None), (1, None, None, 1, 1), (1, 2, 2, None, None), (1, None, None, 2, 2)]
    assert values(merge(kv_table(fields, rows), ["k"], spec)) == [(1, 2, 1, 2, 3)]


def test_partial_update_aggregate_needs_a_sequence_group_and_a_supported_function() -> None:
    table = kv_table([("k", pa.int32()), ("a", pa.int32()), ("b", pa.int32())], [(1, 1, 1)])
    with pytest.raises(InvalidOptionError, match="sequence group"):
        merge(table, ["k"], spec_from_options({"merge-engine": "partial-update",
                                               "fields.b.aggregate-function": "sum"}))
    with pytest.raises(UnsupportedError):
        merge(table, ["k"], spec_from_options({"merge-engine": "partial-update", "fields.a.sequence-group": "b",
                                               "fields.b.aggregate-function": "listagg"}))
    with pytest.raises(UnsupportedError):
        spec_from_options({"merge-engine": "partial-update", "fields.default-aggregate-function": "sum"})


def test_first_row_keeps_the_first_record() -> None:
    table = kv_table([("k", pa.int32()), ("v", pa.string())], [(1, "a"), (2, "x"), (1, "b"), (1, "c")],
                     kinds=[INS, UA, UA, INS])
    merged = merge(table, ["k"], spec_from_options({"merge-engine": "first-row"}))
    assert values(merged) == [(1, "a"), (2, "x")]
    assert merged.column(KIND).to_pylist() == [INS, UA]
    assert merged.column(SEQ).to_pylist() == [0, 1]


def test_first_row_rejects_retractions_unless_ignore_delete() -> None:
    table = kv_table([("k", pa.int32()), ("v", pa.string())], [(1, "a"), (1, "a"), (2, "b")], kinds=[INS, D, UB])
    with pytest.raises(DataError, match="ignore-delete"):
        merge(table, ["k"], FirstRowSpec())
    merged = merge(table, ["k"], spec_from_options({"merge-engine": "first-row", "ignore-delete": "true"}))
    assert values(merged) == [(1, "a")]


def test_deduplicate_delete_removes_the_key_or_is_kept_as_minus_d() -> None:
    table = kv_table([("k", pa.int32()), ("v", pa.string())], [(1, "a"), (2, "b"), (1, "a"), (2, "c")],
                     kinds=[INS, INS, D, UA])
    assert values(merge(table, ["k"], DeduplicateSpec())) == [(2, "c")]
    kept = merge(table, ["k"], DeduplicateSpec(keep_deletes=True))
    assert values(kept) == [(1, "a"), (2, "c")]
    assert kept.column(KIND).to_pylist() == [D, UA]
    assert values(merge(table, ["k"], DeduplicateSpec(ignore_delete=True))) == [(1, "a"), (2, "c")]


def test_partial_update_delete_rules() -> None:
    fields = [("k", pa.int32()), ("a", pa.int32()), ("b", pa.int32())]
    table = kv_table(fields, [(1, 1, 1), (1, 1, 1), (1, 5, None), (2, 2, 2), (2, 2, 2), (3, 3, 3), (3, 3, 3)],
                     kinds=[INS, D, INS, INS, D, INS, UB])
    with pytest.raises(DataError, match="remove-record-on-delete"):
        merge(table, ["k"], PartialUpdateSpec())
    spec = spec_from_options({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    assert values(merge(table, ["k"], spec)) == [(1, 5, None), (3, 3, 3)]
    kept = merge(table, ["k"], PartialUpdateSpec(remove_record_on_delete=True, keep_deletes=True))
    assert values(kept) == [(1, 5, None), (2, 2, 2), (3, 3, 3)]  # a removed row keeps the -D's values
    assert kept.column(KIND).to_pylist() == [INS, D, INS]
    assert kept.column(SEQ).to_pylist() == [2, 4, 6]
    ignored = merge(table, ["k"], PartialUpdateSpec(ignore_delete=True))
    assert values(ignored) == [(1, 5, 1), (2, 2, 2), (3, 3, 3)]


def test_aggregation_retraction_and_ignore_retract() -> None:
    fields = [("k", pa.int32()), ("s", pa.int64()), ("m", pa.int64())]
    table = kv_table(fields, [(1, 10, 10), (1, 4, 4), (1, 3, 3)], kinds=[INS, UB, UA])
    with pytest.raises(DataError, match="ignore-retract"):
        merge(table, ["k"], AggregationSpec(aggregates={"s": FieldAggregate(function="sum"),
                                                        "m": FieldAggregate(function="max")}))
    spec = spec_from_options({"merge-engine": "aggregation", "fields.s.aggregate-function": "sum",
                              "fields.m.aggregate-function": "max", "fields.m.ignore-retract": "true"})
    merged = merge(table, ["k"], spec)
    assert values(merged) == [(1, 9, 10)]
    assert merged.column(KIND).to_pylist() == [INS]


def test_aggregation_functions_on_one_key() -> None:
    fields = [("k", pa.int32()), ("cnt", pa.int64()), ("p", pa.int32()), ("l", pa.string()),
              ("ba", pa.bool_()), ("bo", pa.bool_()), ("fv", pa.int32()), ("fnn", pa.int32()),
              ("lv", pa.int32()), ("lnn", pa.int32()), ("mn", pa.string())]
    rows = [(1, 7, 2, "a", True, False, None, None, 1, 1, "b"),
            (1, None, 3, " ", None, None, 5, 5, 2, None, "a"),
            (1, 1, None, "c", False, True, 6, 6, None, None, None)]
    options = {"merge-engine": "aggregation", "fields.default-aggregate-function": "last_value",
               "fields.cnt.aggregate-function": "count", "fields.p.aggregate-function": "product",
               "fields.l.aggregate-function": "listagg", "fields.l.list-agg-delimiter": "|",
               "fields.ba.aggregate-function": "bool_and", "fields.bo.aggregate-function": "bool_or",
               "fields.fv.aggregate-function": "first_value", "fields.fnn.aggregate-function": "first_non_null_value",
               "fields.lnn.aggregate-function": "last_non_null_value", "fields.mn.aggregate-function": "min"}
    merged = merge(kv_table(fields, rows), ["k"], spec_from_options(options))
    assert values(merged) == [(1, 2, 6, "a|c", False, True, None, 5, None, 1, "a")]


def test_unknown_aggregate_function_is_rejected() -> None:
    with pytest.raises(InvalidOptionError):
        spec_from_options({"merge-engine": "aggregation", "fields.x.aggregate-function": "median"})


# -- property tests against per-record reference folds -------------------------------------------


def _retract(kind: int) -> bool:
    return kind in (UB, D)


def _java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _ref_agg(function: str, acc: Any, value: Any, retract: bool, state: dict[str, bool],
             delimiter: str = ",") -> Any:
    """One record of Paimon's FieldAggregator.agg / retract."""
    if retract:
        if function == "sum":
            return (-value if value is not None else None) if acc is None else (acc if value is None else acc - value)
        if function == "product":
            return value if acc is None else (acc if value is None else _java_div(acc, value))
        if function == "count":
            return 1 if acc is None else (acc if value is None else acc - 1)
        if function == "last_value":
            return None
        if function == "last_non_null_value":
            return None if value is not None else acc
        raise DataError("no retract")
    if function in ("sum", "product", "max", "min", "bool_and", "bool_or"):
        if acc is None or value is None:
            return value if acc is None else acc
        return {"sum": lambda: acc + value, "product": lambda: acc * value, "max": lambda: max(acc, value),
                "min": lambda: min(acc, value), "bool_and": lambda: acc and value,
                "bool_or": lambda: acc or value}[function]()
    if function == "count":
        return 1 if acc is None else (acc if value is None else acc + 1)
    if function == "last_value":
        return value
    if function == "last_non_null_value":
        return value if value is not None else acc
    if function == "first_value":
        if state.get("init"):
            return acc
        state["init"] = True
        return value
    if function == "first_non_null_value":
        if not state.get("init") and value is not None:
            state["init"] = True
            return value
        return acc
    if function == "listagg":
        if value is None or not value.strip():
            return acc
        return value if acc is None or not acc.strip() else acc + delimiter + value
    raise AssertionError(function)


def _by_key(rows: list[tuple[int, int, Any]]) -> dict[int, list[tuple[int, int, Any]]]:
    """Records (seq, kind, value) per key, in arrival order."""
    grouped: dict[int, list[tuple[int, int, Any]]] = {}
    for seq, (key, kind, value) in enumerate(rows):
        grouped.setdefault(key, []).append((seq, kind, value))
    return dict(sorted(grouped.items()))


def _run(rows: list[tuple[int, int, Any]], type_: pa.DataType, spec: Any) -> list[tuple[int, int, int, Any]]:
    table = kv_table([("k", pa.int32()), ("v", type_)], [(k, v) for k, _, v in rows], [kind for _, kind, _ in rows])
    merged = merge(table, ["k"], spec)
    return [(r["k"], r[SEQ], r[KIND], r["v"]) for r in merged.to_pylist()]


def _expect(reference: Callable[[], list[tuple[int, int, int, Any]]]) -> Any:
    try:
        return reference()
    except DataError:
        return DataError


def _actual(run: Callable[[], list[tuple[int, int, int, Any]]]) -> Any:
    try:
        return run()
    except DataError:
        return DataError


record = st.tuples(st.integers(0, 3), st.sampled_from([INS, INS, UA, UB, D]), st.none() | st.integers(-3, 3))
records = st.lists(record, max_size=25)


@settings(max_examples=150, deadline=None)
@given(records, st.booleans(), st.booleans())
def test_deduplicate_matches_reference(rows: list[tuple[int, int, Any]], ignore_delete: bool,
                                       keep_deletes: bool) -> None:
    def reference() -> list[tuple[int, int, int, Any]]:
        out = []
        for key, recs in _by_key(rows).items():
            latest = None
            for rec in recs:
                if not (ignore_delete and _retract(rec[1])):
                    latest = rec
            if latest is not None and (keep_deletes or not _retract(latest[1])):
                out.append((key, *latest))
        return out

    spec = DeduplicateSpec(ignore_delete=ignore_delete, keep_deletes=keep_deletes)
    assert _run(rows, pa.int64(), spec) == reference()


@settings(max_examples=150, deadline=None)
@given(records, st.booleans())
def test_first_row_matches_reference(rows: list[tuple[int, int, Any]], ignore_delete: bool) -> None:
    def reference() -> list[tuple[int, int, int, Any]]:
        out = []
        for key, recs in _by_key(rows).items():
            first = None
            for rec in recs:
                if _retract(rec[1]):
                    if not ignore_delete:
                        raise DataError("retract")
                    continue
                first = first or rec
            if first is not None:
                out.append((key, *first))
        return out

    spec = FirstRowSpec(ignore_delete=ignore_delete)
    assert _actual(lambda: _run(rows, pa.int64(), spec)) == _expect(reference)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([INS, UA, UB, D]), st.none() | st.integers(-3, 3),
                          st.none() | st.integers(0, 3), st.none() | st.integers(-3, 3)), max_size=25),
       st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans(),
       st.sampled_from([None, "sum", "max", "first_value"]), st.booleans())
def test_partial_update_matches_reference(rows: list[tuple[Any, ...]], ignore_delete: bool, remove_on_delete: bool,
                                          keep_deletes: bool, with_group: bool, with_default: bool,
                                          function: str | None, inserts_only: bool) -> None:
    check_partial_update(rows, ignore_delete, remove_on_delete, keep_deletes, with_group, with_default, function,
                         inserts_only)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from([INS, INS, UA, UB, D]), st.none() | st.integers(-3, 3),
                          st.none() | st.integers(0, 2), st.none() | st.integers(-3, 3)), max_size=12),
       st.sampled_from([None, "sum", "max", "first_value"]), st.booleans(), st.booleans())
def test_partial_update_sequence_group_matches_reference(rows: list[tuple[Any, ...]], function: str | None,
                                                         inserts_only: bool, keep_deletes: bool) -> None:
    check_partial_update(rows, False, False, keep_deletes, True, False, function, inserts_only)


def check_partial_update(rows: list[tuple[Any, ...]], ignore_delete: bool, remove_on_delete: bool,
                         keep_deletes: bool, with_group: bool, with_default: bool,
                         function: str | None, inserts_only: bool) -> None:
    """The vectorized partial-update against a per-record fold of Paimon's rules."""
    if inserts_only:
        rows = [(key, INS, *rest) for key, _, *rest in rows]
    groups = (SequenceGroup(sequence_fields=("g",), fields=("b",)),) if with_group else ()
    defaults = {"a": "9"} if with_default else {}
    function = function if with_group else None
    aggregates = {"b": FieldAggregate(function=function)} if function else {}
    spec = PartialUpdateSpec(ignore_delete=ignore_delete, remove_record_on_delete=remove_on_delete,
                             keep_deletes=keep_deletes, sequence_groups=groups, default_values=defaults,
                             aggregates=aggregates)

    def reference() -> list[tuple[Any, ...]]:
        out = []
        grouped: dict[int, list[tuple[Any, ...]]] = {}
        for seq, (key, kind, a, g, b) in enumerate(rows):
            grouped.setdefault(key, []).append((seq, kind, a, g, b))
        if with_group and remove_on_delete:
            raise InvalidOptionError("remove-record-on-delete", "true", "with sequence groups")
        for key, recs in sorted(grouped.items()):
            if len(recs) == 1 and _retract(recs[0][1]):
                # Paimon's ReducerMergeFunctionWrapper: a lone retraction is not merged, but it
                # must still be one the engine accepts
                seq, kind, a, g, b = recs[0]
                if ignore_delete:
                    continue
                if with_group and function is not None:
                    raise UnsupportedError("aggregate retract")
                if not with_group and not remove_on_delete:
                    raise DataError("retract")
                if keep_deletes:
                    out.append((key, seq, kind, a, g, b))
                continue
            row: dict[str, Any] = {"a": None, "g": None, "b": None}
            state: dict[str, bool] = {}
            latest_seq, deleted, met_insert, any_seen = 0, False, False, False
            for seq, kind, a, g, b in recs:
                if _retract(kind):
                    if ignore_delete:
                        continue
                    if with_group:
                        if function is not None:
                            raise UnsupportedError("aggregate retract")
                        latest_seq = seq
                        any_seen = True
                        if g is not None and (row["g"] is None or g >= row["g"]):
                            row["g"], row["b"] = g, None
                        continue
                    if not remove_on_delete:
                        raise DataError("retract")
                    any_seen, latest_seq = True, seq
                    if kind == D:
                        # the removed row is the -D's own values (Paimon's initRow), so its
                        # sequence field still ranks it in later merges
                        deleted, met_insert = True, False
                        row = {"a": a, "g": g, "b": b}
                    continue
                if deleted:  # records after the -D start the row afresh
                    row = {"a": None, "g": None, "b": None}
                any_seen, latest_seq, deleted, met_insert = True, seq, False, True
                if a is not None:
                    row["a"] = a
                if with_group and function is not None:
                    if g is not None:
                        newer = row["g"] is None or g >= row["g"]
                        if function == "first_value":
                            if not newer or not state.get("init"):
                                row["b"] = b
                            state["init"] = True
                        else:
                            row["b"] = _ref_agg(function, row["b"], b, False, {})
                        if newer:
                            row["g"] = g
                elif with_group:
                    if g is not None and (row["g"] is None or g >= row["g"]):
                        row["g"], row["b"] = g, b
                else:
                    for name, value in (("g", g), ("b", b)):
                        if value is not None:
                            row[name] = value
            if not any_seen:
                continue
            is_delete = deleted or not met_insert
            if is_delete and not keep_deletes:
                continue
            if is_delete:
                # a merged -D's values are null, except a sequence group's sequence field (a key
                # removed by a -D under remove-record-on-delete keeps the -D's values instead)
                if not deleted:
                    row = {"a": None, "g": row["g"] if with_group else None, "b": None}
            elif with_default and row["a"] is None:
                row["a"] = 9
            out.append((key, latest_seq, D if is_delete else INS, row["a"], row["g"], row["b"]))
        return out

    fields = [("k", pa.int32()), ("a", pa.int32()), ("g", pa.int32()), ("b", pa.int32())]
    try:
        expected: Any = reference()
    except (DataError, UnsupportedError, InvalidOptionError) as exc:
        expected = type(exc)
    try:
        table = kv_table(fields, [(k, a, g, b) for k, _, a, g, b in rows], [kind for _, kind, *_ in rows])
        merged = merge(table, ["k"], spec)
        actual: Any = [(r["k"], r[SEQ], r[KIND], r["a"], r["g"], r["b"]) for r in merged.to_pylist()]
    except (DataError, UnsupportedError, InvalidOptionError) as exc:
        actual = type(exc)
    assert actual == expected


AGG_CASES = {
    "sum": (pa.int64(), st.none() | st.integers(-3, 3)),
    "product": (pa.int64(), st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3])),
    "count": (pa.int64(), st.none() | st.integers(-3, 3)),
    "max": (pa.int64(), st.none() | st.integers(-3, 3)),
    "min": (pa.string(), st.none() | st.sampled_from(["a", "b", "c"])),
    "last_value": (pa.int64(), st.none() | st.integers(-3, 3)),
    "last_non_null_value": (pa.int64(), st.none() | st.integers(-3, 3)),
    "first_value": (pa.int64(), st.none() | st.integers(-3, 3)),
    "first_non_null_value": (pa.int64(), st.none() | st.integers(-3, 3)),
    "bool_and": (pa.bool_(), st.none() | st.booleans()),
    "bool_or": (pa.bool_(), st.none() | st.booleans()),
    "listagg": (pa.string(), st.none() | st.sampled_from(["x", "y", "", " "])),
}


REMOVE_ON_DELETE_EXACT = frozenset({"sum", "product", "max", "min", "last_value", "last_non_null_value", "bool_and",
                                    "bool_or"})


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_aggregation_matches_reference(data: st.DataObject) -> None:
    function = data.draw(st.sampled_from(sorted(AGG_CASES)))
    type_, value_strategy = AGG_CASES[function]
    rows = data.draw(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([INS, UA, UB, D, INS]), value_strategy),
                              max_size=20))
    ignore_retract = data.draw(st.booleans())
    # aggregation.remove-record-on-delete, where the vectorized restart equals Java's (see AggregationSpec)
    remove_on_delete = function in REMOVE_ON_DELETE_EXACT and data.draw(st.booleans())
    spec = AggregationSpec(aggregates={"v": FieldAggregate(function=function, ignore_retract=ignore_retract,
                                                           delimiter=";")},
                           remove_record_on_delete=remove_on_delete)

    def reference() -> list[tuple[int, int, int, Any]]:
        out = []
        for key, recs in _by_key(rows).items():
            if len(recs) == 1 and _retract(recs[0][1]):
                if not ignore_retract and not (remove_on_delete and recs[0][1] == D):
                    _ref_agg(function, None, recs[0][2], True, {}, ";")  # the function must retract
                continue  # a lone retraction passes unmerged (ReducerMergeFunctionWrapper); readers drop it
            acc: Any = None
            state: dict[str, bool] = {}
            deleted = False
            for _, kind, value in recs:
                deleted = remove_on_delete and kind == D
                if deleted:  # Java: the row becomes the -D's values, the merged kind -D
                    acc = value
                    continue
                if ignore_retract and _retract(kind):
                    continue
                acc = _ref_agg(function, acc, value, _retract(kind), state, ";")
            if not deleted:
                out.append((key, recs[-1][0], INS, acc))
        return out

    assert _actual(lambda: _run(rows, type_, spec)) == _expect(reference)


def _sequence_key(values: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    """Paimon's order of sequence tuples: field by field, null smallest."""
    return tuple((0, 0) if v is None else (1, v) for v in values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from([INS, INS, UA, UB, D]),
                          st.none() | st.integers(0, 1), st.none() | st.integers(0, 1),
                          st.none() | st.integers(-3, 3), st.none() | st.integers(-3, 3)), max_size=12))
def test_multi_field_sequence_group_matches_reference(rows: list[tuple[Any, ...]]) -> None:
    fields = [("k", pa.int32()), ("g1", pa.int32()), ("g2", pa.int32()), ("b", pa.int32()), ("x", pa.int32())]
    spec = PartialUpdateSpec(sequence_groups=(SequenceGroup(sequence_fields=("g1", "g2"), fields=("b",)),),
                             keep_deletes=True)
    expected = []
    grouped: dict[int, list[tuple[Any, ...]]] = {}
    for seq, (key, kind, *rest) in enumerate(rows):
        grouped.setdefault(key, []).append((seq, kind, *rest))
    for key, recs in sorted(grouped.items()):
        if len(recs) == 1 and _retract(recs[0][1]):
            expected.append((key, *recs[0]))  # a lone retraction passes unmerged, kept with keep_deletes
            continue
        row: dict[str, Any] = {"g1": None, "g2": None, "b": None, "x": None}
        met_insert = False
        for _, kind, g1, g2, b, x in recs:
            newer = (g1, g2) != (None, None) and (
                _sequence_key((g1, g2)) >= _sequence_key((row["g1"], row["g2"])))
            if _retract(kind):
                if newer:
                    row.update(g1=g1, g2=g2, b=None)
                continue
            met_insert = True
            if newer:
                row.update(g1=g1, g2=g2, b=b)
            if x is not None:
                row["x"] = x
        if not met_insert:
            row = {"g1": row["g1"], "g2": row["g2"], "b": None, "x": None}
        expected.append((key, recs[-1][0], INS if met_insert else D, row["g1"], row["g2"], row["b"], row["x"]))
    table = kv_table(fields, [(k, *rest) for k, _, *rest in rows], [kind for _, kind, *_ in rows])
    merged = merge(table, ["k"], spec)
    assert [(r["k"], r[SEQ], r[KIND], r["g1"], r["g2"], r["b"], r["x"]) for r in merged.to_pylist()] == expected


def test_aggregation_decimal_sum_dates_and_composite_keys() -> None:
    fields = [("k1", pa.int32()), ("k2", pa.string()), ("amount", pa.decimal128(10, 2)), ("day", pa.date32())]
    rows = [(1, "a", Decimal("1.10"), dt.date(2026, 1, 2)), (1, "b", Decimal("5.00"), None),
            (1, "a", Decimal("2.25"), dt.date(2026, 1, 1)), (1, "a", Decimal("0.10"), dt.date(2026, 3, 1))]
    table = kv_table(fields, rows, kinds=[INS, INS, INS, UB])
    spec = spec_from_options({"merge-engine": "aggregation", "fields.amount.aggregate-function": "sum",
                              "fields.day.aggregate-function": "min", "fields.day.ignore-retract": "true"})
    merged = merge(table.sort_by([("k1", "ascending"), ("k2", "ascending"), (SEQ, "ascending")]), ["k1", "k2"], spec)
    assert values(merged) == [(1, "a", Decimal("3.25"), dt.date(2026, 1, 1)), (1, "b", Decimal("5.00"), None)]
    assert merged.schema == table.schema


def test_empty_input_and_legacy_ignore_delete_key() -> None:
    table = kv_table([("k", pa.int32()), ("v", pa.int64())], [])
    for options in ({}, {"merge-engine": "first-row"}, {"merge-engine": "partial-update"},
                    {"merge-engine": "aggregation"}):
        assert merge(table, ["k"], spec_from_options(options)).num_rows == 0
    assert spec_from_options({"first-row.ignore-delete": "true", "merge-engine": "first-row"}) == \
        FirstRowSpec(ignore_delete=True)
    with pytest.raises(InvalidOptionError):
        spec_from_options({"merge-engine": "replace"})
    with pytest.raises(InvalidOptionError):
        spec_from_options({"ignore-delete": "yes"})


# -- partition fields are carried, never merged ----------------------------------------------------
#
# A primary key holding the partition field (pk (p, k), partitioned by p) is merged on the trimmed
# key k; p must still come through every merge as it is (Java gives primary-key fields
# FieldPrimaryKeyAgg; a partition field outside the key holds one value per bucket merge).


def test_merge_carries_partition_columns_like_the_key() -> None:
    fields = [("p", pa.string()), ("k", pa.int32()), ("v", pa.int64())]
    rows = [("x", 1, 5), ("x", 1, 2), ("x", 2, 7), ("x", 2, 7)]
    table = kv_table(fields[1:], [r[1:] for r in rows], kinds=[INS, D, INS, D])
    table = table.add_column(0, pa.field("p", pa.string(), nullable=False), pa.array(["x"] * 4))
    table = table.cast(table.schema.set(1, pa.field("k", pa.int32(), nullable=False)))
    aggregation = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}
    cases = [
        (aggregation, False, [("x", 1, 3, INS), ("x", 2, 0, INS)]),
        ({**aggregation, "aggregation.remove-record-on-delete": "true"}, True, [("x", 1, 2, D), ("x", 2, 7, D)]),
        ({**aggregation, "fields.default-aggregate-function": "sum"}, False, [("x", 1, 3, INS), ("x", 2, 0, INS)]),
        ({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, True,
         [("x", 1, 2, D), ("x", 2, 7, D)]),  # a removed row is the -D's values, as in aggregation
        ({"merge-engine": "first-row", "ignore-delete": "true"}, False, [("x", 1, 5, INS), ("x", 2, 7, INS)]),
    ]
    for options, keep_deletes, expected in cases:
        merged = merge(table, ["k"], spec_from_options(options, keep_deletes=keep_deletes), partition_columns=["p"])
        assert merged.schema == table.schema
        assert [(r["p"], r["k"], r["v"], r[KIND]) for r in merged.to_pylist()] == expected, options


PARTITIONED = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int32(), nullable=False),
                         ("v", pa.int64()), ("g", pa.int32())])
PRow = tuple[str, str, int, Any, Any]  # (row kind, p, k, v, g)

AGG_SUM = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}
PARTITION_CASES: dict[str, tuple[dict[str, str], list[list[PRow]], list[tuple[Any, ...]]]] = {
    # Java: {x, 1, 3}; paimonflow nulled p ("Column 'p' is declared non-nullable but contains nulls")
    "aggregation sum": (AGG_SUM, [[("+I", "x", 1, 5, None)], [("-D", "x", 1, 2, None)]], [("x", 1, 3, None)]),
    "aggregation remove-record-on-delete": (
        {**AGG_SUM, "aggregation.remove-record-on-delete": "true"},
        [[("+I", "x", 1, 5, None), ("+I", "y", 2, 1, None)], [("-D", "x", 1, 5, None)]], [("y", 2, 1, None)]),
    "aggregation ignore-retract": (
        {"merge-engine": "aggregation", "fields.v.aggregate-function": "max", "fields.v.ignore-retract": "true",
         "fields.g.aggregate-function": "sum"},
        [[("+I", "x", 1, 5, 1)], [("+I", "x", 1, 3, 1), ("-U", "x", 1, 7, 1)]], [("x", 1, 5, 1)]),
    "aggregation default function sum": (  # p is a string: sum would refuse it
        {"merge-engine": "aggregation", "fields.default-aggregate-function": "sum"},
        [[("+I", "x", 1, 5, 1)], [("+I", "x", 1, 2, None), ("-U", "x", 1, 1, 1)]], [("x", 1, 6, 0)]),
    "partial-update remove-record-on-delete": (
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
        [[("+I", "x", 1, 5, 1), ("+I", "x", 2, 6, 1)],
         [("+U", "x", 1, 7, 1), ("-D", "x", 1, 7, 1), ("+I", "x", 2, None, 2)]],
        [("x", 2, 6, 2)]),
    "partial-update sequence group": (
        {"merge-engine": "partial-update", "fields.g.sequence-group": "v"},
        [[("+I", "x", 1, 5, 1)], [("-U", "x", 1, 5, 2), ("-D", "x", 1, 5, 3)]], [("x", 1, None, 3)]),
    "first-row": (
        {"merge-engine": "first-row", "ignore-delete": "true"},
        [[("+I", "x", 1, 5, 1)], [("-D", "x", 1, 5, 1), ("+I", "x", 1, 6, 2)]], [("x", 1, 5, 1)]),
    "deduplicate": (
        {"merge-engine": "deduplicate"},
        [[("+I", "x", 1, 5, 1), ("+I", "x", 2, 5, 1)], [("-D", "x", 1, 5, 1), ("+U", "x", 2, 6, 2)]],
        [("x", 2, 6, 2)]),
}


def _partitioned(tmp_path: Any, options: dict[str, str], *, key_has_partition: bool = True) -> Any:
    from paimonflow.core import Catalog

    catalog = Catalog(str(tmp_path / "warehouse"))
    catalog.create_database("db")
    if key_has_partition:
        return catalog.create_table("db.t", PARTITIONED, primary_keys=["p", "k"], partition_keys=["p"],
                                    options={"bucket": "1", **options})
    # a partition field outside the key: cross-partition updates, dynamic buckets
    schema = PARTITIONED.set(0, pa.field("p", pa.string()))
    return catalog.create_table("db.t", schema, primary_keys=["k"], partition_keys=["p"],
                                options={"bucket": "-1", **options})


def _write_rows(table: Any, rows: list[PRow]) -> None:
    data = pa.table({name: [r[i + 1] for r in rows] for i, name in enumerate(PARTITIONED.names)},
                    schema=table.arrow_schema)
    table.write(data, row_kinds=pa.array([r[0] for r in rows]))


def _partitioned_rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.read().to_pylist())


@pytest.mark.parametrize("key_has_partition", [True, False], ids=["pk (p, k)", "pk (k)"])
@pytest.mark.parametrize("how", ["one commit", "a commit each", "full compaction"])
@pytest.mark.parametrize("case", sorted(PARTITION_CASES))
def test_partition_field_survives_the_merge(tmp_path: Any, case: str, how: str, key_has_partition: bool) -> None:
    """Write-buffer merge (one commit), merge-on-read (a commit each) and compaction (full)."""
    options, batches, expected = PARTITION_CASES[case]
    if options["merge-engine"] != "first-row":  # first-row reads only what compaction moved above level 0
        options = {**options, "write-only": "true"}  # merges on read, not in the writer's compactions
    table = _partitioned(tmp_path, options, key_has_partition=key_has_partition)
    if how == "one commit":
        _write_rows(table, [r for batch in batches for r in batch])
    else:
        for batch in batches:
            _write_rows(table, batch)
    if how == "full compaction":
        table.compact(full=True)
    assert _partitioned_rows(table) == expected


@pytest.mark.parametrize("options", [
    {"deletion-vectors.enabled": "true"},
    {"changelog-producer": "lookup"},
    {"changelog-producer": "full-compaction"},
    {"write-buffer-size": "1kb", "write-buffer-spillable": "true"},
], ids=["deletion vectors", "lookup changelog", "full-compaction changelog", "spilled write buffer"])
@pytest.mark.parametrize("case", ["aggregation sum", "partial-update sequence group"])
def test_partition_field_survives_every_merge_path(tmp_path: Any, case: str, options: dict[str, str]) -> None:
    engine_options, batches, expected = PARTITION_CASES[case]
    table = _partitioned(tmp_path, {**engine_options, **options})
    many = [("+I", "x", 100 + i, i, 1) for i in range(100)]  # enough rows to spill a 1 kb buffer
    for batch in batches:
        rows = [*many, *batch]
        data = pa.table({name: [r[i + 1] for r in rows] for i, name in enumerate(PARTITIONED.names)},
                        schema=PARTITIONED)
        table.write(data.to_batches(max_chunksize=10), row_kinds=pa.array([r[0] for r in rows]))
    table.compact(full=True)
    assert [r for r in _partitioned_rows(table) if r[1] < 100] == expected
    assert set(table.read().column("p").to_pylist()) == {"x"}
    if "changelog-producer" in options:
        changes = table.read_changes(0, table.latest_snapshot().id, mode="changelog")
        assert changes.num_rows and set(changes.column("p").to_pylist()) == {"x"}


def test_aggregation_takes_the_newest_sequence_field_whatever_the_default_function(tmp_path: Any) -> None:
    """Paimon aggregates no sequence field: it takes last_value (AggregateMergeFunction.Factory),
    so a default 'sum' neither adds the sequence numbers up nor keeps an older one."""
    from paimonflow.core import Catalog

    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.int64()), ("sq", pa.int32())])
    catalog = Catalog(str(tmp_path / "warehouse"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.default-aggregate-function": "sum",
        "sequence.field": "sq"})
    table.write(pa.table({"k": [1, 1], "v": [5, 3], "sq": [2, 1]}, schema=schema))
    assert table.read().to_pylist() == [{"k": 1, "v": 8, "sq": 2}]
    table.write(pa.table({"k": [1], "v": [1], "sq": [2]}, schema=schema), row_kinds="-U")
    assert table.read().to_pylist() == [{"k": 1, "v": 7, "sq": None}]


def test_partial_update_removed_row_keeps_the_delete_records_sequence_field(tmp_path: Any) -> None:
    """Under remove-record-on-delete a removed key's row is the -D record's own values (Paimon's
    initRow), sequence field included; a -D with a nulled sequence field sorted below the row it
    removed in the next merge, and the row came back (found by the Java differential test)."""
    from paimonflow.core import Catalog

    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("a", pa.int32()), ("sq", pa.int32())])
    catalog = Catalog(str(tmp_path / "warehouse"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
        "sequence.field": "sq", "changelog-producer": "lookup"})
    table.write(pa.table({"k": [0], "a": [1], "sq": [0]}, schema=schema))
    table.write(pa.table({"k": [0, 0], "a": [2, 3], "sq": [0, 0]}, schema=schema), row_kinds=["+I", "-D"])
    assert table.read().num_rows == 0
    changes = table.read_changes(0, table.snapshot_manager.latest_id())
    assert changes.column("rowkind").to_pylist() == ["+I", "-D"]
