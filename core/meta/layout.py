"""Where everything of a table lives: the one owner of every path under the table root.

    <table>/schema/schema-N                       schemas          (meta.schema_manager)
    <table>/snapshot/snapshot-N, LATEST, EARLIEST  snapshots        (meta.snapshots)
    <table>/tag/tag-<name>                        tags             (meta.tags)
    <table>/changelog/changelog-N                 long-lived changelogs (meta.changelogs)
    <table>/consumer/consumer-<id>                consumers        (meta.consumers)
    <table>/manifest/...                          manifests, manifest lists, index manifests
    <table>/index/...                             deletion vectors, hash indexes
    <table>/statistics/...                        table statistics
    <table>/[<dir>/]<k=v/...>/bucket-<n>/...      data and changelog files (``<dir>``: the option
                                                  ``data-file.path-directory``; ``bucket-postpone``
                                                  for the postpone bucket -2)
    <table>/branch/branch-<name>/...              a branch's schema, snapshot, tag, consumer folders
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..data.partition import partition_path
from ..fs import join
from ..names import validate_name
from ..options.core import CoreOptions

if TYPE_CHECKING:
    from .schema import TableSchema

MAIN_BRANCH = "main"
BRANCH_DIR, BRANCH_PREFIX = "branch", "branch-"


def branch_root(table_path: str, branch: str = MAIN_BRANCH) -> str:
    """Where a branch keeps its snapshots, tags and consumers: the table itself for ``main``,
    else ``<table>/branch/branch-<name>``."""
    if branch == MAIN_BRANCH:
        return table_path
    return join(table_path, BRANCH_DIR, f"{BRANCH_PREFIX}{validate_name('branch', branch)}")


POSTPONE_BUCKET = -2
BUCKET_PREFIX = "bucket-"


def bucket_name(bucket: int) -> str:
    """``bucket-<n>``, and ``bucket-postpone`` for Paimon's postpone bucket (-2)."""
    return f"{BUCKET_PREFIX}postpone" if bucket == POSTPONE_BUCKET else f"{BUCKET_PREFIX}{bucket}"


def data_root(table_path: str, options: CoreOptions) -> str:
    """Where partition and bucket directories start: the table, or ``data-file.path-directory``
    under it (the capability gate refuses a directory outside the table)."""
    directory = options.data_file_path_directory
    if not directory:
        return table_path
    parts = [p for p in directory.strip().strip("/").split("/") if p not in ("", ".")]
    return join(table_path, *parts) if parts else table_path


def bucket_directory(table_path: str, schema: TableSchema, options: CoreOptions,
                     partition: tuple[object, ...], bucket: int) -> str:
    """``<table>/[<path directory>/]<k=v/...>/bucket-<n>``."""
    root = data_root(table_path, options)
    if schema.partition_keys:
        arrow_schema = schema.arrow_schema()
        types = [arrow_schema.field(k).type for k in schema.partition_keys]
        rel = partition_path(list(schema.partition_keys), list(partition), types, options.partition_default_name,
                             legacy=options.partition_legacy_name)
        return join(root, rel, bucket_name(bucket))
    return join(root, bucket_name(bucket))


# -- external data paths (data-file.external-paths) ------------------------------------------------

EXTERNAL_STRATEGIES = ("none", "specific-fs", "round-robin", "entropy-inject", "weight-robin")


