"""Nightly maintenance of ``shop.orders``: compact, tag the day, expire snapshots, expire long-lived
changelogs, expire tags, remove orphan files. Each step is idempotent, so a rerun of a night (or a
retry) is harmless. The ``paimon_default`` connection names the warehouse and the engine; a manual
run tags the day it runs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk import DAG

from paimonflow.operators.airflow import (
    PaimonCompactOperator,
    PaimonCreateTagOperator,
    PaimonExpireChangelogsOperator,
    PaimonExpireSnapshotsOperator,
    PaimonExpireTagsOperator,
    PaimonRemoveOrphanFilesOperator,
    connection_table_asset,
)

TABLE = "shop.orders"
ORPHAN_AGE = "{{ var.value.get('paimonflow_orphan_age', '1 d') }}"
# The shortest orphan window allowed: longer than any writer keeps files uncommitted, plus clock skew.
ORPHAN_MIN_AGE = "{{ var.value.get('paimonflow_orphan_min_age', '1 h') }}"

with DAG(
    dag_id="paimon_maintenance_nightly",
    schedule="0 2 * * *",
    start_date=datetime(2026, 11, 21),
    catchup=False,
    max_active_runs=1,  # maintenance of one table never overlaps itself
    tags=["paimonflow"],
):
    common: dict[str, Any] = {"table": TABLE}
    compact = PaimonCompactOperator(task_id="compact", full=True, outlets=[connection_table_asset(TABLE)], **common)
    expire = PaimonExpireSnapshotsOperator(task_id="expire_snapshots", **common)
    expire_changelogs = PaimonExpireChangelogsOperator(task_id="expire_changelogs", **common)
    tag = PaimonCreateTagOperator(task_id="tag_the_day", time_retained="30 d",
                                  name="{{ (dag_run.logical_date or dag_run.run_after) | ds }}", **common)
    expire_tags = PaimonExpireTagsOperator(task_id="expire_tags", **common)
    orphans = PaimonRemoveOrphanFilesOperator(task_id="remove_orphan_files", older_than=ORPHAN_AGE,
                                              min_older_than=ORPHAN_MIN_AGE, **common)
    compact >> tag >> expire >> expire_changelogs >> expire_tags >> orphans
