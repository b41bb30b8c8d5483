"""Dagster Pipes through the warehouse's storage (the orchestration side of :mod:`paimonflow.jobs.pipes`).

The context is written to ``<warehouse>/.paimonflow-results/pipes/<id>/context.json`` and the
job's message chunks are read from ``.../messages/<n>.json``: a driver in client or cluster
deploy mode reaches both, as it reaches the table. Everything is deleted when the session ends.
"""

# No ``from __future__ import annotations``: kept like the other Dagster modules of the suite.

import contextlib
import json
import uuid
from collections.abc import Iterator, Mapping

import dagster as dg

from paimonflow.core.errors import PaimonflowError
from paimonflow.core.fs import get_file_io
from paimonflow.jobs.results import RESULTS_DIR


class _Folder:
    def __init__(self, warehouse: str, storage_options: Mapping[str, str] | None, kind: str) -> None:
        self.path = f"{warehouse.rstrip('/')}/{RESULTS_DIR}/pipes/{uuid.uuid4().hex}/{kind}"
        self.io = get_file_io(self.path, dict(storage_options or {}) or None)

    def remove(self) -> None:
        with contextlib.suppress(PaimonflowError, OSError):
            self.io.delete(self.path, recursive=True)


class WarehouseContextInjector(dg.PipesContextInjector):
    """Writes the Pipes context as one JSON file under the warehouse."""

    def __init__(self, warehouse: str, storage_options: Mapping[str, str] | None = None) -> None:
        self._warehouse, self._options = warehouse, storage_options

    @contextlib.contextmanager
    def inject_context(self, context_data) -> Iterator[dict]:
        folder = _Folder(self._warehouse, self._options, "context")
        path = f"{folder.path}/context.json"
        try:
            folder.io.mkdirs(folder.path)
            folder.io.write_bytes(path, json.dumps(context_data).encode())
            yield {"path": path}
        finally:
            folder.remove()

    def no_messages_debug_text(self) -> str:
        return "the Pipes context was written under the warehouse (.paimonflow-results/pipes/)"


class WarehouseMessageReader(dg.PipesBlobStoreMessageReader):
    """Reads the job's message chunks ``<n>.json`` from a folder under the warehouse."""

    def __init__(self, warehouse: str, storage_options: Mapping[str, str] | None = None, *,
                 interval: float = 1.0) -> None:
        super().__init__(interval=interval)
        self._warehouse, self._options = warehouse, storage_options
        self._folder: _Folder | None = None

    @contextlib.contextmanager
    def get_params(self) -> Iterator[dict]:
        self._folder = _Folder(self._warehouse, self._options, "messages")
        try:
            yield {"path": self._folder.path}
        finally:
            self._folder.remove()

    def messages_are_readable(self, params) -> bool:
        return self._folder is not None

    def download_messages_chunk(self, index: int, params) -> str | None:
        path = f"{params['path']}/{index}.json"
        assert self._folder is not None
        try:
            return self._folder.io.read_bytes(path).decode()
        except (FileNotFoundError, PaimonflowError):
            return None

    def no_messages_debug_text(self) -> str:
        return ("no message from the submitted job arrived under the warehouse (.paimonflow-results/pipes/); "
                "does the driver have dagster-pipes and the Pipes environment variables?")


__all__ = ["WarehouseContextInjector", "WarehouseMessageReader"]
