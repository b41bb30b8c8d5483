"""Test DAGs (tests/airflow): every operator on the core engine, a connection holding a fake
secret, and a deferrable sensor that has to wait."""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from paimonflow.operators.airflow import (
    PaimonAnalyzeOperator,
    PaimonBranchOperator,
    PaimonCompactOperator,
    PaimonCreateTagOperator,
    PaimonDeleteTagOperator,
    PaimonExpirePartitionsOperator,
    PaimonExpireSnapshotsOperator,
    PaimonExpireTagsOperator,
    PaimonReadChangesOperator,
    PaimonRemoveOrphanFilesOperator,
    PaimonRollbackOperator,
    PaimonWriteOperator,
    table_asset,
)
from paimonflow.sensors.airflow import PaimonSnapshotSensor

WAREHOUSE = os.environ["PAIMONFLOW_WAREHOUSE"]
LANDING = os.environ["PAIMONFLOW_LANDING"]

with DAG(dag_id="paimon_test_operators", schedule=None, start_date=datetime(2026, 11, 1), catchup=False):
    c = {"table": "lab.t", "warehouse": WAREHOUSE, "engine": "core"}
    w1 = PaimonWriteOperator(task_id="write_1", path=LANDING + "/lab/1", outlets=[table_asset(WAREHOUSE, "lab.t")],
                             **c)
    tag = PaimonCreateTagOperator(task_id="tag", name="after-first", **c)
    w2 = PaimonWriteOperator(task_id="write_2", path=LANDING + "/lab/2", **c)
    compact = PaimonCompactOperator(task_id="compact", **c)
    analyze = PaimonAnalyzeOperator(task_id="analyze", **c)
    branch = PaimonBranchOperator(task_id="branch", branch="fix", tag="after-first", **c)
    changes = PaimonReadChangesOperator(task_id="changes", start_snapshot=1, end_snapshot="{{ ti.xcom_pull("
                                        "task_ids='write_2')['snapshot_id'] }}", output_path=LANDING + "/lab/out",
                                        mode="delta", **c)
    plan = PaimonExpireSnapshotsOperator(task_id="expire_plan", retain_min=1, older_than="0 ms", dry_run=True, **c)
    partitions = PaimonExpirePartitionsOperator(task_id="expire_partitions", expiration="3650 d", **c)
    rollback = PaimonRollbackOperator(task_id="rollback", tag="after-first", **c)
    ff = PaimonBranchOperator(task_id="fast_forward", branch="fix", action="fast-forward", **c)
    untag = PaimonDeleteTagOperator(task_id="delete_tag", name="after-first", **c)
    expire_tags = PaimonExpireTagsOperator(task_id="expire_tags", **c)
    orphans = PaimonRemoveOrphanFilesOperator(task_id="orphans", older_than="0 ms", min_older_than="0 ms", **c)
    w1 >> tag >> w2 >> compact >> analyze >> branch >> changes >> plan >> partitions >> rollback >> ff
    ff >> untag >> expire_tags >> orphans

with DAG(dag_id="paimon_test_secret", schedule=None, start_date=datetime(2026, 11, 1), catchup=False):
    PaimonAnalyzeOperator(task_id="analyze_with_secret", table="lab.s", paimon_conn_id="paimon_secret",
                          engine="core")

with DAG(dag_id="paimon_test_deferral", schedule=None, start_date=datetime(2026, 11, 1), catchup=False):
    PaimonSnapshotSensor(task_id="wait", table="lab.d", warehouse=WAREHOUSE, deferrable=True, poke_interval=1,
                         last_observation="{{ params.cursor }}", params={"cursor": ""})

with DAG(dag_id="paimon_test_spark_submit", schedule=None, start_date=datetime(2026, 11, 1), catchup=False):
    PaimonWriteOperator(task_id="submitted_write", table="lab.sub", warehouse=WAREHOUSE, engine="spark-submit",
                        spark_conn_id="spark_local", path=LANDING + "/lab/sub",
                        spark_conf={"spark.ui.enabled": "false"})

with DAG(dag_id="paimon_test_spark_cluster", schedule=None, start_date=datetime(2026, 11, 1), catchup=False):
    # the connection (AIRFLOW_CONN_SPARK_CLUSTER) is set by the test to the standalone cluster's master
    PaimonWriteOperator(task_id="cluster_write", table="lab.cluster", warehouse=WAREHOUSE, engine="spark-submit",
                        spark_conn_id="spark_cluster", path=LANDING + "/lab/cluster",
                        spark_conf={"spark.ui.enabled": "false", "spark.executor.memory": "512m",
                                    "spark.scheduler.minRegisteredResourcesRatio": "1.0"})

with DAG(dag_id="paimon_test_spark_deferred", schedule=None, start_date=datetime(2026, 11, 1), catchup=False):
    # deferrable spark-submit on the standalone cluster (AIRFLOW_CONN_SPARK_CLUSTER, set by the test,
    # with the master's web UI in its master_web_ui extra)
    PaimonWriteOperator(task_id="deferred_write", table="lab.deferred", path=LANDING + "/lab/deferred",
                        warehouse=WAREHOUSE, engine="spark-submit", spark_conn_id="spark_cluster", deferrable=True,
                        poll_interval=1, spark_conf={"spark.ui.enabled": "false", "spark.executor.memory": "512m"})
