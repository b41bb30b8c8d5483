"""Writes to a postpone-bucket table (``bucket = -2``), as Paimon's ``PostponeBucketFileStoreWrite``.

A primary-key table with ``bucket = -2`` decides no bucket when it is written: every row goes to
the partition's postpone bucket (directory ``bucket-postpone``, bucket -2 and ``totalBuckets`` -2
in the manifest entry), unsorted and unmerged, in arrival order, as level-0 files that no batch
read sees. A postpone compaction (:mod:`paimonflow.core.compact.postpone`) later replays them, file
by file in creation order, into real buckets. So that the replay keeps each writer's order, the
files of one writer share a name prefix ``<data-file.prefix>-u-<commit user>-s-<writer id>-w-`` (``data--u-...``
with the default prefix, as Paimon formats it);
they are Avro files without value statistics (``file.format=avro``,
``metadata.stats-mode=none``), and every row has sequence number -1 (Paimon's unknown sequence:
order across files comes from the replay, not from sequence numbers). Nothing is compacted and no
changelog is produced at write time.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..data.avro_data import avro_schema
from ..errors import InvalidOptionError, UnsupportedError
from ..meta.layout import POSTPONE_BUCKET
from ..options.core import CoreOptions

if TYPE_CHECKING:
    import pyarrow as pa

#: The sequence number of every row in a postpone file (Paimon's ``KeyValue.UNKNOWN_SEQUENCE``).
POSTPONE_SEQUENCE = -1

_WRITER_ID_BOUND = 2**31 - 1  # Paimon's writer id: a non-negative Java int


def is_postpone(options: CoreOptions) -> bool:
    """Whether ``options`` are a postpone-bucket table's."""
    return options.bucket == POSTPONE_BUCKET


def postpone_write_options(options: CoreOptions, arrow_schema: pa.Schema, *, commit_user: str | None,
                           writer_id: int | None = None) -> CoreOptions:
    """The options a postpone writer writes its files with: Avro files without value statistics
    (the table's own format when Avro cannot hold a column type, as in Paimon), named
    ``<data-file.prefix>-u-<commit_user>-s-<writer_id>-w-...`` (``commit_user`` None: a random
    one; ``writer_id`` None: a random non-negative int, as Paimon's writers pick)."""
    user = commit_user if commit_user is not None else str(uuid.uuid4())
    ident = random.randrange(_WRITER_ID_BOUND) if writer_id is None else writer_id
    if not 0 <= ident < _WRITER_ID_BOUND:
        raise InvalidOptionError("postpone writer id", str(ident), "must be a non-negative 32-bit integer")
    raw = dict(options.raw)
    try:
        avro_schema(arrow_schema)
    except UnsupportedError:
        pass  # Paimon keeps the table's format and statistics then
    else:
        raw["file.format"] = "avro"
        raw["metadata.stats-mode"] = "none"
    raw["data-file.prefix"] = f"{options.data_file_prefix}-u-{user}-s-{ident}-w-"
    return CoreOptions.from_map(raw)


def writer_prefix(file_name: str) -> str:
    """The name prefix the files of one postpone writer share (through the last ``-w-``);
    raises InvalidArgumentError for a name no postpone writer made."""
    from ..errors import InvalidArgumentError

    cut = file_name.rfind("-w-")
    if cut < 0 or "-s-" not in file_name[:cut]:
        raise InvalidArgumentError(f"data file {file_name!r} is not named as a postpone writer names its files")
    return file_name[:cut + 3]


def real_bucket_options(options: CoreOptions, buckets: int) -> CoreOptions:
    """The options a postpone compaction writes real buckets with: ``buckets`` fixed buckets, and
    compaction on (Paimon's rewrite table sets ``write-only=false``)."""
    if buckets < 1:
        raise InvalidOptionError("bucket", str(buckets), "a postpone compaction needs a positive bucket count")
    return CoreOptions.from_map({**options.raw, "bucket": str(buckets), "write-only": "false"})


def validate_retraction(table: pa.Table, kinds: np.ndarray, *, primary_keys: Sequence[str], spec,
                        partition_keys: Sequence[str]) -> None:
    """Raise the merge engine's DataError now if it cannot take the retractions (-U/-D) in
    ``table``: a postpone writer merges nothing, so without this a retraction the engine refuses
    would only fail the compaction (Paimon's ``PostponeBucketWriter.validateRetract``). The first
    retraction is merged alone through ``spec`` (a MergeSpec; None: deduplicate takes any)."""
    if spec is None:
        return
    retracting = np.flatnonzero((kinds == 1) | (kinds == 3))
    if retracting.size == 0:
        return
    from ..data import data_file as df
    from ..merge import merge

    first = int(retracting[0])
    row = df.with_system_columns(table.slice(first, 1), np.full(1, POSTPONE_SEQUENCE, np.int64), kinds[first:first + 1])
    merge(row, list(primary_keys), spec, partition_columns=list(partition_keys))
