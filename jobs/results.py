"""The JSON result of a spark-submit'ed job, handed back through the warehouse's storage.

The driver of a submitted job may run anywhere: on the submitting machine (client deploy mode) or
on a node of the cluster (cluster deploy mode, YARN and Kubernetes), where a local file would be
out of the submitter's reach. Both sides reach the warehouse, so the driver writes its result to
``<warehouse>/.paimonflow-results/<random>.json`` with the table's storage options, and the
submitter reads it back and deletes it. Nothing else lives there: the folder is not a database
(those end in ``.db``) and is outside every table, so catalogs and orphan-file removal never see
it."""

from __future__ import annotations

import contextlib
import json
import posixpath
import uuid
from collections.abc import Mapping
from typing import Any

from paimonflow.core.fs import get_file_io

RESULTS_DIR = ".paimonflow-results"


def write_result(uri: str, text: str, storage_options: Mapping[str, str] | None = None) -> None:
    """Write the result (the driver's side): one atomic write, the folder made first."""
    io = get_file_io(uri, dict(storage_options or {}) or None)
    io.mkdirs(posixpath.dirname(uri))
    io.write_bytes(uri, text.encode())


def raise_if_failed(record: Mapping[str, Any] | None) -> None:
    """Raise the job's own error when ``record`` is the error record a failed driver wrote
    (``{"job", "error", "message"}``): the paimonflow error class of that name (the root class for
    any other name), with the driver's one-line message."""
    if not record or "error" not in record:
        return
    from paimonflow.core import errors

    found = getattr(errors, str(record["error"]), None)
    kind = found if isinstance(found, type) and issubclass(found, errors.PaimonflowError) else errors.PaimonflowError
    message = str(record.get("message") or record["error"])
    if kind is errors.PaimonflowError and record["error"] != "PaimonflowError":
        message = f"{record['error']}: {message}"
    raise kind(message)


class ResultFile:
    """The submitter's side: a fresh place under the warehouse for one job's result (``uri``, for
    the driver), read back once with :meth:`take`. Leaving the ``with`` block deletes whatever is
    left, quietly, so a failed submission leaves nothing behind and its own error is the one seen."""

    def __init__(self, warehouse: str, storage_options: Mapping[str, str] | None = None, *,
                 uri: str | None = None) -> None:
        self.uri = uri or f"{warehouse.rstrip('/')}/{RESULTS_DIR}/{uuid.uuid4().hex}.json"
        self._io = get_file_io(self.uri, dict(storage_options or {}) or None)

    def take(self) -> dict[str, Any] | None:
        """The result the driver wrote (then deleted); ``None`` if it wrote none."""
        if not self._io.exists(self.uri):
            return None
        try:
            text = self._io.read_bytes(self.uri).decode().strip()
        finally:
            self._io.delete(self.uri)
        return json.loads(text) if text else None

    def __enter__(self) -> ResultFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        from paimonflow.core.errors import PaimonflowError

        with contextlib.suppress(PaimonflowError, OSError):
            self._io.delete(self.uri)


__all__ = ["RESULTS_DIR", "ResultFile", "raise_if_failed", "write_result"]
