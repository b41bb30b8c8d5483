"""Name fuzzing through the Airflow operators and sensor (reference/reliability.md I7, S1, S7, S12).

Fuzzed and nasty names arrive as ``dag_run.conf`` values rendered through Jinja into the operators'
templated fields (table, tag name, branch, rollback tag) and are executed for real on the core
engine (``operator.execute(context)``, as tests/airflow does). Oracle: a typed ``InvalidNameError``
(another ``PaimonflowError`` only for a valid name), or the operation stays inside the table: the
tree around the warehouse (``sandbox/``) is unchanged outside ``sandbox/warehouse``, and no
``snapshot-*`` file appears that was not committed.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidNameError, PaimonflowError
from tests.name_fuzz import NAMES, NASTY, SETTINGS, Sandbox, tree


def _operators(warehouse: str) -> list:
    from paimonflow.operators import paimon as p
    from paimonflow.sensors.snapshot import PaimonSnapshotSensor

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
                             mode="poke"),
    ]


@pytest.mark.slow
def test_fuzzed_dag_run_conf_names_through_every_templated_operator(airflow_db, tmp_path: Path, reliability) -> None:
    box = Sandbox(tmp_path)
    box.table.tags.create("keep", snapshot_id=1)
    warehouse = box.warehouse
    counts = {"names": 0, "refused": 0, "ran": 0}

    def one(name: str) -> None:
        counts["names"] += 1
        before = box.state()
        for op in _operators(str(warehouse)):
            context = {"ti": SimpleNamespace(dag_id="fuzz", task_id=op.task_id, map_index=-1),
                       "logical_date": datetime(2026, 11, 20, tzinfo=UTC), "run_id": "manual",
                       "outlet_events": None, "dag_run": SimpleNamespace(conf={"name": name}), "params": {}}
            op.render_template_fields(context)
            try:
                op.poke(context) if hasattr(op, "poke") else op.execute(context)
                counts["ran"] += 1
            except InvalidNameError:
                counts["refused"] += 1
            except PaimonflowError:
                counts["ran"] += 1  # a valid name the table does not know (tag, branch, table)
        box.check(before, name)
        for path in tree(warehouse):
            assert os.path.realpath(warehouse / path).startswith(os.path.realpath(warehouse) + os.sep)

    for name in NASTY:
        one(name)

    @settings(max_examples=reliability.scale(100, 1500), **SETTINGS)
    @given(name=NAMES)
    def run(name: str) -> None:
        one(name)

    run()
    assert Catalog(str(warehouse)).get_table("lab.t").tags.get("keep").id == 1
    reliability.record(names=counts["names"], examples=counts["refused"] + counts["ran"])
    assert counts["refused"] > 0 and counts["ran"] > 0
