"""Parsers of option values with Paimon's syntax: memory sizes (``128 mb``), durations (``1 h``),
booleans, integers, time zones, and the checked variants the option registry uses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

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


def ranged(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = parse_int(text)
        if low is not None and value < low:
            raise ValueError(f"must be >= {low}")
        if high is not None and value > high:
            raise ValueError(f"must be <= {high}")
        return value

    return parse


def positive_size(text: str) -> int:
    value = parse_memory_size(text)
    if value <= 0:
        raise ValueError("must be positive")
    return value


def choice(*values: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        lowered = text.strip().lower()
        if lowered not in values:
            raise ValueError(f"expected one of {', '.join(values)}")
        return lowered

    return parse


def text_value(text: str) -> str:
    return text


def positive_duration(text: str) -> int:
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


def time_zone_text(text: str) -> str:
    parse_time_zone(text)
    return text.strip()
