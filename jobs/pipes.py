"""Dagster Pipes for a submitted job, through the warehouse's storage (the job's side).

When Dagster's ``SparkResource`` submits a job, the job's driver opens a Pipes session: it reads
the Pipes context from, and writes its messages (logs, the result) to, a folder under the
warehouse (``<warehouse>/.paimonflow-results/pipes/<id>/``), reachable from the driver wherever
it runs, as :mod:`paimonflow.jobs.results` is. The locations come in Dagster's bootstrap
environment variables. This module needs ``dagster-pipes`` (a small dependency-free library);
the jobs' command line imports it only for a Pipes launch (``DAGSTER_PIPES_CONTEXT`` set).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

from dagster_pipes import (
    PipesBlobStoreMessageWriter,
    PipesBlobStoreMessageWriterChannel,
    PipesContextLoader,
    open_dagster_pipes,
)

from paimonflow.core.fs import get_file_io


class WarehouseContextLoader(PipesContextLoader):
    """Reads the Pipes context JSON at ``params["path"]`` (on the warehouse's storage)."""

    def __init__(self, storage_options: Mapping[str, str] | None) -> None:
        self._options = dict(storage_options or {}) or None

    @contextmanager
    def load_context(self, params):
        path = params["path"]
        yield json.loads(get_file_io(path, self._options).read_bytes(path))


class WarehouseMessageChannel(PipesBlobStoreMessageWriterChannel):
    """Uploads message chunk ``n`` as ``<folder>/<n>.json``."""

    def __init__(self, folder: str, storage_options: Mapping[str, str] | None, *, interval: float) -> None:
        super().__init__(interval=interval)
        self._folder = folder
        self._io = get_file_io(folder, dict(storage_options or {}) or None)
        self._io.mkdirs(folder)

    def upload_messages_chunk(self, payload: IO, index: int) -> None:
        self._io.write_bytes(posixpath.join(self._folder, f"{index}.json"), payload.read().encode())


class WarehouseMessageWriter(PipesBlobStoreMessageWriter):
    """Writes message chunks into the folder ``params["path"]``."""

    def __init__(self, storage_options: Mapping[str, str] | None, *, interval: float = 1.0) -> None:
        super().__init__(interval=interval)
        self._options = storage_options

    def make_channel(self, params):
        return WarehouseMessageChannel(params["path"], self._options, interval=self.interval)


@contextmanager
def pipes_session(storage_options: Mapping[str, str] | None) -> Iterator[Any]:
    """The Dagster Pipes context of this launch."""
    with open_dagster_pipes(context_loader=WarehouseContextLoader(storage_options),
                            message_writer=WarehouseMessageWriter(storage_options)) as pipes:
        yield pipes


__all__ = ["WarehouseContextLoader", "WarehouseMessageWriter", "pipes_session"]
