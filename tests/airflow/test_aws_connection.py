"""S3 credentials from the Amazon provider's connection (``PaimonHook(aws_conn_id=...)`` and the
``paimon`` connection's ``aws_conn_id`` extra), against the S3 test server: the keys, endpoint,
region and addressing style of an ``aws`` connection, and the temporary credentials of a role it
assumes through STS, become the table's storage options; a table on ``s3://`` is written and read
with them; and the secret key and session token never show in logs or XCom."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from paimonflow.core.errors import InvalidArgumentError
from paimonflow.operators.airflow import PaimonHook
from tests.s3server import ACCESS_KEY, REGION, SECRET_KEY

from .conftest import load_dag

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
ROLE = "arn:aws:iam::123456789012:role/lake-writer"


@pytest.fixture
def no_ambient_aws(monkeypatch):
    """No AWS credentials but the connections' own: nothing in the environment, no profile, no
    instance metadata (so a hook that ignored the AWS connection could not reach the bucket)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_DEFAULT_REGION", "AWS_REGION", "PAIMONFLOW_STORAGE_OPTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def aws_connection(monkeypatch, conn_id: str, endpoint: str, **extra) -> None:
    """An ``aws`` connection holding the S3 test server's keys, endpoint and region (``extra`` more)."""
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({
        "conn_type": "aws", "login": ACCESS_KEY, "password": SECRET_KEY,
        "extra": {"endpoint_url": endpoint, "region_name": REGION, **extra}}))


def paimon_connection(monkeypatch, conn_id: str, warehouse: str, **extra) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "paimon", "host": warehouse,
                                                                       "extra": extra}))


def write_and_read(hook: PaimonHook) -> list[dict]:
    catalog = hook.get_conn()
    catalog.create_database("lab", ignore_if_exists=True)
    table = catalog.create_table("lab.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"}, ignore_if_exists=True)
    table.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    return sorted(hook.get_table("lab.t").read().to_pylist(), key=lambda r: r["id"])


def test_an_aws_connection_gives_the_table_its_s3_credentials(no_ambient_aws, monkeypatch, s3_server, s3_bucket):
    aws_connection(monkeypatch, "aws_lake", s3_server, config_kwargs={"s3": {"addressing_style": "path"}})
    paimon_connection(monkeypatch, "paimon_lake", f"s3://{s3_bucket}/wh", aws_conn_id="aws_lake")
    expected = {"s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY, "s3.endpoint": s3_server,
                "s3.region": REGION, "s3.path-style-access": "true"}
    by_extra = PaimonHook("paimon_lake")
    assert dict(by_extra.location("lab.t").storage_options) == expected
    assert write_and_read(by_extra) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    assert SECRET_KEY not in repr(by_extra.location("lab.t")) and SECRET_KEY not in repr(by_extra.get_conn())
    # the argument, with an explicit warehouse and no paimon connection; the paimon connection's own
    # endpoint setting wins over the AWS connection's
    by_argument = PaimonHook(None, warehouse=f"s3://{s3_bucket}/wh", aws_conn_id="aws_lake")
    assert dict(by_argument.location("lab.t").storage_options) == expected
    assert by_argument.get_table("lab.t").read().num_rows == 2
    paimon_connection(monkeypatch, "paimon_own_endpoint", f"s3://{s3_bucket}/wh", aws_conn_id="aws_lake",
                      **{"s3.endpoint": "http://127.0.0.1:1"})
    assert PaimonHook("paimon_own_endpoint").location("lab.t").storage_options["s3.endpoint"] == "http://127.0.0.1:1"


def test_a_role_the_aws_connection_assumes_gives_temporary_credentials_that_are_masked(
        no_ambient_aws, monkeypatch, s3_server, s3_bucket):
    from airflow.sdk.log import redact

    aws_connection(monkeypatch, "aws_role", s3_server, role_arn=ROLE,
                   service_config={"sts": {"endpoint_url": s3_server}})  # STS: the test server's moto too
    hook = PaimonHook(None, warehouse=f"s3://{s3_bucket}/wh", aws_conn_id="aws_role")
    options = dict(hook.location("lab.t").storage_options)
    assert options["s3.access-key"].startswith("ASIA") and options["s3.access-key"] != ACCESS_KEY
    assert options["s3.secret-key"] != SECRET_KEY and options["s3.session-token"]
    for secret in (options["s3.secret-key"], options["s3.session-token"]):
        assert secret not in str(redact(f"logged: {options}"))  # registered with Airflow's secrets masker
    assert write_and_read(hook) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]


def test_landed_files_on_s3_are_read_with_the_aws_connection_credentials(no_ambient_aws, monkeypatch, s3_test_server,
                                                                           s3_server, s3_bucket):
    from paimonflow.operators.airflow.operators import _read_files

    aws_connection(monkeypatch, "aws_lake", s3_server, config_kwargs={"s3": {"addressing_style": "path"}})
    s3_test_server.client().put_object(Bucket=s3_bucket, Key="landing/a.csv", Body=b"id,v\n1,a\n2,b\n")
    hook = PaimonHook(None, warehouse=f"s3://{s3_bucket}/wh", aws_conn_id="aws_lake")
    rows = _read_files(f"s3://{s3_bucket}/landing", "csv", SCHEMA,
                       storage_options=hook.location("lab.t").storage_options)
    assert rows.to_pylist() == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]


