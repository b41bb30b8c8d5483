"""Dagster: name fuzzing through run config, resources, ops and the sensor (reference/reliability.md
I7, S1, S7), and secret canaries in resource fields (A13, S8-S11).

Names: fuzzed and nasty table and tag names reach the product code through Dagster run config
(an op's config, resolved by Dagster, handed to ``PaimonResource.table`` / the table's tags) and
through ``paimon_snapshot_sensor(table)`` evaluated for real. Oracle: ``InvalidNameError`` (other
``PaimonflowError`` only for valid names) or containment: the tree around the warehouse is
unchanged outside it, no snapshot planted.

Canaries: every credential field of ``S3Storage`` comes from ``dg.EnvVar``; a real job runs ops
that fail on an S3 endpoint that refuses connections, and the sensor is evaluated on it. The
canaries must be absent from the Dagster event log (every event of the run, its error and
traceback), output metadata, the sensor result, and every log record (caplog at DEBUG).
"""

# No ``from __future__ import annotations``: Dagster reads the ops' annotations at runtime.

import logging
from pathlib import Path

import dagster as dg
import pytest
from hypothesis import given, settings

from paimonflow.core.errors import InvalidNameError, PaimonflowError
from paimonflow.operators.dagster import PaimonResource, S3Storage
from paimonflow.sensors.dagster import paimon_snapshot_sensor
from tests.name_fuzz import NAMES, NASTY, SETTINGS, Sandbox

CANARIES = {"TEST_CANARY_ACCESS": "CANARY-dg-ak-1c5e", "TEST_CANARY_SECRET": "CANARY-dg-sk-77b0",
            "TEST_CANARY_TOKEN": "CANARY-dg-tok-e402"}



@dg.op(config_schema={"table": str, "tag": str})
def tag_from_run_config(context: dg.OpExecutionContext, paimon: PaimonResource) -> str:
    """Run config chooses the table and the tag name (S7): they must go through the validator."""
    outcome = "done"
    try:
        t = paimon.table(context.op_config["table"])
        t.tags.create(context.op_config["tag"], snapshot_id=1, ignore_if_exists=True)
        t.read(tag=context.op_config["tag"])
        t.consumer_manager.record(context.op_config["tag"], 1)
    except InvalidNameError:
        outcome = "refused"
    except PaimonflowError:
        outcome = "typed"
    return outcome


@dg.job
def name_job():
    tag_from_run_config()


@pytest.mark.slow
def test_fuzzed_names_through_run_config_and_the_sensor(tmp_path: Path, reliability) -> None:
    box = Sandbox(tmp_path)
    warehouse = box.warehouse
    resource = PaimonResource(warehouse=str(warehouse))
    counts = {"names": 0, "refused": 0, "other": 0}
    instance = dg.DagsterInstance.ephemeral()

    def one(name: str, *, with_job: bool) -> None:
        counts["names"] += 1
        before = box.state()
        if with_job:
            for table, tag in (("lab.t", name), (f"lab.{name}", "ok"), (f"{name}.t", "ok")):
                result = name_job.execute_in_process(
                    run_config={"ops": {"tag_from_run_config": {"config": {"table": table, "tag": tag}}}},
                    resources={"paimon": resource}, instance=instance)
                assert result.success
                outcome = result.output_for_node("tag_from_run_config")
                counts["refused" if outcome == "refused" else "other"] += 1
        # the sensor on a fuzzed table name
        try:
            sensor = paimon_snapshot_sensor(f"lab.{name}", name_job, name="fuzz_sensor")
            sensor(dg.build_sensor_context(resources={"paimon": resource}))
            counts["other"] += 1
        except InvalidNameError:
            counts["refused"] += 1
        except PaimonflowError:
            counts["other"] += 1
        except dg.DagsterInvalidDefinitionError:
            counts["refused"] += 1  # Dagster's own name rules; nothing ran
        box.check(before, name)

    for name in NASTY:
        one(name, with_job=True)

    @settings(max_examples=reliability.scale(15, 300), **SETTINGS)
    @given(name=NAMES)
    def run(name: str) -> None:
        one(name, with_job=True)

    run()
    reliability.record(names=counts["names"], examples=counts["refused"] + counts["other"])
    assert counts["refused"] > 0 and counts["other"] > 0


@dg.op
def touch_s3_table(context: dg.OpExecutionContext, paimon: PaimonResource) -> dict:
    context.log.debug(f"opening {paimon.warehouse}")
    return {"rows": paimon.table("lab.t").read().num_rows}


@dg.job
def canary_job():
    touch_s3_table()


def test_canaries_never_reach_dagster_events_metadata_or_logs(monkeypatch, caplog, reliability) -> None:
    for key, value in CANARIES.items():
        monkeypatch.setenv(key, value)
    resource = PaimonResource(warehouse="s3://canary-bucket/wh", storage=S3Storage(
        endpoint="http://127.0.0.1:9", region="us-east-1", access_key=dg.EnvVar("TEST_CANARY_ACCESS"),
        secret_key=dg.EnvVar("TEST_CANARY_SECRET"), session_token=dg.EnvVar("TEST_CANARY_TOKEN")))
    caplog.set_level(logging.DEBUG)
    instance = dg.DagsterInstance.ephemeral()
    result = canary_job.execute_in_process(resources={"paimon": resource}, instance=instance, raise_on_error=False)
    assert not result.success  # the induced failure: nothing listens on port 9
    seen = []
    for record in instance.all_logs(result.run_id):
        seen.append(repr(record))
        if record.dagster_event is not None:
            seen.append(repr(record.dagster_event.event_specific_data))
    failure = result.failure_data_for_node("touch_s3_table")
    seen.append(repr(failure))
    # the sensor on the same resource
    sensor = paimon_snapshot_sensor("lab.t", canary_job, name="canary_sensor")
    try:
        seen.append(repr(sensor(dg.build_sensor_context(resources={"paimon": resource}))))
    except Exception as exc:  # the same induced failure, raised from the sensor
        import traceback

        seen.append("".join(traceback.format_exception(exc)))
    seen.append(caplog.text)
    seen.extend(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    text = "\n".join(seen)
    assert "touch_s3_table" in text  # the event log was read at all
    # the resource did resolve the canaries (the test is not vacuous)
    with dg.build_resources({"paimon": resource}, instance=instance) as built:
        assert built.paimon.storage_options()["s3.secret-key"] == CANARIES["TEST_CANARY_SECRET"]
    leaked = [k for k, v in CANARIES.items() if v in text]
    assert not leaked, f"canaries of {leaked} leaked into Dagster events or logs"
    reliability.record(canaries=len(CANARIES), examples=2)
