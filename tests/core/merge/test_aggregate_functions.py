"""The collection, bitmap and sketch aggregate functions of the ``aggregation`` merge engine
(``collect``, ``merge_map``, ``nested_update``, ``rbm32``, ``theta_sketch``), checked against the
semantics of Paimon's ``FieldCollectAgg``, ``FieldMergeMapAgg``, ``FieldNestedUpdateAgg``,
``FieldRoaringBitmap32Agg`` and ``FieldThetaSketchAgg``, folded one record at a time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest
from datasketches import compact_theta_sketch, update_theta_sketch
from pyroaring import BitMap

from paimonflow.core import Catalog
from paimonflow.core.errors import DataError, InvalidOptionError, SchemaError, UnsupportedError
from paimonflow.core.merge import merge, spec_from_options

SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
INS, UB, UA, D = 0, 1, 2, 3

ROW = pa.struct([("id", pa.int32()), ("name", pa.string())])
ROWS = pa.list_(ROW)


def kv_table(value_type: pa.DataType, rows: Sequence[tuple[int, Any]], kinds: Sequence[int] | None = None) -> pa.Table:
    """Rows ``(key, value)`` in arrival order (sequence = position), sorted by key, stably."""
    kinds = list(kinds) if kinds is not None else [INS] * len(rows)
    order = sorted(range(len(rows)), key=lambda i: rows[i][0])
    return pa.table({"k": pa.array([rows[i][0] for i in order], pa.int32()),
                     "v": pa.array([rows[i][1] for i in order], value_type),
                     SEQ: pa.array(order, pa.int64()), KIND: pa.array([kinds[i] for i in order], pa.int8())})


def merged(value_type: pa.DataType, rows: Sequence[tuple[int, Any]], kinds: Sequence[int] | None = None,
           **options: str) -> list[Any]:
    spec = spec_from_options({"merge-engine": "aggregation", **{f"fields.v.{k.replace('_', '-')}": v
                                                                for k, v in options.items()}})
    return merge(kv_table(value_type, rows, kinds), ["k"], spec).column("v").to_pylist()


def as_map(value: list[tuple[Any, Any]] | None) -> dict[Any, Any] | None:
    return None if value is None else dict(value)


def bitmap(*values: int) -> bytes:
    return BitMap(values).serialize()


def sketch(*values: int) -> bytes:
    s = update_theta_sketch()
    for value in values:
        s.update(value)
    return s.compact().serialize()


# -- collect ---------------------------------------------------------------------------------


def test_collect_concatenates_and_skips_null_arrays() -> None:
    t = pa.list_(pa.int64())
    rows = [(1, [1, 2]), (2, None), (1, None), (1, [2, None]), (3, [5, 5])]
    assert merged(t, rows, aggregate_function="collect") == [[1, 2, 2, None], None, [5, 5]]


def test_collect_distinct_keeps_first_occurrences_even_for_one_row() -> None:
    t = pa.list_(pa.string())
    rows = [(1, ["a", "b"]), (1, ["b", "c", None]), (1, [None, "a"]), (2, ["x", "x"])]
    assert merged(t, rows, aggregate_function="collect", distinct="true") == [["a", "b", "c", None], ["x"]]


def test_collect_distinct_on_rows_falls_back_to_value_equality() -> None:
    rows = [(1, [{"id": 1, "name": "a"}]), (1, [{"id": 1, "name": "a"}, {"id": 2, "name": None}])]
    assert merged(ROWS, rows, aggregate_function="collect", distinct="true") == [
        [{"id": 1, "name": "a"}, {"id": 2, "name": None}]]


def test_collect_retraction_removes_one_equal_element_per_retracted_element() -> None:
    t = pa.list_(pa.int64())
    rows = [(1, [1, 1, 2, None]), (1, [1, None, 9]), (1, [3]), (2, [7]), (3, [1])]
    kinds = [INS, UB, INS, INS, D]
    # key 3 is a lone retraction: it passes unmerged (Paimon's ReducerMergeFunctionWrapper) and a
    # read, which drops retractions, shows nothing for it
    assert merged(t, rows, kinds, aggregate_function="collect") == [[1, 2, 3], [7]]


def test_collect_distinct_retraction_and_ignore_retract() -> None:
    t = pa.list_(pa.int64())
    rows = [(1, [1, 2]), (1, [2]), (1, [2, 3])]
    kinds = [INS, D, INS]
    assert merged(t, rows, kinds, aggregate_function="collect", distinct="true") == [[1, 2, 3]]
    assert merged(t, rows, kinds, aggregate_function="collect", ignore_retract="true") == [[1, 2, 2, 3]]


# -- merge_map -------------------------------------------------------------------------------


def test_merge_map_newer_entries_overwrite_keys() -> None:
    t = pa.map_(pa.string(), pa.int64())
    rows = [(1, [("a", 1), ("b", 2)]), (1, None), (1, [("b", 20), ("c", None)]), (2, None), (3, [("z", 0)])]
    result = merged(t, rows, aggregate_function="merge_map")
    assert [as_map(v) for v in result] == [{"a": 1, "b": 20, "c": None}, None, {"z": 0}]
    assert [k for k, _ in result[0]] == ["a", "b", "c"]  # first-appearance order


def test_merge_map_retraction_removes_keys() -> None:
    t = pa.map_(pa.int32(), pa.string())
    rows = [(1, [(1, "a"), (2, "b")]), (1, [(2, "anything"), (5, "x")]), (1, [(3, "c")]), (2, [(1, "a")])]
    kinds = [INS, UB, INS, D]
    assert [as_map(v) for v in merged(t, rows, kinds, aggregate_function="merge_map")] == [{1: "a", 3: "c"}]


# -- nested_update ---------------------------------------------------------------------------


def r(id_: int | None, name: str | None) -> dict[str, Any]:
    return {"id": id_, "name": name}


def test_nested_update_with_key_replaces_rows_with_the_same_key() -> None:
    rows = [(1, [r(1, "a"), r(2, "b")]), (1, [r(2, "B"), None, r(3, "c")]), (1, None), (2, [r(None, "x"), r(None, "y")])]
    assert merged(ROWS, rows, aggregate_function="nested_update", nested_key="id") == [
        [r(1, "a"), r(2, "B"), r(3, "c")], [r(None, "y")]]


def test_nested_update_without_key_appends_and_count_limit_keeps_the_first() -> None:
    rows = [(1, [r(1, "a"), None]), (1, [r(1, "a"), r(2, "b")]), (2, [r(1, "a"), r(2, "b"), r(3, "c")])]
    assert merged(ROWS, rows, aggregate_function="nested_update") == [
        [r(1, "a"), r(1, "a"), r(2, "b")], [r(1, "a"), r(2, "b"), r(3, "c")]]
    assert merged(ROWS, rows, aggregate_function="nested_update", count_limit="2") == [
        [r(1, "a"), r(1, "a")], [r(1, "a"), r(2, "b")]]
    # With a key the limit counts keys: existing keys still update, new ones are dropped.
    keyed = [(1, [r(1, "a"), r(2, "b")]), (1, [r(3, "c"), r(1, "A")])]
    assert merged(ROWS, keyed, aggregate_function="nested_update", nested_key="id", count_limit="2") == [
        [r(1, "A"), r(2, "b")]]


def test_nested_update_retraction() -> None:
    rows = [(1, [r(1, "a"), r(2, "b")]), (1, [r(2, "other name")]), (1, [r(4, "d")])]
    kinds = [INS, UB, INS]
    assert merged(ROWS, rows, kinds, aggregate_function="nested_update", nested_key="id") == [[r(1, "a"), r(4, "d")]]
    # Without a key, a retraction removes every equal row.
    plain = [(1, [r(1, "a"), r(1, "a"), r(2, "b")]), (1, [r(1, "a"), r(2, "x")])]
    assert merged(ROWS, plain, [INS, D], aggregate_function="nested_update") == [[r(2, "b")]]


def test_nested_update_rejects_unknown_nested_key_and_non_row_arrays() -> None:
    with pytest.raises(SchemaError, match="'v'"):
        merged(ROWS, [(1, [r(1, "a")])], aggregate_function="nested_update", nested_key="nope")
    with pytest.raises(SchemaError, match="'v'"):
        merged(pa.list_(pa.int64()), [(1, [1])], aggregate_function="nested_update")
    with pytest.raises(InvalidOptionError, match=r"fields\.v\.count-limit"):
        merged(ROWS, [(1, [r(1, "a")])], aggregate_function="nested_update", count_limit="many")
    with pytest.raises(UnsupportedError):
        merged(ROWS, [(1, [r(1, "a")])], aggregate_function="nested_update", nested_key="id",
               nested_sequence_field="name")


# -- rbm32 and theta_sketch --------------------------------------------------------------------


def test_rbm32_is_the_union_of_bitmaps() -> None:
    single = bitmap(7, 8)
    rows = [(1, bitmap(1, 2, 3)), (1, None), (1, bitmap(3, 100_000)), (2, single), (3, None), (4, None),
            (4, bitmap(9))]
    result = merged(pa.binary(), rows, aggregate_function="rbm32")
    assert BitMap.deserialize(result[0]) == BitMap([1, 2, 3, 100_000])
    assert result[1] == single  # a lone value is kept byte for byte
    assert result[2] is None
    assert BitMap.deserialize(result[3]) == BitMap([9])


def test_rbm32_cannot_retract_unless_ignore_retract() -> None:
    rows = [(1, bitmap(1)), (1, bitmap(1))]
    with pytest.raises(DataError, match="ignore-retract"):
        merged(pa.binary(), rows, [INS, UB], aggregate_function="rbm32")
    result = merged(pa.binary(), [*rows, (1, bitmap(2))], [INS, UB, INS], aggregate_function="rbm32",
                    ignore_retract="true")
    assert BitMap.deserialize(result[0]) == BitMap([1, 2])


def test_theta_sketch_union_estimates_the_distinct_count() -> None:
    rows = [(1, sketch(1, 2, 3)), (1, None), (1, sketch(3, 4, 5, 6)), (2, sketch(1)), (3, None)]
    result = merged(pa.binary(), rows, aggregate_function="theta_sketch")
    union = compact_theta_sketch.deserialize(result[0])
    assert union.get_estimate() == 6 and not union.is_estimation_mode() and union.is_ordered()
    assert result[1] == sketch(1)
    assert result[2] is None
    with pytest.raises(DataError):
        merged(pa.binary(), rows[:2], [INS, D], aggregate_function="theta_sketch")


def test_type_errors_and_unsupported_functions_name_the_field() -> None:
    with pytest.raises(SchemaError, match="'v'"):
        merged(pa.int64(), [(1, 1)], aggregate_function="collect")
    with pytest.raises(SchemaError, match="'v'"):
        merged(pa.list_(pa.int64()), [(1, [1])], aggregate_function="merge_map")
    with pytest.raises(SchemaError, match="'v'"):
        merged(pa.string(), [(1, "x")], aggregate_function="rbm32")
    with pytest.raises(SchemaError, match="'v'"):
        merged(pa.int32(), [(1, 1)], aggregate_function="theta_sketch")
    with pytest.raises(InvalidOptionError, match=r"fields\.v\.aggregate-function.*Roaring64Bitmap"):
        merged(pa.binary(), [(1, b"")], aggregate_function="rbm64")
    with pytest.raises(InvalidOptionError, match=r"fields\.v\.distinct"):
        merged(pa.list_(pa.int64()), [(1, [1])], aggregate_function="collect", distinct="maybe")


def test_partial_update_aggregates_bitmaps_in_a_sequence_group() -> None:
    table = pa.table({"k": pa.array([1, 1], pa.int32()), "s": pa.array([1, 2], pa.int64()),
                      "v": pa.array([bitmap(1), bitmap(2)], pa.binary()),
                      SEQ: pa.array([0, 1], pa.int64()), KIND: pa.array([INS, INS], pa.int8())})
    spec = spec_from_options({"merge-engine": "partial-update", "fields.s.sequence-group": "v",
                              "fields.v.aggregate-function": "rbm32"})
    assert BitMap.deserialize(merge(table, ["k"], spec).column("v")[0].as_py()) == BitMap([1, 2])


# -- through the table -------------------------------------------------------------------------


@pytest.fixture
def catalog(tmp_path):
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


TABLE_SCHEMA = pa.schema([
    pa.field("k", pa.int32(), nullable=False),
    ("tags", pa.list_(pa.string())),
    ("attrs", pa.map_(pa.string(), pa.int64())),
    ("items", ROWS),
    ("users", pa.binary()),
    ("visitors", pa.binary()),
])


def batch(*rows: tuple[Any, ...]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(TABLE_SCHEMA.names, row, strict=True)) for row in rows], TABLE_SCHEMA)


def by_key(table) -> dict[int, dict[str, Any]]:
    return {row["k"]: row for row in table.read().to_pylist()}


def test_new_functions_through_the_table(catalog) -> None:
    t = catalog.create_table("db.agg_more", TABLE_SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation",
        "fields.tags.aggregate-function": "collect", "fields.tags.distinct": "true",
        "fields.attrs.aggregate-function": "merge_map",
        "fields.items.aggregate-function": "nested_update", "fields.items.nested-key": "id",
        "fields.users.aggregate-function": "rbm32", "fields.users.ignore-retract": "true",
        "fields.visitors.aggregate-function": "theta_sketch", "fields.visitors.ignore-retract": "true"})
    t.write(batch((1, ["a", "b"], [("x", 1)], [r(1, "one")], bitmap(1, 2), sketch(1, 2)),
                  (2, ["z"], None, None, bitmap(5), None)))
    t.write(batch((1, ["b", "c"], [("x", 10), ("y", 2)], [r(1, "ONE"), r(2, "two")], bitmap(2, 3), sketch(2, 3))))

    def check_before_retract() -> None:
        rows = by_key(t)
        assert rows[1]["tags"] == ["a", "b", "c"]
        assert as_map(rows[1]["attrs"]) == {"x": 10, "y": 2}
        assert rows[1]["items"] == [r(1, "ONE"), r(2, "two")]
        assert BitMap.deserialize(rows[1]["users"]) == BitMap([1, 2, 3])
        assert compact_theta_sketch.deserialize(rows[1]["visitors"]).get_estimate() == 3
        assert rows[2]["tags"] == ["z"] and rows[2]["attrs"] is None
        assert BitMap.deserialize(rows[2]["users"]) == BitMap([5])

    check_before_retract()
    t.compact(full=True)
    check_before_retract()

    # A retraction only meets the state it retracts when both are merged together: the writer folds
    # a lone -U into a +I (Paimon passes a single record through unmerged), so write them at once.
    t.write(batch((3, ["a", "b"], [("x", 1), ("y", 2)], [r(1, "one"), r(2, "two")], bitmap(1), sketch(1)),
                  (3, ["a"], [("y", 0)], [r(2, None)], bitmap(1), sketch(1)),
                  (3, ["d"], None, [r(3, "three")], bitmap(4), None)), row_kinds=["+I", "-U", "+I"])
    for _ in range(2):
        rows = by_key(t)
        assert rows[3]["tags"] == ["b", "d"]
        assert as_map(rows[3]["attrs"]) == {"x": 1}
        assert rows[3]["items"] == [r(1, "one"), r(3, "three")]
        assert BitMap.deserialize(rows[3]["users"]) == BitMap([1, 4])
        assert compact_theta_sketch.deserialize(rows[3]["visitors"]).get_estimate() == 1
        check_before_retract()
        t.compact(full=True)


def test_rbm64_is_refused_by_the_table(catalog) -> None:
    t = catalog.create_table("db.rbm64", TABLE_SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.users.aggregate-function": "rbm64"})
    with pytest.raises(InvalidOptionError):
        t.write(batch((1, None, None, None, None, None)))
