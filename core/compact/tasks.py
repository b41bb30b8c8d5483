"""How a picked compaction unit is carried out: which files are merged and which only change level.

Mirrors Paimon's ``MergeTreeCompactTask`` (with ``IntervalPartition``), ``FileRewriteCompactTask``
and the ``dropDelete`` rule of ``MergeTreeCompactManager.triggerCompaction``. The result is a
:class:`CompactTaskPlan`, a pure description; reading, merging and writing files is the caller's.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..meta.manifest import DataFileMeta
from .levels import KeyOf, KeyRange, Levels, SortedRun
from .universal import CompactUnit

Section = tuple[SortedRun, ...]
"""Sorted runs whose files' key ranges chain into one interval; different sections never overlap."""


def interval_partition(files: Sequence[DataFileMeta], key_of: KeyOf) -> tuple[Section, ...]:
    """Paimon's ``IntervalPartition.partition``: split files into sections, each into few sorted runs.

    Files are sorted by ``(min key, max key)``; a new section starts at a file whose min key is
    greater than the largest max key of the current section (touching ranges, ``min == max``, stay
    together). Inside a section, files are dealt greedily to the run whose last max key is smallest
    if the file's min key is greater than it, else to a new run: the fewest sorted runs possible.
    Sections come in key order; runs inside a section in creation order (Paimon leaves that order
    unspecified, and any tie between equal max keys may be broken differently, with the same number
    of runs).
    """
    keyed = sorted(((key_of(f), f) for f in files), key=lambda kf: (kf[0][0], kf[0][1]))
    sections: list[Section] = []
    current: list[tuple[KeyRange, DataFileMeta]] = []
    bound: Any = None
    for key_range, file in keyed:
        if current and key_range[0] > bound:
            sections.append(_partition_section(current))
            current = []
        if not current or key_range[1] > bound:
            bound = key_range[1]
        current.append((key_range, file))
    if current:
        sections.append(_partition_section(current))
    return tuple(sections)


def _partition_section(keyed: list[tuple[KeyRange, DataFileMeta]]) -> Section:
    runs: list[list[DataFileMeta]] = [[keyed[0][1]]]
    heap: list[tuple[Any, int]] = [(keyed[0][0][1], 0)]  # (max key of the run's last file, run index)
    for (min_key, max_key), file in keyed[1:]:
        last_max, index = heap[0]
        if min_key > last_max:
            runs[index].append(file)
            heapq.heapreplace(heap, (max_key, index))
        else:
            runs.append([file])
            heapq.heappush(heap, (max_key, len(runs) - 1))
    return tuple(SortedRun(tuple(run)) for run in runs)


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteStep:
    """Merge these sections into new files on the task's output level (``CompactRewriter.rewrite``).

    Sections do not overlap each other; the runs of one section are merge-sorted together.
    """

    sections: tuple[Section, ...]

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        return tuple(f for section in self.sections for run in section for f in run.files)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpgradeStep:
    """Move ``file`` to the task's output level without rewriting it (``CompactRewriter.upgrade``).

    In the commit: DELETE of the file at its old level and ADD of the same file at the new level.
    """

    file: DataFileMeta


CompactStep = RewriteStep | UpgradeStep


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactTaskPlan:
    """What one compaction task does, in order.

    Every input file appears exactly once: in a :class:`RewriteStep`, in an :class:`UpgradeStep`,
    or in ``unchanged`` (a large file already on the output level, left as it is).
    """

    output_level: int
    drop_delete: bool
    steps: tuple[CompactStep, ...]
    unchanged: tuple[DataFileMeta, ...] = ()

    @property
    def rewritten_files(self) -> tuple[DataFileMeta, ...]:
        return tuple(f for step in self.steps if isinstance(step, RewriteStep) for f in step.files)

    @property
    def upgraded_files(self) -> tuple[DataFileMeta, ...]:
        return tuple(step.file for step in self.steps if isinstance(step, UpgradeStep))


