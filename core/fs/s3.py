"""S3 FileIO on boto3: atomic publish by a conditional PUT (``If-None-Match: *``).

Needs the ``s3`` extra (boto3). Paths are ``s3://bucket/key`` (``s3a://`` is accepted too).

The create-if-absent rule (``reference/reliability.md`` §1.4, §4):

* 2xx: we published; 412 ``PreconditionFailed``: someone else's object is there (lost).
* 409 ``ConditionalRequestConflict`` (AWS, racing writers), 408, 429, ``RequestTimeout``,
  ``SlowDown`` and failures to connect: nothing landed; retry the conditional PUT after a backoff.
* 5xx and transport failures after the request was sent (timeouts, dropped connections) are
  *ambiguous*: the PUT may have landed. The object is re-read: our exact bytes mean we won, other
  bytes mean we lost, nothing means retry (a retried conditional PUT can never overwrite). A later
  412 is decided by the same comparison. If retries run out while still ambiguous,
  :class:`StorageOutcomeUnknownError` is raised. Consequence: once an attempt was ambiguous, an
  object with byte-identical content written by someone else counts as ours, so callers make
  payloads unique (a snapshot carries its commit user and identifier).
* Any other 4xx (access denied, missing bucket...): StorageError, nothing was published.

botocore's own retries are off for the conditional PUT (a transparently retried PUT whose first
response was lost would come back as a misleading 412) and for the re-read after an ambiguous
attempt (the loop above retries); they are on for everything else.

Credentials never appear in ``repr`` or in error messages, and botocore's DEBUG records (which
print request headers, so the access key id and session token) are scrubbed of them.
"""

from __future__ import annotations

import contextlib
import io
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlsplit

from ..errors import (
    FileNotFoundStorageError,
    InvalidStorageOptionError,
    StorageError,
    StorageOutcomeUnknownError,
    UnsupportedError,
)
from .base import FileStatus, join

if TYPE_CHECKING:
    import pyarrow.fs

SCHEMES = ("s3", "s3a")

# storage option key -> constructor keyword
OPTION_KEYS: Mapping[str, str] = {
    "s3.endpoint": "endpoint_url",
    "s3.region": "region",
    "s3.access-key": "access_key_id",
    "s3.secret-key": "secret_access_key",
    "s3.session-token": "session_token",
    "s3.path-style-access": "path_style_access",
    "s3.path.style.access": "path_style_access",  # Paimon (Java) spelling
    "s3.verify-conditional-writes": "verify_conditional_writes",
}
_BOOL_OPTIONS = frozenset({"path_style_access", "verify_conditional_writes"})
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_RETRY_NOT_LANDED_CODES = frozenset({"ConditionalRequestConflict", "OperationAborted", "RequestTimeout",
                                     "SlowDown", "Throttling", "ThrottlingException"})
_DELETE_BATCH = 1000
# botocore loggers whose DEBUG records show request headers, canonical requests or credentials
_SCRUBBED_LOGGERS = ("botocore.endpoint", "botocore.auth", "botocore.parsers", "botocore.hooks",
                     "botocore.credentials", "botocore.awsrequest")


class _SecretScrubber(logging.Filter):
    """Replaces the credentials of every S3FileIO built so far by ``***`` in log records."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()

    def add(self, *values: str | None) -> None:
        with self._lock:
            self._secrets = self._secrets | {v for v in values if v}

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self._secrets
        if secrets:
            message = record.getMessage()
            if any(secret in message for secret in secrets):
                for secret in secrets:
                    message = message.replace(secret, "***")
                record.msg, record.args = message, None
        return True


_SCRUBBER = _SecretScrubber()
_SESSION_LOCK = threading.Lock()
_SESSION: Any = None


def _shared_session() -> Any:
    """One botocore session per process: clients share its loaded service models (a new session
    costs ~30 ms per client). Credentials are passed per client, never stored on it."""
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is None:
            try:
                import botocore.session
            except ImportError as exc:  # pragma: no cover - the s3 extra is installed in tests
                raise UnsupportedError("S3 storage needs boto3: install paimonflow with its 's3' extra "
                                      "(pip install '.[s3]' in a clone of the repository)") from exc
            _SESSION = botocore.session.get_session()
        return _SESSION


def split_uri(path: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` -> ``("bucket", "a/b")``. Raises StorageError for anything else."""
    scheme, sep, rest = path.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise StorageError(f"not an S3 URI (s3://bucket/key): {path}")
    bucket, _, key = rest.partition("/")
    if not bucket:
        raise StorageError(f"S3 URI without a bucket: {path}")
    return bucket, key


