"""Name fuzzing through the Airflow operators and sensor (reference/reliability.md I7, S1, S7, S12).

Fuzzed and nasty names arrive as ``dag_run.conf`` values rendered through Jinja into the operators'
templated fields (table, tag name, branch, rollback tag) and are executed for real on the core
engine (``operator.execute(context)``, as tests/airflow does). Oracle: a typed ``InvalidNameError``
(another ``PaimonflowError`` only for a valid name), or the operation stays inside the table: the
tree around the warehouse (``sandbox/``) is unchanged outside ``sandbox/warehouse``, and no
``snapshot-*`` file appears that was not committed (a new one must be the snapshot a committing task
reported, under that task's commit user: ``compact`` on ``lab.t`` commits one).

Fuzzed table names also go to the plugin's table-health page as its URL carries them (the
operators' link): one path segment, a one-line 400 or a page, and a link only where there is a page.

The Airflow context is a stand-in (a real ``RuntimeTaskInstance`` needs the task supervisor behind
it, and ``dag.test()`` per fuzzed name is far too slow): it holds every key and task-instance member
the operators and the sensor use, with Airflow's behaviour (see :class:`StandInTaskInstance`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidNameError, PaimonflowError
from paimonflow.core.meta.snapshots import SNAPSHOT_PREFIX
from tests.name_fuzz import NAMES, NASTY, SETTINGS, Sandbox, tree


class StandInTaskInstance:
    """A fake of Airflow's task instance holding what the operators and the sensor use of
    ``context["ti"]``: ``dag_id``, ``task_id``, ``map_index`` (commit user, Spark job group),
    ``run_id`` and ``xcom_pull`` (a downstream task's view of a range), and
    ``xcom_push`` (how the harness stores a task's return value, as Airflow does). XComs live in
    ``store``, shared by the task instances of one DAG run and keyed as Airflow keys them,
    ``(dag_id, run_id, task_id, map_index, key)``. ``xcom_pull`` follows Airflow's: one task id
    (default: this task) gives one value or ``default`` when nothing was pushed; several give a list;
    ``include_prior_dates`` also looks at other runs in the store (the latest push wins).
    Anything else the code under test reached for would fail here with an ``AttributeError``."""

    __slots__ = ("_store", "dag_id", "map_index", "pulls", "run_id", "task_id")

    def __init__(self, store: dict, *, dag_id: str, task_id: str, run_id: str, map_index: int = -1) -> None:
        self._store, self.dag_id, self.task_id, self.run_id = store, dag_id, task_id, run_id
        self.map_index, self.pulls = map_index, 0

    def xcom_push(self, key: str, value: Any) -> None:
        where = (self.dag_id, self.run_id, self.task_id, self.map_index, key)
        self._store.pop(where, None)  # re-inserted: the store's order is the order of pushes
        self._store[where] = value

    def xcom_pull(self, task_ids: str | Iterable[str] | None = None, dag_id: str | None = None,
                  key: str = "return_value", include_prior_dates: bool = False, *,
                  map_indexes: int | Iterable[int] | None = None, default: Any = None,
                  run_id: str | None = None) -> Any:
        self.pulls += 1
        dag_id, run_id = dag_id or self.dag_id, run_id or self.run_id
        if isinstance(map_indexes, int):
            map_indexes = [map_indexes]
        indexes = None if map_indexes is None else set(map_indexes)

        def one(task_id: str) -> Any:
            found = [value for (d, r, t, m, k), value in self._store.items()
                     if (d, t, k) == (dag_id, task_id, key) and (include_prior_dates or r == run_id)
                     and (indexes is None or m in indexes)]
            return found[-1] if found else default

        if task_ids is None or isinstance(task_ids, str):
            return one(task_ids or self.task_id)
        return [one(task_id) for task_id in task_ids]


class StandInStateStore:
    """A fake of one Airflow state-store accessor (``get(key, default)``, ``set(key, value)``) over
    a dict the harness owns; ``reads`` counts lookups (the sensor's cursor)."""

    def __init__(self, values: dict) -> None:
        self.values, self.reads = values, 0

    def get(self, key: str, default: Any = None) -> Any:
        self.reads += 1
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        if value is None:
            raise ValueError("Cannot set value as None")  # as Airflow's accessors refuse it
        self.values[key] = value


class StandInAssetStores:
    """``context["asset_state_store"]``: one :class:`StandInStateStore` per asset name, as
    Airflow's accessors are subscripted by asset."""

    def __init__(self, values: dict) -> None:
        self.values, self.stores = values, []

    def __getitem__(self, asset) -> StandInStateStore:
        store = StandInStateStore(self.values.setdefault(asset.name, {}))
        self.stores.append(store)
        return store


def _context(xcoms: dict, states: dict, task_id: str, name: str) -> dict[str, Any]:
    """The context of one task of the DAG run ``manual`` whose ``dag_run.conf`` is ``{"name": name}``."""
    logical_date, run_id = datetime(2026, 11, 20, tzinfo=UTC), "manual"
    ti = StandInTaskInstance(xcoms, dag_id="fuzz", task_id=task_id, run_id=run_id)
    dag_run = SimpleNamespace(dag_id="fuzz", run_id=run_id, logical_date=logical_date, conf={"name": name})
    return {"ti": ti, "task_instance": ti, "dag_run": dag_run, "run_id": run_id, "logical_date": logical_date,
            "outlet_events": None, "params": {},
            "task_state_store": StandInStateStore(states.setdefault(("task", task_id), {})),
            "asset_state_store": StandInAssetStores(states.setdefault("assets", {}))}


def _operators(warehouse: str) -> list:
    from airflow.sdk import Asset

    from paimonflow.operators import airflow as p
    from paimonflow.sensors.airflow import PaimonSnapshotSensor

    c = {"warehouse": warehouse, "engine": "core"}
    conf = "{{ dag_run.conf['name'] }}"
    return [
        p.PaimonCreateTagOperator(task_id="tag", table="lab.t", name=conf, snapshot_id=1, **c),
        p.PaimonDeleteTagOperator(task_id="untag", table="lab.t", name=conf, **c),
        p.PaimonBranchOperator(task_id="branch", table="lab.t", branch=conf, **c),
        p.PaimonBranchOperator(task_id="branch_from_tag", table="lab.t", branch="b1", tag=conf, **c),
        p.PaimonRollbackOperator(task_id="rollback", table="lab.t", tag=conf, **c),
        p.PaimonCompactOperator(task_id="compact_table", table="lab." + conf, **c),
        p.PaimonExpireSnapshotsOperator(task_id="expire_db", table=conf + ".t", dry_run=True, **c),
        PaimonSnapshotSensor(task_id="sensor", table="lab." + conf, warehouse=warehouse, poke_interval=1, timeout=5,
                             mode="poke", cursor_asset=Asset(name="fuzz/cursor", uri="file:///fuzz/cursor")),
    ]


@pytest.mark.slow
def test_fuzzed_dag_run_conf_names_through_every_templated_operator(airflow_db, tmp_path: Path, reliability) -> None:
    from paimonflow.operators.airflow import commit_user_for

    box = Sandbox(tmp_path)
    box.table.tags.create("keep", snapshot_id=1)
    warehouse = box.warehouse
    counts = {"names": 0, "refused": 0, "ran": 0, "cursor_lookups": 0}

    def one(name: str) -> None:
        counts["names"] += 1
        before = box.state()
        xcoms: dict = {}  # each name is a new DAG run of a new DAG: no earlier XComs
        states: dict = {}  # nor task or asset state
        reported: dict[int, str] = {}  # snapshot id -> commit user, from the results of committing tasks
        for op in _operators(str(warehouse)):
            context = _context(xcoms, states, op.task_id, name)
            op.render_template_fields(context)
            try:
                if hasattr(op, "poke"):
                    poked = op.poke(context)
                    result = poked.xcom_value if poked.is_done else None
                else:
                    result = op.execute(context)
                if result is not None:  # what Airflow does with a task's return value
                    context["ti"].xcom_push("return_value", result)
                if getattr(op, "commits", False) and result.get("snapshot_id") is not None:
                    reported[result["snapshot_id"]] = commit_user_for(context)
                counts["ran"] += 1
            except InvalidNameError:
                counts["refused"] += 1
            except PaimonflowError:
                counts["ran"] += 1  # a valid name the table does not know (tag, branch, table)
            finally:
                counts["cursor_lookups"] += sum(store.reads for store in context["asset_state_store"].stores)
        snapshots = box.table.snapshot_manager
        committed = {f"{SNAPSHOT_PREFIX}{i}" for i, user in reported.items()
                     if (snapshot := snapshots.try_snapshot(i)) is not None and snapshot.commit_user == user}
        box.check((before[0], before[1] | committed), name)
        for path in tree(warehouse):
            assert os.path.realpath(warehouse / path).startswith(os.path.realpath(warehouse) + os.sep)

    for name in [*NASTY, "t"]:  # "t" opens lab.t: the sensor reaches its cursor lookup
        one(name)

    @settings(max_examples=reliability.scale(100, 1500), **SETTINGS)
    @given(name=NAMES)
    def run(name: str) -> None:
        one(name)

    run()
    assert Catalog(str(warehouse)).get_table("lab.t").tags.get("keep").id == 1
    reliability.record(names=counts["names"], examples=counts["refused"] + counts["ran"])
    assert counts["refused"] > 0 and counts["ran"] > 0 and counts["cursor_lookups"] > 0


# -- the table-health page's names and the operators' link to it ---------------------------------------

SHAPES = ["NAME", "lab.NAME", "NAME.t", "lab.t$NAME", "lab.t$branch_NAME", "lab.t$branch_NAME$files",
          "lab.t$branch_b$NAME"]


def test_fuzzed_names_reach_the_health_page_as_one_segment_and_get_a_link_only_if_it_has_a_page() -> None:
    """For any table name an operator may hold: its link's path has the name as one percent-encoded
    segment (never a '/' of its own: the route's ``{identifier}`` takes it whole); the page's name
    check answers 400 in one line or accepts it; and the operator gets a link exactly when the page
    accepts the name (a table or a branch; never a system table or a refused name: no dead link)."""
    from urllib.parse import unquote

    from fastapi import HTTPException

    from paimonflow.operators.airflow.links import has_health_page, health_path
    from paimonflow.plugins.airflow.web import health_table_name

    prefix = "/paimonflow/connections/paimon_lab/health/"
    outcomes = {"page": 0, "refused": 0}

    def one(name: str) -> None:
        path = health_path("paimon_lab", name)
        assert path.startswith(prefix)
        segment = path[len(prefix):]
        assert "/" not in segment and unquote(segment) == name
        try:
            accepted = health_table_name(name) == name
        except HTTPException as exc:
            assert exc.status_code == 400 and "\n" not in str(exc.detail)
            accepted = False
        assert has_health_page(name) is accepted, name
        outcomes["page" if accepted else "refused"] += 1

    for nasty in [*NASTY, "b", "dev+1@x~"]:
        for shape in SHAPES:
            one(shape.replace("NAME", nasty))

    @settings(max_examples=300, **SETTINGS)
    @given(name=NAMES, shape=st.sampled_from(SHAPES))
    def run(name: str, shape: str) -> None:
        one(shape.replace("NAME", name))

    run()
    assert outcomes["page"] > 0 and outcomes["refused"] > 0
