"""Manifest files that can be read in part: entries in (partition, bucket) order, grouped into
Avro blocks, with an index of every block in the file's header metadata.

An Avro container file is a header (magic, a metadata map, a 16-byte sync marker) followed by
blocks (record count, byte size, the encoded and compressed records, the sync marker). Writers
put what they like in the metadata map and readers ignore keys they do not know, so Apache
Paimon's readers (Java, pypaimon) read these files as any other manifest. paimonflow writes,
under :data:`INDEX_KEY`, each block's record count, bucket range and distinct partitions, and a
reader looking for some (partition, bucket)s, or for partitions a filter accepts, decodes only
the blocks that can hold them: a writer restoring one bucket, or a plan of one partition, costs
what it reads, not the size of the manifest. Files without an index (written by other
implementations, or by paimonflow before the index) are decoded whole.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import fastavro
from fastavro.write import Writer

INDEX_KEY = "paimonflow.block-index"
INDEX_VERSION = 1
MIN_BLOCK_RECORDS = 64  # adjacent small (partition, bucket) groups share a block up to this many records
MAX_BLOCK_RECORDS = 4096  # a large group is split into blocks of at most this many records
_MAGIC = b"Obj\x01"
_SYNC_SIZE = 16


@dataclass(frozen=True, slots=True)
class BlockInfo:
    """What the index says of one block."""

    count: int
    min_bucket: int
    max_bucket: int
    partitions: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class Blocks:
    """A parsed container file: its header bytes and metadata, and each block's index entry and
    byte range."""

    header: bytes
    metadata: dict[str, bytes]
    infos: tuple[BlockInfo, ...]
    spans: tuple[tuple[int, int], ...]  # (start, end) of each block, sync marker included

    def body(self, data: bytes, i: int) -> bytes:
        """Block ``i`` as stored (record count, size, compressed records), without its sync marker."""
        start, end = self.spans[i]
        return data[start:end - _SYNC_SIZE]


@dataclass(frozen=True, slots=True)
class RawBlock:
    """One block taken as it is from a container, to be written into another."""

    info: BlockInfo
    body: bytes


def group_blocks(keys: Sequence[tuple[bytes, int]]) -> list[tuple[int, int]]:
    """``[start, end)`` record ranges of the blocks of records whose (partition, bucket) keys are
    ``keys``, already in (partition, bucket) order: whole groups, adjacent small ones together."""
    blocks: list[tuple[int, int]] = []
    start = 0
    n = len(keys)
    i = 0
    while i < n:
        j = i + 1
        while j < n and keys[j] == keys[i]:
            j += 1
        # the group keys[i:j]; cut before it if the open block is already big enough
        if i > start and i - start >= MIN_BLOCK_RECORDS:
            blocks.append((start, i))
            start = i
        while j - start > MAX_BLOCK_RECORDS:
            blocks.append((start, start + MAX_BLOCK_RECORDS))
            start += MAX_BLOCK_RECORDS
        i = j
    if start < n:
        blocks.append((start, n))
    return blocks


def write_indexed(schema: Any, records: Sequence[dict[str, Any]], keys: Sequence[tuple[bytes, int]],
                  codec: str) -> bytes:
    """An Avro container of ``records`` (in (partition, bucket) order, ``keys[i]`` being
    record i's) with one block per :func:`group_blocks` range and the block index in its header."""
    ranges = group_blocks(keys)
    partitions: dict[bytes, int] = {}
    index_blocks = []
    for start, end in ranges:
        block_keys = keys[start:end]
        parts = sorted({partitions.setdefault(p, len(partitions)) for p, _ in block_keys})
        buckets = [b for _, b in block_keys]
        index_blocks.append([end - start, min(buckets), max(buckets), parts])
    index = {"version": INDEX_VERSION, "partitions": [p.hex() for p in partitions], "blocks": index_blocks}
    sink = io.BytesIO()
    writer = Writer(sink, schema, codec=codec, sync_interval=1 << 62,
                    metadata={INDEX_KEY: json.dumps(index, separators=(",", ":"))})
    for start, end in ranges:
        for record in records[start:end]:
            writer.write(record)
        writer.flush()  # ends the block here
    writer.flush()
    return sink.getvalue()


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint (Avro ``long``) at ``pos``: (value, next position)."""
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def parse_blocks(data: bytes) -> Blocks | None:
    """The header and blocks of an indexed container, or None if ``data`` has no usable index
    (not written by paimonflow, an index of another version, or one that does not match the
    blocks): such a file is decoded whole. Raises ``IndexError``/``ValueError`` on a truncated file."""
    if not data.startswith(_MAGIC):
        return None
    pos = len(_MAGIC)
    metadata: dict[str, bytes] = {}
    while True:  # the metadata map: blocks of (key, value) pairs, ended by a zero count
        count, pos = _varint(data, pos)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = _varint(data, pos)  # the block's byte size
        for _ in range(count):
            length, pos = _varint(data, pos)
            key = data[pos:pos + length]
            pos += length
            length, pos = _varint(data, pos)
            metadata[key.decode("utf-8", "replace")] = data[pos:pos + length]
            pos += length
    pos += _SYNC_SIZE
    header = data[:pos]
    raw_index = metadata.get(INDEX_KEY)
    if raw_index is None:
        return None
    try:
        index = json.loads(raw_index)
        if index.get("version") != INDEX_VERSION:
            return None
        partitions = [bytes.fromhex(p) for p in index["partitions"]]
        infos = tuple(BlockInfo(int(c), int(lo), int(hi), tuple(partitions[i] for i in parts))
                      for c, lo, hi, parts in index["blocks"])
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    spans = []
    for info in infos:
        if pos >= len(data):
            return None
        start = pos
        count, pos = _varint(data, pos)
        size, pos = _varint(data, pos)
        pos += size + _SYNC_SIZE
        if count != info.count or pos > len(data):
            return None
        spans.append((start, pos))
    if pos != len(data):
        return None
    return Blocks(header=header, metadata=metadata, infos=infos, spans=tuple(spans))


def read_selected(data: bytes, blocks: Blocks, wanted: Callable[[BlockInfo], bool]) -> Iterable[dict[str, Any]]:
    """The records of the blocks whose index entry ``wanted`` accepts, decoded as one container
    made of the file's header and those blocks."""
    chosen = [data[start:end] for info, (start, end) in zip(blocks.infos, blocks.spans, strict=True) if wanted(info)]
    if not chosen:
        return []
    # every metadata schema is a record, so every datum is a dict (fastavro types any datum)
    return cast(Iterable[dict[str, Any]], fastavro.reader(io.BytesIO(blocks.header + b"".join(chosen))))


def _zigzag(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _avro_bytes(value: bytes) -> bytes:
    return _zigzag(len(value)) + value


def assemble(metadata: dict[str, bytes], blocks: Sequence[RawBlock]) -> bytes:
    """A container of ``blocks`` (copied as they are, so all written with the schema and codec
    that ``metadata`` names) with a new sync marker and the index of those blocks."""
    import os

    partitions: dict[bytes, int] = {}
    index_blocks = [[b.info.count, b.info.min_bucket, b.info.max_bucket,
                     sorted({partitions.setdefault(p, len(partitions)) for p in b.info.partitions})] for b in blocks]
    index = {"version": INDEX_VERSION, "partitions": [p.hex() for p in partitions], "blocks": index_blocks}
    meta = {k: v for k, v in metadata.items() if k != INDEX_KEY}
    meta[INDEX_KEY] = json.dumps(index, separators=(",", ":")).encode()
    sync = os.urandom(_SYNC_SIZE)
    out = [_MAGIC, _zigzag(len(meta))]
    for key, value in meta.items():
        out += [_avro_bytes(key.encode()), _avro_bytes(value)]
    out += [_zigzag(0), sync]
    for b in blocks:
        out += [b.body, sync]
    return b"".join(out)


def raw_blocks(data: bytes, blocks: Blocks) -> list[RawBlock]:
    """Every block of a parsed container, as it is stored."""
    return [RawBlock(info, blocks.body(data, i)) for i, info in enumerate(blocks.infos)]