def test_keys_in_the_paimon_connection_and_an_aws_connection_are_refused(no_ambient_aws, monkeypatch, s3_server):
    aws_connection(monkeypatch, "aws_lake", s3_server)
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_BOTH", json.dumps({
        "conn_type": "paimon", "host": "s3://lake/wh", "login": "AKIAOWN", "password": "own-secret-4d1c",
        "extra": {"aws_conn_id": "aws_lake"}}))
    with pytest.raises(InvalidArgumentError) as info:
        PaimonHook("paimon_both").location("lab.t")
    assert str(info.value) == ("the paimon connection gives S3 credentials (s3.access-key, s3.secret-key) and "
                               "aws_conn_id names AWS connection 'aws_lake': keep them in one")


def test_the_connection_form_offers_the_aws_connection_field():
    from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService

    [meta] = [m for m in HookMetaService.hook_meta_data() if m.connection_type == "paimon"]
    field = (meta.extra_fields or {})["aws_conn_id"]
    assert field["schema"]["title"] == "AWS connection" and field["schema"]["type"] == ["string", "null"]


@pytest.mark.slow
def test_a_dag_writes_to_s3_with_the_aws_connection_and_no_secret_reaches_logs_or_xcom(
        airflow_db, no_ambient_aws, monkeypatch, tmp_path, s3_server, s3_bucket, capfd, caplog):
    token = "aws-connection-session-token-7f3e9a"
    aws_connection(monkeypatch, "aws_lake", s3_server, aws_session_token=token,
                   config_kwargs={"s3": {"addressing_style": "path"}})
    paimon_connection(monkeypatch, "paimon_aws", f"s3://{s3_bucket}/wh", aws_conn_id="aws_lake")
    hook = PaimonHook("paimon_aws")
    assert hook.location("lab.aws").storage_options["s3.session-token"] == token
    catalog = hook.get_conn()
    catalog.create_database("lab")
    catalog.create_table("lab.aws", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    landed = tmp_path / "rows.csv"
    landed.write_text("id,v\n1,a\n2,b\n3,c\n")
    run = load_dag("paimon_test_aws").test(logical_date=datetime(2026, 11, 20, tzinfo=UTC),
                                           run_conf={"path": str(landed)})
    assert str(run.state) == "success", {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert hook.get_table("lab.aws").read().num_rows == 3
    out, err = capfd.readouterr()
    xcom = {ti.task_id: ti.xcom_pull(task_ids=ti.task_id) for ti in run.get_task_instances()}
    assert xcom["write_with_aws_credentials"]["snapshot_id"] == 1
    seen = out + err + caplog.text + json.dumps(xcom, default=str)
    for ti in run.get_task_instances():
        from airflow.models.renderedtifields import RenderedTaskInstanceFields

        seen += json.dumps(RenderedTaskInstanceFields.get_templated_fields(ti) or {}, default=str)
    assert "write_with_aws_credentials" in seen  # the logs were captured at all
    assert SECRET_KEY not in seen and token not in seen


def test_the_operators_aws_conn_id_writes_landed_s3_files_into_an_s3_table(no_ambient_aws, monkeypatch, s3_test_server,
                                                                             s3_server, s3_bucket):
    """``aws_conn_id=`` on the operator (templated): the core engine reads the landed files on S3
    and writes the table on S3 with that connection's credentials, no other credential around."""
    from types import SimpleNamespace

    from paimonflow.operators.airflow import PaimonWriteOperator

    aws_connection(monkeypatch, "aws_lake", s3_server, config_kwargs={"s3": {"addressing_style": "path"}})
    paimon_connection(monkeypatch, "paimon_plain", f"s3://{s3_bucket}/wh")  # no keys of its own
    write_and_read(PaimonHook("paimon_plain", aws_conn_id="aws_lake"))  # the table, 2 rows
    s3_test_server.client().put_object(Bucket=s3_bucket, Key="landing/op/b.csv", Body=b"id,v\n3,c\n")
    operator = PaimonWriteOperator(task_id="w", table="lab.t", paimon_conn_id="paimon_plain", aws_conn_id="aws_lake",
                                   engine="core", path=f"s3://{s3_bucket}/landing/op", format="csv")
    context = {"ti": SimpleNamespace(dag_id="d", task_id="w", map_index=-1),
               "logical_date": datetime(2026, 11, 20, tzinfo=UTC), "run_id": "manual", "outlet_events": None}
    assert operator.execute(context)["added_rows"] == 1
    assert PaimonHook("paimon_plain", aws_conn_id="aws_lake").get_table("lab.t").read().num_rows == 3
