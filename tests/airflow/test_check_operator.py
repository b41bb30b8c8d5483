"""PaimonTableCheckOperator (``operators/airflow/checks.py``) on real tables: every check passing and
failing with its numbers in one line, comparisons and tolerance, partition filters, freshness by
the snapshots' times, what is answered from metadata (proved by unreadable data files), and bad
checks refused before anything is read."""

from __future__ import annotations

import inspect
import json
import time
from datetime import date
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from airflow.sdk.exceptions import AirflowFailException

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError
from paimonflow.operators.airflow import PaimonTableCheckOperator
from paimonflow.operators.airflow.checks import Condition, parse_condition

from .test_templates import dag, render

EVENTS = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("hh", pa.int32()), ("amount", pa.decimal128(10, 2)),
                    ("name", pa.string())])
KEYED = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                   ("v", pa.string())])


def events(warehouse: Path):
    """An append table, partitioned by day and hour: 4 rows in 2026-11-21/10, 2 in 2026-11-22/0."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("lab", ignore_if_exists=True)
    table = catalog.create_table("lab.events", EVENTS, partition_keys=["dt", "hh"])
    day = date(2026, 11, 21)
    table.write(pa.table({"id": [1, 2, 2, None], "dt": [day] * 4, "hh": pa.array([10] * 4, pa.int32()),
                          "amount": [Decimal("1.50"), Decimal("-2.00"), None, Decimal("9.25")],
                          "name": ["a", "b", "b", None]}, schema=EVENTS))
    table.write(pa.table({"id": [5, 6], "dt": [date(2026, 11, 22)] * 2, "hh": pa.array([0, 0], pa.int32()),
                          "amount": [Decimal("3.00"), Decimal("4.00")], "name": ["c", "d"]}, schema=EVENTS))
    return table


def keyed(warehouse: Path):
    """A primary-key table: 3 keys after an upsert (4 rows in its files)."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("lab", ignore_if_exists=True)
    table = catalog.create_table("lab.keyed", KEYED, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "1"})
    table.write(pa.table({"id": [1, 2, 3], "dt": ["d1"] * 3, "v": ["a", None, "c"]}, schema=KEYED))
    table.write(pa.table({"id": [1], "dt": ["d1"], "v": ["A"]}, schema=KEYED))
    return table


def check(warehouse: Path, table: str = "lab.events", **kwargs):
    return PaimonTableCheckOperator(task_id="check", table=table, warehouse=str(warehouse), **kwargs).execute({})


def failure(warehouse: Path, table: str = "lab.events", **kwargs) -> str:
    with pytest.raises(AirflowFailException) as info:
        check(warehouse, table, **kwargs)
    text = str(info.value)
    assert "\n" not in text
    return text


def corrupt_data_files(table) -> None:
    """Make every data file unreadable: what still passes was answered without reading data."""
    for path in Path(table.path).rglob("data-*"):
        path.write_bytes(b"not parquet")


# -- table checks -----------------------------------------------------------------------------------


def test_row_count_of_an_append_table_comes_from_its_manifests(tmp_path):
    table = events(tmp_path)
    corrupt_data_files(table)
    result = check(tmp_path, checks={"row_count": {"equal_to": 6}})
    assert result["checks"]["row_count"] == {"value": 6, "passed": True, "source": "metadata",
                                             "condition": {"equal_to": 6}}
    assert result["rows_read"] == 0 and result["snapshot_id"] == 2 and result["passed"]
    # within a partition given as text: the values take the partition columns' types (DATE, INT)
    one = check(tmp_path, checks={"row_count": {"equal_to": 4}}, partition="dt=2026-11-21,hh=10")
    assert one["partition"] == {"dt": "2026-11-21", "hh": 10} and one["rows_read"] == 0
    assert check(tmp_path, checks={"row_count": {"equal_to": 2}}, partition={"dt": "2026-11-22"})["passed"]
    assert check(tmp_path, checks={"row_count": {"equal_to": 0}}, partition={"hh": 7})["passed"]


