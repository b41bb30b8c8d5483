"""The table-health report: numbers and pictures (inline SVG) of one table's state.

Pure Python over the core (no Airflow or Dagster imports): the Airflow plugin serves it as a page,
the Dagster code attaches its numbers as asset metadata. What it shows: the snapshot timeline
(one bar per retained snapshot, coloured by commit kind, height = rows added or removed), files and
bytes per bucket and LSM level, small files, tags, consumers, branches, when the table was last
compacted and last expired, and the table's comment and options (credential-like values redacted).

The page is rendered from ``templates/table_health.html`` with autoescaping (:mod:`.templating`):
names, comments and option values come from the table's files, which any engine may have written,
and always show as text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

KIND_COLOURS = {"APPEND": "#4e79a7", "COMPACT": "#59a14f", "OVERWRITE": "#e15759", "ANALYZE": "#b07aa1"}
SMALL_FILE_FRACTION = 0.1  # a data file under 10% of target-file-size, in a bucket with others, is small
# Option keys whose values are never shown: storage settings (paimonflow refuses them as table options, but
# tables written by other engines may hold them) and anything named like a credential.
REDACTED_OPTION_PREFIXES = ("s3.", "s3a.", "fs.", "oss.", "gs.", "azure.", "hadoop.")
REDACTED_OPTION_WORDS = ("secret", "password", "token", "credential", "access-key", "access.key", "accesskey")
REDACTED = "<redacted>"


@dataclass(frozen=True, slots=True)
class Health:
    table: str
    snapshots: list[dict] = field(default_factory=list)
    files_by_bucket_level: dict[tuple[str, int, int], tuple[int, int]] = field(default_factory=dict)
    small_files: int = 0
    total_files: int = 0
    total_bytes: int = 0
    tags: dict[str, int] = field(default_factory=dict)
    consumers: dict[str, int] = field(default_factory=dict)
    branches: list[str] = field(default_factory=list)
    last_compaction: str | None = None
    earliest_snapshot: int | None = None
    latest_snapshot: int | None = None
    comment: str | None = None
    options: dict[str, str] = field(default_factory=dict)  # credential-like values redacted
    branch: str = "main"  # the branch seen (``table`` is then ``db.t$branch_<branch>``)

    def metrics(self) -> dict[str, object]:
        """Plain numbers (for XCom, Dagster metadata, logs)."""
        return {"table": self.table, "latest_snapshot": self.latest_snapshot,
                "earliest_snapshot": self.earliest_snapshot, "retained_snapshots": len(self.snapshots),
                "data_files": self.total_files, "data_bytes": self.total_bytes, "small_files": self.small_files,
                "tags": len(self.tags), "consumers": len(self.consumers), "branches": len(self.branches),
                "last_compaction": self.last_compaction}


def _time(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def shown_options(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` sorted by key, with the value of every storage or credential-like key redacted."""
    def secret(key: str) -> bool:
        lowered = key.lower()
        return lowered.startswith(REDACTED_OPTION_PREFIXES) or any(w in lowered for w in REDACTED_OPTION_WORDS)

    return {k: REDACTED if secret(k) else str(v) for k, v in sorted(options.items())}


def table_health(table) -> Health:
    """Collect a table's health from its latest snapshot and metadata (reads manifests only). A table
    opened on a branch (``db.t$branch_b``) gives that branch's snapshots, tags and consumers."""
    manager = table.snapshot_manager
    snapshots = [s for s in map(manager.try_snapshot, manager.list_ids()) if s is not None]
    rows = [{"id": s.id, "kind": s.commit_kind.value, "time": _time(s.time_millis),
             "delta": s.delta_record_count or 0, "total": s.total_record_count or 0} for s in snapshots]
    latest = snapshots[-1] if snapshots else None
    per: Counter = Counter()
    sizes: Counter = Counter()
    small = total = total_bytes = 0
    target = table.options.target_file_size or (128 if table.primary_keys else 256) * 1024 * 1024
    threshold = target * SMALL_FILE_FRACTION
    if latest is not None:
        # metadata only (no capability gate: health is shown for every table, even one paimonflow
        # cannot read): the live files of the latest snapshot, by partition and bucket
        from paimonflow.core.data.binary_row import deserialize_row

        names = list(table.partition_keys)
        types = [table.arrow_schema.field(k).type for k in names]
        buckets: dict[tuple[str, int], list] = {}
        for e in table.manifest_io.live_entries(latest):
            values = deserialize_row(e.partition, types)
            partition = ",".join(f"{k}={v}" for k, v in zip(names, values, strict=True)) or "—"
            buckets.setdefault((partition, e.bucket), []).append(e.file)
        for (partition, bucket), files in buckets.items():
            for f in files:
                per[(partition, bucket, f.level)] += 1
                sizes[(partition, bucket, f.level)] += f.file_size
                total += 1
                total_bytes += f.file_size
                # small and mergeable: a bucket's only file is as compact as it can be
                small += len(files) > 1 and f.file_size < threshold
    compactions = [s for s in snapshots if s.commit_kind.value == "COMPACT"]
    return Health(
        table=table.identifier, snapshots=rows,
        files_by_bucket_level={k: (per[k], sizes[k]) for k in sorted(per)},
        small_files=small, total_files=total, total_bytes=total_bytes,
        tags={name: t.id for name, t in sorted(table.tags.list().items())},
        consumers={cid: c.next_snapshot for cid, c in sorted(table.consumer_manager.list().items())},
        branches=table.branches.list(),
        last_compaction=_time(compactions[-1].time_millis) if compactions else None,
        earliest_snapshot=snapshots[0].id if snapshots else None, latest_snapshot=latest.id if latest else None,
        comment=table.schema.comment, options=shown_options(table.schema.options), branch=table.branch)


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineBar:
    """One snapshot's bar in the timeline picture (SVG user units)."""

    snapshot_id: int
    kind: str
    time: str
    delta: int
    colour: str
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    width: int
    height: int
    bars: tuple[TimelineBar, ...]


