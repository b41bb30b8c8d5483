"""The one validator for every user-supplied name.

Database, table, tag, branch, consumer and column names, and commit users, all go through
:func:`validate_name`. A valid name is a single path segment: it can never point outside the
directory it is joined to, never collide with Paimon's own files, and survives every backend.
"""

from __future__ import annotations

import re
import unicodedata

from .errors import InvalidNameError

NAME_KINDS = ("database", "table", "tag", "branch", "consumer", "column", "commit user")

_MAX_LENGTH = 200  # UTF-8 bytes: room for Paimon's prefixes and suffixes (tag-, .db) within a 255-byte file name
# Letters, digits and a few safe punctuation marks; no separators, no wildcards, no control chars.
_ALLOWED = re.compile(r"^[\w\-.@+~]+$", re.UNICODE)


def validate_name(kind: str, name: object) -> str:
    """Return ``name`` unchanged if it is a valid ``kind`` name, else raise :class:`InvalidNameError`.

    Rules: a non-empty string of at most 200 UTF-8 bytes; letters, digits, ``_ - . @ + ~`` only
    (so no ``/``, ``\\``, ``:``, ``$``, whitespace or control characters); not ``.`` or ``..`` and
    not starting with ``.`` (Paimon's temp and hidden files); no NUL. Tag names may also hold single
    spaces between other characters, as Paimon's hourly automatic tags (``2026-11-21 08``) do.
    Column names only need to be non-empty printable text (Paimon allows spaces there; they never
    become paths).
    """
    if kind not in NAME_KINDS:
        raise ValueError(f"unknown name kind {kind!r}")
    if not isinstance(name, str):
        raise InvalidNameError(kind, name, "must be a string")
    if not name:
        raise InvalidNameError(kind, name, "must not be empty")
    if len(name.encode("utf-8")) > _MAX_LENGTH:
        raise InvalidNameError(kind, name, f"longer than {_MAX_LENGTH} bytes in UTF-8")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise InvalidNameError(kind, name, "contains control or invisible characters")
    if kind == "column":
        if name != name.strip():
            raise InvalidNameError(kind, name, "must not start or end with whitespace")
        return name
    if name in (".", "..") or name.startswith("."):
        raise InvalidNameError(kind, name, "must not start with '.'")
    checked = name
    if kind == "tag":  # Paimon's hourly automatic tags are named like "2026-11-21 08"
        if name != name.strip(" ") or "  " in name:
            raise InvalidNameError(kind, name, "a space may only separate two non-space characters")
        checked = name.replace(" ", "_")
    if not _ALLOWED.match(checked):
        bad = sorted({ch for ch in name if not _ALLOWED.match(ch)})
        raise InvalidNameError(kind, name, f"contains characters that are not allowed: {''.join(bad)!r}")
    if kind in ("database", "table") and "." in name:
        raise InvalidNameError(kind, name, "must not contain '.' (it separates database and table)")
    return name


def split_identifier(identifier: object) -> tuple[str, str]:
    """Split ``"db.table"`` into validated ``(database, table)``."""
    if not isinstance(identifier, str) or identifier.count(".") != 1:
        raise InvalidNameError("table", identifier, "expected '<database>.<table>'")
    database, table = identifier.split(".")
    return validate_name("database", database), validate_name("table", table)


BRANCH_PREFIX = "branch_"


def parse_table_name(name: object) -> tuple[str, str, str | None]:
    """Split ``"db.t"``, ``"db.t$branch_b"``, ``"db.t$snapshots"`` or ``"db.t$branch_b$snapshots"``
    into ``(identifier, branch, system table or None)``; the branch is ``"main"`` unless named."""
    if not isinstance(name, str):
        raise InvalidNameError("table", name, "must be a string")
    base, *rest = name.split("$")
    split_identifier(base)
    branch = "main"
    if rest and rest[0].startswith(BRANCH_PREFIX):
        branch = validate_name("branch", rest.pop(0)[len(BRANCH_PREFIX):])
    if len(rest) > 1 or (rest and not rest[0]):
        raise InvalidNameError("table", name, "expected 'db.t', 'db.t$branch_<b>' and an optional '$<system table>'")
    return base, branch, (rest[0] if rest else None)