def test_row_count_of_a_primary_key_table_counts_the_merged_rows(tmp_path):
    keyed(tmp_path)
    result = check(tmp_path, "lab.keyed", checks={"row_count": {"equal_to": 3}})
    assert result["checks"]["row_count"]["source"] == "scan" and result["rows_read"] == 3
    text = failure(tmp_path, "lab.keyed", checks={"row_count": {"geq_to": 4}})
    assert text == "1 of 1 checks failed on lab.keyed at snapshot 2: row_count 3, expected >= 4"


def test_comparisons_and_tolerance():
    def holds(spec, value) -> bool:
        return parse_condition("c", spec, lambda where, v: v).holds(value)

    assert holds({"equal_to": 100, "tolerance": 0.1}, 90) and holds({"equal_to": 100, "tolerance": 0.1}, 110)
    assert not holds({"equal_to": 100, "tolerance": 0.1}, 111) and not holds({"equal_to": 100}, 99)
    assert holds({"geq_to": 10, "tolerance": 0.5}, 5) and not holds({"greater_than": 10, "tolerance": 0.5}, 5)
    assert holds({"greater_than": 1, "less_than": 5}, 3) and not holds({"greater_than": 1, "less_than": 5}, 5)
    assert holds({"leq_to": -10, "tolerance": 0.1}, -9) and not holds({"less_than": -10}, -10)
    assert not holds({"geq_to": 0}, None)  # nothing measured passes nothing
    assert Condition((("geq_to", 1), ("leq_to", 5)), 0.2).describe() == ">= 1 and <= 5 (tolerance 0.2)"


def test_unique_key_counts_duplicates_and_null_keys(tmp_path):
    events(tmp_path)
    text = failure(tmp_path, checks={"unique_key": {"columns": ["id"]}, "row_count": {"geq_to": 1}})
    assert text == ("1 of 2 checks failed on lab.events at snapshot 2: unique_key (id): 1 duplicate key(s), "
                    "1 row(s) with a null key")
    assert check(tmp_path, checks={"unique_key": {"columns": "id, name"}}, partition="dt=2026-11-22")["passed"]
    result = check(tmp_path, checks={"unique_key": {"columns": ["id"]}}, partition={"dt": "2026-11-22"})
    assert result["checks"]["unique_key"] | {"condition": None} == {
        "value": 0, "passed": True, "source": "scan", "condition": None, "duplicates": 0, "null_keys": 0}


def test_a_primary_key_is_unique_and_not_null_by_the_schema(tmp_path):
    table = keyed(tmp_path)
    corrupt_data_files(table)
    result = check(tmp_path, "lab.keyed", checks={"unique_key": {"columns": ["dt", "id"]}},
                   column_checks={"id": {"null_check": {"equal_to": 0}}})
    assert {name: c["source"] for name, c in result["checks"].items()} == {"unique_key": "schema",
                                                                          "id.null_check": "schema"}
    assert result["rows_read"] == 0


