"""Compaction of append tables: concatenate small files of a bucket (or a partition) into
target-sized ones, in sequence order, committed as a COMPACT snapshot.

Which files: :mod:`paimonflow.core.compact.append` (Paimon's bucketed sliding window and full
pick, and the unaware-bucket bin packing). This module reads and rewrites them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..maintenance.context import TableOps
from ..meta.manifest import DataFileMeta
from ..read.scan import Split, SplitReader
from ..write.row_ids import RowTrackingSettings
from . import AppendCompactionOptions, pick_bucketed_full, pick_bucketed_minor, sequence_order
from .merge_tree import BucketCompaction
from .row_tracking import contiguous_runs, rewrite_keeping_row_ids


class AppendCompactor:
    """Rewrites chosen files of one append table with one reader and one writer."""

    def __init__(self, table: TableOps, *, reader: SplitReader | None = None, writer=None) -> None:
        self._table = table
        self._reader = reader if reader is not None else table.split_reader()
        self._writer = writer if writer is not None else table.new_write()
        self.settings = AppendCompactionOptions.from_options(table.schema.options)
        self._row_tracking = RowTrackingSettings.from_options(table.schema.options).enabled

    def sorted_runs(self, files: Sequence[DataFileMeta]) -> int:
        return 0  # append files are never merged: no back-pressure

    def compact(self, partition: tuple[object, ...], bucket: int, total_buckets: int,
                files: Sequence[DataFileMeta], *, full: bool, vectors=None) -> BucketCompaction | None:
        """A bucketed table's pick for one bucket (sliding window, or full), rewritten.
        (Append tables with deletion vectors are not supported; ``vectors`` is always None.)"""
        s = self.settings
        if full:
            picked = pick_bucketed_full(files, compaction_file_size=s.compaction_file_size,
                                        force=s.force_rewrite_all_files)
        else:
            picked = pick_bucketed_minor(files, min_file_num=s.min_file_num, target_file_size=s.target_file_size)
        if not picked or (len(picked) < 2 and not s.force_rewrite_all_files):
            return None
        return self.rewrite(partition, bucket, total_buckets, picked)

    def rewrite(self, partition: tuple[object, ...], bucket: int, total_buckets: int,
                files: Sequence[DataFileMeta]) -> BucketCompaction | None:
        """Concatenate ``files`` in sequence order into new level-0 files (row-tracking tables:
        :mod:`paimonflow.core.compact.row_tracking`; None when no files can be rewritten)."""
        ordered = tuple(sequence_order(files))
        split = Split(partition=partition, bucket=bucket, total_buckets=total_buckets, files=ordered)
        if self._row_tracking:  # runs of files whose row ids follow on, each rewritten keeping them
            runs = [run for run in contiguous_runs(ordered) if len(run) > 1]
            if not runs:
                return None
            after_tracked = tuple(f for run in runs for f in rewrite_keeping_row_ids(
                self._reader, self._writer, dataclasses.replace(split, files=tuple(run)),
                self._table.schema.field_names, table=self._table.identifier))
            return BucketCompaction(before=tuple(f for run in runs for f in run), after=after_tracked,
                                    changelog=(), output_level=0)
        values = self._reader.read_split(split).combine_chunks()
        first = ordered[0].min_sequence_number
        sequence = np.arange(first, first + values.num_rows, dtype=np.int64)
        after = self._writer.write_rewritten(partition, bucket, values, np.zeros(values.num_rows, np.int8), sequence,
                                             level=0)
        return BucketCompaction(before=ordered, after=tuple(after), changelog=(), output_level=0)