class ExternalPaths:
    """Where new data files go when ``data-file.external-paths`` names roots outside the table:
    ``<root>/<relative bucket path>/<file>`` (the relative bucket path is the bucket directory
    below the table: ``[<path directory>/]<k=v/...>/bucket-<n>``), the root chosen per file by
    ``data-file.external-paths.strategy`` as Paimon's writers choose it: ``round-robin`` (and
    ``specific-fs``, over the roots of that scheme) in turn from a random start,
    ``entropy-inject`` in turn with three hash directories of the file name before it,
    ``weight-robin`` at random by ``data-file.external-paths.weights``. A file's full path is its
    ``external_path`` in the manifest, which every reader and deleter follows."""

    def __init__(self, roots: list[str], strategy: str, weights: list[int] | None) -> None:
        import random

        self.roots, self.strategy, self.weights = roots, strategy, weights
        self._position = random.randrange(len(roots))

    @classmethod
    def of(cls, raw: Mapping[str, str]) -> ExternalPaths | None:
        """The external paths of a table's raw options; None when files stay in the table (no
        paths, or strategy ``none``, Paimon's default). Raises :class:`InvalidOptionError` for
        options Paimon refuses too (a path without a scheme, no root of the specific scheme...)."""
        from ..errors import InvalidOptionError
        from ..fs import scheme_of

        text = (raw.get("data-file.external-paths") or "").strip()
        strategy = (raw.get("data-file.external-paths.strategy") or "none").strip().lower()
        if strategy not in EXTERNAL_STRATEGIES:
            raise InvalidOptionError("data-file.external-paths.strategy", strategy,
                                     f"expected one of {', '.join(EXTERNAL_STRATEGIES)}")
        if not text or strategy == "none":
            return None
        roots = [p.strip() for p in text.split(",") if p.strip()]
        for root in roots:
            if not scheme_of(root):
                raise InvalidOptionError("data-file.external-paths", text, f"{root!r} has no scheme (file://, s3://...)")
        if strategy == "specific-fs":
            wanted = (raw.get("data-file.external-paths.specific-fs") or "").strip().lower()
            if not wanted:
                raise InvalidOptionError("data-file.external-paths.specific-fs", "",
                                         "the specific-fs strategy needs the scheme to write to")
            roots = [r for r in roots if scheme_of(r) == wanted]
        if not roots:
            raise InvalidOptionError("data-file.external-paths", text, "no external path to write to")
        weights = None
        if strategy == "weight-robin" and len(roots) > 1 and (raw.get("data-file.external-paths.weights") or "").strip():
            weight_text = raw["data-file.external-paths.weights"]
            try:
                weights = [int(w) for w in weight_text.split(",")]
            except ValueError:
                weights = []
            if len(weights) != len(roots) or min(weights) <= 0:
                raise InvalidOptionError("data-file.external-paths.weights", weight_text,
                                         f"expected {len(roots)} positive integers, one per external path")
        return cls(roots, strategy, weights)

    def path(self, relative_bucket_path: str, file_name: str) -> str:
        """The full path of a new file ``file_name`` of the bucket at ``relative_bucket_path``."""
        relative = relative_bucket_path.strip("/")
        if self.strategy == "weight-robin" and self.weights:
            import bisect
            import itertools
            import random

            cumulative = list(itertools.accumulate(self.weights))
            root = self.roots[min(bisect.bisect_right(cumulative, random.random() * cumulative[-1]),
                                  len(self.roots) - 1)]
        else:
            self._position = (self._position + 1) % len(self.roots)
            root = self.roots[self._position]
        if self.strategy == "entropy-inject":
            relative = join(relative, _entropy_directories(file_name)) if relative else _entropy_directories(file_name)
        return join(root.rstrip("/"), relative, file_name) if relative else join(root.rstrip("/"), file_name)


def _entropy_directories(file_name: str) -> str:
    """Paimon's entropy directories of a file name: the low 20 bits of its murmur3_32 (Guava's,
    seed 0) with the top bit forced, as three 4-bit directories and the 8 bits left."""
    bits = format((_murmur3_32(file_name.encode()) & 0xFFFFFFFF) | 0x80000000, "032b")[-20:]
    return "/".join([bits[0:4], bits[4:8], bits[8:12], bits[12:]])


def _murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data`` (one file name at a time: not a data path)."""
    mask = 0xFFFFFFFF
    h = seed & mask
    c1, c2 = 0xCC9E2D51, 0x1B873593

    def mix(k: int) -> int:
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        return (k * c2) & mask

    end = len(data) & ~3
    for i in range(0, end, 4):
        h ^= mix(int.from_bytes(data[i:i + 4], "little"))
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[end:]
    if tail:
        h ^= mix(int.from_bytes(tail, "little"))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    return h ^ (h >> 16)


def relative_bucket_path(schema: TableSchema, options: CoreOptions, partition: tuple[object, ...], bucket: int) -> str:
    """The bucket directory below the table: ``[<path directory>/]<k=v/...>/bucket-<n>``."""
    return bucket_directory("", schema, options, partition, bucket).lstrip("/")