def test_freshness_of_the_table_and_of_a_partition(tmp_path):
    table = events(tmp_path)  # snapshot 1: 2026-11-21/10, snapshot 2: 2026-11-22/0
    result = check(tmp_path, checks={"freshness": {"max_age": "1 h"}})
    fresh = result["checks"]["freshness"]
    assert fresh["passed"] and fresh["snapshot_id"] == 2 and fresh["commit_kind"] == "APPEND"
    assert 0 <= fresh["value"] < 60 and fresh["source"] == "metadata"
    time.sleep(1.5)
    table.analyze()  # snapshot 3: statistics, no new data
    text = failure(tmp_path, checks={"freshness": {"max_age": "1 s"}})
    assert text.startswith("1 of 1 checks failed on lab.events at snapshot 3: freshness: the newest data commit "
                           "(snapshot 2) is ") and text.endswith(" s old, expected at most 1 s")
    assert check(tmp_path, checks={"freshness": {"max_age": "1 s", "data_only": False}})["passed"]
    table.write(pa.table({"id": [7], "dt": [date(2026, 11, 22)], "hh": pa.array([0], pa.int32()),
                          "amount": [Decimal(1)], "name": ["e"]}, schema=EVENTS))  # snapshot 4: 2026-11-22 only
    assert check(tmp_path, checks={"freshness": {"max_age": "1 s"}}, partition="dt=2026-11-22")["passed"]
    text = failure(tmp_path, checks={"freshness": {"max_age": "1 s"}}, partition="dt=2026-11-21")
    assert " in dt=2026-11-21 " in text and "checks failed on lab.events (dt=2026-11-21) at snapshot 4" in text
    # the walk back stops at the first snapshot older than max_age: 2 (snapshot 3 is young, but no data commit)
    assert text.endswith("freshness: no data commit in dt=2026-11-21 in the last 1 s (looked back to snapshot 2)")
    assert check(tmp_path, checks={"freshness": {"max_age": "1 h"}}, partition="dt=2026-11-21")["checks"][
        "freshness"]["snapshot_id"] == 1


def test_an_empty_table(tmp_path):
    catalog = Catalog(str(tmp_path))
    catalog.create_database("lab")
    catalog.create_table("lab.empty", EVENTS)
    assert check(tmp_path, "lab.empty", checks={"row_count": {"equal_to": 0}})["snapshot_id"] is None
    text = failure(tmp_path, "lab.empty", checks={"freshness": {"max_age": "1 d"}},
                   column_checks={"amount": {"max": {"leq_to": 10}}, "name": {"null_check": {"equal_to": 0}}})
    assert text == ("2 of 3 checks failed on lab.empty at snapshot None: freshness: the table has no snapshot; "
                    "amount.max no value (no non-null row), expected <= 10")


# -- column checks ----------------------------------------------------------------------------------


def test_column_checks_pass_and_return_their_values(tmp_path):
    events(tmp_path)
    result = check(tmp_path, column_checks={
        "amount": {"null_check": {"leq_to": 1}, "min": {"geq_to": "-2.00"}, "max": {"less_than": 10}},
        "name": {"distinct_check": {"equal_to": 4}, "unique_check": {"equal_to": 1}},
        "dt": {"min": {"equal_to": "2026-11-21"}, "max": {"leq_to": "2026-11-22"}}})
    assert json.loads(json.dumps(result)) == result
    values = {name: c["value"] for name, c in result["checks"].items()}
    assert values == {"amount.null_check": 1, "amount.min": "-2.00", "amount.max": "9.25", "name.distinct_check": 4,
                      "name.unique_check": 1, "dt.min": "2026-11-21", "dt.max": "2026-11-22"}
    assert {c["source"] for c in result["checks"].values()} == {"scan"} and result["rows_read"] == 6


def test_every_failed_check_is_listed_with_its_numbers(tmp_path):
    events(tmp_path)
    text = failure(tmp_path, checks={"row_count": {"equal_to": 10, "tolerance": 0.5}},
                   column_checks={"amount": {"null_check": {"equal_to": 0}, "min": {"geq_to": 0}},
                                  "name": {"distinct_check": {"geq_to": 5}, "unique_check": {"equal_to": 0}},
                                  "id": {"max": {"leq_to": 100}}},
                   partition={"dt": "2026-11-21", "hh": "10"})
    assert text == ("5 of 6 checks failed on lab.events (dt=2026-11-21, hh=10) at snapshot 2: "
                    "row_count 4, expected = 10 (tolerance 0.5); amount.null_check 1, expected = 0; "
                    "amount.min -2.00, expected >= 0; name.distinct_check 2, expected >= 5; "
                    "name.unique_check 1, expected = 0")


