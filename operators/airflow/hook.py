"""The Airflow hook: a ``paimon`` connection opens catalogs and tables and runs paimonflow jobs.

Connection (type ``paimon``; its form in Airflow's UI is declared in
:mod:`paimonflow.plugins.airflow.provider_info`):

* **host**: the warehouse URI (``/data/warehouse``, ``file:///data/warehouse``, ``s3://lake/wh``);
* **login** / **password**: the S3 access key and secret key (optional);
* **extra**: more storage options, e.g. ``{"s3.endpoint": "http://minio:9000", "s3.region": "eu-west-1"}``,
  and ``"engine"`` (default engine of the operators: ``spark``, ``core`` or ``spark-submit``),
  ``"spark_conn_id"`` (the Spark connection ``spark-submit`` uses), ``"aws_conn_id"`` (an Amazon
  Web Services connection giving the S3 credentials, below). A key whose value is null or empty (a
  form field left empty) is absent; a boolean storage option becomes ``"true"``/``"false"``.

**S3 credentials from an AWS connection.** ``PaimonHook(aws_conn_id="aws_lake")`` (or the extra
``aws_conn_id``; the argument wins) takes the S3 credentials from the Amazon provider's connection,
as the Amazon, Databricks and Iceberg providers do: its ``AwsBaseHook.get_credentials()`` resolves
them (keys in the connection, a profile, a role to assume, or the default chain: environment,
instance or pod role) and they become the storage options ``s3.access-key``, ``s3.secret-key`` and
``s3.session-token``; the connection's ``endpoint_url`` (``service_config.s3.endpoint_url`` first),
``region_name`` and ``config_kwargs.s3.addressing_style`` become ``s3.endpoint``, ``s3.region`` and
``s3.path-style-access`` unless the ``paimon`` connection sets those itself. The credentials are
resolved once, when the hook first needs them: temporary ones (an assumed role) last their
session's duration, so a job must finish within it. A ``paimon`` connection holding keys of its own
(login, password, ``s3.access-key``, ``s3.secret-key``, ``s3.session-token``) and an AWS connection
is refused (which keys would be meant?). Needs ``apache-airflow-providers-amazon``
(``paimonflow[airflow-aws]``).

Secrets (password, ``s3.secret-key``, ``s3.session-token``) are registered with Airflow's secrets
masker as soon as they are read, so they never show in task logs, rendered templates or XCom;
they reach a ``spark-submit`` only through its environment, never its command line.
Without a connection, an explicit ``warehouse=`` (or ``PAIMONFLOW_WAREHOUSE``) is the embedded
default: a local warehouse, no credentials.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from airflow.sdk import BaseHook

from paimonflow.core import Catalog
from paimonflow.core.errors import InvalidArgumentError, StorageError
from paimonflow.jobs.location import STORAGE_PREFIXES, TableLocation
from paimonflow.plugins.airflow.provider_info import (
    CONNECTION_TYPE,
    DEFAULT_SPARK_CONN_ID,
    ENGINES,
    HOOK_NAME,
    ui_field_behaviour,
)

SECRET_KEYS = ("s3.secret-key", "s3.session-token", "fs.s3.secret-key")
#: storage options that are credentials: from the paimon connection or from an AWS connection, never both
CREDENTIAL_KEYS = ("s3.access-key", "s3.secret-key", "s3.session-token")


def _storage_text(value: Any) -> str:
    """A storage option as the storage layer takes it: text (``true``/``false`` for a boolean)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _mask(value: str | None) -> None:
    if value:
        from airflow.sdk.log import mask_secret

        mask_secret(value)


def aws_storage_options(aws_conn_id: str) -> dict[str, str]:
    """The S3 storage options an Amazon Web Services connection gives: the credentials its
    ``AwsBaseHook`` resolves (``get_credentials()``: after any role assumption, through the
    provider's credential chain; the secret key and token masked), and its S3 endpoint, region
    and addressing style when it sets them. Raises :class:`InvalidArgumentError` without the
    Amazon provider or when the connection yields no credentials, :class:`StorageError` when
    resolving them fails (an STS call refused, say)."""
    try:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
    except ImportError:
        raise InvalidArgumentError(f"aws_conn_id {aws_conn_id!r} needs the Amazon provider: pip install "
                                   "'apache-airflow-providers-amazon' (paimonflow[airflow-aws])") from None
    from botocore.exceptions import BotoCoreError, ClientError

    aws = AwsBaseHook(aws_conn_id=aws_conn_id, client_type="s3")
    try:
        credentials = aws.get_credentials()
    except AttributeError:  # the session found no credentials at all (botocore returned None)
        raise InvalidArgumentError(f"AWS connection {aws_conn_id!r} gives no credentials (no keys, profile or "
                                   "role, and none in the default chain)") from None
    except (BotoCoreError, ClientError) as exc:
        raise StorageError(f"the credentials of AWS connection {aws_conn_id!r} could not be resolved: "
                           f"{type(exc).__name__}: {exc}") from None
    options = {"s3.access-key": credentials.access_key, "s3.secret-key": credentials.secret_key}
    if credentials.token:
        options["s3.session-token"] = credentials.token
    endpoint = aws.conn_config.get_service_endpoint_url("s3")
    if endpoint:
        options["s3.endpoint"] = str(endpoint)
    if aws.region_name:
        options["s3.region"] = str(aws.region_name)
    addressing = (getattr(aws.config, "s3", None) or {}).get("addressing_style")
    if addressing in ("path", "virtual"):
        options["s3.path-style-access"] = "true" if addressing == "path" else "false"
    return options


