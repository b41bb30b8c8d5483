"""Compaction: which files to rewrite (the pickers, pure) and rewriting them: one primary-key bucket
(:mod:`.merge_tree`), append tables (:mod:`.append_rewrite`), the dedicated full compaction job
(:mod:`.dedicated`) and the postpone compaction of ``bucket = -2`` tables (:mod:`.postpone`).

The pickers: merge-tree levels, Paimon's universal picking, and task planning, as
pure functions over :class:`~paimonflow.core.meta.manifest.DataFileMeta` that read or write no
files. The flow for one bucket, as in Paimon's ``MergeTreeCompactManager``::

    levels = Levels.from_files(files, num_levels=options.num_levels, key_of=key_of)
    unit = pick(levels.num_levels, levels.sorted_runs(), options)          # or pick_full_compaction
    if unit is not None and not unit.is_trivial:
        plan = plan_compact_task(unit, key_of=key_of, compaction_file_size=options.compaction_file_size,
                                 max_level=levels.max_level,
                                 drop_delete=may_drop_delete(unit.output_level, levels))

Lookup tables (``changelog-producer=lookup``, deletion vectors, ``first-row``) and
``compaction.force-up-level-0`` pick with :func:`pick_force_up_level0` instead of :func:`pick`.

Append tables (:mod:`.append`) pick with :func:`pick_bucketed_minor` / :func:`pick_bucketed_full`
per bucket, or :func:`plan_unaware` per partition of an unaware-bucket table, reading
:class:`AppendCompactionOptions`.
"""

from ..options.compaction import AppendCompactionOptions, CompactionOptions, EarlyFullCompaction, OffPeakHours
from .append import (
    FULL_COMPACT_MIN_FILE_NUM,
    AppendCompactTask,
    pick_bucketed_full,
    pick_bucketed_minor,
    plan_unaware,
    sequence_order,
)
from .levels import KeyOf, KeyRange, Levels, LevelSortedRun, SortedRun, level0_order
from .tasks import (
    CompactStep,
    CompactTaskPlan,
    RewriteStep,
    Section,
    UpgradeStep,
    interval_partition,
    may_drop_delete,
    plan_compact_task,
)
from .universal import (
    CompactUnit,
    ForceUpLevel0Pick,
    create_unit,
    estimate_last_full_compaction_millis,
    force_pick_level0,
    is_full_compaction,
    pick,
    pick_for_size_amplification,
    pick_for_size_ratio,
    pick_force_up_level0,
    pick_full_compaction,
    try_early_full_compaction,
)

__all__ = [
    "FULL_COMPACT_MIN_FILE_NUM",
    "AppendCompactTask",
    "AppendCompactionOptions",
    "CompactStep",
    "CompactTaskPlan",
    "CompactUnit",
    "CompactionOptions",
    "EarlyFullCompaction",
    "ForceUpLevel0Pick",
    "KeyOf",
    "KeyRange",
    "LevelSortedRun",
    "Levels",
    "OffPeakHours",
    "RewriteStep",
    "Section",
    "SortedRun",
    "UpgradeStep",
    "create_unit",
    "estimate_last_full_compaction_millis",
    "force_pick_level0",
    "interval_partition",
    "is_full_compaction",
    "level0_order",
    "may_drop_delete",
    "pick",
    "pick_bucketed_full",
    "pick_bucketed_minor",
    "pick_for_size_amplification",
    "pick_for_size_ratio",
    "pick_force_up_level0",
    "pick_full_compaction",
    "plan_compact_task",
    "plan_unaware",
    "sequence_order",
    "try_early_full_compaction",
]
