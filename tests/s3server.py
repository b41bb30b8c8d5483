"""An S3-compatible server on 127.0.0.1 for the tests: moto's server, one request at a time.

moto checks ``If-None-Match: *`` and stores the object in two steps with no lock between them, so
two racing conditional PUTs can both succeed (about 3% of 32-way races, ``reference/
reliability.md`` §4). :class:`SerializedApp` runs every request under one lock, which makes the
conditional PUT atomic; request bodies are read before taking the lock, so a slow or dead client
cannot stall the others.

:meth:`S3TestServer.inject` scripts faults (an S3 error instead of, or after, applying a request;
a dropped connection) to test how clients decide ambiguous outcomes.

Everything runs in-process (a daemon thread), binds 127.0.0.1 only, keeps data in memory and uses
fixed dummy credentials: nothing reaches the network or reads the caller's AWS settings.
"""

from __future__ import annotations

import io
import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

ACCESS_KEY = "paimonflow-test-access-key"
SECRET_KEY = "paimonflow-test-secret-key"
REGION = "us-east-1"

Environ = dict[str, Any]
StartResponse = Callable[..., Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """What to do to the next request with ``method`` whose path contains ``path_contains``.

    ``status`` None drops the connection without a response; otherwise the response is that
    S3 error (``code``). ``applied`` says whether the real request runs first (a lost success).
    """

    method: str
    path_contains: str = ""
    status: int | None = 500
    code: str = "InternalError"
    applied: bool = False

    def matches(self, environ: Environ) -> bool:
        return environ["REQUEST_METHOD"] == self.method and self.path_contains in environ.get("PATH_INFO", "")


class SerializedApp:
    """A WSGI wrapper running one request at a time through ``app`` (plus scripted faults).

    ``serialized = False`` turns the lock off, which is plain moto (for negative controls).
    """

    def __init__(self, app: Callable[[Environ, StartResponse], Iterable[bytes]]) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._faults_lock = threading.Lock()
        self._faults: deque[Fault] = deque()
        self._counter = itertools.count(1)
        self.requests = 0
        self.serialized = True
        self.ignore_conditional_writes = False

    def add_faults(self, faults: Iterable[Fault]) -> None:
        with self._faults_lock:
            self._faults.extend(faults)

    def pending_faults(self) -> int:
        with self._faults_lock:
            return len(self._faults)

    def clear_faults(self) -> None:
        with self._faults_lock:
            self._faults.clear()

    def __call__(self, environ: Environ, start_response: StartResponse) -> list[bytes]:
        _buffer_body(environ)
        if self.ignore_conditional_writes:
            environ.pop("HTTP_IF_NONE_MATCH", None)
        self.requests = next(self._counter)
        fault = self._take_fault(environ)
        lock: AbstractContextManager[Any] = self._lock if self.serialized else nullcontext()
        with lock:
            if fault is None or fault.applied:
                body = self._run(environ, start_response if fault is None else _discard)
        if fault is None:
            return [body]
        if fault.status is None:
            raise ConnectionAbortedError("fault injected by the test server: connection dropped")
        payload = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{fault.code}</Code>'
                   "<Message>fault injected by the test server</Message></Error>").encode()
        start_response(f"{fault.status} Injected", [("Content-Type", "application/xml"),
                                                    ("Content-Length", str(len(payload)))])
        return [payload]

    def _take_fault(self, environ: Environ) -> Fault | None:
        with self._faults_lock:
            for i, fault in enumerate(self._faults):
                if fault.matches(environ):
                    del self._faults[i]
                    return fault
        return None

    def _run(self, environ: Environ, start_response: StartResponse) -> bytes:
        result = self._app(environ, start_response)
        try:
            return b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()


def _discard(*_args: Any) -> Callable[[bytes], None]:
    return lambda _data: None


def _buffer_body(environ: Environ) -> None:
    """Read the whole request body now (outside the lock) and hand the app an in-memory copy."""
    stream = environ["wsgi.input"]
    if environ.get("wsgi.input_terminated"):
        body = stream.read()
    else:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = stream.read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)


class S3TestServer:
    """moto's S3 behind :class:`SerializedApp`, served by werkzeug on 127.0.0.1 (a free port)."""

    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        class QuietHandler(MotoRequestHandler):
            def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
                pass

            def connection_dropped(self, error: BaseException, environ: Environ | None = None) -> None:
                self.close_connection = True  # so the client sees the connection close at once

        self.app = SerializedApp(DomainDispatcherApplication(create_backend_app))
        self._server = make_server("127.0.0.1", 0, self.app, threaded=True, request_handler=QuietHandler)
        self.host, self.port = self._server.server_address[:2]
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="s3-test-server", daemon=True)
        self._client: Any = None

    def __enter__(self) -> S3TestServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def storage_options(self) -> dict[str, str]:
        """paimonflow storage options (``s3.*``) for this server."""
        return {"s3.endpoint": self.endpoint_url, "s3.region": REGION, "s3.access-key": ACCESS_KEY,
                "s3.secret-key": SECRET_KEY, "s3.path-style-access": "true"}

    def client(self) -> Any:
        """A boto3 S3 client for this server with the dummy credentials (built once; thread-safe)."""
        if self._client is None:
            import boto3
            from botocore.config import Config

            session = boto3.session.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                                            region_name=REGION)
            self._client = session.client("s3", endpoint_url=self.endpoint_url, config=Config(
                s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}))
        return self._client

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def delete_bucket(self, name: str) -> None:
        """Delete a bucket and everything in it."""
        client = self.client()
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=name):
            keys = [{"Key": obj["Key"]} for obj in page.get("Contents", ())]
            if keys:
                client.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})
        client.delete_bucket(Bucket=name)

    @contextmanager
    def unserialized(self) -> Iterator[None]:
        """Plain moto inside the block: requests run concurrently (a negative control)."""
        self.app.serialized = False
        try:
            yield
        finally:
            self.app.serialized = True

    @contextmanager
    def without_conditional_writes(self) -> Iterator[None]:
        """Inside the block the server ignores ``If-None-Match``, as some S3-compatible stores do
        (s3rver 3.7, for one: ``reference/reliability.md`` §4)."""
        self.app.ignore_conditional_writes = True
        try:
            yield
        finally:
            self.app.ignore_conditional_writes = False

    @contextmanager
    def inject(self, *faults: Fault) -> Iterator[SerializedApp]:
        """Apply ``faults`` (in order, each once) to matching requests inside the block."""
        self.app.add_faults(faults)
        try:
            yield self.app
        finally:
            self.app.clear_faults()
