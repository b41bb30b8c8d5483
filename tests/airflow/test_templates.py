"""Templated fields of the operators, rendered as Airflow's task runner renders them: a task
instance of a run (logical date, ``dag_run.conf``), its template context (``ds``, ``params``
validated against the DAG's...) and ``ti.render_templates()``. Every parameter but the boolean
flags is a template field and renders; ``sql`` alone may name a ``.sql`` file; numbers and
durations rendered as text are converted in ``execute``, a bad one failing with one typed line."""

from __future__ import annotations

import inspect
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError
from paimonflow.operators.airflow import operators as ops

from .conftest import WAREHOUSE

LOGICAL_DATE = datetime(2026, 11, 20, tzinfo=UTC)
OPERATORS = sorted((c for c in vars(ops).values() if inspect.isclass(c) and issubclass(c, ops.PaimonJobOperator)
                    and c is not ops.PaimonJobOperator), key=lambda c: c.__name__)
LISTS = ("partitions", "buckets", "columns")  # list fields: each item renders
MAPPINGS = ("spark_conf",)  # mapping fields: each value renders
FLAGS = ("full", "dry_run", "delete_all", "deferrable")  # the boolean flags: set in DAG code, never templated


def run_task(task, *, conf: dict[str, Any] | None = None):
    """A task instance of a manual run of the task's DAG on LOGICAL_DATE with ``conf``, as the task
    runner builds it from what the API server sends (no metadata database involved)."""
    from airflow.sdk.api.datamodels._generated import DagRun, DagRunState, DagRunType, TIRunContext
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    dag_run = DagRun(dag_id=task.dag_id, run_id="manual__templates", logical_date=LOGICAL_DATE,
                     data_interval_start=LOGICAL_DATE, data_interval_end=LOGICAL_DATE, run_after=LOGICAL_DATE,
                     start_date=LOGICAL_DATE, end_date=None, run_type=DagRunType.MANUAL, state=DagRunState.RUNNING,
                     conf=conf or {}, consumed_asset_events=[], partition_key=None)
    return RuntimeTaskInstance.model_construct(
        id=uuid.uuid4(), task_id=task.task_id, dag_id=task.dag_id, run_id=dag_run.run_id, try_number=1,
        dag_version_id=uuid.uuid4(), map_index=-1, task=task, bundle_instance=None,
        _ti_context_from_server=TIRunContext(dag_run=dag_run, max_tries=0), max_tries=0,
        start_date=LOGICAL_DATE, state="running")


def render(task, *, conf: dict[str, Any] | None = None):
    """Render the task's fields in place (``ti.render_templates()``); its task instance."""
    ti = run_task(task, conf=conf)
    ti.render_templates()
    return ti


def dag(**kwargs: Any):
    from airflow.sdk import DAG

    return DAG(dag_id=f"templates_{uuid.uuid4().hex[:8]}", schedule=None, start_date=LOGICAL_DATE, **kwargs)


def _template(field: str) -> Any:
    text = "{{ params.x_" + field + " }}"
    if field in LISTS:
        return [text]
    if field in MAPPINGS:
        return {"spark.sql.shuffle.partitions": text}
    return text


def _rendered(field: str) -> Any:
    value = f"p-{field}"
    if field in LISTS:
        return [value]
    if field in MAPPINGS:
        return {"spark.sql.shuffle.partitions": value}
    return value


