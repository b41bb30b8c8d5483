"""The counts a manual expiry keeps: the bounds a caller gives over the table's options.

Apache Paimon has two rules here. Its ``expire_snapshots`` procedures (Spark and Flink,
``ProcedureUtils.fillInSnapshotOptions`` since 1.1, #4657) take an omitted ``retain_min`` from
``snapshot.num-retained.min`` (10) and so refuse ``retain_max => 1`` on a table with default
options ("retainMax (1) must not be less than retainMin (10)"); its ``expire_changelogs``
procedure (Flink, the only one) starts from ``ExpireConfig.builder()``, where an omitted
``retain_min`` is 1, so ``retain_max => 1`` keeps one changelog. paimonflow keeps the table
options as the defaults of both verbs and lets an omitted bound give way to a given one, which
keeps what Flink's ``expire_changelogs`` keeps and what Paimon's ``expire_snapshots`` kept up to 1.0.
"""

from __future__ import annotations

from ..errors import InvalidArgumentError


def retained_counts(retain_min: int | None, retain_max: int | None, *, option_min: int,
                    option_max: int) -> tuple[int, int]:
    """``(retain_min, retain_max)`` for one expiry run.

    A bound given is used as given; an omitted one is the table's option (``option_min``,
    ``option_max``: ``snapshot.num-retained.*`` or ``changelog.num-retained.*``), except that an
    omitted bound never contradicts a given one: an omitted minimum is at most the given maximum,
    an omitted maximum at least the given minimum. So ``retain_max=1`` alone keeps one snapshot
    whatever ``snapshot.num-retained.min`` says. Raises :class:`InvalidArgumentError` when a given
    bound is below 1 or when the bounds contradict each other (``retain_max`` below ``retain_min``,
    both given, or both from the table's options).
    """
    for name, value in (("retain_min", retain_min), ("retain_max", retain_max)):
        if value is not None and value < 1:
            raise InvalidArgumentError(f"{name} must be at least 1 (the latest snapshot always stays), not {value}")
    low = option_min if retain_min is None else retain_min
    high = option_max if retain_max is None else retain_max
    if retain_min is None and retain_max is not None:
        low = min(low, high)
    elif retain_max is None and retain_min is not None:
        high = max(high, low)
    if high < low:
        raise InvalidArgumentError(f"retain_max ({high}) must be at least retain_min ({low})")
    return low, high
