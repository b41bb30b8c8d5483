"""Table options: Paimon's keys, parsed once into typed settings with Paimon's defaults.

Options a user sets (create table, alter table) are checked strictly: unknown keys and bad
values raise :class:`InvalidOptionError` naming the key. Options read from an existing table
(possibly written by Java Paimon or pypaimon) are parsed leniently: unknown keys are kept and
ignored, so any Paimon table can be opened.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, timedelta, timezone, tzinfo
from enum import StrEnum
from typing import Any, Generic, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import InvalidOptionError, UnsupportedError
from .names import validate_name

T = TypeVar("T")

_SIZE_UNITS = {
    "": 1, "b": 1, "byte": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}
_DURATION_UNITS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "": 1000, "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "m": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_NUMBER_UNIT = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


def parse_memory_size(text: str) -> int:
    """``"128 mb"`` -> bytes (Flink/Paimon MemorySize syntax)."""
    m = _NUMBER_UNIT.match(text)
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError("expected a size such as '128 mb', '64kb' or '1048576'")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]


def parse_duration_millis(text: str) -> int:
    """``"1 h"``, ``"30 min"``, ``"100 ms"`` -> milliseconds; a bare number is milliseconds, as in Paimon."""
    m = _NUMBER_UNIT.match(text)
    if not m:
        raise ValueError("expected a duration such as '1 h', '30 min', '10 s' or '100 ms'")
    unit = m.group(2).lower()
    if unit == "":
        return int(m.group(1))  # Paimon's TimeUtils reads a bare number as milliseconds
    if unit not in _DURATION_UNITS:
        raise ValueError(f"unknown time unit {m.group(2)!r}")
    return int(m.group(1)) * _DURATION_UNITS[unit]


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError("expected 'true' or 'false'")


def parse_int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError("expected an integer") from None


def _ranged(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = parse_int(text)
        if low is not None and value < low:
            raise ValueError(f"must be >= {low}")
        if high is not None and value > high:
            raise ValueError(f"must be <= {high}")
        return value

    return parse


def _positive_size(text: str) -> int:
    value = parse_memory_size(text)
    if value <= 0:
        raise ValueError("must be positive")
    return value


def _choice(*values: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        lowered = text.strip().lower()
        if lowered not in values:
            raise ValueError(f"expected one of {', '.join(values)}")
        return lowered

    return parse


def _text(text: str) -> str:
    return text


def _positive_duration(text: str) -> int:
    value = parse_duration_millis(text)
    if value <= 0:
        raise ValueError("must be a positive duration")
    return value


_ZONE_OFFSET = re.compile(r"^(?:GMT|UTC|UT)?([+-])(\d{1,2})(?::?(\d{2}))?$")


def parse_time_zone(text: str) -> tzinfo:
    """A Java ``ZoneId``: a region (``Asia/Shanghai``), ``UTC``/``Z``, or an offset
    (``GMT-08:00``, ``UTC+8``, ``+05:30``)."""
    name = text.strip()
    if name in ("Z", "UTC", "GMT", "UT"):
        return UTC
    m = _ZONE_OFFSET.match(name)
    if m:
        hours, minutes = int(m.group(2)), int(m.group(3) or 0)
        if hours > 18 or minutes > 59:
            raise ValueError(f"offset out of range in time zone {text!r}")
        sign = -1 if m.group(1) == "-" else 1
        return timezone(sign * timedelta(hours=hours, minutes=minutes))
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {text!r}; use a region such as 'Europe/Berlin' or an "
                         "offset such as 'GMT-08:00'") from None


def _time_zone_text(text: str) -> str:
    parse_time_zone(text)
    return text.strip()


@dataclass(frozen=True, slots=True)
class Option(Generic[T]):
    key: str
    default: T
    parse: Callable[[str], T]
    doc: str
    fallback_keys: tuple[str, ...] = ()

    def get(self, options: Mapping[str, str]) -> T:
        for key in (self.key, *self.fallback_keys):
            if key in options:
                return self.parse(options[key])
        return self.default


class MergeEngine(StrEnum):
    DEDUPLICATE = "deduplicate"
    PARTIAL_UPDATE = "partial-update"
    AGGREGATION = "aggregation"
    FIRST_ROW = "first-row"


class ChangelogProducer(StrEnum):
    NONE = "none"
    INPUT = "input"
    FULL_COMPACTION = "full-compaction"
    LOOKUP = "lookup"


_OPTIONS: list[Option[Any]] = []


def _opt(key: str, default: T, parse: Callable[[str], T], doc: str, *fallback: str) -> Option[T]:
    option = Option(key, default, parse, doc, fallback)
    _OPTIONS.append(option)
    return option


BUCKET = _opt("bucket", -1, _ranged(-2), "Buckets per partition; -1 = dynamic (PK) or unaware (append).")
BUCKET_KEY = _opt("bucket-key", None, _text, "Comma-separated bucket key fields (default: trimmed primary key).")
FILE_FORMAT = _opt("file.format", "parquet", _choice("parquet", "orc", "avro"), "Data file format.")
FILE_COMPRESSION = _opt("file.compression", "zstd", _choice("zstd", "snappy", "lz4", "gzip", "none", "uncompressed"),
                        "Data file compression codec.")
FILE_COMPRESSION_ZSTD_LEVEL = _opt("file.compression.zstd-level", 1, _ranged(1, 22), "zstd level for data files.")
TARGET_FILE_SIZE = _opt("target-file-size", None, _positive_size,
                        "Roll data files at this size (default 128 mb for primary-key, 256 mb for append tables).")
MANIFEST_FORMAT = _opt("manifest.format", "avro", _choice("avro"), "Manifest file format.")
MANIFEST_COMPRESSION = _opt("manifest.compression", "zstd", _choice("zstd", "snappy", "deflate", "null", "none"),
                            "Manifest file compression.")
MANIFEST_TARGET_FILE_SIZE = _opt("manifest.target-file-size", 8 << 20, _positive_size, "Roll manifests at this size.")
MANIFEST_MERGE_MIN_COUNT = _opt("manifest.merge-min-count", 30, _ranged(1),
                                "Merge small manifests once at least this many accumulate.")
MANIFEST_FULL_COMPACTION_SIZE = _opt("manifest.full-compaction-threshold-size", 16 << 20, _positive_size,
                                     "Fully compact manifests when deletable data exceeds this size.")
MERGE_ENGINE = _opt("merge-engine", MergeEngine.DEDUPLICATE, lambda s: MergeEngine(_choice(*[m.value for m in MergeEngine])(s)),
                    "How rows with the same primary key merge.")
IGNORE_DELETE = _opt("ignore-delete", False, parse_bool, "Ignore -D and -U rows.",
                     "deduplicate.ignore-delete", "first-row.ignore-delete", "partial-update.ignore-delete")
ROWKIND_FIELD = _opt("rowkind.field", None, _text, "A STRING column holding each row's kind (+I, -U, +U, -D).")
SEQUENCE_FIELD = _opt("sequence.field", None, _text, "Fields that order rows of one key instead of arrival.")
SEQUENCE_AUTO_PADDING = _opt("sequence.auto-padding", None, _text,
                              "row-kind-flag (a retraction is older than an insert with equal sequence "
                              "fields), second-to-micro, millis-to-micro (ties broken by arrival).")
SEQUENCE_FIELD_SORT_ORDER = _opt("sequence.field.sort-order", "ascending", _choice("ascending", "descending"),
                                 "ascending: a larger sequence field is newer; descending: a smaller one is.")
CHANGELOG_PRODUCER = _opt("changelog-producer", ChangelogProducer.NONE,
                          lambda s: ChangelogProducer(_choice(*[c.value for c in ChangelogProducer])(s)),
                          "How changelog files are produced.")
PARTITION_DEFAULT_NAME = _opt("partition.default-name", "__DEFAULT_PARTITION__", _text,
                              "Directory name of the partition whose value is null or empty.")
PARTITION_LEGACY_NAME = _opt("partition.legacy-name", True, parse_bool,
                              "Render DATE/TIME/TIMESTAMP partition values the legacy way (epoch days...).")
DYNAMIC_PARTITION_OVERWRITE = _opt("dynamic-partition-overwrite", True, parse_bool,
                                   "Overwrite only the partitions present in the new data.")
COMMIT_MAX_RETRIES = _opt("commit.max-retries", 10, _ranged(0), "Attempts after losing the race for a snapshot id.")
COMMIT_TIMEOUT = _opt("commit.timeout", None, parse_duration_millis, "Wall-clock bound of the commit retry loop.")
COMMIT_MIN_RETRY_WAIT = _opt("commit.min-retry-wait", 10, parse_duration_millis, "First retry back-off.")
COMMIT_MAX_RETRY_WAIT = _opt("commit.max-retry-wait", 10_000, parse_duration_millis, "Largest retry back-off.")
COMMIT_USER_PREFIX = _opt("commit.user-prefix", None, _text, "Prefix of generated commit users.")
IGNORE_EMPTY_COMMIT = _opt("snapshot.ignore-empty-commit", True, parse_bool, "Skip commits with no changes.")
STATS_MODE = _opt("metadata.stats-mode", "truncate(16)", _text, "Value statistics: none, counts, truncate(N) or full.")
DATA_FILE_PREFIX = _opt("data-file.prefix", "data-", _text, "Prefix of data file names.")
CHANGELOG_FILE_PREFIX = _opt("changelog-file.prefix", "changelog-", _text, "Prefix of changelog file names.")
DELETION_VECTORS = _opt("deletion-vectors.enabled", False, parse_bool, "Merge-on-write with deletion vectors.")
WRITE_ONLY = _opt("write-only", False, parse_bool, "Writers never compact.")
WRITE_BUFFER_SIZE = _opt("write-buffer-size", 256 << 20, _positive_size, "Memory of a write buffer before it spills.")
WRITE_BUFFER_SPILLABLE = _opt("write-buffer-spillable", True, parse_bool,
                              "Spill a full write buffer to local disk as sorted runs instead of flushing level-0 files.")
LOCAL_SORT_MAX_NUM_FILE_HANDLES = _opt("local-sort.max-num-file-handles", 128, _ranged(2),
                                       "Spilled runs of one bucket merged at once; more are merged first.")
NUM_SORTED_RUN_STOP_TRIGGER = _opt("num-sorted-run.stop-trigger", None, _ranged(1),
                                   "Sorted runs at which a compacting writer waits for compaction "
                                   "(default: compaction trigger + 3).")
FULL_COMPACTION_DELTA_COMMITS = _opt("full-compaction.delta-commits", None, _ranged(1),
                                     "Writers fully compact the buckets they write (every batch commit).")
CHANGELOG_ROW_DEDUPLICATE = _opt("changelog-producer.row-deduplicate", False, parse_bool,
                                 "Lookup/full-compaction changelog skips -U/+U pairs with equal values.")
NUM_SORTED_RUN_COMPACTION_TRIGGER = _opt("num-sorted-run.compaction-trigger", 5, _ranged(1),
                                        "Sorted runs in a bucket that trigger a minor compaction.")
NUM_LEVELS = _opt("num-levels", None, _ranged(2), "LSM levels (default: compaction trigger + 1).")
SNAPSHOT_NUM_RETAINED_MIN = _opt("snapshot.num-retained.min", 10, _ranged(1), "Snapshots always kept.")
SNAPSHOT_NUM_RETAINED_MAX = _opt("snapshot.num-retained.max", 2**31 - 1, _ranged(1), "Snapshots kept at most.")
SNAPSHOT_TIME_RETAINED = _opt("snapshot.time-retained", 3_600_000, parse_duration_millis, "Age before a snapshot may go.")
SNAPSHOT_EXPIRE_LIMIT = _opt("snapshot.expire.limit", 50, _ranged(1), "Snapshots one expiry run removes at most.")
CHANGELOG_NUM_RETAINED_MIN = _opt("changelog.num-retained.min", None, _ranged(1),
                                  "Changelogs always kept (default: snapshot.num-retained.min).")
CHANGELOG_NUM_RETAINED_MAX = _opt("changelog.num-retained.max", None, _ranged(1),
                                  "Changelogs kept at most (default: snapshot.num-retained.max).")
CHANGELOG_TIME_RETAINED = _opt("changelog.time-retained", None, parse_duration_millis,
                               "Age before a changelog may go (default: snapshot.time-retained).")
CONSUMER_CHANGELOG_ONLY = _opt("consumer.changelog-only", False, parse_bool,
                               "Consumers protect only changelogs, never snapshots, from expiry.")

# Automatic tags and commit-time maintenance (core/auto_tag.py, core/maintain.py).
TAG_AUTOMATIC_CREATION = _opt("tag.automatic-creation", "none", _choice("none", "process-time", "watermark", "batch"),
                              "Create tags automatically after commits: by commit time, by watermark, or at the "
                              "end of each batch write.")
TAG_CREATION_PERIOD = _opt("tag.creation-period", "daily", _choice("daily", "hourly", "two-hours"),
                           "How often automatic tags are created.")
TAG_CREATION_PERIOD_DURATION = _opt("tag.creation-period-duration", None, _positive_duration,
                                    "A custom period (overrides tag.creation-period; names use yyyyMMddHHmm).")
TAG_CREATION_DELAY = _opt("tag.creation-delay", 0, parse_duration_millis,
                          "How long after a period ends its tag waits (for late data); less than one period.")
TAG_PERIOD_FORMATTER = _opt("tag.period-formatter", "with_dashes",
                            _choice("with_dashes", "without_dashes", "without_dashes_and_spaces"),
                            "Names of automatic tags: yyyy-MM-dd [HH], yyyyMMdd [HH] or yyyyMMdd[HH].")
TAG_NUM_RETAINED_MAX = _opt("tag.num-retained-max", None, _ranged(0),
                            "Automatic tags kept at most (batch mode: all tags); the oldest go first.")
TAG_DEFAULT_TIME_RETAINED = _opt("tag.default-time-retained", None, _positive_duration,
                                 "Time-to-live given to new tags that get none explicitly.")
TAG_AUTOMATIC_COMPLETION = _opt("tag.automatic-completion", False, parse_bool,
                                "Create the tags of periods without commits too (one per later snapshot).")
TAG_TIME_EXPIRE_ENABLED = _opt("tag.time-expire-enabled", True, parse_bool,
                               "Delete tags whose time-to-live ran out after each commit.")
TAG_BATCH_CUSTOMIZED_NAME = _opt("tag.batch.customized-name", None, lambda s: validate_name("tag", s),
                                 "Name of the batch-mode tag (default batch-write-yyyy-MM-dd).")
SINK_PROCESS_TIME_ZONE = _opt("sink.process-time-zone", None, _time_zone_text,
                              "Time zone of commit times for automatic tags (default: the local zone).")
SINK_WATERMARK_TIME_ZONE = _opt("sink.watermark-time-zone", "UTC", _time_zone_text,
                                "Time zone of watermarks for automatic tags.")
CONSUMER_EXPIRATION_TIME = _opt("consumer.expiration-time", None, _positive_duration,
                                "Consumers not updated for this long are removed after commits.")
PARTITION_EXPIRATION_CHECK_INTERVAL = _opt("partition.expiration-check-interval", 3_600_000, parse_duration_millis,
                                           "How often (per process) commits check for expired partitions.")

# Keys Paimon defines that this version stores and respects only as plain strings (read paths and
# later features use them). Setting them is allowed; unknown keys are not.
_KNOWN_PLAIN_KEYS = frozenset({
    "primary-key", "partition", "path", "type", "comment", "owner", "auto-create",
    "file.format.per.level", "file.compression.per.level", "file.block-size", "file-index.read.enabled",
    "parquet.block.size", "parquet.page.size", "parquet.enable.dictionary", "orc.stripe.size",
    "compaction.max-size-amplification-percent", "compaction.size-ratio", "compaction.min.file-num",
    "compaction.small-file-ratio", "compaction.optimization-interval", "compaction.force-rewrite-all-files",
    "write-buffer-for-append", "sort-spill-threshold", "write-buffer-spill.max-disk-size",
    "write.batch-size", "page-size", "changelog-producer.lookup-wait",
    "snapshot.expire.execution-mode", "snapshot.clean-empty-directories",
    "tag.callback.enabled",
    "partition.expiration-time", "partition.timestamp-formatter",
    "partition.timestamp-pattern", "partition.expiration-strategy", "partition.expiration-max-num",
    "consumer.ignore-progress", "consumer-id", "consumer.mode",
    "scan.mode", "scan.snapshot-id", "scan.tag-name", "scan.timestamp-millis", "scan.timestamp", "scan.version",
    "scan.watermark", "scan.file-creation-time-millis", "scan.bounded.watermark", "scan.manifest.parallelism",
    "scan.plan-sort-partition", "scan.split-enumerator.batch-size", "scan.max-splits-per-task",
    "incremental-between", "incremental-between-timestamp", "incremental-between-scan-mode",
    "streaming-read-overwrite", "streaming-read-mode", "continuous.discovery-interval",
    "dynamic-bucket.target-row-num", "dynamic-bucket.initial-buckets", "dynamic-bucket.max-buckets",
    "dynamic-bucket.assigner-parallelism", "cross-partition-upsert.index-ttl",
    "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group", "aggregation.remove-record-on-delete",
    "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete",
    "deletion-vectors.bitmap64", "deletion-vectors.index-file.target-size", "deletion-vectors.merge-on-read",
    "lookup-wait", "lookup.cache-max-memory-size", "lookup.local-file-type", "lookup-compact",
    "read.batch-size", "source.split.target-size", "source.split.open-file-cost",
    "manifest.merge-min-count", "manifest.delete-file-drop-stats", "commit.force-compact",
    "commit.callbacks", "commit.discard-duplicate-files", "commit.strict-mode.last-safe-snapshot",
    "commit.force-create-snapshot", "commit.user", "changelog-file.format", "changelog-file.compression",
    "changelog-file.stats-mode", "metadata.stats-dense-store", "metadata.stats-keep-first-n-columns",
    "file-reader-async-threshold", "record-level.expire-time", "record-level.time-field",
    "bucket-append-ordered", "row-tracking.enabled", "data-evolution.enabled", "primary-key.nullable",
    "write.sequence-number-init-mode", "overwrite-upgrade",
    "write-manifest-cache", "partition.sink-strategy", "ignore-update-before", "merge-engine.ignore-delete",
    "branch", "fallback-branch", "snapshot.watermark-idle-timeout", "table-read.sequence-number.enabled",
    "write.native.enabled", "commit.native.enabled", "read.native.enabled",
})
_FIELD_OPTION = re.compile(
    r"^fields\.(?P<field>[^.]+(?:\.[^.]+)*?)\.(?P<suffix>aggregate-function|ignore-retract|default-value|"
    r"sequence-group|stats-mode|nested-key|distinct|list-agg-delimiter|count-limit|nested-key\..+)$"
)
_FIELDS_DEFAULT = re.compile(r"^fields\.default-aggregate-function$")
_FORMAT_PASSTHROUGH = re.compile(r"^(parquet|orc|avro|file-index)\.")
# Storage settings (endpoints, credentials) come from the deployment, never from table options
# (DESIGN §1.8, reliability S6): refused when a user sets them, and never echoed in errors.
_STORAGE_PREFIXES = ("s3.", "s3a.", "fs.", "oss.", "gs.", "azure.", "hadoop.")

KNOWN_KEYS = frozenset(o.key for o in _OPTIONS) | _KNOWN_PLAIN_KEYS | frozenset(
    k for o in _OPTIONS for k in o.fallback_keys
)


def _is_known(key: str) -> bool:
    return (
        key in KNOWN_KEYS
        or bool(_FIELD_OPTION.match(key))
        or bool(_FIELDS_DEFAULT.match(key))
        or bool(_FORMAT_PASSTHROUGH.match(key))
    )


def validate_user_options(options: Mapping[str, object]) -> dict[str, str]:
    """Check options a user sets: string keys and values, known keys, parseable typed values.

    Returns a ``dict[str, str]`` copy. Raises :class:`InvalidOptionError` naming the first bad key
    (with a suggestion for a likely misspelling).
    """
    checked: dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(key, str) or not key:
            raise InvalidOptionError(str(key), value, "option keys must be non-empty strings")
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, int | float):
            value = str(value)
        if not isinstance(value, str):
            raise InvalidOptionError(key, value, "option values must be strings")
        if key.startswith(_STORAGE_PREFIXES):
            raise InvalidOptionError(key, "<redacted>", "storage settings are not table options; pass them to "
                                                        "the Catalog as storage_options")
        if not _is_known(key):
            close = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InvalidOptionError(key, value, f"unknown option{hint}")
        checked[key] = value
    settings_parse(checked)  # typed values must parse
    if TAG_CREATION_DELAY.key in checked:  # and fit together
        from .auto_tag import AutoTagSettings

        AutoTagSettings.from_options(checked)
    if "bucket" in checked and int(checked["bucket"]) == 0:
        raise InvalidOptionError("bucket", checked["bucket"], "must be -1 (dynamic/unaware) or a positive count")
    return checked


def settings_parse(options: Mapping[str, str]) -> dict[str, Any]:
    """Parse every typed option present in ``options``; raise InvalidOptionError on a bad value."""
    parsed: dict[str, Any] = {}
    for option in _OPTIONS:
        try:
            parsed[option.key] = option.get(options)
        except ValueError as exc:
            key = next((k for k in (option.key, *option.fallback_keys) if k in options), option.key)
            raise InvalidOptionError(key, options.get(key), str(exc)) from None
    return parsed


def option_value(option: Option[T], options: Mapping[str, str]) -> T:
    """One typed option of ``options``; raises InvalidOptionError naming the key on a bad value."""
    try:
        return option.get(options)
    except ValueError as exc:
        key = next((k for k in (option.key, *option.fallback_keys) if k in options), option.key)
        raise InvalidOptionError(key, options.get(key), str(exc)) from None


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
    changelog_file_prefix: str
    deletion_vectors: bool
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
            changelog_file_prefix=p[CHANGELOG_FILE_PREFIX.key],
            deletion_vectors=p[DELETION_VECTORS.key],
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
        if self.deletion_vectors and "deletion-vectors.bitmap64" in self.raw and \
                self.raw["deletion-vectors.bitmap64"].strip().lower() == "true":
            raise UnsupportedError("deletion-vectors.bitmap64=true is not supported (64-bit deletion vectors)")
        if self.bucket == -2:
            raise UnsupportedError("bucket=-2 (postpone bucket) is not supported")

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
            from .merge import spec_from_options

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


def all_options() -> list[Option[Any]]:
    """Every typed option (for docs and the CLI)."""
    return list(_OPTIONS)