def timeline_picture(snapshots: list[dict]) -> Timeline | None:
    """The geometry of the snapshot timeline: one bar per snapshot, height = rows added or removed."""
    if not snapshots:
        return None
    width, height, gap = max(40, 28 * len(snapshots)), 160, 4
    bar = (width - gap * len(snapshots)) / len(snapshots)
    peak = max(max(abs(s["delta"]) for s in snapshots), 1)
    bars = []
    for i, s in enumerate(snapshots):
        h = max(4.0, (height - 20) * abs(s["delta"]) / peak)
        bars.append(TimelineBar(snapshot_id=s["id"], kind=s["kind"], time=s["time"], delta=s["delta"],
                                colour=KIND_COLOURS.get(s["kind"], "#999"), x=round(i * (bar + gap), 1),
                                y=round(height - h, 1), width=round(bar, 1), height=round(h, 1)))
    return Timeline(width=width, height=height, bars=tuple(bars))


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelCell:
    """The files of one (partition, bucket, level) in the heat map (SVG user units)."""

    level: int
    files: int
    bytes: int
    x: int
    shade: str  # the fill's alpha, "0.04" (no files) to "1.00" (the most files)


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelRow:
    partition: str
    bucket: int
    y: int
    cells: tuple[LevelCell, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelGrid:
    width: int
    height: int
    cell_width: int
    cell_height: int
    levels: tuple[tuple[int, int], ...]  # (x of the column, level)
    rows: tuple[LevelRow, ...]


def levels_picture(cells: dict[tuple[str, int, int], tuple[int, int]]) -> LevelGrid | None:
    """The geometry of the heat map of files per (partition, bucket) row and LSM level column."""
    if not cells:
        return None
    keys = sorted({(p, b) for p, b, _ in cells})
    levels = sorted({lvl for _, _, lvl in cells})
    peak = max(n for n, _ in cells.values())
    cw, ch, left = 56, 22, 190
    rows = []
    for i, (partition, bucket) in enumerate(keys):
        row = []
        for j, lvl in enumerate(levels):
            n, size = cells.get((partition, bucket, lvl), (0, 0))
            row.append(LevelCell(level=lvl, files=n, bytes=size, x=left + j * cw,
                                 shade=f"{0.12 + 0.88 * n / peak if n else 0.04:.2f}"))
        rows.append(LevelRow(partition=partition, bucket=bucket, y=20 + i * ch, cells=tuple(row)))
    return LevelGrid(width=left + cw * len(levels), height=24 + ch * len(keys), cell_width=cw, cell_height=ch,
                     levels=tuple((left + j * cw, lvl) for j, lvl in enumerate(levels)), rows=tuple(rows))


def render_html(health: Health) -> str:
    """The whole page: self-contained HTML with inline SVG; its one script is the layout's color
    mode (:mod:`.templating`). Every name, comment and option value is HTML-escaped
    (``templates/table_health.html``, rendered autoescaping). Its links (the table's branches, the
    table lists) are relative to the page's route, ``.../connections/<conn_id>/health/<name>``."""
    from .templating import render_template

    cards = [(k.replace("_", " "), "—" if v is None else v) for k, v in health.metrics().items() if k != "table"]
    return render_template("table_health.html", health=health, base=health.table.split("$", 1)[0], cards=cards,
                           kind_colours=KIND_COLOURS,
                           timeline=timeline_picture(health.snapshots),
                           levels=levels_picture(health.files_by_bucket_level))


__all__ = ["Health", "render_html", "shown_options", "table_health"]
