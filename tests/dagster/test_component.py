"""PaimonTableComponent: a table's Dagster definitions from YAML, its scaffolder, and the dg CLI
finding it through the ``dagster_dg_cli.registry_modules`` entry point."""

# No ``from __future__ import annotations``: Dagster reads annotations at runtime.

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError
from paimonflow.plugins.dagster import PaimonTableComponent, PaimonTableScaffolder

TYPE = "paimonflow.plugins.dagster.PaimonTableComponent"
DG = os.path.join(os.path.dirname(sys.executable), "dg")


def component(yaml: str) -> PaimonTableComponent:
    return PaimonTableComponent.resolve_from_yaml(yaml)


def test_the_yaml_builds_the_tables_assets_checks_job_schedule_and_observer():
    defs = dg.build_defs_for_component(component("""
        table: shop.returns
        source: /landing/returns/{partition}
        partitions: {type: daily, start: "2026-11-01"}
        partition_column: dt
        maintenance_cron: "0 3 * * *"
        freshness: "6 h"
    """))
    key = dg.AssetKey(["paimon", "shop", "returns"])
    [asset] = defs.assets
    assert asset.key == key and isinstance(asset.partitions_def, dg.DailyPartitionsDefinition)
    assert asset.specs_by_key[key].freshness_policy is not None
    [checks] = defs.asset_checks
    assert {c.name for c in checks.check_specs} == {"small_files", "level0_runs", "snapshots_retained", "recent_tags",
                                                    "fresh"}
    [job] = defs.jobs
    [schedule] = defs.schedules
    assert job.name == "maintain_shop_returns" and schedule.cron_schedule == "0 3 * * *"
    [sensor] = defs.sensors
    assert sensor.name == "paimon_commits_shop_returns"


def test_a_bad_duration_is_one_line():
    with pytest.raises(InvalidArgumentError) as caught:
        dg.build_defs_for_component(component("table: shop.t\nfreshness: soon\n"))
    assert str(caught.value) == ("PaimonTableComponent shop.t: freshness 'soon' is not a duration: expected a "
                                 "duration such as '1 h', '30 min', '10 s' or '100 ms'")


@pytest.mark.slow
def test_the_component_materializes_and_runs_its_maintenance(spark, tmp_path):
    """The YAML's asset writes a day from its source, overwriting that table partition."""
    from paimonflow.operators.dagster import PaimonResource, SparkResource

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("shop")
    catalog.create_table("shop.returns", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1"})
    (tmp_path / "in" / "2026-11-02").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2], "dt": ["2026-11-02"] * 2}, schema=schema),
                   tmp_path / "in" / "2026-11-02" / "part.parquet")
    defs = dg.build_defs_for_component(component(f"""
        table: shop.returns
        source: {tmp_path}/in/{{partition}}
        partitions: {{type: daily, start: "2026-11-01"}}
        partition_column: dt
    """))
    resources = {"paimon": PaimonResource(warehouse=str(tmp_path / "wh")), "spark": SparkResource()}
    for _ in range(2):
        assert dg.materialize(defs.assets, resources=resources, partition_key="2026-11-02").success
    assert sorted(catalog.get_table("shop.returns").read().column("id").to_pylist()) == [1, 2]
    [job] = defs.jobs
    assert dg.Definitions(jobs=[job], resources=resources).resolve_job_def(job.name).execute_in_process().success


def test_dg_lists_the_component_and_scaffolds_its_yaml(tmp_path):
    listed = subprocess.run([DG, "list", "components", "--json"], capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert TYPE in {c["key"] for c in json.loads(listed.stdout)["items"]}
    target = tmp_path / "returns"
    PaimonTableScaffolder().scaffold(dg.ScaffoldRequest(type_name=TYPE, target_path=target, scaffold_format="yaml",
                                                         project_root=None, params=None))
    text = (target / "defs.yaml").read_text()
    assert text.startswith(f"type: {TYPE}\n")
    # the scaffolded YAML is a valid component as it stands
    attributes = text.split("attributes:\n", 1)[1]
    assert dg.build_defs_for_component(component(_dedent(attributes))).assets


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text)


def test_the_example_project_loads_its_component(dagster_env):
    from .conftest import import_definitions

    defs = import_definitions().defs
    assert defs.resolve_assets_def(dg.AssetKey(["paimon", "shop", "returns"])) is not None
    assert defs.resolve_job_def("maintain_shop_returns") is not None
    assert Path(import_definitions().__file__).parent.joinpath("dagster_defs", "returns", "defs.yaml").exists()


def test_the_observer_of_a_daily_table_reports_each_commit_for_the_days_it_touched(tmp_path):
    """The YAML's observer (on by default) maps the table's ``partition_column`` to the daily
    keys: a commit made outside Dagster is one materialization per day it touched."""
    from paimonflow.operators.dagster import PaimonResource

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("shop")
    returns = catalog.create_table("shop.returns", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                                   options={"bucket": "1"})
    defs = dg.build_defs_for_component(component("""
        table: shop.returns
        partitions: {type: daily, start: "2026-11-01"}
        partition_column: dt
    """))
    [sensor] = defs.sensors
    resources = {"paimon": PaimonResource(warehouse=str(tmp_path / "wh"))}
    with dg.build_sensor_context(resources=resources) as context:
        first = sensor.evaluate_tick(context)
    returns.write(pa.table({"id": [1, 2, 3], "dt": ["2026-11-02", "2026-11-02", "2026-11-04"]}, schema=schema),
                  commit_user="returns-desk")
    with dg.build_sensor_context(cursor=first.cursor, resources=resources) as context:
        events = sensor.evaluate_tick(context).asset_events
    assert sorted((e.asset_key, e.partition) for e in events) == [
        (dg.AssetKey(["paimon", "shop", "returns"]), "2026-11-02"), (dg.AssetKey(["paimon", "shop", "returns"]),
                                                                      "2026-11-04")]


def test_a_partitioned_table_without_partition_column_has_no_observer_mapping_and_says_so():
    with pytest.raises(InvalidArgumentError) as caught:
        dg.build_defs_for_component(component("""
            table: shop.returns
            partitions: {type: daily, start: "2026-11-01"}
        """))
    assert str(caught.value) == ("PaimonTableComponent shop.returns: the commit observer reports each commit for the "
                                 "partitions it touched, which needs partition_column (the table column holding the "
                                 "partition key); set partition_column, or observe_commits: false")
    defs = dg.build_defs_for_component(component("""
        table: shop.returns
        partitions: {type: daily, start: "2026-11-01"}
        observe_commits: false
    """))
    assert not defs.sensors and defs.assets
