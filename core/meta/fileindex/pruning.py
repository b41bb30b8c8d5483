"""Deciding from a data file's index whether a predicate may match any of its rows.

An equality (``==``) or ``IN`` on an indexed column can prove a file holds no matching row: a
bloom filter without the value's hash, a bitmap without the value. ``IS NULL`` is proven false
by a bitmap that saw no null. Everything else (ranges, ``!=``, ``NOT``) is unknown. An index
that cannot be parsed (another version, corrupt bytes) is not used: the file is read, as Paimon
reads a file whose index it cannot use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa

from ...data.types import DataType, to_arrow
from ...predicate import And, Compare, IsIn, IsNull, Or, Predicate
from .bitmap import BitmapIndexKeys, bitmap_keys
from .bloom import BloomFilter
from .container import read_container
from .hashing import fast_hash
from .settings import BITMAP, BLOOM_FILTER


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexedColumn:
    """A column of the file as the index knows it: its name in the file and its type then."""

    file_name: str
    data_type: DataType


class FileIndexPruner:
    """The indexes of one data file, opened for :meth:`might_match`."""

    def __init__(self, container_bytes: bytes, columns: Mapping[str, IndexedColumn]) -> None:
        """``columns``: current column name -> how the file names and types it (only columns
        whose type did not change since the file was written may be given)."""
        container = read_container(container_bytes)
        self._bodies = container.bodies if container is not None else {}
        self._columns = columns

    @property
    def usable(self) -> bool:
        return bool(self._bodies)

    def might_match(self, predicate: Predicate) -> bool:
        """False only when the file's indexes prove no row matches ``predicate``."""
        if isinstance(predicate, And):
            return all(self.might_match(c) for c in predicate.children)
        if isinstance(predicate, Or):
            return any(self.might_match(c) for c in predicate.children)
        if isinstance(predicate, Compare) and predicate.op == "==":
            return self._may_contain(predicate.field, [predicate.value])
        if isinstance(predicate, IsIn):
            return self._may_contain(predicate.field, [v for v in predicate.values if v is not None])
        if isinstance(predicate, IsNull):
            return self._may_hold_null(predicate.field)
        return True

    def _indexes(self, column: str) -> tuple[IndexedColumn | None, Mapping[str, bytes | None]]:
        indexed = self._columns.get(column)
        if indexed is None:
            return None, {}
        return indexed, self._bodies.get(indexed.file_name, {})

    def _may_contain(self, column: str, values: list) -> bool:
        indexed, bodies = self._indexes(column)
        if indexed is None or not bodies:
            return True
        try:
            literal = pa.array(values, type=to_arrow(indexed.data_type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError):
            return True  # a literal the column cannot hold: leave it to the row filter
        if not values:
            return False  # IN () matches nothing
        for index_type, body in bodies.items():
            if body is None:
                continue
            if index_type == BLOOM_FILTER:
                bloom = BloomFilter.from_bytes(body)
                if bloom is not None and not bloom.might_contain(fast_hash(literal, indexed.data_type)).any():
                    return False
            elif index_type == BITMAP:
                keys = BitmapIndexKeys.from_bytes(body, indexed.data_type)
                if keys is not None and not any(k in keys.keys for k in bitmap_keys(literal, indexed.data_type)):
                    return False
        return True

    def _may_hold_null(self, column: str) -> bool:
        indexed, bodies = self._indexes(column)
        body = bodies.get(BITMAP) if indexed is not None else None
        if indexed is None or body is None:
            return True
        keys = BitmapIndexKeys.from_bytes(body, indexed.data_type)
        return keys is None or keys.has_null
