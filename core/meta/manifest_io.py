"""The table's view of its manifests: live files of a snapshot, and writing a commit's metadata.

Wraps the Avro codecs of :mod:`paimonflow.core.meta.manifest` with what the committer and the scan
planner need: partition statistics computed from typed partition values, manifest pruning by a
partition predicate, and bookkeeping of the files an attempt wrote (so a lost race can remove
exactly those).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..data.binary_row import deserialize_row, serialize_row
from ..data.conversion import bind_predicate, field_types
from ..errors import FileNotFoundStorageError, SnapshotNotFoundError
from ..fs import FileIO, join
from ..options.core import CoreOptions
from ..predicate import And, ColumnStats, Predicate, col
from .manifest import (
    EntryFilter,
    FileKind,
    ManifestEntry,
    ManifestFile,
    ManifestFileMeta,
    ManifestList,
    SimpleStats,
    merge_entries,
    merge_manifests,
)
from .schema import TableSchema
from .snapshots import Snapshot


@dataclass(frozen=True, slots=True)
class DeltaStats:
    """What one commit changed, from its delta manifests."""

    added_rows: int
    added_files: int
    added_bytes: int
    deleted_rows: int
    deleted_files: int
    deleted_bytes: int


class ManifestIO:
    def __init__(self, *, file_io: FileIO, table_path: str, schema: TableSchema, options: CoreOptions) -> None:
        self._file_io, self._path, self._schema, self._options = file_io, table_path, schema, options
        arrow = schema.arrow_schema()
        self._partition_keys = list(schema.partition_keys)
        self._partition_types = [arrow.field(k).type for k in self._partition_keys]
        self.manifest_dir = join(table_path, "manifest")
        self._files = ManifestFile(file_io, self.manifest_dir, compression=options.manifest_compression,
                                   target_file_size=options.manifest_target_file_size,
                                   partition_stats=self.partition_stats)
        self._lists = ManifestList(file_io, self.manifest_dir, compression=options.manifest_compression)

    # -- partition statistics ----------------------------------------------------------------

    def partition_stats(self, partitions: Sequence[bytes]) -> SimpleStats:
        """Min, max and null counts over serialized partition rows (Paimon's ``_PARTITION_STATS``)."""
        arity = len(self._partition_types)
        if not partitions or arity == 0:
            empty = serialize_row([], [])
            return SimpleStats(min_values=empty, max_values=empty, null_counts=() if arity == 0 else None)
        rows = [deserialize_row(p, self._partition_types) for p in set(partitions)]
        mins, maxs, nulls = [], [], []
        for i in range(arity):
            values: list[Any] = [r[i] for r in rows if r[i] is not None]  # one type: comparable
            nulls.append(sum(1 for r in rows if r[i] is None))
            mins.append(min(values) if values else None)
            maxs.append(max(values) if values else None)
        return SimpleStats(min_values=serialize_row(mins, self._partition_types),
                           max_values=serialize_row(maxs, self._partition_types), null_counts=tuple(nulls))

    def _manifest_might_match(self, meta: ManifestFileMeta, predicate: Predicate | None) -> bool:
        if predicate is None or not self._partition_keys:
            return True
        pruning = predicate.only_on(set(self._partition_keys))
        if pruning is None:
            return True
        try:
            lows = deserialize_row(meta.partition_stats.min_values, self._partition_types)
            highs = deserialize_row(meta.partition_stats.max_values, self._partition_types)
        except Exception:
            return True
        nulls = meta.partition_stats.null_counts or [None] * len(lows)
        stats = {k: ColumnStats(lo, hi, n, None) for k, lo, hi, n in zip(self._partition_keys, lows, highs, nulls, strict=False)}
        return pruning.might_match(stats)

    # -- reading -----------------------------------------------------------------------------

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """Base + delta manifests of ``snapshot`` (the complete description of its data files)."""
        return [*self._lists.read(snapshot.base_manifest_list), *self._lists.read(snapshot.delta_manifest_list)]

    def manifest_list(self, name: str) -> list[ManifestFileMeta]:
        """The manifests a manifest list names."""
        return self._lists.read(name)

    def manifest_entries(self, file_name: str) -> list[ManifestEntry]:
        """The entries of one manifest file."""
        return self._files.read(file_name)

    def delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The entries (ADD and DELETE) of ``snapshot``'s delta: what its commit changed."""
        return [e for m in self._lists.read(snapshot.delta_manifest_list) for e in self._files.read(m.file_name)]

    def delta_stats(self, snapshot: Snapshot) -> DeltaStats:
        """Rows, files and bytes ``snapshot``'s commit added and removed (its delta's entries): the
        same whichever engine committed it."""
        totals = {FileKind.ADD: [0, 0, 0], FileKind.DELETE: [0, 0, 0]}
        for e in self.delta_entries(snapshot):
            counts = totals[e.kind]
            counts[0] += e.file.row_count
            counts[1] += 1
            counts[2] += e.file.file_size
        return DeltaStats(*totals[FileKind.ADD], *totals[FileKind.DELETE])

    def changelog_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The changelog files a snapshot added (empty without a changelog producer)."""
        if not snapshot.changelog_manifest_list:
            return []
        return [e for m in self._lists.read(snapshot.changelog_manifest_list) for e in self._files.read(m.file_name)]

    def live_entries(self, snapshot: Snapshot, *, partition_filter: Predicate | None = None,
                     partitions: Collection[bytes] | None = None,
                     buckets: Mapping[bytes, Collection[int] | None] | None = None) -> list[ManifestEntry]:
        """ADD entries of every file live in ``snapshot`` (ADD/DELETE pairs cancelled).

        ``partition_filter`` keeps the files of partitions it may match, ``partitions``
        (serialized) the files of those partitions, and ``buckets`` (serialized partition ->
        bucket ids) only the files of those buckets. Each prunes
        first by each manifest's partition statistics and bucket range, then by the block index
        inside the manifest, so the cost follows the entries read, not the table's size."""
        try:
            metas = self.data_manifests(snapshot)
        except FileNotFoundStorageError as exc:
            raise SnapshotNotFoundError(
                f"snapshot {snapshot.id} references a manifest list that no longer exists (expired?): {exc}"
            ) from exc
        if partition_filter is not None:  # its values as exact values of the partition columns' types
            partition_filter = bind_predicate(partition_filter, self._schema.arrow_schema(),
                                              field_types(self._schema.fields))
        if partitions is not None:
            buckets = dict.fromkeys(partitions)  # every bucket of each
        wanted = self.entry_filter(partition_filter, buckets)
        exact = {p: self._partition_equals(p) for p in buckets} if buckets is not None else {}
        entries: list[ManifestEntry] = []
        for meta in metas:
            if not self._manifest_might_match(meta, partition_filter):
                continue
            if wanted is not None and wanted.buckets is not None and not any(
                    wanted.holds(p, meta.min_bucket, meta.max_bucket) and self._manifest_might_match(meta, equals)
                    for p, equals in exact.items()):
                continue  # none of the wanted (partition, bucket)s can be in this manifest
            entries.extend(self._files.read(meta.file_name, wanted))
        live, _ = merge_entries(entries)
        return live

    def entry_filter(self, partition_filter: Predicate | None,
                     buckets: Mapping[bytes, Collection[int] | None] | None) -> EntryFilter | None:
        """The :class:`~paimonflow.core.meta.manifest.EntryFilter` of a bound partition predicate
        and/or a set of (partition, bucket)s (a partition's None: all its buckets; None: every entry)."""
        pruning = None
        if partition_filter is not None and self._partition_keys:
            pruning = partition_filter.only_on(set(self._partition_keys))
        if pruning is None and buckets is None:
            return None
        accepts = None
        if pruning is not None:
            keys, types = self._partition_keys, self._partition_types
            known: dict[bytes, bool] = {}

            def accepts(partition: bytes) -> bool:
                verdict = known.get(partition)
                if verdict is None:
                    values = deserialize_row(partition, types)
                    verdict = known[partition] = pruning.might_match({
                        k: ColumnStats(v, v, int(v is None), 1) for k, v in zip(keys, values, strict=True)})
                return verdict

        frozen = None if buckets is None else {p: None if b is None else frozenset(b) for p, b in buckets.items()}
        return EntryFilter(buckets=frozen, partition=accepts)

    def _partition_equals(self, partition: bytes) -> Predicate | None:
        """The predicate "the partition columns hold exactly these values", to prune manifests
        with :meth:`_manifest_might_match` (None: a partition that cannot be decoded prunes nothing)."""
        if not self._partition_keys:
            return None
        try:
            values = deserialize_row(partition, self._partition_types)
        except Exception:
            return None
        parts = [col(k).is_null() if v is None else col(k) == v for k, v in zip(self._partition_keys, values, strict=True)]
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    # -- writing -----------------------------------------------------------------------------

    def write_manifests(self, entries: Sequence[ManifestEntry], schema_id: int, written: list[str]) -> list[ManifestFileMeta]:
        if not entries:
            return []
        metas = self._files.write(list(entries), schema_id=schema_id)
        written.extend(m.file_name for m in metas)
        return metas

    def write_list(self, metas: Sequence[ManifestFileMeta], written: list[str]) -> tuple[str, int]:
        name, size = self._lists.write(list(metas))
        written.append(name)
        return name, size

    def merge(self, metas: Sequence[ManifestFileMeta], written: list[str]) -> list[ManifestFileMeta]:
        merged, new_files = merge_manifests(
            list(metas), self._files, schema_id=self._schema.id,
            target_file_size=self._options.manifest_target_file_size,
            merge_min_count=self._options.manifest_merge_min_count,
            full_compaction_size=self._options.manifest_full_compaction_size,
        )
        written.extend(new_files)
        return merged

    def delete_files(self, names: Sequence[str]) -> None:
        """Best-effort removal of metadata files this process wrote and nothing references."""
        for name in names:
            with contextlib.suppress(Exception):
                self._file_io.delete(join(self.manifest_dir, name))

    def delete_data_files(self, messages) -> None:
        """Best-effort removal of data files of messages that were certainly not committed."""
        from .layout import bucket_directory

        for m in messages:
            directory = bucket_directory(self._path, self._schema, self._options, m.partition, m.bucket)
            for f in m.all_written_files():
                with contextlib.suppress(Exception):
                    self._file_io.delete(f.external_path or join(directory, f.file_name))
            for f in (*getattr(m, "new_index_files", ()), *getattr(m, "compact_index_added", ())):
                with contextlib.suppress(Exception):
                    self._file_io.delete(f.external_path or join(self._path, "index", f.file_name))
