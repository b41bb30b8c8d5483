"""What a test compares to prove that nothing was written."""

from __future__ import annotations

from pathlib import Path


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and modification time (nanoseconds)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}
