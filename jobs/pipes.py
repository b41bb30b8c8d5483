"""Dagster Pipes for a submitted job, through the warehouse's storage (the job's side).

When Dagster's ``SparkResource`` submits a job, the job's driver opens a Pipes session: it reads
the Pipes context from, and writes its messages (logs, the result, its metadata) to, a folder
under the warehouse (``<warehouse>/.paimonflow-results/pipes/<id>/``), reachable from the driver
wherever it runs, as :mod:`paimonflow.jobs.results` is. The location comes in Dagster's bootstrap
environment variables; outside a Pipes launch nothing is opened. Only ``dagster-pipes`` (a small
dependency-free library) is needed on the driver; without it the job runs and reports to stdout.
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

from paimonflow.core.fs import get_file_io

_log = logging.getLogger(__name__)
CONTEXT_ENV = "DAGSTER_PIPES_CONTEXT"


def _classes(storage_options: Mapping[str, str] | None):
    from dagster_pipes import (
        PipesBlobStoreMessageWriter,
        PipesBlobStoreMessageWriterChannel,
        PipesContextLoader,
    )

    class WarehouseContextLoader(PipesContextLoader):
        """Reads the Pipes context JSON at ``params["path"]`` (on the warehouse's storage)."""

        @contextmanager
        def load_context(self, params):
            path = params["path"]
            yield json.loads(get_file_io(path, dict(storage_options or {}) or None).read_bytes(path))

    class WarehouseMessageChannel(PipesBlobStoreMessageWriterChannel):
        def __init__(self, folder: str, *, interval: float) -> None:
            super().__init__(interval=interval)
            self._folder = folder
            self._io = get_file_io(folder, dict(storage_options or {}) or None)
            self._io.mkdirs(folder)

        def upload_messages_chunk(self, payload: IO, index: int) -> None:
            self._io.write_bytes(posixpath.join(self._folder, f"{index}.json"), payload.read().encode())

    class WarehouseMessageWriter(PipesBlobStoreMessageWriter):
        """Writes message chunks ``<n>.json`` into the folder ``params["path"]``."""

        def make_channel(self, params):
            return WarehouseMessageChannel(params["path"], interval=self.interval)

    return WarehouseContextLoader(), WarehouseMessageWriter(interval=1.0)


@contextmanager
def pipes_session(storage_options: Mapping[str, str] | None) -> Iterator[Any]:
    """The Dagster Pipes context of this launch, or None when not launched through Pipes."""
    import os

    if CONTEXT_ENV not in os.environ:
        yield None
        return
    try:
        from dagster_pipes import open_dagster_pipes
    except ImportError:
        _log.warning("launched through Dagster Pipes, but dagster-pipes is not installed here: reporting to "
                     "stdout only")
        yield None
        return
    loader, writer = _classes(storage_options)
    with open_dagster_pipes(context_loader=loader, message_writer=writer) as pipes:
        yield pipes


__all__ = ["CONTEXT_ENV", "pipes_session"]
