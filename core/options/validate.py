"""The one whole-map validator of options a user sets (create or alter table): unknown keys, bad
values and options that do not fit together raise :class:`~paimonflow.core.errors.InvalidOptionError`
naming the key. Options read from an existing table are not validated here (any Paimon table opens).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from ..errors import InvalidOptionError
from .registry import ALL_OPTIONS, TAG_CREATION_DELAY, settings_parse

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
    "deletion-vectors.index-file.target-size", "deletion-vectors.merge-on-read",
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
    # Paimon 2.x keys. Those that change the layout or the files are gated per operation by
    # paimonflow.core.meta.capabilities (bucket=-2, row-tracking.enabled, data-evolution.enabled,
    # data-file.external-paths, blob-field, index-file-in-data-file-dir, file-index.*); the others
    # only tune those features or Paimon's own engines.
    "data-file.path-directory", "data-file.external-paths", "data-file.external-paths.strategy",
    "data-file.external-paths.specific-fs", "data-file.external-paths.weights",
    "postpone.default-bucket-num", "postpone.batch-write-fixed-bucket",
    "postpone.batch-write-fixed-bucket.max-parallelism", "postpone.target-row-num-per-bucket",
    "postpone.target-size-per-bucket", "postpone.merge-on-read",
    "postpone.batch-write-fixed-bucket.rescale-load-factor", "row-tracking.partition-group-on-commit",
    "data-evolution.write-cols-optimization.enabled", "data-evolution.row-id-conflict-rewrite.max-size",
    "data-evolution.row-sidecar.enabled", "data-evolution.row-sidecar.max-selected-rows",
    "data-evolution.row-sidecar.max-selection-ratio", "global-index.enabled", "global-index.search-mode",
    "global-index.external-path", "global-index.filter.refine-from-data", "global-index.thread-num",
    "global-index.row-count-per-shard", "global-index.build.parallelism", "global-index.column-update-action",
    "index-file-in-data-file-dir", "blob-field", "blob-descriptor-field", "blob-view-field", "blob-as-descriptor",
    "blob-view.resolve.enabled", "blob.target-file-size", "blob.copy-buffer-size",
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

KNOWN_KEYS = frozenset(o.key for o in ALL_OPTIONS) | _KNOWN_PLAIN_KEYS | frozenset(
    k for o in ALL_OPTIONS for k in o.fallback_keys
)


# Options the engines read at run time only (Flink's sink and source parallelism, scan and lookup
# tuning...): they never change what a file means, so a table carrying ones paimonflow does not
# know is still safe to change (the capability gate). A user setting them is still checked.
_ENGINE_RUNTIME_PREFIXES = ("sink.", "scan.", "source.", "lookup.", "continuous.", "streaming-read", "read.")


def is_harmless_option(key: str) -> bool:
    """Whether an option an existing table carries is safe to leave unparsed for operations that
    change files: a known one, or an engine's run-time setting (:data:`_ENGINE_RUNTIME_PREFIXES`)."""
    return is_known_option(key) or key.startswith(_ENGINE_RUNTIME_PREFIXES)


def is_known_option(key: str) -> bool:
    """Whether ``key`` is a Paimon option paimonflow knows: one it parses, one it stores and
    respects as a plain string, a per-field or per-format option, or one whose feature the
    capability gate decides (:mod:`paimonflow.core.meta.capabilities`)."""
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
        if not is_known_option(key):
            close = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InvalidOptionError(key, value, f"unknown option{hint}")
        checked[key] = value
    settings_parse(checked)  # typed values must parse
    if TAG_CREATION_DELAY.key in checked:  # and fit together
        from .tagging import AutoTagSettings

        AutoTagSettings.from_options(checked)
    if "bucket" in checked and int(checked["bucket"]) == 0:
        raise InvalidOptionError("bucket", checked["bucket"], "must be -1 (dynamic/unaware) or a positive count")
    return checked
