"""The one registry of table options: every Paimon key paimonflow understands, with its default,
parser and documentation (:data:`ALL_OPTIONS`), and typed lookup with fallback keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from ..errors import InvalidOptionError
from ..names import validate_name
from .parse import (
    choice,
    parse_bool,
    parse_duration_millis,
    positive_duration,
    positive_size,
    ranged,
    text_value,
    time_zone_text,
)

T = TypeVar("T")


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


ALL_OPTIONS: list[Option[Any]] = []


def _opt(key: str, default: T, parse: Callable[[str], T], doc: str, *fallback: str) -> Option[T]:
    option = Option(key, default, parse, doc, fallback)
    ALL_OPTIONS.append(option)
    return option


BUCKET = _opt("bucket", -1, ranged(-2), "Buckets per partition; -1 = dynamic (PK) or unaware (append).")
BUCKET_KEY = _opt("bucket-key", None, text_value, "Comma-separated bucket key fields (default: trimmed primary key).")
FILE_FORMAT = _opt("file.format", "parquet", choice("parquet", "orc", "avro"), "Data file format.")
FILE_COMPRESSION = _opt("file.compression", "zstd", choice("zstd", "snappy", "lz4", "gzip", "none", "uncompressed"),
                        "Data file compression codec.")
FILE_COMPRESSION_ZSTD_LEVEL = _opt("file.compression.zstd-level", 1, ranged(1, 22), "zstd level for data files.")
TARGET_FILE_SIZE = _opt("target-file-size", None, positive_size,
                        "Roll data files at this size (default 128 mb for primary-key, 256 mb for append tables).")
MANIFEST_FORMAT = _opt("manifest.format", "avro", choice("avro"), "Manifest file format.")
MANIFEST_COMPRESSION = _opt("manifest.compression", "zstd", choice("zstd", "snappy", "deflate", "null", "none"),
                            "Manifest file compression.")
MANIFEST_TARGET_FILE_SIZE = _opt("manifest.target-file-size", 8 << 20, positive_size, "Roll manifests at this size.")
MANIFEST_MERGE_MIN_COUNT = _opt("manifest.merge-min-count", 30, ranged(1),
                                "Merge small manifests once at least this many accumulate.")
MANIFEST_FULL_COMPACTION_SIZE = _opt("manifest.full-compaction-threshold-size", 16 << 20, positive_size,
                                     "Fully compact manifests when deletable data exceeds this size.")
MERGE_ENGINE = _opt("merge-engine", MergeEngine.DEDUPLICATE, lambda s: MergeEngine(choice(*[m.value for m in MergeEngine])(s)),
                    "How rows with the same primary key merge.")
IGNORE_DELETE = _opt("ignore-delete", False, parse_bool, "Ignore -D and -U rows.",
                     "deduplicate.ignore-delete", "first-row.ignore-delete", "partial-update.ignore-delete")
ROWKIND_FIELD = _opt("rowkind.field", None, text_value, "A STRING column holding each row's kind (+I, -U, +U, -D).")
SEQUENCE_FIELD = _opt("sequence.field", None, text_value, "Fields that order rows of one key instead of arrival.")
SEQUENCE_AUTO_PADDING = _opt("sequence.auto-padding", None, text_value,
                              "row-kind-flag (a retraction is older than an insert with equal sequence "
                              "fields), second-to-micro, millis-to-micro (ties broken by arrival).")
SEQUENCE_FIELD_SORT_ORDER = _opt("sequence.field.sort-order", "ascending", choice("ascending", "descending"),
                                 "ascending: a larger sequence field is newer; descending: a smaller one is.")
CHANGELOG_PRODUCER = _opt("changelog-producer", ChangelogProducer.NONE,
                          lambda s: ChangelogProducer(choice(*[c.value for c in ChangelogProducer])(s)),
                          "How changelog files are produced.")
PARTITION_DEFAULT_NAME = _opt("partition.default-name", "__DEFAULT_PARTITION__", text_value,
                              "Directory name of the partition whose value is null or empty.")
PARTITION_LEGACY_NAME = _opt("partition.legacy-name", True, parse_bool,
                              "Render DATE/TIME/TIMESTAMP partition values the legacy way (epoch days...).")
DYNAMIC_PARTITION_OVERWRITE = _opt("dynamic-partition-overwrite", True, parse_bool,
                                   "Overwrite only the partitions present in the new data.")
COMMIT_MAX_RETRIES = _opt("commit.max-retries", 10, ranged(0), "Attempts after losing the race for a snapshot id.")
COMMIT_TIMEOUT = _opt("commit.timeout", None, parse_duration_millis, "Wall-clock bound of the commit retry loop.")
COMMIT_MIN_RETRY_WAIT = _opt("commit.min-retry-wait", 10, parse_duration_millis, "First retry back-off.")
COMMIT_MAX_RETRY_WAIT = _opt("commit.max-retry-wait", 10_000, parse_duration_millis, "Largest retry back-off.")
COMMIT_USER_PREFIX = _opt("commit.user-prefix", None, text_value, "Prefix of generated commit users.")
IGNORE_EMPTY_COMMIT = _opt("snapshot.ignore-empty-commit", True, parse_bool, "Skip commits with no changes.")
STATS_MODE = _opt("metadata.stats-mode", "truncate(16)", text_value, "Value statistics: none, counts, truncate(N) or full.")
DATA_FILE_PREFIX = _opt("data-file.prefix", "data-", text_value, "Prefix of data file names.")
DATA_FILE_PATH_DIRECTORY = _opt("data-file.path-directory", None, text_value,
                                "Directory under the table root that holds every partition and bucket directory.")
CHANGELOG_FILE_PREFIX = _opt("changelog-file.prefix", "changelog-", text_value, "Prefix of changelog file names.")
DELETION_VECTORS = _opt("deletion-vectors.enabled", False, parse_bool, "Merge-on-write with deletion vectors.")
DELETION_VECTORS_BITMAP64 = _opt("deletion-vectors.bitmap64", False, parse_bool,
                                 "Write 64-bit deletion vectors (Paimon's Bitmap64DeletionVector); both kinds are read.")
WRITE_ONLY = _opt("write-only", False, parse_bool, "Writers never compact.")
WRITE_BUFFER_SIZE = _opt("write-buffer-size", 256 << 20, positive_size, "Memory of a write buffer before it spills.")
WRITE_BUFFER_SPILLABLE = _opt("write-buffer-spillable", True, parse_bool,
                              "Spill a full write buffer to local disk as sorted runs instead of flushing level-0 files.")
LOCAL_SORT_MAX_NUM_FILE_HANDLES = _opt("local-sort.max-num-file-handles", 128, ranged(2),
                                       "Spilled runs of one bucket merged at once; more are merged first.")
NUM_SORTED_RUN_STOP_TRIGGER = _opt("num-sorted-run.stop-trigger", None, ranged(1),
                                   "Sorted runs at which a compacting writer waits for compaction "
                                   "(default: compaction trigger + 3).")
FULL_COMPACTION_DELTA_COMMITS = _opt("full-compaction.delta-commits", None, ranged(1),
                                     "Writers fully compact the buckets they write (every batch commit).")
CHANGELOG_ROW_DEDUPLICATE = _opt("changelog-producer.row-deduplicate", False, parse_bool,
                                 "Lookup/full-compaction changelog skips -U/+U pairs with equal values.")
NUM_SORTED_RUN_COMPACTION_TRIGGER = _opt("num-sorted-run.compaction-trigger", 5, ranged(1),
                                        "Sorted runs in a bucket that trigger a minor compaction.")
NUM_LEVELS = _opt("num-levels", None, ranged(2), "LSM levels (default: compaction trigger + 1).")
SNAPSHOT_NUM_RETAINED_MIN = _opt("snapshot.num-retained.min", 10, ranged(1), "Snapshots always kept.")
SNAPSHOT_NUM_RETAINED_MAX = _opt("snapshot.num-retained.max", 2**31 - 1, ranged(1), "Snapshots kept at most.")
SNAPSHOT_TIME_RETAINED = _opt("snapshot.time-retained", 3_600_000, parse_duration_millis, "Age before a snapshot may go.")
SNAPSHOT_EXPIRE_LIMIT = _opt("snapshot.expire.limit", 50, ranged(1), "Snapshots one expiry run removes at most.")
CHANGELOG_NUM_RETAINED_MIN = _opt("changelog.num-retained.min", None, ranged(1),
                                  "Changelogs always kept (default: snapshot.num-retained.min).")
CHANGELOG_NUM_RETAINED_MAX = _opt("changelog.num-retained.max", None, ranged(1),
                                  "Changelogs kept at most (default: snapshot.num-retained.max).")
CHANGELOG_TIME_RETAINED = _opt("changelog.time-retained", None, parse_duration_millis,
                               "Age before a changelog may go (default: snapshot.time-retained).")
CONSUMER_CHANGELOG_ONLY = _opt("consumer.changelog-only", False, parse_bool,
                               "Consumers protect only changelogs, never snapshots, from expiry.")

# Automatic tags and commit-time maintenance (core/maintenance/auto_tag.py, core/maintenance/post_commit.py).
TAG_AUTOMATIC_CREATION = _opt("tag.automatic-creation", "none", choice("none", "process-time", "watermark", "batch"),
                              "Create tags automatically after commits: by commit time, by watermark, or at the "
                              "end of each batch write.")
TAG_CREATION_PERIOD = _opt("tag.creation-period", "daily", choice("daily", "hourly", "two-hours"),
                           "How often automatic tags are created.")
TAG_CREATION_PERIOD_DURATION = _opt("tag.creation-period-duration", None, positive_duration,
                                    "A custom period (overrides tag.creation-period; names use yyyyMMddHHmm).")
TAG_CREATION_DELAY = _opt("tag.creation-delay", 0, parse_duration_millis,
                          "How long after a period ends its tag waits (for late data); less than one period.")
TAG_PERIOD_FORMATTER = _opt("tag.period-formatter", "with_dashes",
                            choice("with_dashes", "without_dashes", "without_dashes_and_spaces"),
                            "Names of automatic tags: yyyy-MM-dd [HH], yyyyMMdd [HH] or yyyyMMdd[HH].")
TAG_NUM_RETAINED_MAX = _opt("tag.num-retained-max", None, ranged(0),
                            "Automatic tags kept at most (batch mode: all tags); the oldest go first.")
TAG_DEFAULT_TIME_RETAINED = _opt("tag.default-time-retained", None, positive_duration,
                                 "Time-to-live given to new tags that get none explicitly.")
TAG_AUTOMATIC_COMPLETION = _opt("tag.automatic-completion", False, parse_bool,
                                "Create the tags of periods without commits too (one per later snapshot).")
TAG_TIME_EXPIRE_ENABLED = _opt("tag.time-expire-enabled", True, parse_bool,
                               "Delete tags whose time-to-live ran out after each commit.")
TAG_BATCH_CUSTOMIZED_NAME = _opt("tag.batch.customized-name", None, lambda s: validate_name("tag", s),
                                 "Name of the batch-mode tag (default batch-write-yyyy-MM-dd).")
SINK_PROCESS_TIME_ZONE = _opt("sink.process-time-zone", None, time_zone_text,
                              "Time zone of commit times for automatic tags (default: the local zone).")
SINK_WATERMARK_TIME_ZONE = _opt("sink.watermark-time-zone", "UTC", time_zone_text,
                                "Time zone of watermarks for automatic tags.")
CONSUMER_EXPIRATION_TIME = _opt("consumer.expiration-time", None, positive_duration,
                                "Consumers not updated for this long are removed after commits.")
PARTITION_EXPIRATION_CHECK_INTERVAL = _opt("partition.expiration-check-interval", 3_600_000, parse_duration_millis,
                                           "How often (per process) commits check for expired partitions.")


def settings_parse(options: Mapping[str, str]) -> dict[str, Any]:
    """Parse every typed option present in ``options``; raise InvalidOptionError on a bad value."""
    parsed: dict[str, Any] = {}
    for option in ALL_OPTIONS:
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


def all_options() -> list[Option[Any]]:
    """Every typed option (for docs and the CLI)."""
    return list(ALL_OPTIONS)
