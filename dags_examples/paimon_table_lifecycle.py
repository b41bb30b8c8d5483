"""A table's life in one DAG: create it, load the day's landed files, check them, compact.

``create_table`` creates ``shop.returns`` (and the ``shop`` database) from its definition: columns,
primary key, partition key, options. It is idempotent, so every run starts with it: the first run
creates the table, later runs (and retries) find it as defined and go on; a table of that name
defined otherwise fails the run, naming the differences. ``load`` overwrites the day's partition
with the files landed in ``<landing>/returns/<YYYY-MM-DD>/`` (a day with nothing landed skips the
rest of the run; a rerun of a day replaces the partition with the same rows, and a retry commits
nothing). ``check`` reads the day's partition and fails the run, listing every failed check with
its numbers, when the day has no rows or an amount is missing or negative; the compaction then does
not run. ``compact`` compacts the day's partition.

Deploy: the ``paimon_default`` connection names the warehouse (its host) and the engine the load
and the compaction run on (its ``engine`` extra: ``spark`` when absent, ``spark-submit`` for a
cluster, ``core`` without Spark); the DDL and the check run on the core in the task's process
whatever the engine (metadata work, and a read of the checked columns). The Airflow Variable
``paimonflow_landing`` is where the files land. A manual run loads the day it runs.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from paimonflow.operators.airflow import (
    PaimonCompactOperator,
    PaimonCreateTableOperator,
    PaimonTableCheckOperator,
    PaimonWriteOperator,
    connection_table_asset,
)

TABLE = "shop.returns"
DAY = "{{ (dag_run.logical_date or dag_run.run_after) | ds }}"

with DAG(
    dag_id="paimon_table_lifecycle",
    schedule="@daily",
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=1,
    tags=["paimonflow"],
):
    create_table = PaimonCreateTableOperator(
        task_id="create_table",
        table=TABLE,
        columns=[
            {"name": "order_id", "type": "BIGINT"},
            {"name": "dt", "type": "STRING", "comment": "the day the return was booked"},
            {"name": "amount", "type": "DOUBLE", "comment": "refunded, in EUR"},
            {"name": "reason", "type": "STRING"},
        ],
        primary_keys=["order_id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2", "snapshot.num-retained.min": "5"},
        comment="returned orders, one partition per day",
        create_database=True,
    )
    load = PaimonWriteOperator(
        task_id="load",
        table=TABLE,
        path="{{ var.value.paimonflow_landing }}/returns/" + DAY,
        mode="overwrite",
        overwrite_partition="dt=" + DAY,
        if_missing="skip",  # nothing landed that day: the check and the compaction are skipped too
        outlets=[connection_table_asset(TABLE)],
    )
    check = PaimonTableCheckOperator(
        task_id="check",
        table=TABLE,
        partition="dt=" + DAY,
        checks={"row_count": {"geq_to": 1}},
        column_checks={"amount": {"null_check": {"equal_to": 0}, "min": {"geq_to": 0}}},
    )
    compact = PaimonCompactOperator(
        task_id="compact",
        table=TABLE,
        partitions="dt=" + DAY,
        outlets=[connection_table_asset(TABLE)],
    )
    create_table >> load >> check >> compact
