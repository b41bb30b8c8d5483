"""The table-health report: numbers and pictures (inline SVG) of one table's state.

Pure Python over the core (no Airflow or Dagster imports): the Airflow plugin serves it as a page,
the Dagster code attaches its numbers as asset metadata. What it shows: the snapshot timeline
(one bar per retained snapshot, coloured by commit kind, height = rows added or removed), files and
bytes per bucket and LSM level, small files, tags, consumers, branches, and when the table was last
compacted and last expired.
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

KIND_COLOURS = {"APPEND": "#4e79a7", "COMPACT": "#59a14f", "OVERWRITE": "#e15759", "ANALYZE": "#b07aa1"}
SMALL_FILE_FRACTION = 0.1  # a data file under 10% of target-file-size, in a bucket with others, is small


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

    def metrics(self) -> dict[str, object]:
        """Plain numbers (for XCom, Dagster metadata, logs)."""
        return {"table": self.table, "latest_snapshot": self.latest_snapshot,
                "earliest_snapshot": self.earliest_snapshot, "retained_snapshots": len(self.snapshots),
                "data_files": self.total_files, "data_bytes": self.total_bytes, "small_files": self.small_files,
                "tags": len(self.tags), "consumers": len(self.consumers), "branches": len(self.branches),
                "last_compaction": self.last_compaction}


def _time(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def table_health(table) -> Health:
    """Collect a table's health from its latest snapshot and metadata (reads manifests only)."""
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
        names = list(table.partition_keys)
        for split in table.plan(snapshot_id=latest.id, all_levels=True):
            partition = ",".join(f"{k}={v}" for k, v in zip(names, split.partition, strict=True)) or "—"
            for f in split.files:
                per[(partition, split.bucket, f.level)] += 1
                sizes[(partition, split.bucket, f.level)] += f.file_size
                total += 1
                total_bytes += f.file_size
                # small and mergeable: a bucket's only file is as compact as it can be
                small += len(split.files) > 1 and f.file_size < threshold
    compactions = [s for s in snapshots if s.commit_kind.value == "COMPACT"]
    return Health(
        table=table.identifier, snapshots=rows,
        files_by_bucket_level={k: (per[k], sizes[k]) for k in sorted(per)},
        small_files=small, total_files=total, total_bytes=total_bytes,
        tags={name: t.id for name, t in sorted(table.tags.list().items())},
        consumers={cid: c.next_snapshot for cid, c in sorted(table.consumer_manager.list().items())},
        branches=table.branches.list(),
        last_compaction=_time(compactions[-1].time_millis) if compactions else None,
        earliest_snapshot=snapshots[0].id if snapshots else None, latest_snapshot=latest.id if latest else None)


def _timeline_svg(snapshots: list[dict]) -> str:
    if not snapshots:
        return "<p>No snapshots yet.</p>"
    width, height, gap = max(40, 28 * len(snapshots)), 160, 4
    bar = (width - gap * len(snapshots)) / len(snapshots)
    peak = max(max(abs(s["delta"]) for s in snapshots), 1)
    parts = [f'<svg role="img" aria-label="snapshot timeline" width="{width}" height="{height + 40}" '
             f'xmlns="http://www.w3.org/2000/svg">']
    for i, s in enumerate(snapshots):
        h = max(4, (height - 20) * abs(s["delta"]) / peak)
        x = i * (bar + gap)
        colour = KIND_COLOURS.get(s["kind"], "#999")
        parts.append(f'<rect x="{x:.1f}" y="{height - h:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{colour}">'
                     f'<title>snapshot {s["id"]} {s["kind"]} at {s["time"]}: {s["delta"]} rows</title></rect>')
        parts.append(f'<text x="{x + bar / 2:.1f}" y="{height + 14}" font-size="10" text-anchor="middle">{s["id"]}</text>')
    parts.append("</svg>")
    legend = " ".join(f'<span style="color:{c}">■</span> {k}' for k, c in KIND_COLOURS.items())
    return "".join(parts) + f"<div class='legend'>{legend}</div>"


