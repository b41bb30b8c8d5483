"""What a table write starts from: the state of the snapshot it continues.

A :class:`~.table_write.TableWrite` asks its start, only about the (partition, bucket)s it writes, for the live files of a bucket (to compact
them), the next sequence number of a bucket, a bucket's deletion vectors, a partition's dynamic-
bucket hash index and, for cross-partition upserts, the keys of every live row. The table builds
the start from its latest snapshot (``Table.new_write``); :class:`EmptyStart` is a table with
nothing in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from ..meta.index_files import IndexFileMeta
    from ..meta.manifest import DataFileMeta


class WriteStart(Protocol):
    def restore(self, buckets: Sequence[tuple[tuple[object, ...], int]]) -> None:
        """Read what the writer needs of these (partition values, bucket)s at once (a hint:
        :meth:`files` and :meth:`next_sequence` restore any bucket they are asked about)."""
        ...

    def files(self, partition: tuple[object, ...], bucket: int) -> Sequence[DataFileMeta]:
        """The live files of a bucket."""
        ...

    def next_sequence(self, partition: tuple[object, ...], bucket: int) -> int:
        """The first sequence number a bucket's new rows take."""
        ...

    def deletion_vectors(self, partition: tuple[object, ...], bucket: int
                         ) -> tuple[Mapping[str, object], Sequence[IndexFileMeta]]:
        """A bucket's deletion vectors (by data file name) and the index files holding them."""
        ...

    def hash_index(self, partition: tuple[object, ...]) -> Mapping[int, tuple[np.ndarray, Sequence[IndexFileMeta]]]:
        """``{bucket: (key hashes, HASH index files)}`` of a partition (dynamic bucket mode)."""
        ...

    def keys(self) -> pa.Table | None:
        """The primary and partition keys of every live row (cross-partition upserts)."""
        ...


class EmptyStart:
    """The start of a write to an empty table."""

    def restore(self, buckets: Sequence[tuple[tuple[object, ...], int]]) -> None:
        return None

    def files(self, partition: tuple[object, ...], bucket: int) -> Sequence[DataFileMeta]:
        return ()

    def next_sequence(self, partition: tuple[object, ...], bucket: int) -> int:
        return 0

    def deletion_vectors(self, partition: tuple[object, ...], bucket: int
                         ) -> tuple[Mapping[str, object], Sequence[IndexFileMeta]]:
        return {}, ()

    def hash_index(self, partition: tuple[object, ...]) -> Mapping[int, tuple[np.ndarray, Sequence[IndexFileMeta]]]:
        return {}

    def keys(self) -> pa.Table | None:
        return None