class PaimonHook(BaseHook):
    conn_name_attr = "paimon_conn_id"
    default_conn_name = "paimon_default"
    conn_type = CONNECTION_TYPE
    hook_name = HOOK_NAME

    def __init__(self, paimon_conn_id: str | None = default_conn_name, *, aws_conn_id: str | None = None,
                 warehouse: str | None = None, storage_options: Mapping[str, str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.paimon_conn_id = paimon_conn_id
        # the Amazon provider's connection that gives the S3 credentials (else the connection's extra)
        self.aws_conn_id = aws_conn_id.strip() if aws_conn_id and aws_conn_id.strip() else None
        self._warehouse, self._storage = warehouse, dict(storage_options or {})
        self._loaded: tuple[str, dict[str, str], dict[str, Any]] | None = None

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """The connection form's standard fields, as the provider info declares them (Airflow 3.3
        reads the provider info and never calls this; it is kept for callers of the hook API)."""
        return ui_field_behaviour()

    def _load(self) -> tuple[str, dict[str, str], dict[str, Any]]:
        """(warehouse, storage options, other extras) from the connection or the explicit values."""
        if self._loaded is not None:
            return self._loaded
        extras: dict[str, Any] = {}
        storage = dict(self._storage)
        warehouse = self._warehouse
        if warehouse is None and self.paimon_conn_id:
            conn = self.get_connection(self.paimon_conn_id)
            extra = dict(conn.extra_dejson or {})
            warehouse = conn.host or extra.pop("warehouse", None)
            if conn.schema and warehouse and "://" not in warehouse:  # an URI split by Airflow's parser
                warehouse = f"{conn.schema}://{warehouse}"
            for key, value in extra.items():
                if value is None or value == "":  # a field of the connection form left empty
                    continue
                if key.lower().startswith(STORAGE_PREFIXES):
                    storage[key] = _storage_text(value)
                else:
                    extras[key] = value
            if conn.login:
                storage.setdefault("s3.access-key", conn.login)
            if conn.password:
                storage.setdefault("s3.secret-key", conn.password)
        warehouse = warehouse or os.environ.get("PAIMONFLOW_WAREHOUSE")
        if not warehouse:
            raise InvalidArgumentError("no warehouse: give the paimon connection a host, or pass warehouse=")
        for key in SECRET_KEYS:
            _mask(storage.get(key))
        in_extra = str(extras.pop("aws_conn_id", None) or "").strip()
        aws_conn_id = self.aws_conn_id or in_extra or None
        if aws_conn_id:
            own = sorted(key for key in CREDENTIAL_KEYS if storage.get(key))
            if own:
                raise InvalidArgumentError(f"the paimon connection gives S3 credentials ({', '.join(own)}) and "
                                           f"aws_conn_id names AWS connection {aws_conn_id!r}: keep them in one")
            for key, value in aws_storage_options(aws_conn_id).items():
                storage.setdefault(key, value)  # the paimon connection's endpoint, region... win
                if key in SECRET_KEYS:
                    _mask(value)
        self._loaded = (warehouse, storage, extras)
        return self._loaded

    @property
    def warehouse(self) -> str:
        return self._load()[0]

    @property
    def default_engine(self) -> str:
        return str(self._load()[2].get("engine", ENGINES[0]))

    @property
    def spark_conn_id(self) -> str:
        return str(self._load()[2].get("spark_conn_id", DEFAULT_SPARK_CONN_ID))

    def get_conn(self) -> Catalog:
        warehouse, storage, _ = self._load()
        return Catalog(warehouse, storage_options=storage or None)

    catalog = get_conn

    def get_table(self, identifier: str):
        return self.get_conn().get_table(identifier)

    def location(self, identifier: str) -> TableLocation:
        warehouse, storage, _ = self._load()
        return TableLocation(warehouse, identifier, storage)

    def test_connection(self) -> tuple[bool, str]:
        try:
            catalog = self.get_conn()
            return True, f"warehouse {catalog.warehouse}: {len(catalog.list_databases())} database(s)"
        except Exception as exc:  # shown in the UI's Test button
            return False, f"{type(exc).__name__}: {exc}"


def spark_master_from_connection(conn_id: str) -> str | None:
    """The Spark master an in-process Spark session takes from an Airflow Spark connection:
    ``host`` (``spark://h``, ``local[2]``, ``yarn``, ``k8s://…``) with ``port`` when the host has
    none; a ``spark_connect`` connection gives the Spark provider's own Connect URL
    (``SparkConnectHook.get_connection_url``: ``sc://host:port/`` with its user id, token and
    SSL setting). ``None`` when there is no such connection (then ``local[2]``, see
    :func:`paimonflow.jobs.session.spark_session`)."""
    from airflow.exceptions import AirflowNotFoundException

    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None
    if conn.conn_type == "spark_connect":
        from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

        return SparkConnectHook(conn_id).get_connection_url()
    host = (conn.host or "").strip().rstrip("/")
    if not host:
        return None
    scheme, _, rest = host.partition("://")
    if conn.port and rest and ":" not in rest.split("/", 1)[0]:
        head, slash, tail = rest.partition("/")
        host = f"{scheme}://{head}:{conn.port}{slash}{tail}"
    return host


__all__ = ["ENGINES", "PaimonHook", "aws_storage_options", "spark_master_from_connection"]