@pytest.mark.parametrize(("arguments", "message"), [
    ({}, "give at least one check (checks= or column_checks=)"),
    ({"checks": {"rows": {"equal_to": 1}}}, "checks.rows: unknown check (table checks: row_count, freshness, "
                                            "unique_key; column checks go in column_checks)"),
    ({"checks": {"row_count": {"equal_to": 1, "geq_to": 2}}}, "checks.row_count: equal_to goes alone"),
    ({"checks": {"row_count": {"atleast": 1}}}, "checks.row_count: unknown keys ['atleast']"),
    ({"checks": {"row_count": {"geq_to": "many"}}}, "checks.row_count.geq_to must be a number, not 'many'"),
    ({"checks": {"row_count": {"geq_to": 1, "tolerance": -1}}}, "checks.row_count.tolerance must be at least 0"),
    ({"checks": {"freshness": {"max_age": "soon"}}}, "checks.freshness.max_age must be a duration"),
    ({"checks": {"freshness": {}}}, "checks.freshness takes max_age"),
    ({"checks": {"unique_key": {"columns": ["nope"]}}}, "checks.unique_key.columns: no column 'nope' in the table"),
    ({"column_checks": {"nope": {"null_check": {"equal_to": 0}}}}, "column_checks.nope.null_check: no column 'nope'"),
    ({"column_checks": {"amount": {"sum": {"equal_to": 0}}}}, "column_checks.amount.sum: unknown check"),
    ({"column_checks": {"dt": {"min": {"geq_to": "yesterday"}}}},
     "column_checks.dt.min.geq_to: 'yesterday' is not a value of column 'dt' (date32[day])"),
    ({"column_checks": {"dt": {"min": {"geq_to": "2026-11-21", "tolerance": 0.1}}}},
     "column_checks.dt.min: a tolerance applies to numeric bounds only"),
    ({"checks": "{not json", "column_checks": None}, "checks must be a mapping, or its JSON text"),
    ({"checks": {"row_count": {"geq_to": 1}}, "partition": "name=a"},
     "partition names 'name', which is not a partition key of lab.events (partition keys: ['dt', 'hh'])"),
    ({"checks": {"row_count": {"geq_to": 1}}, "partition": "hh=ten"},
     "partition value hh='ten' does not fit the partition column 'hh' (int32)"),
])
def test_bad_checks_are_one_typed_line_before_anything_is_read(tmp_path, arguments, message):
    table = events(tmp_path)
    corrupt_data_files(table)  # nothing is read: the data files would fail any read
    with pytest.raises(InvalidArgumentError) as info:
        check(tmp_path, **arguments)
    assert str(info.value) == message or str(info.value).startswith(message)


# -- templates --------------------------------------------------------------------------------------


def test_every_parameter_is_a_template_field():
    parameters = {p.name for p in inspect.signature(PaimonTableCheckOperator.__init__).parameters.values()
                  if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(PaimonTableCheckOperator.template_fields) == parameters


def test_templated_checks_render_and_numbers_arrive_as_text(tmp_path):
    events(tmp_path)
    with dag(params={"min_rows": 4, "max_age": "1 h"}):
        task = PaimonTableCheckOperator(
            task_id="check", table="lab.{{ dag_run.conf['table'] }}", warehouse=str(tmp_path),
            checks={"row_count": {"geq_to": "{{ params.min_rows }}"}, "freshness": {"max_age": "{{ params.max_age }}"}},
            column_checks={"amount": {"max": {"leq_to": "{{ dag_run.conf['max_amount'] }}"}}},
            partition="dt={{ dag_run.conf['day'] }}")
    ti = render(task, conf={"table": "events", "max_amount": "9.25", "day": "2026-11-21"})
    assert task.checks == {"row_count": {"geq_to": "4"}, "freshness": {"max_age": "1 h"}}
    result = task.execute(ti.get_template_context())
    assert result["passed"] and result["partition"] == {"dt": "2026-11-21"}
    assert result["checks"]["row_count"]["value"] == 4 and result["checks"]["amount.max"]["value"] == "9.25"