def arrow_path(path: str) -> str:
    """Our path as pyarrow's S3FileSystem spells it: ``s3://bucket/key`` -> ``bucket/key``."""
    bucket, key = split_uri(path)
    return f"{bucket}/{key}" if key else bucket


def _parse_bool(key: str, value: str) -> bool:
    lowered = str(value).strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise InvalidStorageOptionError(f"storage option {key!r} must be true or false")


def _redact_endpoint(endpoint: str | None) -> str | None:
    if endpoint is None or "@" not in endpoint:
        return endpoint
    parts = urlsplit(endpoint)
    return parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl()


class S3FileIO:
    """FileIO over S3 or an S3-compatible store that honours ``If-None-Match: *`` on PUT.

    Keyword-only; every argument is optional: without credentials botocore's default chain is used
    (environment, profile, instance role). ``path_style_access`` None lets botocore decide.
    Thread-safe: one instance may be shared by threads; each process builds its own.

    Not atomic: ``rename`` (copy + delete) and recursive ``delete``. ``open_input`` reads the
    whole object into memory.
    """

    list_page_size = 1000  # per list request; tests lower it to exercise pagination
    create_attempts = 6
    retry_base_seconds = 0.05
    retry_max_seconds = 2.0

    def __init__(self, *, endpoint_url: str | None = None, region: str | None = None,
                 access_key_id: str | None = None, secret_access_key: str | None = None,
                 session_token: str | None = None, path_style_access: bool | None = None,
                 verify_conditional_writes: bool = True) -> None:
        if (access_key_id is None) != (secret_access_key is None):
            raise InvalidStorageOptionError("S3 access key and secret key must be given together")
        if session_token is not None and access_key_id is None:
            raise InvalidStorageOptionError("an S3 session token needs an access key and a secret key")
        session = _shared_session()
        addressing = {True: "path", False: "virtual", None: "auto"}[path_style_access]
        self._endpoint_url = endpoint_url
        self._region = region
        self._path_style_access = path_style_access
        self._explicit_credentials = access_key_id is not None
        if self._explicit_credentials:
            _SCRUBBER.add(access_key_id, secret_access_key, session_token)
            for name in _SCRUBBED_LOGGERS:
                logger = logging.getLogger(name)
                if _SCRUBBER not in logger.filters:
                    logger.addFilter(_SCRUBBER)

        def client(max_attempts: int) -> Any:
            from botocore.config import Config

            config = Config(s3={"addressing_style": addressing}, connect_timeout=10, read_timeout=60,
                            max_pool_connections=32,
                            retries={"mode": "standard", "total_max_attempts": max_attempts})
            with _SESSION_LOCK:  # botocore sessions are not thread-safe
                return session.create_client(
                    "s3", region_name=region, endpoint_url=endpoint_url, config=config,
                    aws_access_key_id=access_key_id, aws_secret_access_key=secret_access_key,
                    aws_session_token=session_token)

        self._client = client(4)
        self._create_client = client(1)  # the conditional PUT: retried by create_if_absent only
        self._arrow_lock = threading.Lock()
        self._arrow: pyarrow.fs.S3FileSystem | None = None
        self._arrow_credentials = (access_key_id, secret_access_key, session_token)
        self._verify_conditional_writes = verify_conditional_writes
        self._verified_buckets: set[str] = set()
        self._verify_lock = threading.Lock()

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> S3FileIO:
        """Build from storage options: ``s3.endpoint``, ``s3.region``, ``s3.access-key``,
        ``s3.secret-key``, ``s3.session-token``, ``s3.path-style-access`` (``true``/``false``).

        Keys outside ``s3.`` are ignored (they configure other layers); an unknown ``s3.`` key
        raises InvalidStorageOptionError (a typo would silently drop a credential otherwise).
        """
        kwargs: dict[str, Any] = {}
        for key, value in options.items():
            if not key.startswith("s3."):
                continue
            name = OPTION_KEYS.get(key)
            if name is None:
                known = ", ".join(k for k in OPTION_KEYS if k != "s3.path.style.access")
                raise InvalidStorageOptionError(f"unknown S3 storage option {key!r} (known: {known})")
            kwargs[name] = _parse_bool(key, value) if name in _BOOL_OPTIONS else value
        return cls(**kwargs)

    def __repr__(self) -> str:
        credentials = "explicit, redacted" if self._explicit_credentials else "default chain"
        return (f"S3FileIO(endpoint_url={_redact_endpoint(self._endpoint_url)!r}, region={self._region!r}, "
                f"path_style_access={self._path_style_access!r}, credentials=<{credentials}>)")

    def close(self) -> None:
        """Release pooled connections (the instance must not be used afterwards)."""
        self._client.close()
        self._create_client.close()

    # -- reading -------------------------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        bucket, key = split_uri(path)
        with self._translate("read", path):
            response = self._client.get_object(Bucket=bucket, Key=key)
            with response["Body"] as body:
                return bytes(body.read())

    def open_input(self, path: str) -> BinaryIO:
        return io.BytesIO(self.read_bytes(path))

    def exists(self, path: str) -> bool:
        bucket, key = split_uri(path)
        if key and not key.endswith("/") and self._head(path, bucket, key) is not None:
            return True
        return self._has_children(path, bucket, key)

    def status(self, path: str) -> FileStatus:
        bucket, key = split_uri(path)
        if key and not key.endswith("/"):
            head = self._head(path, bucket, key)
            if head is not None:
                return FileStatus(path=path, size=int(head["ContentLength"]), is_dir=False,
                                  modification_time_millis=int(head["LastModified"].timestamp() * 1000))
        if self._has_children(path, bucket, key):
            return FileStatus(path=path, size=0, is_dir=True, modification_time_millis=0)
        raise FileNotFoundStorageError(f"no such file or directory: {path}")

    def list_dir(self, path: str) -> list[FileStatus]:
        bucket, key = split_uri(path)
        prefix = _dir_prefix(key)
        out: list[FileStatus] = []
        with self._translate("list", path):
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=prefix, Delimiter="/",
                PaginationConfig={"PageSize": self.list_page_size})
            for page in pages:
                for common in page.get("CommonPrefixes", ()):
                    name = common["Prefix"][len(prefix):].rstrip("/")
                    if name:
                        out.append(FileStatus(path=join(path, name), size=0, is_dir=True,
                                              modification_time_millis=0))
                for obj in page.get("Contents", ()):
                    name = obj["Key"][len(prefix):]
                    if name:  # skip a "directory marker" object named like the prefix
                        out.append(FileStatus(path=join(path, name), size=int(obj["Size"]), is_dir=False,
                                              modification_time_millis=int(obj["LastModified"].timestamp() * 1000)))
        return sorted(out, key=lambda s: s.path)

    def list_files(self, path: str, prefix: str) -> list[FileStatus]:
        bucket, key = split_uri(path)
        directory = _dir_prefix(key)
        out: list[FileStatus] = []
        with self._translate("list", path):
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=directory + prefix, Delimiter="/",
                PaginationConfig={"PageSize": self.list_page_size})
            for page in pages:
                for obj in page.get("Contents", ()):
                    name = obj["Key"][len(directory):]
                    out.append(FileStatus(path=join(path, name), size=int(obj["Size"]), is_dir=False,
                                          modification_time_millis=int(obj["LastModified"].timestamp() * 1000)))
        return sorted(out, key=lambda s: s.path)

    # -- writing -------------------------------------------------------------------------------


    def list_hidden(self, path: str, prefix: str) -> list[FileStatus]:
        return self.list_files(path, prefix)  # a prefix listing: only the matching keys
    def write_bytes(self, path: str, data: bytes) -> None:
        bucket, key = split_uri(path)
        with self._translate("write", path):
            self._client.put_object(Bucket=bucket, Key=key, Body=data)

    def create_if_absent(self, path: str, data: bytes) -> bool:
        """Conditional PUT; see the module docstring for how each response is decided."""
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            EndpointConnectionError,
            HTTPClientError,
            SSLError,
        )
        from botocore.exceptions import ConnectionError as BotoConnectionError

        bucket, key = split_uri(path)
        self._check_conditional_writes(path, bucket, key)
        ambiguous = False  # an earlier attempt may have landed
        last = "no attempt"
        for attempt in range(self.create_attempts):
            if attempt:
                self._backoff(attempt)
            try:
                self._create_client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
                return True
            except ClientError as exc:
                code, status = _error_code(exc)
                last = f"S3 error {code} (HTTP {status})"
                if status == 412 or code == "PreconditionFailed":
                    if not ambiguous:
                        return False
                elif status in (408, 409, 429) or code in _RETRY_NOT_LANDED_CODES:
                    continue
                elif status >= 500:
                    ambiguous = True
                else:
                    raise StorageError(f"cannot create {path}: {last}") from exc
            except BotoCoreError as exc:
                if not isinstance(exc, BotoConnectionError | HTTPClientError):
                    raise StorageError(f"cannot create {path}: {exc}") from exc
                last = type(exc).__name__
                if isinstance(exc, EndpointConnectionError) and not isinstance(exc, SSLError):
                    continue  # never connected: nothing was sent
                ambiguous = True
            landed = self._compare(bucket, key, data)
            if landed is not None:
                return landed
        if ambiguous:
            raise StorageOutcomeUnknownError(
                f"creating {path}: outcome unknown after {self.create_attempts} attempts (last: {last}); "
                "the object may exist with our content")
        raise StorageError(f"cannot create {path}: gave up after {self.create_attempts} attempts (last: {last})")

    def _check_conditional_writes(self, path: str, bucket: str, key: str) -> None:
        """Once per bucket, before the first create: make sure the store refuses a second
        ``If-None-Match: *`` PUT of one key. Some S3-compatible stores ignore the header; there,
        two writers could both "create" one snapshot and one commit would be silently lost, so
        commits are refused instead (``s3.verify-conditional-writes=false`` skips the check, for
        a single writer on such a store)."""
        if not self._verify_conditional_writes or bucket in self._verified_buckets:
            return
        from botocore.exceptions import ClientError

        with self._verify_lock:
            if bucket in self._verified_buckets:
                return
            directory = key.rsplit("/", 1)[0] + "/" if "/" in key else ""
            probe = f"{directory}.conditional-write-probe-{uuid.uuid4().hex}.tmp"  # orphan removal collects it
            with self._translate("check conditional writes at", path):
                try:
                    self._client.put_object(Bucket=bucket, Key=probe, Body=b"1", IfNoneMatch="*")
                    try:
                        self._client.put_object(Bucket=bucket, Key=probe, Body=b"2", IfNoneMatch="*")
                    except ClientError as exc:
                        code, status = _error_code(exc)
                        if status != 412 and code != "PreconditionFailed":
                            raise
                    else:
                        raise UnsupportedError(
                            f"the S3 store of bucket {bucket!r} ignores conditional writes (If-None-Match): "
                            "concurrent commits could overwrite each other's snapshots, so paimonflow does not "
                            "commit there. Use a store with conditional writes (AWS S3, recent MinIO, LocalStack), "
                            "or set s3.verify-conditional-writes=false if exactly one writer ever commits")
                finally:
                    with contextlib.suppress(Exception):
                        self._client.delete_object(Bucket=bucket, Key=probe)
            self._verified_buckets.add(bucket)

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        bucket, key = split_uri(path)
        is_file = bool(key) and not key.endswith("/") and self._head(path, bucket, key) is not None
        if not recursive:
            if is_file:
                with self._translate("delete", path):
                    self._client.delete_object(Bucket=bucket, Key=key)
                return True
            if self._has_children(path, bucket, key):
                raise StorageError(f"cannot delete {path}: a non-empty directory (use recursive=True)")
            return False
        keys = [key] if is_file else []
        with self._translate("list", path):
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=_dir_prefix(key), PaginationConfig={"PageSize": self.list_page_size})
            keys.extend(obj["Key"] for page in pages for obj in page.get("Contents", ()))
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start:start + _DELETE_BATCH]
            with self._translate("delete", path):
                response = self._client.delete_objects(
                    Bucket=bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True})
            errors = response.get("Errors") or []
            if errors:
                first = errors[0]
                raise StorageError(f"cannot delete {len(errors)} object(s) under {path}: "
                                   f"S3 error {first.get('Code')} on key {first.get('Key')!r}")
        return bool(keys)

    def rename(self, src: str, dst: str) -> None:
        """Copy then delete (not atomic). The target check is a HEAD/list before the copy, plus
        ``If-None-Match: *`` on the copy for servers that honour it (AWS). Objects up to 5 GB."""
        src_bucket, src_key = split_uri(src)
        bucket, key = split_uri(dst)
        if not src_key or self._head(src, src_bucket, src_key) is None:
            raise FileNotFoundStorageError(f"cannot rename {src}: no such file")
        if self.exists(dst):
            raise StorageError(f"cannot rename {src} to {dst}: the target exists")
        from botocore.exceptions import ClientError

        try:
            with self._translate("copy", src):
                self._client.copy_object(Bucket=bucket, Key=key, IfNoneMatch="*",
                                         CopySource={"Bucket": src_bucket, "Key": src_key})
        except StorageError as exc:
            cause = exc.__cause__
            if isinstance(cause, ClientError) and _error_code(cause)[1] == 412:
                raise StorageError(f"cannot rename {src} to {dst}: the target exists") from cause
            raise
        with self._translate("delete", src):
            self._client.delete_object(Bucket=src_bucket, Key=src_key)

    def mkdirs(self, path: str) -> None:
        split_uri(path)  # directories are implicit: only check the path

    def sync(self, path: str) -> None:
        split_uri(path)  # a closed upload is durable: nothing to do

    def arrow_filesystem(self) -> tuple[pyarrow.fs.FileSystem, Callable[[str], str]]:
        """A pyarrow S3FileSystem with the same endpoint, region and credentials (built once)."""
        with self._arrow_lock:
            if self._arrow is None:
                self._arrow = self._build_arrow_filesystem()
        return self._arrow, arrow_path

    # -- internals -----------------------------------------------------------------------------

    def _build_arrow_filesystem(self) -> pyarrow.fs.S3FileSystem:
        import pyarrow.fs

        kwargs: dict[str, Any] = {"region": self._region or self._client.meta.region_name or "us-east-1"}
        if self._endpoint_url:
            parts = urlsplit(self._endpoint_url)
            kwargs["scheme"] = parts.scheme or "https"
            kwargs["endpoint_override"] = parts.netloc.rpartition("@")[2] + parts.path.rstrip("/")
        access_key, secret_key, token = self._arrow_credentials
        if access_key is not None:
            kwargs.update(access_key=access_key, secret_key=secret_key, session_token=token)
        if self._path_style_access is False:
            kwargs["force_virtual_addressing"] = True
        return pyarrow.fs.S3FileSystem(**kwargs)

    @contextmanager
    def _translate(self, action: str, path: str) -> Iterator[None]:
        """Map boto errors to StorageError / FileNotFoundStorageError (no secrets in messages)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except ClientError as exc:
            code, status = _error_code(exc)
            if code in _NOT_FOUND_CODES:
                raise FileNotFoundStorageError(f"no such file: {path}") from exc
            raise StorageError(f"cannot {action} {path}: S3 error {code} (HTTP {status})") from exc
        except BotoCoreError as exc:
            raise StorageError(f"cannot {action} {path}: {exc}") from exc

    def _head(self, path: str, bucket: str, key: str) -> dict[str, Any] | None:
        try:
            with self._translate("stat", path):
                return dict(self._client.head_object(Bucket=bucket, Key=key))
        except FileNotFoundStorageError:
            return None

    def _has_children(self, path: str, bucket: str, key: str) -> bool:
        with self._translate("list", path):
            response = self._client.list_objects_v2(Bucket=bucket, Prefix=_dir_prefix(key), MaxKeys=1)
        return bool(response.get("KeyCount") or response.get("Contents"))

    def _compare(self, bucket: str, key: str, data: bytes) -> bool | None:
        """After an ambiguous attempt: True if ``data`` is there, False if other bytes are,
        None if nothing is there or it cannot be read now (one try)."""
        path = f"s3://{bucket}/{key}"
        try:
            with self._translate("read", path):  # no botocore retries: the caller's loop retries
                response = self._create_client.get_object(Bucket=bucket, Key=key)
                with response["Body"] as body:
                    return bytes(body.read()) == data
        except StorageError:
            return None

    def _backoff(self, attempt: int) -> None:
        delay = min(self.retry_base_seconds * (2 ** (attempt - 1)), self.retry_max_seconds)
        time.sleep(delay * random.uniform(0.5, 1.0))


def _dir_prefix(key: str) -> str:
    key = key.rstrip("/")
    return f"{key}/" if key else ""


def _error_code(exc: Any) -> tuple[str, int]:
    response = getattr(exc, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", "Unknown"))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    return code, status
