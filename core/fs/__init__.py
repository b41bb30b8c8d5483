"""Storage backends behind one FileIO protocol.

``get_file_io(uri, options)`` picks the backend from the URI's scheme: a plain path or ``file:``
is local disk (:class:`LocalFileIO`), ``s3://`` / ``s3a://`` is S3 (:class:`S3FileIO`, needs the
``s3`` extra). The contract all backends pass is stated on :class:`FileIO`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..errors import InvalidStorageOptionError, StorageOutcomeUnknownError, UnsupportedError
from .base import FileIO, FileStatus, join
from .local import LocalFileIO
from .s3 import S3FileIO

__all__ = [
    "FileIO",
    "FileStatus",
    "InvalidStorageOptionError",
    "LocalFileIO",
    "S3FileIO",
    "StorageOutcomeUnknownError",
    "get_file_io",
    "join",
    "scheme_of",
    "storage_options_from_env",
]

#: storage options (credentials included) as one JSON object of strings, for processes that must
#: not take them on argv (a spark-submitted job, a CLI in a scheduler's task)
STORAGE_OPTIONS_ENV = "PAIMONFLOW_STORAGE_OPTIONS"

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):/")


def scheme_of(uri: str) -> str:
    """The lower-case scheme of ``uri`` (``""`` for a plain path; ``file:/x`` is ``"file"``)."""
    match = _SCHEME.match(uri)
    return match.group(1).lower() if match else ""


def get_file_io(uri: str, options: Mapping[str, str] | None = None) -> FileIO:
    """The FileIO for ``uri``: a local path or ``file:`` URI, or ``s3://`` / ``s3a://``.

    ``options`` are storage options (for S3 see :meth:`S3FileIO.from_options`); local disk takes
    none. Raises UnsupportedError for any other scheme, InvalidStorageOptionError for bad options.
    """
    scheme = scheme_of(uri)
    if scheme in ("", "file"):
        return LocalFileIO()
    if scheme in ("s3", "s3a"):
        return S3FileIO.from_options(options or {})
    raise UnsupportedError(
        f"no storage backend for scheme {scheme!r} in {uri!r} (supported: local paths, file://, s3://, s3a://)")


def storage_options_from_env() -> dict[str, str]:
    """The storage options in ``PAIMONFLOW_STORAGE_OPTIONS`` (empty if unset); a value that is not
    a JSON object of strings is an :class:`InvalidStorageOptionError` that does not echo it."""
    import json
    import os

    text = os.environ.get(STORAGE_OPTIONS_ENV)
    if not text:
        return {}
    try:
        options = json.loads(text)
    except ValueError:
        options = None
    if not isinstance(options, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in options.items()):
        raise InvalidStorageOptionError(f"{STORAGE_OPTIONS_ENV} must be a JSON object of strings, e.g. "
                                        '{"s3.endpoint": "http://127.0.0.1:9000"}')
    return options