def _parameters(cls: type) -> set[str]:
    """The keyword parameters of an operator's ``__init__`` and those of the paimonflow classes it extends."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if issubclass(klass, ops.PaimonJobOperator) and "__init__" in vars(klass):
            names |= {p.name for p in inspect.signature(klass.__init__).parameters.values()
                      if p.kind is inspect.Parameter.KEYWORD_ONLY}
    return names


def test_every_operator_is_covered() -> None:
    assert len(OPERATORS) == 13


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__name__)
def test_every_parameter_but_the_flags_is_a_template_field(cls) -> None:
    assert set(cls.template_fields) == _parameters(cls) - set(FLAGS)
    assert len(set(cls.template_fields)) == len(cls.template_fields)


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__name__)
def test_every_template_field_renders(cls) -> None:
    """Each field set to its own ``{{ params.x_<field> }}``: each renders to its own value."""
    fields = cls.template_fields
    with dag(params={f"x_{field}": f"p-{field}" for field in fields}):
        task = cls(task_id="t", **{field: _template(field) for field in fields})
    render(task)
    assert {field: getattr(task, field) for field in fields} == {field: _rendered(field) for field in fields}


def test_fields_take_ds_params_and_dag_run_conf() -> None:
    with dag(params={"db": "lab"}):
        task = ops.PaimonRollbackOperator(task_id="t", table="{{ params.db }}.t_{{ ds_nodash }}",
                                          tag="{{ dag_run.conf['tag'] }}", snapshot_id="{{ dag_run.conf['id'] }}",
                                          timestamp_millis="{{ logical_date.int_timestamp * 1000 }}")
    render(task, conf={"tag": "v{{ 1 }}", "id": 42})
    assert task.table == "lab.t_20261120"
    assert task.tag == "v{{ 1 }}"  # a value from the run is rendered once, never evaluated as a template
    assert task.snapshot_id == "42" and task.timestamp_millis == str(int(LOGICAL_DATE.timestamp()) * 1000)
    arguments = task.arguments({})
    assert (arguments["snapshot_id"], arguments["timestamp_millis"]) == (42, int(LOGICAL_DATE.timestamp()) * 1000)


# -- sql files -------------------------------------------------------------------------------------

SQL = "SELECT id, v FROM staging WHERE dt = '{{ ds }}' AND batch = {{ dag_run.conf['batch'] }}\n"
RENDERED_SQL = "SELECT id, v FROM staging WHERE dt = '2026-11-20' AND batch = 7"  # Jinja drops the last newline


@pytest.fixture
def sql_folder(tmp_path: Path) -> Path:
    """A template_searchpath holding the query, and decoys named like other fields' values."""
    (tmp_path / "queries").mkdir()
    (tmp_path / "queries" / "daily.sql").write_text(SQL)
    for decoy in ("lab.sql", "staging.sql", "part=staging.sql"):
        (tmp_path / decoy).write_text("DECOY")
    return tmp_path


def _sql_write(folder: Path, **kwargs: Any):
    with dag(template_searchpath=[str(folder)]) as d:
        task = ops.PaimonWriteOperator(task_id="w", table="lab.sql", overwrite_partition="part=staging.sql",
                                       spark_conf={"spark.x": "staging.sql"}, **kwargs)
    return d, task


@pytest.mark.parametrize("parsed", [True, False], ids=["read-at-parse", "read-at-render"])
def test_sql_is_read_from_its_file_and_rendered(sql_folder: Path, parsed: bool) -> None:
    d, task = _sql_write(sql_folder, sql="queries/daily.sql")
    assert ops.PaimonWriteOperator.template_ext == (".sql",)
    if parsed:
        d.resolve_template_files()  # what Airflow's DagBag does when it parses the DAG file
        assert task.sql == SQL and task.table == "lab.sql"
    render(task, conf={"batch": 7})
    assert task.sql == RENDERED_SQL
    assert (task.table, task.overwrite_partition, task.spark_conf) == \
        ("lab.sql", "part=staging.sql", {"spark.x": "staging.sql"})  # values, not files
    assert ops.PaimonWriteOperator.template_ext == (".sql",)  # the class's, unchanged


def test_only_sql_is_ever_taken_for_a_file(sql_folder: Path) -> None:
    d, task = _sql_write(sql_folder, source_table="staging.sql", row_kind_column="{{ params.col }}.sql",
                         params={"col": "op"})
    d.resolve_template_files()
    render(task)
    assert (task.source_table, task.row_kind_column, task.table) == ("staging.sql", "op.sql", "lab.sql")


def test_a_mapped_write_renders_sql_files_the_same_way(sql_folder: Path) -> None:
    """Airflow renders a mapped task's expansion through another path (the unmapped task's
    ``_do_render_template_fields``): the same rule holds there."""
    with dag(template_searchpath=[str(sql_folder)]):
        mapped = ops.PaimonWriteOperator.partial(task_id="m", table="lab.sql",
                                                 overwrite_partition="part=staging.sql") \
            .expand(sql=["queries/daily.sql", "SELECT '{{ ds }}'"])
    rendered = []
    for index in range(2):
        ti = run_task(mapped, conf={"batch": 7})
        ti.map_index = index
        ti.render_templates()
        rendered.append((ti.task.sql, ti.task.table, ti.task.overwrite_partition))
    assert rendered == [(RENDERED_SQL, "lab.sql", "part=staging.sql"), ("SELECT '2026-11-20'", "lab.sql",
                                                                          "part=staging.sql")]


