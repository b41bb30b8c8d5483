"""Planning a warehouse's maintenance (issue 40): time per 100 tables and the files read, by kind.

    .venv/bin/python bench/plan_warehouse.py [--tables 200] [--scale 10] [--repeat 3]

Generates ``--tables`` tables of mixed kinds and states (small data): primary-key tables with piles
of level-0 files, deletion vectors, ``changelog-producer=input``, postpone buckets; append tables of
small files; partitioned tables with expired partitions; tables with too many snapshots, expired
tags, a stale consumer, automatic tags due, long-lived changelogs; healthy tables. Then:

1. plans the warehouse ``--repeat`` times (the best time is reported), counting every file opened
   under the warehouse during one planning (Linux inotify, ``tests/file_opens.py``) by kind: data
   files must be 0;
2. builds a metadata-only warehouse ``--scale`` times larger (each table's metadata copied
   ``--scale`` times, its data files left out: planning never opens one, so it plans as the
   original) and times its planning, for the extrapolation to thousands of tables.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow as pa

from paimonflow.core import Catalog
from paimonflow.core.maintenance.planner import plan_warehouse
from tests.file_opens import FileOpens

PK = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                ("v", pa.float64())])
APPEND = pa.schema([("id", pa.int64()), pa.field("dt", pa.string(), nullable=False), ("v", pa.float64())])
TODAY = time.strftime("%Y-%m-%d")
WRITE_ONLY = {"write-only": "true"}


def rows(first: int, count: int, dt: str = TODAY, schema: pa.Schema = PK) -> pa.Table:
    return pa.table({"id": list(range(first, first + count)), "dt": [dt] * count,
                     "v": [float(i) for i in range(count)]}, schema=schema)


def _pk(catalog, name, writes, options, partitioned=True, dt=TODAY):
    t = catalog.create_table(name, PK, primary_keys=["id", "dt"], partition_keys=["dt"] if partitioned else [],
                             options=options)
    for n in range(writes):
        t.write(rows(n * 10, 10, dt))
    return t


def _append(catalog, name, writes, options):
    t = catalog.create_table(name, APPEND, partition_keys=["dt"], options=options)
    for n in range(writes):
        t.write(rows(n * 10, 10, schema=APPEND))
    return t


def level0(catalog, name):
    _pk(catalog, name, 5, {**WRITE_ONLY, "bucket": "2", "num-sorted-run.compaction-trigger": "3"})


def deletion_vectors(catalog, name):
    _pk(catalog, name, 4, {**WRITE_ONLY, "bucket": "1", "deletion-vectors.enabled": "true",
                           "num-sorted-run.compaction-trigger": "2"})


def changelog_input(catalog, name):
    _pk(catalog, name, 3, {"bucket": "1", "changelog-producer": "input"})


def postpone(catalog, name):
    _pk(catalog, name, 2, {"bucket": "-2"})


def small_files(catalog, name):
    _append(catalog, name, 5, {**WRITE_ONLY})


def expired_partitions(catalog, name):
    t = catalog.create_table(name, PK, primary_keys=["id", "dt"], partition_keys=["dt"], options={
        **WRITE_ONLY, "bucket": "1", "partition.expiration-time": "30 d"})
    t.write(pa.concat_tables([rows(0, 5, "2020-01-01"), rows(0, 5, "2020-02-01"), rows(0, 5)]))


def many_snapshots(catalog, name):
    _append(catalog, name, 6, {**WRITE_ONLY, "compaction.min.file-num": "50", "snapshot.num-retained.min": "2",
                               "snapshot.num-retained.max": "3"})


def tags_and_consumers(catalog, name):
    t = _pk(catalog, name, 1, {"bucket": "1", "consumer.expiration-time": "1 ms"}, partitioned=False)
    t.tags.create("old", time_retained="1 ms")
    t.tags.create("kept")
    t.consumer_manager.record("stale-reader", 1)


def auto_tags(catalog, name):
    _pk(catalog, name, 1, {**WRITE_ONLY, "bucket": "1", "tag.automatic-creation": "process-time",
                           "tag.creation-period": "hourly"}, partitioned=False)


def long_changelogs(catalog, name):
    from paimonflow.core.meta.schema_changes import SetOption

    t = _pk(catalog, name, 8, {**WRITE_ONLY, "bucket": "1", "changelog-producer": "input",
                               "num-sorted-run.compaction-trigger": "10", "snapshot.num-retained.min": "1",
                               "snapshot.num-retained.max": "2", "changelog.num-retained.min": "1",
                               "changelog.num-retained.max": "4"}, partitioned=False)
    t.expire_snapshots()  # snapshots 5 and 6 become long-lived changelogs
    t.alter([SetOption("changelog.num-retained.max", "3"), SetOption("changelog.time-retained", "1 ms")])


def healthy(catalog, name):
    _pk(catalog, name, 1, {"bucket": "1"})


KINDS = [level0, deletion_vectors, changelog_input, postpone, small_files, expired_partitions, many_snapshots,
         tags_and_consumers, auto_tags, long_changelogs, healthy]


def generate(root: Path, count: int) -> Catalog:
    catalog = Catalog(str(root))
    for database in ("db0", "db1", "db2", "db3"):
        catalog.create_database(database)
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        kind(catalog, f"db{i % 4}.{kind.__name__}_{i:04d}")
    time.sleep(0.01)  # the 1 ms time-to-live and expiration times pass
    return catalog


def kind_of(path: str, root: Path) -> str:
    parts = path.split("/")
    name, parent = parts[-1], parts[-2] if len(parts) > 1 else ""
    if parent.startswith("bucket-") or name.endswith((".parquet", ".orc")):
        return "data file"
    if parent == "manifest":
        for prefix, kind in (("manifest-list-", "manifest list"), ("index-manifest-", "index manifest"),
                             ("manifest-", "manifest")):
            if name.startswith(prefix):
                return kind
    if parent == "snapshot":
        return "snapshot" if name.startswith("snapshot-") else "snapshot hint"
    if parent in ("schema", "tag", "consumer", "changelog", "index", "statistics"):
        return parent
    if (root / path).is_dir():
        return "directory listing"
    return "other"


def metadata_only_copy(source: Path, target: Path, scale: int) -> int:
    """Each table's metadata (not its data files) ``scale`` times, under databases c<k>_<db>."""
    copied = 0
    for database in sorted(p for p in source.iterdir() if p.name.endswith(".db")):
        for k in range(scale):
            into = target / f"c{k}_{database.name}"
            for table in sorted(p for p in database.iterdir() if p.is_dir()):
                shutil.copytree(table, into / table.name,
                                ignore=lambda d, names: [n for n in names if n.startswith(("bucket-", "dt="))])
                copied += 1
    return copied


