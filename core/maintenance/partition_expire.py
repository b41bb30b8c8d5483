"""Partition expiry (Apache Paimon's ``PartitionExpire``): drop partitions older than
``partition.expiration-time``.

A partition's time comes from its values (``values-time``, the default): the values are put into
``partition.timestamp-pattern`` (``$dt``, ``$year-$month-$day``...; default the first partition
field) and parsed with ``partition.timestamp-formatter`` (a Java pattern such as ``yyyyMMdd``;
default ``yyyy-MM-dd`` or ``yyyy-MM-dd HH:mm:ss``). With ``update-time`` it is the newest file's
creation time. Partitions whose time is before ``now - expiration`` go, at most
``partition.expiration-max-num`` (100) per run, each as an OVERWRITE commit that empties it.
Values that do not parse are left alone (and reported), never dropped by guess.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from ..data.binary_row import deserialize_row
from ..errors import InvalidOptionError
from ..options.parse import parse_duration_millis
from .context import TableOps

_JAVA_TOKENS = [("yyyy", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"), ("ss", "%S")]


def java_to_strptime(pattern: str) -> str:
    out = pattern
    for java, py in _JAVA_TOKENS:
        out = out.replace(java, py)
    if re.search(r"[A-Za-z]", re.sub(r"%[YmdHMS]", "", out)):
        raise InvalidOptionError("partition.timestamp-formatter", pattern,
                                 "only yyyy, MM, dd, HH, mm and ss are supported")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionExpiry:
    expired: tuple[dict, ...]
    unparsable: tuple[dict, ...] = ()
    snapshot_id: int | None = None
    dry_run: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"expired": [dict(p) for p in self.expired], "unparsable": [dict(p) for p in self.unparsable],
                "snapshot_id": self.snapshot_id, "dry_run": self.dry_run}


def _partition_time(values: Mapping[str, object], pattern: str | None, formats: list[str]) -> datetime | None:
    keys = list(values)
    if pattern:
        text = pattern
        for key in sorted(keys, key=len, reverse=True):
            text = text.replace(f"${key}", str(values[key]))
    else:
        text = str(values[keys[0]])
    for fmt in formats:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def expire_partitions(table: TableOps, *, expiration_millis: int | None = None, dry_run: bool = False,
                      clock: Callable[[], float] = time.time, commit_user: str | None = None) -> PartitionExpiry:
    from ..meta.capabilities import Operation

    table.capabilities.require(Operation.EXPIRE)
    table.capabilities.require(Operation.WRITE)  # dropped partitions are an OVERWRITE commit
    options = table.schema.options
    if not table.partition_keys:
        return PartitionExpiry(expired=(), dry_run=dry_run)
    if expiration_millis is None:
        if "partition.expiration-time" not in options:
            raise InvalidOptionError("partition.expiration-time", None, "set it, or pass expiration_millis")
        expiration_millis = parse_duration_millis(options["partition.expiration-time"])
    strategy = options.get("partition.expiration-strategy", "values-time")
    if strategy not in ("values-time", "update-time"):
        raise InvalidOptionError("partition.expiration-strategy", strategy, "expected values-time or update-time")
    limit = int(options.get("partition.expiration-max-num", "100"))
    formatter = options.get("partition.timestamp-formatter")
    formats = [java_to_strptime(formatter)] if formatter else ["%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]
    pattern = options.get("partition.timestamp-pattern")
    cutoff_millis = clock() * 1000 - expiration_millis
    latest = table.snapshot_manager.latest()
    if latest is None:
        return PartitionExpiry(expired=(), dry_run=dry_run)
    types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    newest_file: dict[bytes, int] = {}
    for e in table.manifest_io.live_entries(latest):
        newest_file[e.partition] = max(newest_file.get(e.partition, 0), e.file.creation_time_millis or 0)
    expired, unparsable = [], []
    for raw, created in sorted(newest_file.items()):
        values = dict(zip(table.partition_keys, deserialize_row(raw, types), strict=True))
        if strategy == "update-time":
            when_millis: float = created
        else:
            when = _partition_time(values, pattern, formats)
            if when is None:
                unparsable.append(values)
                continue
            when_millis = when.timestamp() * 1000
        if when_millis < cutoff_millis:
            expired.append(values)
    expired = expired[:limit]
    snapshot_id = None
    if expired and not dry_run:
        snapshot_id = table.drop_partitions(expired, commit_user=commit_user).snapshot_id
    return PartitionExpiry(expired=tuple(expired), unparsable=tuple(unparsable), snapshot_id=snapshot_id,
                           dry_run=dry_run)
