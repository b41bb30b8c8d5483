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


def result_uri(warehouse: str) -> str:
    """A fresh place for one job's result, under ``warehouse``."""
    return f"{warehouse.rstrip('/')}/{RESULTS_DIR}/{uuid.uuid4().hex}.json"


def write_result(uri: str, text: str, storage_options: Mapping[str, str] | None = None) -> None:
    """Write the result (the driver's side): one atomic write, the folder made first."""
    io = get_file_io(uri, dict(storage_options or {}) or None)
    io.mkdirs(posixpath.dirname(uri))
    io.write_bytes(uri, text.encode())


def take_result(uri: str, storage_options: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """Read the result back and delete it (the submitter's side); ``None`` if the driver wrote none."""
    io = get_file_io(uri, dict(storage_options or {}) or None)
    if not io.exists(uri):
        return None
    try:
        text = io.read_bytes(uri).decode().strip()
    finally:
        io.delete(uri)
    return json.loads(text) if text else None


def discard_result(uri: str, storage_options: Mapping[str, str] | None = None) -> None:
    """Delete a result nobody will read (the submission failed); never raises."""
    from paimonflow.core.errors import PaimonflowError

    with contextlib.suppress(PaimonflowError, OSError):
        get_file_io(uri, dict(storage_options or {}) or None).delete(uri)


__all__ = ["RESULTS_DIR", "discard_result", "result_uri", "take_result", "write_result"]
