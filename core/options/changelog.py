"""Typed settings of long-lived changelogs (``changelog.num-retained.*``, ``changelog.time-retained``),
falling back to the snapshot settings as Paimon does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ChangelogSettings:
    retain_min: int
    retain_max: int
    time_retained_millis: int
    decoupled: bool


def changelog_settings(table) -> ChangelogSettings:
    """The ``changelog.*`` options (each defaulting to its ``snapshot.*`` counterpart)."""
    o = table.options
    return ChangelogSettings(o.changelog_num_retained_min, o.changelog_num_retained_max,
                             o.changelog_time_retained_millis, o.changelog_decoupled)
