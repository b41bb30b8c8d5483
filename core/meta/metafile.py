"""The two shapes of small metadata file every manager reads: a JSON object and a hint.

One place decides what counts as corrupt, so the snapshot, schema, consumer and changelog
readers cannot drift apart (the parser fuzz in ``tests/reliability/test_parser_fuzz.py`` holds
them all to it).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ..errors import CorruptMetadataError, FileNotFoundStorageError, StorageError

_MAX_HINT_DIGITS = 19  # a Java long; int() of more than 4300 digits would raise a bare ValueError


def load_object(data: bytes | str, path: str) -> dict[str, Any]:
    """``data`` parsed as a JSON object; CorruptMetadataError naming ``path`` for anything else
    (bad UTF-8 or JSON, numbers too long for Python's int, nesting too deep, another JSON type)."""
    try:
        doc = json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except (ValueError, RecursionError) as exc:
        raise CorruptMetadataError(path, f"not valid JSON ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(doc, dict):
        raise CorruptMetadataError(path, f"expected a JSON object, found {type(doc).__name__}")
    return doc


def read_hint(file_io, path: str) -> int | None:
    """The positive id a hint file (``LATEST``, ``EARLIEST``) holds, or None if it is missing,
    unreadable or not such a number: hints are only hints, callers verify and fall back to listing."""
    try:
        text = file_io.read_bytes(path).decode("ascii").strip()
    except (FileNotFoundStorageError, UnicodeDecodeError, StorageError):
        return None
    if not text.isdigit() or len(text) > _MAX_HINT_DIGITS:
        return None
    value = int(text)
    return value if value > 0 else None


def write_hint(file_io, path: str, value: int) -> None:
    """Overwrite a hint file; a failure is ignored (readers never trust a hint alone)."""
    with contextlib.suppress(StorageError):
        file_io.write_bytes(path, str(value).encode("ascii"))
