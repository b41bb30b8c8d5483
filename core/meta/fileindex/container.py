"""Paimon's file index container (``FileIndexFormat``): the bytes of a ``<data file>.index`` file
or of a manifest's ``_EMBEDDED_FILE_INDEX``.

Layout (big-endian, Java ``DataOutput``)::

    magic: int64 = 1493475289347502 | version: int32 = 1 | head length: int32
    column count: int32, then per column:
        name: modified UTF-8 (uint16 length) | index count: int32, then per index:
            index type: modified UTF-8 | start: int32 (absolute; -1 = empty index) | length: int32
    redundant length: int32 = 0
    bodies, in head order

Reading never raises for bad bytes: :func:`read_container` returns None for anything that is not
a well-formed container, and the caller then does not use the index (nothing is skipped).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

MAGIC = 1493475289347502
VERSION = 1
EMPTY_INDEX = -1


def java_utf(text: str) -> bytes:
    """Java's ``DataOutput.writeUTF``: a uint16 length, then modified UTF-8 (NUL as two bytes,
    characters outside the BMP as two 3-byte surrogates)."""
    out = bytearray()
    utf16 = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(utf16), 2):
        unit = (utf16[i] << 8) | utf16[i + 1]
        if 1 <= unit <= 0x7F:
            out.append(unit)
        elif unit <= 0x7FF:
            out += bytes((0xC0 | (unit >> 6), 0x80 | (unit & 0x3F)))
        else:
            out += bytes((0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F)))
    if len(out) > 0xFFFF:
        raise ValueError(f"name too long for Java's writeUTF: {text[:40]!r}...")
    return struct.pack(">H", len(out)) + bytes(out)


def _read_java_utf(data: bytes, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">H", data, pos)
    raw = data[pos + 2:pos + 2 + length]
    if len(raw) != length:
        raise ValueError("truncated name")
    units, i = [], 0
    while i < length:
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b >> 5 == 0b110:
            units.append(((b & 0x1F) << 6) | (raw[i + 1] & 0x3F))
            i += 2
        else:
            units.append(((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
            i += 3
    text = b"".join(struct.pack(">H", u) for u in units).decode("utf-16-be", "surrogatepass")
    return text, pos + 2 + length


def write_container(indexes: Mapping[str, Mapping[str, bytes]]) -> bytes:
    """The container of ``indexes`` (column -> index type -> body), in the mappings' order."""
    names = b"".join(java_utf(c) + b"".join(java_utf(t) for t in types) for c, types in indexes.items())
    count = sum(len(types) for types in indexes.values())
    head_length = 8 + 4 + 4 + 4 + count * 8 + len(indexes) * 4 + 4 + len(names)
    head = [struct.pack(">qiii", MAGIC, VERSION, head_length, len(indexes))]
    bodies: list[bytes] = []
    position = head_length
    for column, types in indexes.items():
        head.append(java_utf(column) + struct.pack(">i", len(types)))
        for index_type, body in types.items():
            head.append(java_utf(index_type) + struct.pack(">ii", position, len(body)))
            bodies.append(body)
            position += len(body)
    head.append(struct.pack(">i", 0))
    return b"".join(head + bodies)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileIndexContainer:
    """A parsed container: ``bodies[column][index type]`` (None for an index written empty)."""

    bodies: Mapping[str, Mapping[str, bytes | None]]


def read_container(data: bytes) -> FileIndexContainer | None:
    """Parse a container; None when ``data`` is not one this version reads (wrong magic, unknown
    version, truncated, offsets outside the bytes)."""
    try:
        magic, version, head_length, columns = struct.unpack_from(">qiii", data, 0)
        if magic != MAGIC or version != VERSION or not 20 <= head_length <= len(data):
            return None
        pos = 20
        bodies: dict[str, dict[str, bytes | None]] = {}
        for _ in range(columns):
            column, pos = _read_java_utf(data, pos)
            (types,) = struct.unpack_from(">i", data, pos)
            pos += 4
            per_type = bodies.setdefault(column, {})
            for _ in range(types):
                index_type, pos = _read_java_utf(data, pos)
                start, length = struct.unpack_from(">ii", data, pos)
                pos += 8
                if start == EMPTY_INDEX:
                    per_type[index_type] = None
                elif start < 0 or length < 0 or start + length > len(data):
                    return None
                else:
                    per_type[index_type] = bytes(data[start:start + length])
        if pos > head_length:
            return None
    except (struct.error, ValueError, IndexError, UnicodeDecodeError):
        return None
    return FileIndexContainer(bodies=bodies)
