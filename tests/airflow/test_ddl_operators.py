"""The DDL operators (``operators/airflow/ddl.py``) on real tables: create (from columns or a sample
file), alter and drop, each idempotent on a retry, bad input refused in one typed line before
anything is written, every templated field rendered as Airflow's task runner renders it."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowSkipException

from paimonflow.core import Catalog
from paimonflow.core.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidNameError,
    InvalidOptionError,
    SchemaChangeError,
    SchemaError,
    SourceError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from paimonflow.operators.airflow import (
    PaimonAlterTableOperator,
    PaimonCreateTableOperator,
    PaimonDropTableOperator,
)

from .test_templates import dag, render

COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "dt", "type": "STRING", "comment": "the day"},
           {"name": "amount", "type": "DECIMAL(10, 2)"}, {"name": "code", "type": "VARCHAR(8)"},
           {"name": "tags", "type": {"type": "ARRAY", "element": "STRING"}}]


def create(warehouse: Path, **kwargs):
    arguments = {"table": "shop.orders", "columns": COLUMNS, "primary_keys": ["id", "dt"], "partition_keys": "dt",
                 "options": {"bucket": 2, "snapshot.num-retained.min": "3"}, "comment": "orders",
                 "create_database": True, **kwargs}
    return PaimonCreateTableOperator(task_id="create", warehouse=str(warehouse), **arguments)


def alter(warehouse: Path, changes, table: str = "shop.orders"):
    return PaimonAlterTableOperator(task_id="alter", table=table, warehouse=str(warehouse), changes=changes)


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


# -- create -----------------------------------------------------------------------------------------


def test_create_makes_the_table_and_the_database(tmp_path):
    result = create(tmp_path).execute({})
    assert json.loads(json.dumps(result)) == result  # JSON-able, for XCom
    assert result["created"] and result["database_created"] and result["schema_id"] == 0
    assert result["columns"] == ["id", "dt", "amount", "code", "tags"]
    table = Catalog(str(tmp_path)).get_table("shop.orders")
    assert result["path"] == table.path
    assert table.primary_keys == ("id", "dt") and table.partition_keys == ("dt",)
    assert [str(f.type) for f in table.schema.fields] == [
        "BIGINT NOT NULL", "STRING NOT NULL", "DECIMAL(10, 2)", "VARCHAR(8)", "ARRAY<STRING>"]
    assert table.schema.field("dt").description == "the day" and table.schema.comment == "orders"
    assert table.schema.options == {"bucket": "2", "snapshot.num-retained.min": "3"}
    table.write(pa.table({"id": [1], "dt": ["2026-11-21"], "amount": [pa.scalar(1, pa.decimal128(10, 2)).as_py()],
                          "code": ["a"], "tags": [["x"]]}, schema=table.arrow_schema))
    assert table.read().num_rows == 1


def test_create_again_with_the_same_definition_is_success(tmp_path):
    create(tmp_path).execute({})
    schema_files = sorted((tmp_path / "shop.db" / "orders" / "schema").iterdir())
    again = create(tmp_path).execute({})  # a retry, or the DAG's next run
    assert not again["created"] and not again["database_created"] and again["differences"] == []
    assert sorted((tmp_path / "shop.db" / "orders" / "schema").iterdir()) == schema_files


def test_create_of_a_table_defined_otherwise_fails_listing_the_differences(tmp_path):
    create(tmp_path).execute({})
    other = [*COLUMNS[:2], {"name": "amount", "type": "DOUBLE"}, *COLUMNS[3:]]
    with pytest.raises(TableAlreadyExistsError) as info:
        create(tmp_path, columns=other, options={"bucket": "4"}).execute({})
    text = one_line(info)
    assert "column amount: DECIMAL(10, 2) in the table, DOUBLE asked" in text
    assert "option bucket: '2' in the table, '4' asked" in text
    assert "option snapshot.num-retained.min: '3' in the table, None asked" in text
    ignored = create(tmp_path, columns=other, if_exists="ignore").execute({})
    assert not ignored["created"] and ignored["differences"] == ["column amount: DECIMAL(10, 2) in the table, "
                                                                 "DOUBLE asked"]
    assert str(Catalog(str(tmp_path)).get_table("shop.orders").schema.field("amount").type) == "DECIMAL(10, 2)"
    with pytest.raises(AirflowSkipException):
        create(tmp_path, if_exists="skip").execute({})


def test_create_from_a_sample_file_takes_its_columns(tmp_path):
    landing = tmp_path / "landing" / "2026-11-21"
    landing.mkdir(parents=True)
    sample = pa.table({"id": pa.array([1], pa.int64()), "qty": pa.array([3], pa.uint32()), "dt": ["2026-11-21"]})
    pq.write_table(sample, landing / "part-1.parquet")
    (landing / "_SUCCESS").write_text("")
    result = create(tmp_path, columns=None, like=str(landing), primary_keys=None, partition_keys=["dt"],
                    options=None, comment=None).execute({})  # a folder: its first data file
    table = Catalog(str(tmp_path)).get_table("shop.orders")
    assert result["columns"] == ["id", "qty", "dt"]
    assert [str(f.type) for f in table.schema.fields] == ["BIGINT", "BIGINT", "STRING"]  # uint32 held by BIGINT
    pcsv.write_csv(pa.table({"k": [1], "name": ["a"]}), tmp_path / "sample.csv")
    from_csv = create(tmp_path, table="shop.from_csv", columns=None, like=f"file://{tmp_path / 'sample.csv'}",
                      primary_keys="k", partition_keys=None, options=None).execute({})
    assert from_csv["columns"] == ["k", "name"] and from_csv["primary_keys"] == ["k"]
    with pytest.raises(SourceError, match=r"^like: no file or folder at .*missing\.parquet$"):
        create(tmp_path, table="shop.x", columns=None, like=str(tmp_path / "missing.parquet")).execute({})


@pytest.mark.parametrize(("arguments", "error", "message"), [
    ({"like": "/tmp/sample.parquet"}, InvalidArgumentError, "give the columns (columns=) or a sample file"),
    ({"columns": None}, InvalidArgumentError, "give the columns (columns=) or a sample file"),
    ({"columns": [{"name": "id", "type": "BIGINT", "size": 3}]}, InvalidArgumentError,
     "columns[0] (id): unknown keys ['size']"),
    ({"columns": [{"name": "id"}]}, InvalidArgumentError, "columns[0] must be a mapping with 'name' and 'type'"),
    ({"columns": {"id": "BIGINTEGER"}}, SchemaError, "column 'id': cannot parse type 'BIGINTEGER'"),
    ({"columns": "[{'name': 'id'}]"}, InvalidArgumentError, "columns must be a list or mapping, or its JSON text"),
    ({"options": {"buckets": "2"}}, InvalidOptionError, "did you mean 'bucket'?"),
    ({"primary_keys": ["id", "nope"]}, SchemaError, "primary key columns ['nope'] are not columns"),
    ({"if_exists": "replace"}, InvalidArgumentError, "if_exists must be fail, ignore or skip, not 'replace'"),
    ({"table": "shop.orders$branch_b"}, InvalidNameError, "invalid table name 'orders$branch_b'"),
])
def test_bad_input_is_one_typed_line_and_nothing_is_created(tmp_path, arguments, error, message):
    with pytest.raises(error) as info:
        create(tmp_path, **arguments).execute({})
    assert message in one_line(info)
    assert not (tmp_path / "shop.db").exists()  # not even the database


def test_a_missing_database_is_created_only_when_asked(tmp_path):
    Catalog(str(tmp_path)).create_database("other")  # the warehouse exists
    with pytest.raises(DatabaseNotFoundError, match="create_database=True"):
        create(tmp_path, create_database=False).execute({})
    assert create(tmp_path, create_database=True).execute({})["database_created"]


# -- alter ------------------------------------------------------------------------------------------

CHANGES = [
    {"action": "add_column", "name": "note", "type": "STRING", "comment": "free text"},
    {"action": "add_column", "name": "channel", "type": "VARCHAR(4)", "after": "id"},
    {"action": "rename_column", "name": "code", "new_name": "sku"},
    {"action": "drop_column", "name": "tags"},
    {"action": "update_column_type", "name": "amount", "type": "DECIMAL(12, 2)"},
    {"action": "update_column_type", "name": "channel", "type": "VARCHAR(16)"},
    {"action": "set_option", "key": "snapshot.num-retained.min", "value": 5},
    {"action": "remove_option", "key": "snapshot.num-retained.min"},
    {"action": "set_option", "key": "snapshot.time-retained", "value": "2 h"},
]


def _orders_with_a_row(warehouse: Path):
    create(warehouse).execute({})
    table = Catalog(str(warehouse)).get_table("shop.orders")
    table.write(pa.table({"id": [1], "dt": ["2026-11-21"], "amount": [None], "code": ["A-1"], "tags": [["x"]]},
                         schema=table.arrow_schema))
    return table


def test_alter_makes_every_change_as_one_schema(tmp_path):
    _orders_with_a_row(tmp_path)
    result = alter(tmp_path, CHANGES).execute({})
    assert json.loads(json.dumps(result)) == result
    assert result["changed"] and (result["previous_schema_id"], result["schema_id"]) == (0, 1)
    assert result["applied"] == CHANGES and result["already_applied"] == []
    table = Catalog(str(tmp_path)).get_table("shop.orders")
    assert [(f.name, str(f.type)) for f in table.schema.fields] == [
        ("id", "BIGINT NOT NULL"), ("channel", "VARCHAR(16)"), ("dt", "STRING NOT NULL"), ("amount", "DECIMAL(12, 2)"),
        ("sku", "VARCHAR(8)"), ("note", "STRING")]
    assert table.schema.field("note").description == "free text"
    assert table.schema.options == {"bucket": "2", "snapshot.time-retained": "2 h"}
    assert table.read().to_pylist() == [{"id": 1, "channel": None, "dt": "2026-11-21", "amount": None, "sku": "A-1",
                                         "note": None}]  # the renamed column keeps its values


def test_alter_again_changes_nothing(tmp_path):
    _orders_with_a_row(tmp_path)
    alter(tmp_path, CHANGES).execute({})
    again = alter(tmp_path, CHANGES).execute({})  # a retry after the first try committed
    assert not again["changed"] and again["schema_id"] == 1 and again["applied"] == []
    assert again["already_applied"] == CHANGES
    assert Catalog(str(tmp_path)).get_table("shop.orders").schema_manager.list_ids() == [0, 1]


def test_changes_already_made_are_recognised_one_by_one(tmp_path):
    _orders_with_a_row(tmp_path)
    changes = [{"action": "add_column", "name": "note", "type": "STRING"},
               {"action": "rename_column", "name": "code", "new_name": "sku"},
               {"action": "drop_column", "name": "tags"},
               {"action": "update_column_type", "name": "amount", "type": "DECIMAL(12, 2)"}]
    alter(tmp_path, changes).execute({})
    # someone else changes the schema afterwards: the whole list no longer made the latest schema
    alter(tmp_path, [{"action": "set_option", "key": "snapshot.time-retained", "value": "3 h"}]).execute({})
    more = [*changes, {"action": "add_column", "name": "score", "type": "INT"}]
    result = alter(tmp_path, more).execute({})
    assert result["already_applied"] == changes and result["applied"] == [more[-1]]
    assert (result["previous_schema_id"], result["schema_id"]) == (2, 3)


def test_a_change_that_was_never_made_is_not_taken_for_made(tmp_path):
    _orders_with_a_row(tmp_path)
    with pytest.raises(SchemaChangeError, match=r"^changes\[0\] \(drop_column\) on shop.orders: column 'nope' "
                                                r"does not exist"):
        alter(tmp_path, [{"action": "drop_column", "name": "nope"}]).execute({})
    alter(tmp_path, [{"action": "add_column", "name": "note", "type": "INT"}]).execute({})
    with pytest.raises(SchemaChangeError, match="column 'note' already exists"):  # there, of another type
        alter(tmp_path, [{"action": "add_column", "name": "note", "type": "STRING"}]).execute({})


@pytest.mark.parametrize(("bad", "error", "message"), [
    ({"action": "truncate"}, InvalidArgumentError, "changes[1] must be a mapping whose action is one of add_column"),
    ({"action": "rename_column", "name": "code"}, InvalidArgumentError,
     "changes[1] (rename_column): missing ['new_name'] (it takes name, new_name)"),
    ({"action": "drop_column", "name": "code", "cascade": True}, InvalidArgumentError,
     "changes[1] (drop_column): unknown keys ['cascade']"),
    ({"action": "add_column", "name": "x", "type": "TEXTY"}, SchemaError, "cannot parse type 'TEXTY'"),
    ({"action": "set_option", "key": "snapshot.num-retained.mni", "value": "3"}, InvalidOptionError,
     "unknown option"),
    ({"action": "set_option", "key": "bucket", "value": "8"}, SchemaChangeError,
     "changes[1] (set_option) on shop.orders: option 'bucket' cannot be changed on an existing table"),
    ({"action": "drop_column", "name": "id"}, SchemaChangeError, "cannot drop primary key column 'id'"),
    ({"action": "update_column_type", "name": "amount", "type": "DECIMAL(8, 2)"}, SchemaChangeError,
     "cannot change column 'amount' from DECIMAL(10, 2) to DECIMAL(8, 2)"),
])
def test_changes_are_validated_before_any_is_made(tmp_path, bad, error, message):
    table = _orders_with_a_row(tmp_path)
    with pytest.raises(error) as info:
        alter(tmp_path, [{"action": "add_column", "name": "note", "type": "STRING"}, bad]).execute({})
    assert message in one_line(info)
    assert table.schema_manager.list_ids() == [0]  # the good first change was not made either


def test_alter_refuses_an_empty_or_malformed_list(tmp_path):
    _orders_with_a_row(tmp_path)
    for changes in ([], "", "not json", {"action": "drop_column", "name": "code"}):
        with pytest.raises(InvalidArgumentError, match="changes must be"):
            alter(tmp_path, changes).execute({})
    with pytest.raises(TableNotFoundError):
        alter(tmp_path, [{"action": "drop_column", "name": "code"}], table="shop.nope").execute({})


# -- drop -------------------------------------------------------------------------------------------


def test_drop_removes_the_table_and_if_missing_says_what_a_missing_one_means(tmp_path):
    _orders_with_a_row(tmp_path)

    def drop(**kwargs):
        return PaimonDropTableOperator(task_id="drop", table="shop.orders", warehouse=str(tmp_path), **kwargs)

    assert drop().execute({}) == {"job": "drop-table", "table": "shop.orders", "dropped": True}
    assert not (tmp_path / "shop.db" / "orders").exists()
    assert not Catalog(str(tmp_path)).table_exists("shop.orders")
    with pytest.raises(TableNotFoundError, match="if_missing='ignore'"):
        drop().execute({})
    assert drop(if_missing="ignore").execute({})["dropped"] is False
    with pytest.raises(AirflowSkipException):
        drop(if_missing="skip").execute({})
    with pytest.raises(InvalidArgumentError, match="if_missing must be fail, ignore or skip"):
        drop(if_missing="purge").execute({})
    with pytest.raises(InvalidNameError):
        PaimonDropTableOperator(task_id="d", table="shop.orders$branch_b", warehouse=str(tmp_path)).execute({})


# -- templates --------------------------------------------------------------------------------------

FLAGS = ("create_database",)


@pytest.mark.parametrize("cls", [PaimonCreateTableOperator, PaimonAlterTableOperator, PaimonDropTableOperator],
                         ids=lambda c: c.__name__)
def test_every_parameter_but_the_flags_is_a_template_field(cls):
    parameters = {p.name for klass in cls.__mro__ if "__init__" in vars(klass) and klass.__module__ == cls.__module__
                  for p in inspect.signature(klass.__init__).parameters.values()
                  if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(cls.template_fields) == parameters - set(FLAGS)
    assert len(set(cls.template_fields)) == len(cls.template_fields)


def test_templated_ddl_renders_inside_lists_and_mappings(tmp_path):
    from airflow.sdk import Asset

    asset = Asset(uri="paimon://paimon_default/lab.t", name="paimon/paimon_default/lab.t")
    with dag(params={"db": "lab", "amount_type": "DECIMAL(12, 2)", "buckets": "3"}):
        create_task = PaimonCreateTableOperator(
            task_id="create", table="{{ params.db }}.t_{{ ds_nodash }}", warehouse=str(tmp_path),
            columns=[{"name": "id", "type": "BIGINT"}, {"name": "amount", "type": "{{ params.amount_type }}"}],
            primary_keys="{{ dag_run.conf['key'] }}", options={"bucket": "{{ params.buckets }}"},
            if_exists="{{ dag_run.conf['if_exists'] }}", create_database=True, outlets=[asset])
        alter_task = PaimonAlterTableOperator(
            task_id="alter", table="{{ params.db }}.t_{{ ds_nodash }}", warehouse=str(tmp_path),
            changes="{{ dag_run.conf['changes'] | tojson }}", outlets=[asset])
        drop_task = PaimonDropTableOperator(task_id="drop", table="{{ params.db }}.t_{{ ds_nodash }}",
                                            warehouse=str(tmp_path), if_missing="{{ dag_run.conf['if_missing'] }}")
    conf = {"key": "id", "if_exists": "fail", "if_missing": "ignore",
            "changes": [{"action": "add_column", "name": "note", "type": "STRING"}]}
    ti = render(create_task, conf=conf)
    assert create_task.columns[1] == {"name": "amount", "type": "DECIMAL(12, 2)"}
    context = ti.get_template_context()
    assert create_task.execute(context)["created"]
    assert context["outlet_events"][asset].extra == {"table": "lab.t_20261120", "job": "create-table", "schema_id": 0}
    table = Catalog(str(tmp_path)).get_table("lab.t_20261120")
    assert str(table.schema.field("amount").type) == "DECIMAL(12, 2)" and table.schema.options == {"bucket": "3"}
    assert table.primary_keys == ("id",)
    ti = render(alter_task, conf=conf)
    context = ti.get_template_context()
    assert alter_task.execute(context)["applied"] == conf["changes"]  # JSON text, parsed
    assert context["outlet_events"][asset].extra == {"table": "lab.t_20261120", "job": "alter-table", "schema_id": 1}
    ti = render(drop_task, conf=conf)
    assert drop_task.execute(ti.get_template_context())["dropped"]
    assert drop_task.execute(ti.get_template_context())["dropped"] is False  # a retry: if_missing='ignore'
