"""Which files of an append table to compact, exactly as Paimon picks them.

Pure functions over :class:`~paimonflow.core.meta.manifest.DataFileMeta`; nothing here reads or writes
files. Append tables have no keys and no levels: compaction concatenates small files into
target-sized ones.

* Bucketed tables (``bucket > 0``) compact per bucket, as Paimon's
  ``append.BucketedAppendCompactManager``: :func:`pick_bucketed_minor` is the writer's best-effort
  pick (``pickCompactBefore``), :func:`pick_bucketed_full` a full compaction (``FullCompactTask``).
* Unaware-bucket tables (``bucket = -1``) compact per partition, as Paimon's
  ``append.AppendCompactCoordinator`` planning one scan of a batch job: :func:`plan_unaware`.

Thresholds come from :class:`~paimonflow.core.options.compaction.AppendCompactionOptions`::

    settings = AppendCompactionOptions.from_options(table.schema.options)
    picked = pick_bucketed_full(bucket_files, compaction_file_size=settings.compaction_file_size,
                                force=settings.force_rewrite_all_files)
    tasks = plan_unaware(files_by_partition, target_file_size=settings.target_file_size,
                         compaction_file_size=settings.compaction_file_size,
                         open_file_cost=settings.open_file_cost, min_file_num=settings.min_file_num)

Paimon keeps a writer's queue of files between compactions and puts the last output file of a
compaction back into it when that file is still smaller than ``compactionFileSize``; here the
caller owns that state and passes the bucket's current files in.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from ..errors import InvalidArgumentError
from ..meta.manifest import DataFileMeta

FULL_COMPACT_MIN_FILE_NUM = 3
"""Fewest files a bucketed full compaction rewrites, unless forced (Paimon ``FULL_COMPACT_MIN_FILE``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendCompactTask:
    """Files of one partition of an unaware-bucket table to rewrite together (Paimon ``AppendCompactTask``).

    ``partition`` is the serialized partition row, as in
    :attr:`ManifestEntry.partition <paimonflow.core.meta.manifest.ManifestEntry.partition>`; ``files``
    come in ascending size order. Committing the task replaces exactly these files.
    """

    partition: bytes
    files: tuple[DataFileMeta, ...]


def sequence_order(files: Iterable[DataFileMeta]) -> list[DataFileMeta]:
    """Files by ascending ``min_sequence_number``, the order of a bucketed writer's compaction queue.

    Ties keep their input order.
    """
    return sorted(files, key=lambda f: f.min_sequence_number)


def pick_bucketed_minor(
    files: Iterable[DataFileMeta], *, min_file_num: int, target_file_size: int
) -> list[DataFileMeta] | None:
    """The files a bucketed append writer compacts next, or None (``pickCompactBefore``).

    Every file of the bucket is a candidate, whatever its size: Paimon's queue holds all files the
    writer restored plus those it wrote since. Files enter a window in ``min_sequence_number``
    order. As soon as the window holds ``min_file_num`` (``compaction.min.file-num``) files, they
    are the pick, oldest first. Otherwise, when the window's total size reaches
    ``2 × target_file_size``, its oldest file leaves it. So large files usually slide out, but a
    window that reaches ``min_file_num`` files first is picked even if it holds a large file.
    Returns None when the window never fills. The input is not modified.

    Raises :class:`InvalidArgumentError` if ``min_file_num < 1`` or ``target_file_size <= 0``.
    """
    _check_positive(min_file_num=min_file_num, target_file_size=target_file_size)
    window: deque[DataFileMeta] = deque()
    total = 0
    for file in sequence_order(files):
        window.append(file)
        total += file.file_size
        if len(window) >= min_file_num:
            return list(window)
        if total >= 2 * target_file_size:
            total -= window.popleft().file_size
    return None


def pick_bucketed_full(
    files: Iterable[DataFileMeta],
    *,
    compaction_file_size: int,
    force: bool = False,
    deletion_vector_files: Collection[str] | None = None,
) -> list[DataFileMeta] | None:
    """The files a full compaction of one append bucket rewrites, or None (``FullCompactTask``).

    Files are taken in ``min_sequence_number`` order. Without ``force``
    (``compaction.force-rewrite-all-files``):

    * nothing happens when the bucket has fewer than 3 files (deletion vectors off) or none;
    * leading files of at least ``compaction_file_size`` bytes (``target-file-size ×
      compaction.small-file-ratio``) are skipped, unless they have a deletion vector; the first
      file that is small, or has one, ends the skipping and everything from it on is rewritten,
      large files included, so that the output stays in sequence order;
    * deletion vectors off: the rest is rewritten only if it still has at least 3 files and more
      small files than large ones. Deletion vectors on: the rest is always rewritten (it purges
      deleted rows).

    With ``force`` every file is rewritten, even a single one. ``deletion_vector_files`` is None
    for a table without deletion vectors, else the names of the bucket's files that have one.
    Returns the files in sequence order, or None when there is nothing to rewrite.

    Raises :class:`InvalidArgumentError` if ``compaction_file_size < 0``.
    """
    if compaction_file_size < 0:
        raise InvalidArgumentError(f"compaction_file_size must be >= 0, got {compaction_file_size}")
    ordered = sequence_order(files)
    dv_enabled = deletion_vector_files is not None
    if not ordered or (not force and not dv_enabled and len(ordered) < FULL_COMPACT_MIN_FILE_NUM):
        return None
    if force:
        return ordered
    with_dv: Collection[str] = deletion_vector_files or ()
    start = 0
    while (start < len(ordered) and ordered[start].file_size >= compaction_file_size
           and ordered[start].file_name not in with_dv):
        start += 1
    rest = ordered[start:]
    if not rest:
        return None
    if dv_enabled:
        return rest
    small = sum(1 for f in rest if f.file_size < compaction_file_size)
    if small > len(rest) - small and len(rest) >= FULL_COMPACT_MIN_FILE_NUM:
        return rest
    return None


def plan_unaware(
    files_by_partition: Mapping[bytes, Iterable[DataFileMeta]],
    *,
    target_file_size: int,
    compaction_file_size: int,
    open_file_cost: int,
    min_file_num: int,
) -> list[AppendCompactTask]:
    """Compaction tasks for one scan of an unaware-bucket append table (``AppendCompactCoordinator``).

    Per partition, in the mapping's order:

    1. candidates are the files smaller than ``compaction_file_size`` (``target-file-size ×
       compaction.small-file-ratio``); a file listed twice counts once;
    2. candidates are sorted by size (ties keep input order) and added to a bin one by one, each
       weighing ``file_size + open_file_cost`` (``source.split.open-file-cost``);
    3. a bin of more than one file is emitted as a task as soon as its weight reaches
       ``2 × target_file_size``, and a new bin starts;
    4. the last, underfull bin is emitted only if it holds at least ``min_file_num``
       (``compaction.min.file-num``) files; otherwise its files are left as they are.

    Step 4 is also what Paimon's batch jobs do (Spark ``compact`` procedure, Flink batch compact
    action): a batch job plans once, so the coordinator's ageing rule, which compacts whatever a
    streaming coordinator has held for more than 5 fruitless scans, never fires, and too few
    small files stay small (Paimon issue #5130). A caller that wants them merged anyway can pass
    ``min_file_num=2``. Every file lands in at most one task; the input is not modified.

    Raises :class:`InvalidArgumentError` if ``min_file_num < 1``, ``target_file_size <= 0`` or
    ``open_file_cost < 0``.
    """
    _check_positive(min_file_num=min_file_num, target_file_size=target_file_size)
    if open_file_cost < 0:
        raise InvalidArgumentError(f"open_file_cost must be >= 0, got {open_file_cost}")
    tasks: list[AppendCompactTask] = []
    for partition, files in files_by_partition.items():
        candidates = [f for f in dict.fromkeys(files) if f.file_size < compaction_file_size]
        candidates.sort(key=lambda f: f.file_size)
        bin_files: list[DataFileMeta] = []
        weight = 0
        for file in candidates:
            bin_files.append(file)
            weight += file.file_size + open_file_cost
            if len(bin_files) > 1 and weight >= 2 * target_file_size:
                tasks.append(AppendCompactTask(partition=partition, files=tuple(bin_files)))
                bin_files, weight = [], 0
        if bin_files and len(bin_files) >= min_file_num:
            tasks.append(AppendCompactTask(partition=partition, files=tuple(bin_files)))
    return tasks


def _check_positive(*, min_file_num: int, target_file_size: int) -> None:
    if min_file_num < 1:
        raise InvalidArgumentError(f"min_file_num must be >= 1, got {min_file_num}")
    if target_file_size <= 0:
        raise InvalidArgumentError(f"target_file_size must be positive, got {target_file_size}")
