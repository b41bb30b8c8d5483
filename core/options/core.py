"""Table options: Paimon's keys, parsed once into typed settings with Paimon's defaults.

Options a user sets (create table, alter table) are checked strictly: unknown keys and bad
values raise :class:`InvalidOptionError` naming the key. Options read from an existing table
(possibly written by Java Paimon or pypaimon) are parsed leniently: unknown keys are kept and
ignored, so any Paimon table can be opened.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidOptionError
from .registry import (
    BUCKET,
    BUCKET_KEY,
    CHANGELOG_FILE_PREFIX,
    CHANGELOG_NUM_RETAINED_MAX,
    CHANGELOG_NUM_RETAINED_MIN,
    CHANGELOG_PRODUCER,
    CHANGELOG_ROW_DEDUPLICATE,
    CHANGELOG_TIME_RETAINED,
    COMMIT_MAX_RETRIES,
    COMMIT_MAX_RETRY_WAIT,
    COMMIT_MIN_RETRY_WAIT,
    COMMIT_TIMEOUT,
    COMMIT_USER_PREFIX,
    CONSUMER_CHANGELOG_ONLY,
    DATA_FILE_PATH_DIRECTORY,
    DATA_FILE_PREFIX,
    DELETION_VECTORS,
    DELETION_VECTORS_BITMAP64,
    DYNAMIC_PARTITION_OVERWRITE,
    FILE_COMPRESSION,
    FILE_COMPRESSION_ZSTD_LEVEL,
    FILE_FORMAT,
    FULL_COMPACTION_DELTA_COMMITS,
    IGNORE_DELETE,
    IGNORE_EMPTY_COMMIT,
    LOCAL_SORT_MAX_NUM_FILE_HANDLES,
    MANIFEST_COMPRESSION,
    MANIFEST_FULL_COMPACTION_SIZE,
    MANIFEST_MERGE_MIN_COUNT,
    MANIFEST_TARGET_FILE_SIZE,
    MERGE_ENGINE,
    NUM_LEVELS,
    NUM_SORTED_RUN_COMPACTION_TRIGGER,
    NUM_SORTED_RUN_STOP_TRIGGER,
    PARTITION_DEFAULT_NAME,
    PARTITION_LEGACY_NAME,
    ROWKIND_FIELD,
    SEQUENCE_AUTO_PADDING,
    SEQUENCE_FIELD,
    SEQUENCE_FIELD_SORT_ORDER,
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_TIME_RETAINED,
    STATS_MODE,
    TARGET_FILE_SIZE,
    WRITE_BUFFER_SIZE,
    WRITE_BUFFER_SPILLABLE,
    WRITE_ONLY,
    ChangelogProducer,
    MergeEngine,
    Option,
    settings_parse,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CoreOptions:
    """The typed settings of one table, parsed once; pass this down, never the raw dict."""

    raw: Mapping[str, str] = field(repr=False)
    bucket: int
    bucket_key: tuple[str, ...] | None
    file_format: str
    file_compression: str
    zstd_level: int
    target_file_size: int | None
    manifest_compression: str
    manifest_target_file_size: int
    manifest_merge_min_count: int
    manifest_full_compaction_size: int
    merge_engine: MergeEngine
    ignore_delete: bool
    rowkind_field: str | None
    sequence_field: tuple[str, ...] | None
    sequence_descending: bool
    row_kind_flag: bool
    changelog_producer: ChangelogProducer
    partition_default_name: str
    partition_legacy_name: bool
    dynamic_partition_overwrite: bool
    commit_max_retries: int
    commit_timeout_millis: int | None
    commit_min_retry_wait_millis: int
    commit_max_retry_wait_millis: int
    commit_user_prefix: str | None
    ignore_empty_commit: bool
    stats_mode: str
    data_file_prefix: str
    data_file_path_directory: str | None
    changelog_file_prefix: str
    deletion_vectors: bool
    deletion_vectors_bitmap64: bool
    num_levels: int
    write_only: bool
    write_buffer_size: int
    write_buffer_spillable: bool
    local_sort_max_handles: int
    num_sorted_run_compaction_trigger: int
    num_sorted_run_stop_trigger: int
    full_compaction_delta_commits: int | None
    changelog_row_deduplicate: bool
    snapshot_num_retained_min: int
    snapshot_num_retained_max: int
    snapshot_time_retained_millis: int
    snapshot_expire_limit: int
    changelog_num_retained_min: int
    changelog_num_retained_max: int
    changelog_time_retained_millis: int
    consumer_changelog_only: bool

    @property
    def changelog_decoupled(self) -> bool:
        """The changelog outlives the snapshots (Paimon's ``changelogLifecycleDecoupled``):
        some ``changelog.*`` retention exceeds its ``snapshot.*`` counterpart."""
        return (self.changelog_num_retained_max > self.snapshot_num_retained_max
                or self.changelog_num_retained_min > self.snapshot_num_retained_min
                or self.changelog_time_retained_millis > self.snapshot_time_retained_millis)

    @classmethod
    def from_map(cls, options: Mapping[str, str]) -> CoreOptions:
        """Parse (leniently about unknown keys) the options of an existing table."""
        p = settings_parse(options)
        stats_mode = p[STATS_MODE.key].strip().lower()
        if not re.fullmatch(r"none|counts|full|truncate\(\d+\)", stats_mode):
            raise InvalidOptionError(STATS_MODE.key, stats_mode, "expected none, counts, full or truncate(N)")

        def split(value: str | None) -> tuple[str, ...] | None:
            return tuple(s.strip() for s in value.split(",") if s.strip()) if value else None

        def unless_set(option: Option[Any], snapshot_option: Option[Any]) -> Any:  # changelog.* -> snapshot.*
            return p[snapshot_option.key] if p[option.key] is None else p[option.key]

        return cls(
            raw=dict(options),
            bucket=p[BUCKET.key],
            bucket_key=split(p[BUCKET_KEY.key]),
            file_format=p[FILE_FORMAT.key],
            file_compression=p[FILE_COMPRESSION.key],
            zstd_level=p[FILE_COMPRESSION_ZSTD_LEVEL.key],
            target_file_size=p[TARGET_FILE_SIZE.key],
            manifest_compression=p[MANIFEST_COMPRESSION.key],
            manifest_target_file_size=p[MANIFEST_TARGET_FILE_SIZE.key],
            manifest_merge_min_count=p[MANIFEST_MERGE_MIN_COUNT.key],
            manifest_full_compaction_size=p[MANIFEST_FULL_COMPACTION_SIZE.key],
            merge_engine=p[MERGE_ENGINE.key],
            ignore_delete=p[IGNORE_DELETE.key],
            rowkind_field=p[ROWKIND_FIELD.key],
            sequence_field=split(p[SEQUENCE_FIELD.key]),
            sequence_descending=p[SEQUENCE_FIELD_SORT_ORDER.key] == "descending",
            row_kind_flag="row-kind-flag" in _auto_padding(p[SEQUENCE_AUTO_PADDING.key], p[SEQUENCE_FIELD.key]),
            changelog_producer=p[CHANGELOG_PRODUCER.key],
            partition_default_name=p[PARTITION_DEFAULT_NAME.key],
            partition_legacy_name=p[PARTITION_LEGACY_NAME.key],
            dynamic_partition_overwrite=p[DYNAMIC_PARTITION_OVERWRITE.key],
            commit_max_retries=p[COMMIT_MAX_RETRIES.key],
            commit_timeout_millis=p[COMMIT_TIMEOUT.key],
            commit_min_retry_wait_millis=p[COMMIT_MIN_RETRY_WAIT.key],
            commit_max_retry_wait_millis=p[COMMIT_MAX_RETRY_WAIT.key],
            commit_user_prefix=p[COMMIT_USER_PREFIX.key],
            ignore_empty_commit=p[IGNORE_EMPTY_COMMIT.key],
            stats_mode=stats_mode,
            data_file_prefix=p[DATA_FILE_PREFIX.key],
            data_file_path_directory=p[DATA_FILE_PATH_DIRECTORY.key],
            changelog_file_prefix=p[CHANGELOG_FILE_PREFIX.key],
            deletion_vectors=p[DELETION_VECTORS.key],
            deletion_vectors_bitmap64=p[DELETION_VECTORS_BITMAP64.key],
            num_levels=p[NUM_LEVELS.key] or p[NUM_SORTED_RUN_COMPACTION_TRIGGER.key] + 1,
            write_only=p[WRITE_ONLY.key],
            write_buffer_size=p[WRITE_BUFFER_SIZE.key],
            write_buffer_spillable=p[WRITE_BUFFER_SPILLABLE.key],
            local_sort_max_handles=p[LOCAL_SORT_MAX_NUM_FILE_HANDLES.key],
            num_sorted_run_compaction_trigger=p[NUM_SORTED_RUN_COMPACTION_TRIGGER.key],
            num_sorted_run_stop_trigger=(p[NUM_SORTED_RUN_STOP_TRIGGER.key]
                                         or p[NUM_SORTED_RUN_COMPACTION_TRIGGER.key] + 3),
            full_compaction_delta_commits=p[FULL_COMPACTION_DELTA_COMMITS.key],
            changelog_row_deduplicate=p[CHANGELOG_ROW_DEDUPLICATE.key],
            snapshot_num_retained_min=p[SNAPSHOT_NUM_RETAINED_MIN.key],
            snapshot_num_retained_max=p[SNAPSHOT_NUM_RETAINED_MAX.key],
            snapshot_time_retained_millis=p[SNAPSHOT_TIME_RETAINED.key],
            snapshot_expire_limit=p[SNAPSHOT_EXPIRE_LIMIT.key],
            changelog_num_retained_min=unless_set(CHANGELOG_NUM_RETAINED_MIN, SNAPSHOT_NUM_RETAINED_MIN),
            changelog_num_retained_max=unless_set(CHANGELOG_NUM_RETAINED_MAX, SNAPSHOT_NUM_RETAINED_MAX),
            changelog_time_retained_millis=unless_set(CHANGELOG_TIME_RETAINED, SNAPSHOT_TIME_RETAINED),
            consumer_changelog_only=p[CONSUMER_CHANGELOG_ONLY.key],
        )

    def target_file_size_for(self, primary_key_table: bool) -> int:
        if self.target_file_size is not None:
            return self.target_file_size
        return (128 << 20) if primary_key_table else (256 << 20)

    def require_supported_for_write(self) -> None:
        """Raise UnsupportedError for settings this version cannot write correctly."""
        self._check_merge_engine()
        if self.changelog_producer is ChangelogProducer.LOOKUP and self.full_compaction_delta_commits is not None:
            raise InvalidOptionError("full-compaction.delta-commits", str(self.full_compaction_delta_commits),
                                     "cannot be combined with changelog-producer=lookup (Paimon rejects it too)")

    def check_combinations(self) -> None:
        """Raise InvalidOptionError for option combinations Apache Paimon refuses when a table is
        created or altered (its ``SchemaValidation`` and merge-function factories): first-row
        only with changelog producer none or lookup, without ``sequence.field`` and without
        deletion vectors; deletion vectors only with producer none, input or lookup; no
        aggregate function on a sequence field; ``partial-update.remove-record-on-delete``
        neither with ``ignore-delete`` nor with sequence groups."""
        first_row = self.merge_engine is MergeEngine.FIRST_ROW
        if first_row and self.changelog_producer not in (ChangelogProducer.NONE, ChangelogProducer.LOOKUP):
            raise InvalidOptionError("changelog-producer", self.changelog_producer.value,
                                     "the first-row merge engine supports only 'none' and 'lookup'")
        if first_row and self.sequence_field:
            raise InvalidOptionError("sequence.field", ",".join(self.sequence_field),
                                     "the first-row merge engine keeps the first row and takes no sequence field")
        if self.deletion_vectors:
            if self.changelog_producer not in (ChangelogProducer.NONE, ChangelogProducer.INPUT,
                                               ChangelogProducer.LOOKUP):
                raise InvalidOptionError("deletion-vectors.enabled", "true",
                                         "deletion vectors work only with changelog-producer none, input or lookup")
            if first_row:
                raise InvalidOptionError("deletion-vectors.enabled", "true",
                                         "the first-row merge engine never deletes old rows and takes no deletion vectors")
        for name in self.sequence_field or ():
            function = self.raw.get(f"fields.{name}.aggregate-function")
            if function is not None:
                raise InvalidOptionError(f"fields.{name}.aggregate-function", function,
                                         f"{name!r} is the sequence field, which takes no aggregate function")
        if self.merge_engine is MergeEngine.PARTIAL_UPDATE and \
                self.raw.get("partial-update.remove-record-on-delete", "").strip().lower() == "true":
            if self.ignore_delete:
                raise InvalidOptionError("partial-update.remove-record-on-delete", "true",
                                         "conflicts with ignore-delete; enable one of them")
            groups = sorted(k for k in self.raw if k.startswith("fields.") and k.endswith(".sequence-group"))
            if groups:
                raise InvalidOptionError("partial-update.remove-record-on-delete", "true",
                                         f"conflicts with the sequence groups ({', '.join(groups)})")

    def require_supported_for_read(self) -> None:
        """Raise UnsupportedError where reading with this version would give wrong rows."""
        self._check_merge_engine()

    def _check_merge_engine(self) -> None:
        """Raise UnsupportedError / InvalidOptionError for merge-engine settings we cannot honour."""
        if self.merge_engine is not MergeEngine.DEDUPLICATE:
            from ..merge import spec_from_options

            spec_from_options(self.raw)


def _auto_padding(value: str | None, sequence_field: str | None) -> set[str]:
    """Paimon 0.x's ``sequence.auto-padding`` values. ``second-to-micro`` and ``millis-to-micro``
    padded sequence numbers so that rows with equal coarse timestamps keep arrival order; our
    ordering always breaks such ties by arrival, so they need nothing more."""
    if not value:
        return set()
    chosen = {v.strip().lower() for v in value.split(",") if v.strip()}
    unknown = chosen - {"row-kind-flag", "second-to-micro", "millis-to-micro"}
    if unknown:
        raise InvalidOptionError("sequence.auto-padding", value,
                                 "expected row-kind-flag, second-to-micro and/or millis-to-micro")
    if not sequence_field:
        raise InvalidOptionError("sequence.auto-padding", value, "needs 'sequence.field'")
    return chosen
