"""S3 settings from the standard AWS environment alone (docs/storage.md): the ``paimonflow`` command,
given no storage option at all, creates, writes and reads a table on the S3 test server. Metadata
and commits go through botocore, data files through Arrow's S3 filesystem: both must find the
endpoint, region and credentials in the environment.

A subprocess each time: botocore caches the credentials it resolved in its session, so changing
the environment of this process would not be seen.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.s3server import ACCESS_KEY, REGION, SECRET_KEY, S3TestServer

CLI = "import sys; from paimonflow.core.cli import main; sys.argv[0] = 'paimonflow'; main()"


@pytest.mark.parametrize("endpoint_variable", ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"])
def test_the_cli_reaches_s3_through_the_aws_environment(s3_test_server: S3TestServer, s3_bucket: str,
                                                        tmp_path: Path, endpoint_variable: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PAIMONFLOW_"))}
    env.update({"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": REGION,
                endpoint_variable: s3_test_server.endpoint_url,
                # no profile of this machine, and no instance metadata lookups
                "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "AWS_EC2_METADATA_DISABLED": "true"})
    warehouse = f"s3://{s3_bucket}/warehouse"

    def paimonflow(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-c", CLI, *args], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return proc.stdout

    paimonflow("create-database", "shop", "-w", warehouse)
    paimonflow("create-table", "shop.orders", "-w", warehouse, "-c", "id:BIGINT NOT NULL", "-c", "customer:STRING",
               "-k", "id", "-o", "bucket=1")
    pq.write_table(pa.table({"id": [1, 2], "customer": ["ada", "grace"]}), tmp_path / "orders.parquet")
    assert json.loads(paimonflow("--json", "write", "shop.orders", "-w", warehouse, "orders.parquet"))["added_rows"] == 2
    paimonflow("read", "shop.orders", "-w", warehouse, "--output", "out.parquet")
    assert pq.read_table(tmp_path / "out.parquet").sort_by("id").to_pylist() == [
        {"id": 1, "customer": "ada"}, {"id": 2, "customer": "grace"}]
    # the data file is on the server, under the table, written by Arrow with the same settings
    keys = [o["Key"] for o in s3_test_server.client().list_objects_v2(Bucket=s3_bucket)["Contents"]]
    assert any(k.startswith("warehouse/shop.db/orders/bucket-0/") and k.endswith(".parquet") for k in keys), keys