def _levels_svg(cells: dict[tuple[str, int, int], tuple[int, int]]) -> str:
    if not cells:
        return "<p>No data files.</p>"
    rows = sorted({(p, b) for p, b, _ in cells})
    levels = sorted({lvl for _, _, lvl in cells})
    peak = max(n for n, _ in cells.values())
    cw, ch, left = 56, 22, 190
    width, height = left + cw * len(levels), 24 + ch * len(rows)
    parts = [f'<svg role="img" aria-label="files per bucket and level" width="{width}" height="{height}" '
             f'xmlns="http://www.w3.org/2000/svg">']
    for j, lvl in enumerate(levels):
        parts.append(f'<text x="{left + j * cw + cw / 2}" y="14" font-size="11" text-anchor="middle">level {lvl}</text>')
    for i, (partition, bucket) in enumerate(rows):
        y = 20 + i * ch
        parts.append(f'<text x="4" y="{y + 15}" font-size="11">{html.escape(partition)} / bucket {bucket}</text>')
        for j, lvl in enumerate(levels):
            n, size = cells.get((partition, bucket, lvl), (0, 0))
            shade = 0.12 + 0.88 * n / peak if n else 0.04
            parts.append(f'<rect x="{left + j * cw + 2}" y="{y}" width="{cw - 4}" height="{ch - 3}" '
                         f'fill="rgba(78,121,167,{shade:.2f})"><title>{n} files, {size} bytes</title></rect>')
            if n:
                parts.append(f'<text x="{left + j * cw + cw / 2}" y="{y + 14}" font-size="11" '
                             f'text-anchor="middle">{n}</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(health: Health) -> str:
    """The whole page (self-contained HTML, no scripts)."""
    esc = html.escape
    m = health.metrics()
    cards = "".join(f"<div class='card'><div class='n'>{esc(str(v if v is not None else '—'))}</div>"
                    f"<div class='l'>{esc(k.replace('_', ' '))}</div></div>"
                    for k, v in m.items() if k != "table")
    tags = "".join(f"<tr><td>{esc(n)}</td><td>{sid}</td></tr>" for n, sid in health.tags.items()) or \
        "<tr><td colspan=2>none</td></tr>"
    consumers = "".join(f"<tr><td>{esc(c)}</td><td>{n}</td></tr>" for c, n in health.consumers.items()) or \
        "<tr><td colspan=2>none</td></tr>"
    branches = ", ".join(esc(b) for b in health.branches) or "none"
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{esc(health.table)} · table health</title>
<style>body{{font-family:system-ui,sans-serif;margin:24px;color:#222}} h1{{font-size:22px}}
.cards{{display:flex;flex-wrap:wrap;gap:10px}} .card{{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:110px}}
.n{{font-size:20px;font-weight:600}} .l{{font-size:12px;color:#666}} table{{border-collapse:collapse}}
td,th{{border-bottom:1px solid #eee;padding:3px 10px;text-align:left}} .legend{{font-size:12px;margin-top:4px}}
section{{margin-top:22px}}</style></head><body>
<h1>Table health: {esc(health.table)}</h1>
<div class="cards">{cards}</div>
<section><h2>Snapshot timeline</h2>{_timeline_svg(health.snapshots)}</section>
<section><h2>Files per bucket and level</h2>{_levels_svg(health.files_by_bucket_level)}
<p>{health.small_files} small file(s) of {health.total_files}; {health.total_bytes} bytes in all.</p></section>
<section><h2>Tags</h2><table><tr><th>tag</th><th>snapshot</th></tr>{tags}</table></section>
<section><h2>Consumers</h2><table><tr><th>consumer</th><th>next snapshot</th></tr>{consumers}</table></section>
<section><h2>Branches</h2><p>{branches}</p></section>
<section><h2>Maintenance</h2><p>Last compaction: {esc(health.last_compaction or 'never')}.
Retained snapshots {health.earliest_snapshot}..{health.latest_snapshot} (earlier ones expired).</p></section>
</body></html>"""


__all__ = ["Health", "render_html", "table_health"]
