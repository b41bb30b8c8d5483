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


class ResultFile:
    """The submitter's side: a fresh place under the warehouse for one job's result (``uri``, for
    the driver), read back once with :meth:`take`. Leaving the ``with`` block deletes whatever is
    left, quietly, so a failed submission leaves nothing behind and its own error is the one seen."""

    def __init__(self, warehouse: str, storage_options: Mapping[str, str] | None = None) -> None:
        self.uri = f"{warehouse.rstrip('/')}/{RESULTS_DIR}/{uuid.uuid4().hex}.json"
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


__all__ = ["RESULTS_DIR", "ResultFile", "write_result"]