def timed(catalog: Catalog, repeat: int):
    best, plan = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        plan = plan_warehouse(catalog)
        best = min(best, time.perf_counter() - started)
    return best, plan


def machine() -> str:
    model = ""
    with contextlib.suppress(OSError, StopIteration):
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    return f"{model or platform.processor()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--scale", type=int, default=10, help="the metadata-only warehouse: this many times larger")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="plan-warehouse-") as tmp:
        root = Path(tmp) / "wh"
        started = time.perf_counter()
        catalog = generate(root, args.tables)
        print(f"machine: {machine()}")
        print(f"generated {args.tables} tables ({len(KINDS)} kinds) in {time.perf_counter() - started:.1f} s")
        plan_warehouse(catalog)  # repairs missing EARLIEST hints once (a write-only writer leaves none)
        with FileOpens(str(root)) as opens:
            plan = plan_warehouse(catalog)
        kinds: Counter[str] = Counter()
        for path, count in opens.files.items():
            kinds[kind_of(path, root)] += count
        seconds, plan = timed(catalog, args.repeat)
        actions = Counter(a.action for a in plan.actions)
        print(f"planned {len(plan.tables)} tables ({len(plan.skipped)} skipped): {len(plan.actions)} actions "
              f"{dict(sorted(actions.items()))}")
        print(f"planning: {seconds:.3f} s, {100 * seconds / max(len(plan.tables), 1):.3f} s per 100 tables "
              f"(best of {args.repeat})")
        print("files opened by one planning, by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        assert kinds["data file"] == 0, "planning opened data files"
        if args.scale > 1:
            big = Path(tmp) / "metadata-only"
            copied = metadata_only_copy(root, big, args.scale)
            large = Catalog(str(big))
            plan_warehouse(large)
            with FileOpens(str(big)) as opens:
                seconds, plan = timed(large, 1)
            assert not any(kind_of(p, big) == "data file" for p in opens.files)
            print(f"metadata-only warehouse of {copied} tables (no data file on disk): planned {len(plan.tables)} "
                  f"tables, {len(plan.actions)} actions in {seconds:.3f} s, "
                  f"{100 * seconds / max(len(plan.tables), 1):.3f} s per 100 tables")


if __name__ == "__main__":
    main()
