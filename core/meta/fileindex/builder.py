"""Building the file index of one new data file from its rows, chunk by chunk (vectorized)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from .bitmap import build_bitmap
from .bloom import BloomBits
from .container import write_container
from .hashing import fast_hash
from .settings import BLOOM_FILTER, FileIndexSettings

INDEX_FILE_SUFFIX = ".index"


def index_file_name(data_file_name: str) -> str:
    """The name of a data file's separate index file (Paimon's ``<data file>.index``)."""
    return data_file_name + INDEX_FILE_SUFFIX


@dataclass(frozen=True, slots=True, kw_only=True)
class BuiltFileIndex:
    """A data file's index container and where it goes: in the manifest (``embedded``) or in
    its own ``<data file>.index`` file."""

    data: bytes
    embedded: bool


class FileIndexBuilder:
    """Collects the indexed columns of one data file's rows (``add`` them in file order), then
    :meth:`finish` serializes every index into one container."""

    def __init__(self, settings: FileIndexSettings) -> None:
        self._settings = settings
        self._blooms = {index.column: BloomBits(items=index.items, fpp=index.fpp)
                        for index in settings.indexes if index.index_type == BLOOM_FILTER}
        self._chunks: dict[str, list[pa.ChunkedArray]] = {}

    def add(self, values: pa.Table) -> None:
        """Add the next rows of the file (the table's value columns, by their current names)."""
        for index in self._settings.indexes:
            column = values.column(index.column)
            if index.index_type == BLOOM_FILTER:
                self._blooms[index.column].add(fast_hash(column.combine_chunks(), index.data_type))
            else:
                self._chunks.setdefault(index.column, []).append(column)

    def finish(self) -> BuiltFileIndex:
        """The container of every index, embedded when its size is at most
        ``file-index.in-manifest-threshold``."""
        bodies: dict[str, dict[str, bytes]] = {}
        for index in self._settings.indexes:
            if index.index_type == BLOOM_FILTER:
                body = self._blooms[index.column].finish().to_bytes()
            else:
                chunks = [c for part in self._chunks.get(index.column, []) for c in part.chunks]
                column = pa.chunked_array(chunks, type=chunks[0].type).combine_chunks() if chunks \
                    else pa.array([], pa.null())
                body = build_bitmap(column, index.data_type)
            bodies.setdefault(index.column, {})[index.index_type] = body
        data = write_container(bodies)
        return BuiltFileIndex(data=data, embedded=len(data) <= self._settings.in_manifest_threshold)