def may_drop_delete(
    output_level: int,
    levels: Levels,
    *,
    force_keep_delete: bool = False,
    deletion_vectors: bool = False,
) -> bool:
    """Whether the compaction output may drop retractions (``MergeTreeCompactManager.triggerCompaction``).

    ``not force_keep_delete and output_level != 0 and (output_level >= levels.non_empty_highest_level()
    or deletion_vectors)``: with output on level 0 older data may sit outside the unit; with output
    on the highest non-empty level (``levels`` as they are when the unit is picked, the unit's files
    included) nothing older exists, so a delete has nothing left to retract. Paimon keeps deletes
    (``force_keep_delete``) for chain tables.
    """
    return (
        not force_keep_delete
        and output_level != 0
        and (output_level >= levels.non_empty_highest_level() or deletion_vectors)
    )


def plan_compact_task(
    unit: CompactUnit,
    *,
    key_of: KeyOf,
    compaction_file_size: int,
    max_level: int,
    drop_delete: bool,
    force_rewrite_all_files: bool = False,
    has_expired_records: Callable[[DataFileMeta], bool] | None = None,
) -> CompactTaskPlan:
    """Split ``unit`` into rewrites and upgrades exactly as Paimon's compaction tasks do.

    A ``file_rewrite`` unit (``FileRewriteCompactTask``) rewrites each file on its own. Otherwise
    (``MergeTreeCompactTask``) the files are split by :func:`interval_partition` and the sections
    walked in key order, accumulating *candidates*:

    - a section of several sorted runs (overlapping files) becomes a candidate;
    - in a single-run section, a file smaller than ``compaction_file_size``
      (``target-file-size × compaction.small-file-ratio``) becomes a candidate on its own; a larger
      file first flushes the candidates, then is upgraded.

    Flushing candidates rewrites them together, except that a lone candidate of one run is
    upgraded file by file (nothing to merge). Upgrading a file rewrites it instead when the output
    is ``max_level`` and the file may hold deletes (``delete_row_count`` > 0 or unknown), with
    ``force_rewrite_all_files``, or when ``has_expired_records(file)`` (record-level TTL); a file
    already on the output level is left unchanged. Candidates left at the end are flushed.
    """
    output_level = unit.output_level
    if unit.file_rewrite:
        steps = tuple(RewriteStep(sections=((SortedRun((f,)),),)) for f in unit.files)
        return CompactTaskPlan(output_level=output_level, drop_delete=drop_delete, steps=steps)

    steps_out: list[CompactStep] = []
    unchanged: list[DataFileMeta] = []

    def upgrade(file: DataFileMeta) -> None:
        may_hold_deletes = file.delete_row_count is None or file.delete_row_count > 0
        if (
            (output_level == max_level and may_hold_deletes)
            or force_rewrite_all_files
            or (has_expired_records is not None and has_expired_records(file))
        ):
            steps_out.append(RewriteStep(sections=((SortedRun((file,)),),)))
        elif file.level != output_level:
            steps_out.append(UpgradeStep(file=file))
        else:
            unchanged.append(file)

    def flush(candidates: list[Section]) -> None:
        if not candidates:
            return
        if len(candidates) == 1 and len(candidates[0]) <= 1:
            for run in candidates[0]:
                for file in run.files:
                    upgrade(file)
        else:
            steps_out.append(RewriteStep(sections=tuple(candidates)))
        candidates.clear()

    candidates: list[Section] = []
    for section in interval_partition(unit.files, key_of):
        if len(section) > 1:
            candidates.append(section)
            continue
        for file in section[0].files:
            if file.file_size < compaction_file_size:
                candidates.append((SortedRun((file,)),))
            else:
                flush(candidates)
                upgrade(file)
    flush(candidates)
    return CompactTaskPlan(
        output_level=output_level, drop_delete=drop_delete, steps=tuple(steps_out), unchanged=tuple(unchanged)
    )
