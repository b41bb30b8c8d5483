"""Secret canaries (reference/reliability.md §5.3 A13, S8-S12) for the Airflow operators, sensor and
the spark-submit command.

A unique canary sits in every credential field of a ``paimon`` connection: the password, the
login (access key) and the extras ``s3.access-key``, ``s3.secret-key``, ``s3.session-token``
(operators/hook.py's names). Every operator and the sensor run for real (``operator.execute`` on
the core engine, as tests/airflow does) with DEBUG logging, once on a good table and once with an
induced failure (a missing table; an S3 endpoint that refuses connections). The canaries must be
absent from every log record (caplog at DEBUG, stdout/stderr), exception messages and tracebacks,
return values (XCom), and rendered template fields. The spark-submit engine's command is built
(not run) and must be an argument list without any canary: credentials travel in the environment
(S9), and a templated ``x; touch <tmp>/pwned`` is refused with a typed error, running no shell.
"""

from __future__ import annotations

import json
import logging
import traceback
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidNameError, PaimonflowError

from .conftest import WAREHOUSE

CANARIES = {
    "password": "CANARY-pw-3f9d0c1e",
    "login": "CANARYLOGIN7a1b",
    "s3.access-key": "CANARY-ak-51c2e8",
    "s3.secret-key": "CANARY-sk-90aa4d",
    "s3.session-token": "CANARY-tok-c77e21",
}
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _connection(host: str, **extra: str) -> str:
    return json.dumps({"conn_type": "paimon", "host": host, "login": CANARIES["login"],
                       "password": CANARIES["password"], "extra": {
                           "s3.session-token": CANARIES["s3.session-token"], "engine": "core", **extra}})


@pytest.fixture
def canary_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    # password/login become s3.secret-key/s3.access-key unless the extras name them: one connection each way
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_CANARY", _connection(str(WAREHOUSE)))
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_CANARY_EXTRAS", _connection(
        str(WAREHOUSE), **{"s3.access-key": CANARIES["s3.access-key"], "s3.secret-key": CANARIES["s3.secret-key"]}))
    # an S3 warehouse whose endpoint refuses connections (port 9, discard: nothing listens)
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_CANARY_S3", _connection(
        "s3://canary-bucket/wh", **{"s3.endpoint": "http://127.0.0.1:9", "s3.region": "us-east-1",
                                    "s3.secret-key": CANARIES["s3.secret-key"],
                                    "s3.access-key": CANARIES["s3.access-key"]}))


def _context(task_id: str, conf: dict | None = None) -> dict:
    return {"ti": SimpleNamespace(dag_id="canary", task_id=task_id, map_index=-1),
            "logical_date": datetime(2026, 11, 20, tzinfo=UTC), "run_id": "manual", "outlet_events": None,
            "dag_run": SimpleNamespace(conf=conf or {}), "params": {}}


def _operators(table: str, conn_id: str) -> list:
    from paimonflow.operators import airflow as p
    from paimonflow.sensors.airflow import PaimonSnapshotSensor

    c = {"table": table, "paimon_conn_id": conn_id}
    return [
        p.PaimonCompactOperator(task_id="compact", **c),
        p.PaimonAnalyzeOperator(task_id="analyze", **c),
        p.PaimonCreateTagOperator(task_id="tag", name="canary-tag", **c),
        p.PaimonDeleteTagOperator(task_id="untag", name="canary-tag", **c),
        p.PaimonExpireSnapshotsOperator(task_id="expire", retain_min=1, older_than="0 ms", dry_run=True, **c),
        p.PaimonExpireChangelogsOperator(task_id="expire_changelogs", dry_run=True, **c),
        p.PaimonExpirePartitionsOperator(task_id="expire_partitions", expiration="3650 d", **c),
        p.PaimonExpireTagsOperator(task_id="expire_tags", **c),
        p.PaimonRemoveOrphanFilesOperator(task_id="orphans", dry_run=True, **c),
        p.PaimonBranchOperator(task_id="branch", branch="canary_b", **c),
        p.PaimonRollbackOperator(task_id="rollback", snapshot_id=1, **c),
        p.PaimonReadChangesOperator(task_id="changes", start_snapshot=0, end_snapshot=1,
                                    output_path=str(WAREHOUSE.parent / "canary-out"), **c),
        p.PaimonWriteOperator(task_id="write", sql=None, path=str(WAREHOUSE.parent / "no-such-landing"), **c),
        PaimonSnapshotSensor(task_id="sensor", table=table, paimon_conn_id=conn_id, poke_interval=1, timeout=5,
                             mode="poke"),
    ]


def _scan(text: str) -> list[str]:
    return [name for name, value in CANARIES.items() if value in text]


def _run_all(table: str, conn_id: str, *, expect_failure: bool) -> tuple[str, int, int]:
    """Render and execute every operator; everything they return or raise, as text."""
    seen, ran, failed = [], 0, 0
    for op in _operators(table, conn_id):
        context = _context(op.task_id)
        op.render_template_fields(context)
        seen.append(json.dumps({f: getattr(op, f, None) for f in op.template_fields}, default=str))
        ran += 1
        try:
            result = op.poke(context) if hasattr(op, "poke") else op.execute(context)
            seen.append(json.dumps(result, default=str))
            seen.append(repr(result))
        except Exception as exc:  # induced failures, or a job refusing (e.g. no landing files)
            failed += 1
            seen.append(str(exc) + repr(exc) + "".join(traceback.format_exception(exc)))
    if expect_failure:
        assert failed == ran, f"only {failed} of {ran} failed on {table} via {conn_id}"
    return "\n".join(seen), ran, failed


