"""The files of a job's many writers, found without their commit messages.

A distributed write (a Spark job's tasks: ``jobs/write.py``) hands its files to the driver only in
the tasks' results. When the job is interrupted or fails while it collects them, the files of the
tasks that finished (and of those killed before they could delete their own) are known to no one.
So every writer of such a job carries the job's *token* (16 hex digits) as the first half of its
writer id, which begins every file name it writes (``data-<id>-<n>.parquet``); the driver finds and
deletes them by that mark once no task of the job runs. Another writer's id has the same first half
with a chance of 2^-64: the files found are this job's, and no snapshot references them (the job
committed nothing).
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import unquote

from ..errors import FileNotFoundStorageError
from ..meta.layout import BUCKET_PREFIX, data_root


def new_token() -> str:
    return os.urandom(8).hex()


def writer_id(token: str | None) -> str:
    """A writer's id: a random UUID; with ``token``, one whose first half is the token."""
    if token is None:
        return str(uuid.uuid4())
    return str(uuid.UUID(hex=token + os.urandom(8).hex()))


def mark(token: str) -> str:
    """What every file name of the token's writers contains: ``xxxxxxxx-xxxx-xxxx-``."""
    return f"{token[:8]}-{token[8:12]}-{token[12:16]}-"


def files_of_token(table, token: str) -> list[str]:
    """Every file in the table's bucket directories written by a writer of ``token``."""
    found: list[str] = []
    _walk(table.file_io, data_root(table.path, table.options), tuple(table.partition_keys), mark(token), found)
    return sorted(found)


def _walk(file_io, path: str, keys: tuple[str, ...], wanted: str, found: list[str]) -> None:
    try:
        listing = file_io.list_dir(path)
    except FileNotFoundStorageError:
        return
    for status in listing:
        child = status.path.rstrip("/")
        name = child.rsplit("/", 1)[-1]
        if not status.is_dir:
            if not keys and wanted in name and path.rstrip("/").rsplit("/", 1)[-1].startswith(BUCKET_PREFIX):
                found.append(child)
        elif keys and "=" in name and unquote(name.split("=", 1)[0]) == keys[0]:
            _walk(file_io, child, keys[1:], wanted, found)
        elif not keys and name.startswith(BUCKET_PREFIX):
            _walk(file_io, child, (), wanted, found)