def test_inline_sql_renders(sql_folder: Path) -> None:
    _, task = _sql_write(sql_folder, sql=SQL)
    render(task, conf={"batch": 7})
    assert task.sql == RENDERED_SQL


def test_a_missing_sql_file_is_one_typed_line(sql_folder: Path) -> None:
    d, task = _sql_write(sql_folder, sql="queries/missing.sql")
    d.resolve_template_files()  # not found: stays a name
    assert task.sql == "queries/missing.sql"
    with pytest.raises(InvalidArgumentError, match=r"^sql: no file 'queries/missing.sql' in the DAG folder") as info:
        render(task)
    assert "\n" not in str(info.value)


# -- numbers and durations rendered as text ---------------------------------------------------------

def _table(name: str):
    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("lab", ignore_if_exists=True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = catalog.create_table(f"lab.{name}", schema, primary_keys=["id"], options={"bucket": "1"},
                                 ignore_if_exists=True)
    while (table.snapshot_manager.latest_id() or 0) < 2:
        table.write(pa.table({"id": [1], "v": ["x"]}, schema=schema))
    return table


def test_a_rendered_snapshot_id_tags_that_snapshot() -> None:
    table = _table("templated_tag")
    with dag():
        task = ops.PaimonCreateTagOperator(task_id="tag", table="lab.templated_tag", warehouse=str(WAREHOUSE),
                                           engine="core", name="day-{{ ds }}",
                                           snapshot_id="{{ dag_run.conf['snapshot'] }}")
    ti = render(task, conf={"snapshot": 1})
    assert task.snapshot_id == "1"  # stored as rendered, converted in execute
    result = task.execute(ti.get_template_context())
    assert result["snapshot_id"] == 1
    assert table.tags.list()["day-2026-11-20"].id == 1


BAD_VALUES = [
    (ops.PaimonCreateTagOperator, {"name": "t", "snapshot_id": "latest"}, "snapshot_id must be an integer"),
    (ops.PaimonRollbackOperator, {"snapshot_id": "4.2"}, "snapshot_id must be an integer"),
    (ops.PaimonRollbackOperator, {"timestamp_millis": "2026-11-20"}, "timestamp_millis must be an integer"),
    (ops.PaimonReadChangesOperator, {"start_snapshot": "1", "end_snapshot": "two", "output_path": "/tmp/x"},
     "end_snapshot must be an integer"),
    (ops.PaimonExpireSnapshotsOperator, {"retain_min": "ten"}, "retain_min must be an integer"),
    (ops.PaimonExpireChangelogsOperator, {"max_deletes": "1e3"}, "max_deletes must be an integer"),
    (ops.PaimonCompactOperator, {"buckets": ["0", "x"]}, "buckets must be an integer"),
    (ops.PaimonExpireSnapshotsOperator, {"older_than": "soon"}, "older_than must be a duration"),
    (ops.PaimonExpireTagsOperator, {"older_than": "7 weeks"}, "older_than must be a duration"),
    (ops.PaimonExpirePartitionsOperator, {"expiration": "-1 d"}, "expiration must be a duration"),
    (ops.PaimonRemoveOrphanFilesOperator, {"min_older_than": "1 hour ago"}, "min_older_than must be a duration"),
]


@pytest.mark.parametrize(("cls", "kwargs", "message"), BAD_VALUES,
                         ids=[f"{c.__name__}-{next(iter(k.items()))[0]}-{m.split()[0]}" for c, k, m in BAD_VALUES])
def test_a_bad_rendered_number_fails_execute_with_one_typed_line(cls, kwargs: dict[str, Any], message: str) -> None:
    table = _table("templated_bad")
    before = (table.snapshot_manager.latest_id(), table.tags.list())
    with dag(params={"v": kwargs}):
        task = cls(task_id="t", table="lab.templated_bad", warehouse=str(WAREHOUSE), engine="core",
                   **{key: _from_params(key, value) for key, value in kwargs.items()})
    ti = render(task)
    with pytest.raises(InvalidArgumentError, match=f"^{message}") as info:
        task.execute(ti.get_template_context())
    assert "\n" not in str(info.value)
    assert (table.snapshot_manager.latest_id(), table.tags.list()) == before  # refused before any work


def _from_params(key: str, value: Any) -> Any:
    if isinstance(value, list):
        return ["{{ params.v." + key + f"[{i}] }}}}" for i in range(len(value))]
    return "{{ params.v." + key + " }}"


@pytest.mark.parametrize(("value", "expected"), [("42", 42), (" 7 ", 7), (42, 42), ("", None), ("None", None),
                                                 (None, None)])
def test_rendered_integers(value: Any, expected: int | None) -> None:
    task = ops.PaimonRollbackOperator(task_id="t", table="lab.t", snapshot_id=value)
    assert task.arguments({})["snapshot_id"] == expected


@pytest.mark.parametrize(("value", "expected"), [("7 d", 7 * 86_400_000), ("100", 100), (250, 250), ("", None)])
def test_rendered_durations(value: Any, expected: int | None) -> None:
    task = ops.PaimonExpireTagsOperator(task_id="t", table="lab.t", older_than=value)
    assert task.arguments({})["older_than_millis"] == expected


def test_a_single_rendered_item_is_one_item_not_its_characters() -> None:
    compact = ops.PaimonCompactOperator(task_id="c", table="lab.t", partitions="dt=2026-11-20", buckets="3")
    assert compact.arguments({})["partition"] == ["dt=2026-11-20"] and compact.arguments({})["bucket"] == [3]
    analyze = ops.PaimonAnalyzeOperator(task_id="a", table="lab.t", columns="v")
    assert analyze.arguments({}) == {"columns": ["v"]}


# -- the snapshot sensor ------------------------------------------------------------------------------

def test_the_snapshot_sensor_renders_its_fields_and_checks_them_when_rendered() -> None:
    from airflow.sdk import Asset
    from airflow.sdk.exceptions import AirflowFailException

    from paimonflow.sensors.airflow import PaimonSnapshotSensor

    cursor = Asset(name="templates/cursor", uri="file:///templates/cursor")
    with dag(params={"db": "lab", "kind": "COMPACT", "rollback": "restart"}):
        sensor = PaimonSnapshotSensor(task_id="s", table="{{ params.db }}.t_{{ ds_nodash }}",
                                      paimon_conn_id="{{ dag_run.conf['conn'] }}", warehouse="{{ params.db }}-wh",
                                      commit_kinds=["{{ params.kind }}"], on_rollback="{{ params.rollback }}",
                                      on_expired="{{ dag_run.conf['expired'] }}", cursor_asset=cursor)
    assert set(sensor.template_fields) == {"table", "paimon_conn_id", "warehouse", "last_observation",
                                           "commit_kinds", "on_rollback", "on_expired"}
    render(sensor, conf={"conn": "paimon_x", "expired": "continue"})
    assert (sensor.table, sensor.paimon_conn_id, sensor.warehouse) == ("lab.t_20261120", "paimon_x", "lab-wh")
    assert (sensor.commit_kinds, sensor.on_rollback, sensor.on_expired) == (["COMPACT"], "restart", "continue")
    assert sensor._validated() == ("COMPACT",) and cursor in sensor.inlets

    with dag():
        bad = PaimonSnapshotSensor(task_id="s", table="lab.t", warehouse="wh", commit_kinds=["{{ 'APPEN' }}"])
    render(bad)
    with pytest.raises(AirflowFailException, match=r"^unknown commit kind 'APPEN'"):
        bad._check({})
    with dag(), pytest.raises(ValueError, match="on_rollback is 'fail' or 'restart'"):
        PaimonSnapshotSensor(task_id="s", table="lab.t", warehouse="wh", on_rollback="ignore")  # literal: at parse


# -- the table-health link, from the rendered table ------------------------------------------------------

def test_the_health_link_follows_the_rendered_table_to_its_branch_page_or_gives_none() -> None:
    """Airflow evaluates the link with the rendered operator: a table rendered to a branch links to
    the branch's page; one rendered to a system table (which has no page) gets no link, not a dead one."""
    from paimonflow.operators.airflow.links import TableHealthLink

    with dag(params={"branch": "dev+1", "system": "snapshots"}):
        branch = ops.PaimonCompactOperator(task_id="b", table="lab.t$branch_{{ params.branch }}",
                                           paimon_conn_id="paimon_lab")
        system = ops.PaimonCompactOperator(task_id="s", table="lab.t${{ params.system }}",
                                           paimon_conn_id="paimon_lab")
    render(branch)
    render(system)
    assert TableHealthLink().get_link(branch, ti_key=None).endswith(
        "/paimonflow/connections/paimon_lab/health/lab.t%24branch_dev%2B1")
    assert system.table == "lab.t$snapshots" and TableHealthLink().get_link(system, ti_key=None) == ""
