"""Typed settings of automatic tags (Apache Paimon's ``TagPeriodHandler``): the period, delay,
name formatter and retention options, and the tag name of each period.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING

from ..errors import InvalidOptionError
from .parse import parse_time_zone
from .registry import (
    SINK_PROCESS_TIME_ZONE,
    SINK_WATERMARK_TIME_ZONE,
    TAG_AUTOMATIC_COMPLETION,
    TAG_AUTOMATIC_CREATION,
    TAG_BATCH_CUSTOMIZED_NAME,
    TAG_CREATION_DELAY,
    TAG_CREATION_PERIOD,
    TAG_CREATION_PERIOD_DURATION,
    TAG_NUM_RETAINED_MAX,
    TAG_PERIOD_FORMATTER,
    option_value,
)

if TYPE_CHECKING:
    from ..meta.snapshots import Snapshot

_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_JAVA_LONG_MIN = -(2**63)

# name layouts: (strftime pattern, regex with fixed-width fields, Java pattern for docs)
_LAYOUTS = {
    "day": ("%Y-%m-%d", r"(\d{4})-(\d{2})-(\d{2})"),
    "day-compact": ("%Y%m%d", r"(\d{4})(\d{2})(\d{2})"),
    "hour": ("%Y-%m-%d %H", r"(\d{4})-(\d{2})-(\d{2}) (\d{2})"),
    "hour-compact": ("%Y%m%d %H", r"(\d{4})(\d{2})(\d{2}) (\d{2})"),
    "hour-compact-no-space": ("%Y%m%d%H", r"(\d{4})(\d{2})(\d{2})(\d{2})"),
    "minute": ("%Y%m%d%H%M", r"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class TagPeriod:
    """One tag period: its length and how its tags are named.

    Times are wall-clock times (naive ``datetime``) in the mode's time zone; periods are aligned
    to 1970-01-01 00:00 of that wall clock, as in Paimon.
    """

    millis: int
    layout: str
    daily: bool = False  # Paimon's daily names also parse with a trailing " HH" part

    def name(self, start: datetime) -> str:
        return start.strftime(_LAYOUTS[self.layout][0])

    def start_of(self, name: str) -> datetime | None:
        """The period start a tag name stands for, or None if it is not an automatic tag name."""
        text = name.split(" ")[0] if self.daily else name
        match = re.fullmatch(_LAYOUTS[self.layout][1], text)
        if match is None:
            return None
        fields = [int(g) for g in match.groups()]  # year, month, day[, hour[, minute]]
        year, month, day, hour, minute = fields + [0] * (5 - len(fields))
        try:
            return datetime(year, month, day, hour, minute)
        except ValueError:  # e.g. month 13: not a time, so not an automatic tag
            return None

    def previous_start(self, time_: datetime) -> datetime:
        """The start of the period before the one holding ``time_``."""
        elapsed = (time_ - _EPOCH) // timedelta(milliseconds=1)
        return _EPOCH + timedelta(milliseconds=(elapsed // self.millis) * self.millis - self.millis)

    def next_start(self, start: datetime) -> datetime:
        return start + timedelta(milliseconds=self.millis)


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoTagSettings:
    """The ``tag.*`` options of one table, parsed and checked (bad values raise
    InvalidOptionError naming the key)."""

    mode: str  # none, process-time, watermark, batch
    period: TagPeriod
    delay_millis: int
    num_retained_max: int | None
    completion: bool
    time_zone: tzinfo | None  # None: the local zone
    batch_name: str | None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> AutoTagSettings:
        mode = option_value(TAG_AUTOMATIC_CREATION, options)
        formatter = option_value(TAG_PERIOD_FORMATTER, options)
        duration = option_value(TAG_CREATION_PERIOD_DURATION, options)
        if duration is not None:
            period = TagPeriod(millis=duration, layout="minute")
        else:
            kind = option_value(TAG_CREATION_PERIOD, options)
            if kind == "daily":
                layout = "day" if formatter == "with_dashes" else "day-compact"
                period = TagPeriod(millis=86_400_000, layout=layout, daily=True)
            elif kind == "hourly":
                layout = {"with_dashes": "hour", "without_dashes": "hour-compact",
                          "without_dashes_and_spaces": "hour-compact-no-space"}[formatter]
                period = TagPeriod(millis=3_600_000, layout=layout)
            else:  # two-hours: always yyyy-MM-dd HH, as in Paimon
                period = TagPeriod(millis=7_200_000, layout="hour")
        delay = option_value(TAG_CREATION_DELAY, options)
        if mode in ("process-time", "watermark") and delay >= period.millis:
            raise InvalidOptionError(TAG_CREATION_DELAY.key, options.get(TAG_CREATION_DELAY.key),
                                     f"must be shorter than one tag period ({period.millis} ms)")
        zone_text = option_value(SINK_WATERMARK_TIME_ZONE, options) if mode == "watermark" \
            else option_value(SINK_PROCESS_TIME_ZONE, options)
        return cls(mode=mode, period=period, delay_millis=delay,
                   num_retained_max=option_value(TAG_NUM_RETAINED_MAX, options),
                   completion=option_value(TAG_AUTOMATIC_COMPLETION, options),
                   time_zone=parse_time_zone(zone_text) if zone_text is not None else None,
                   batch_name=option_value(TAG_BATCH_CUSTOMIZED_NAME, options))

    def wall_clock(self, epoch_millis: int) -> datetime:
        """``epoch_millis`` as a naive wall-clock time in the mode's time zone."""
        instant = _EPOCH_UTC + timedelta(milliseconds=epoch_millis)
        return instant.astimezone(self.time_zone).replace(tzinfo=None)

    def time_of(self, snapshot: Snapshot) -> datetime | None:
        """The time a snapshot counts at: its commit time or its watermark (None: none)."""
        if self.mode == "watermark":
            if snapshot.watermark is None or snapshot.watermark == _JAVA_LONG_MIN:
                return None
            return self.wall_clock(snapshot.watermark)
        return self.wall_clock(snapshot.time_millis)