@pytest.mark.slow
def test_canaries_never_reach_logs_exceptions_xcom_or_rendered_fields(airflow_db, canary_connections, caplog,
                                                                      capfd, reliability) -> None:
    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("lab", ignore_if_exists=True)
    t = catalog.create_table("lab.canary", SCHEMA, primary_keys=["id"], options={"bucket": "1"},
                             ignore_if_exists=True)
    if t.snapshot_manager.latest_id() is None:
        t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    caplog.set_level(logging.DEBUG)
    texts, runs, failures = [], 0, 0
    for table, conn_id, fails in [("lab.canary", "paimon_canary", False),
                                  ("lab.canary", "paimon_canary_extras", False),
                                  ("lab.missing", "paimon_canary", True),
                                  ("lab.missing", "paimon_canary_extras", True),
                                  ("lab.canary", "paimon_canary_s3", True)]:
        text, ran, failed = _run_all(table, conn_id, expect_failure=fails)
        texts.append(text)
        runs, failures = runs + ran, failures + failed
    # the hook did read the canaries (so the test is not vacuous)
    from paimonflow.operators.airflow import PaimonHook

    options = PaimonHook("paimon_canary_extras").location("lab.canary").storage_options
    assert options["s3.secret-key"] == CANARIES["s3.secret-key"]
    assert options["s3.session-token"] == CANARIES["s3.session-token"]
    out, err = capfd.readouterr()
    records = "\n".join(f"{r.getMessage()} {r.exc_text or ''} {r.args!r}" for r in caplog.records)
    assert "lab.canary" in records  # the logs were captured at all, at DEBUG
    for where, text in [("results/exceptions/rendered fields", "\n".join(texts)), ("log records", records),
                        ("stdout/stderr", out + err), ("caplog text", caplog.text)]:
        assert not _scan(text), f"canaries {_scan(text)} found in {where}"
    reliability.record(canaries=len(CANARIES), examples=runs)
    assert failures > 0


def test_spark_submit_command_is_an_argument_list_without_credentials(airflow_db, canary_connections,
                                                                     reliability) -> None:
    from paimonflow.operators.airflow import PaimonCompactOperator, PaimonHook, PaimonWriteOperator

    hook = PaimonHook("paimon_canary_extras")
    checked = 0
    for op in [PaimonCompactOperator(task_id="c", table="lab.canary", paimon_conn_id="paimon_canary_extras",
                                     engine="spark-submit", spark_conn_id="spark_local"),
               PaimonWriteOperator(task_id="w", table="lab.canary", paimon_conn_id="paimon_canary_extras",
                                   engine="spark-submit", spark_conn_id="spark_local", path="/data/in")]:
        submit = op.submit_hook(hook, op.arguments(_context(op.task_id)), "/tmp/result.json")
        command = submit._build_spark_submit_command("/app/submit.py")  # the provider's own builder
        assert isinstance(command, list) and all(isinstance(a, str) for a in command)
        assert not _scan(" ".join(command)), f"credentials on argv: {_scan(' '.join(command))}"
        assert not _scan(submit._mask_cmd(command))
        env = json.loads((submit._env or {}).get("PAIMONFLOW_STORAGE_OPTIONS", "{}"))
        assert env.get("s3.secret-key") == CANARIES["s3.secret-key"]  # they travel in the environment instead
        checked += 1
    reliability.record(canaries=len(CANARIES), examples=checked)


@pytest.mark.parametrize("engine", ["core", "spark-submit"])
def test_shell_metacharacters_in_templated_arguments_are_refused(airflow_db, tmp_path: Path, engine: str,
                                                                 reliability) -> None:
    """``dag_run.conf`` values through Jinja: a tag name ``x; touch <tmp>/pwned`` is a typed error
    (S1 after rendering, S12), and nothing runs a shell."""
    from paimonflow.operators.airflow import PaimonCreateTagOperator

    catalog = Catalog(str(WAREHOUSE))
    catalog.create_database("lab", ignore_if_exists=True)
    catalog.create_table("lab.shell", SCHEMA, primary_keys=["id"], options={"bucket": "1"}, ignore_if_exists=True)
    pwned = tmp_path / "pwned"
    payloads = [f"x; touch {pwned}", f"$(touch {pwned})", f"`touch {pwned}`", f"x && touch {pwned}",
                f"x | touch {pwned}", f"x\ntouch {pwned}"]
    for payload in payloads:
        op = PaimonCreateTagOperator(task_id="tag", table="lab.shell", warehouse=str(WAREHOUSE), engine=engine,
                                     name="{{ dag_run.conf['tag'] }}", spark_conn_id="spark_local")
        context = _context("tag", {"tag": payload})
        op.render_template_fields(context)
        assert op.name == payload  # rendered verbatim: Jinja does not sanitize
        with pytest.raises(PaimonflowError) as info:
            op.execute(context)
        assert isinstance(info.value, InvalidNameError), repr(info.value)
        assert not pwned.exists(), f"{payload!r} ran a shell"
    assert Catalog(str(WAREHOUSE)).get_table("lab.shell").tags.list() == {}
    reliability.record(names=len(payloads))
