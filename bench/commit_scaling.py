"""Does a commit cost the same whatever the table's history? Commits, plans and the
exactly-once look-up at 10, 100, 1,000 and 10,000 live files and snapshots.

    .venv/bin/python bench/commit_scaling.py [--sizes 10,100,1000,10000] [--reps 21]
    .venv/bin/python bench/commit_scaling.py --retained 1,1000,10000 [--reps 15] [--grown DIR]

``--grown DIR`` keeps the grown table of ``--retained`` in ``DIR`` (made on the first run, reused
by runs within 50 minutes of it, while its snapshots are younger than ``snapshot.time-retained``:
growing 10,000 upserts takes most of a run).

The table: primary key ``(id, dt)``, partitioned by ``dt``, 4 buckets, ``write-only`` (nothing
is compacted, so every commit's file stays live). It grows by 100-row commits of an Airflow-like
writer (commit user ``hourly-task``, growing identifiers), each into one bucket of the day's
partition (a new ``dt`` every 100 commits): after ``n`` commits it has ``n`` snapshots and ``n``
live files over ``ceil(n / 100)`` partitions. A second user (``daily-task``) commits every 50th
snapshot.

At each size, medians (and means, which include the manifest merges every 30 commits) of:

* ``commit`` (measured last, so the table grows by ``--reps`` files from the size on): a fresh ``Table`` object (``catalog.get_table``) writes 100 rows with the next
  identifier: exactly-once check, restore of the written bucket, file, manifests, snapshot;
* ``plan``: every live file; ``plan 1 dt`` / ``plan 10 dt``: a filter on 1 and 10 partitions;
* ``look-up``: ``already_committed`` for the user that just committed (a retry), for the user
  that committed up to 50 snapshots ago, and for a user that never committed (every snapshot is
  read: the cost with no hint, as in Paimon).

Nothing is cached between calls but what the operating system caches of the files.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

from paimonflow.core import Catalog
from paimonflow.core.data.bucket import bucket_ids
from paimonflow.core.predicate import col

ROWS_PER_COMMIT = 100
COMMITS_PER_PARTITION = 100
BUCKETS = 4
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])


class Writer:
    """Makes 100-row commits, each into one bucket of the current day's partition."""

    def __init__(self, catalog: Catalog, name: str) -> None:
        self.catalog, self.name = catalog, name
        ids = np.arange(8_000_000, dtype=np.int64)
        buckets = bucket_ids([pa.array(ids)], BUCKETS)
        self.by_bucket = [ids[buckets == b] for b in range(BUCKETS)]
        self.commits = 0
        self.rng = np.random.default_rng(7)

    def day(self, commit: int) -> str:
        return f"day-{commit // COMMITS_PER_PARTITION:05d}"

    def rows(self) -> pa.Table:
        n = self.commits
        bucket, start = n % BUCKETS, (n // BUCKETS) * ROWS_PER_COMMIT
        ids = self.by_bucket[bucket][start:start + ROWS_PER_COMMIT]
        return pa.table({"id": ids, "dt": [self.day(n)] * len(ids), "amount": self.rng.random(len(ids))},
                        schema=SCHEMA)

    def commit(self, user: str = "hourly-task") -> None:
        table = self.catalog.get_table(self.name)
        table.write(self.rows(), commit_user=user, commit_identifier=self.commits + 1)
        self.commits += 1

    def grow_to(self, commits: int) -> None:
        while self.commits < commits:
            self.commit("daily-task" if self.commits % 50 == 49 else "hourly-task")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(writer: Writer, reps: int) -> dict[str, float]:
    catalog, name = writer.catalog, writer.name
    out: dict[str, float] = {}
    table = catalog.get_table(name)
    live = sum(len(s.files) for s in table.plan())
    snapshots = table.latest_snapshot().id
    days = [writer.day(c) for c in range(0, writer.commits, COMMITS_PER_PARTITION)][-10:]

    def med(fn) -> float:
        return statistics.median(timed(fn) for _ in range(reps))

    out["plan"] = med(lambda: catalog.get_table(name).plan())
    out["plan_1_dt"] = med(lambda: catalog.get_table(name).plan(filter=col("dt") == days[-1]))
    out["plan_10_dt"] = med(lambda: catalog.get_table(name).plan(filter=col("dt").isin(days)))
    out["partitions_in_10_dt_plan"] = len(days)
    latest = catalog.get_table(name).latest_snapshot()
    out["lookup_retry"] = med(lambda: catalog.get_table(name).new_commit("hourly-task").already_committed(
        latest.commit_identifier))
    out["lookup_50_back"] = med(lambda: catalog.get_table(name).new_commit("daily-task").already_committed(
        writer.commits + 1))
    out["lookup_never"] = statistics.median(
        timed(lambda: catalog.get_table(name).new_commit("nobody").already_committed(1)) for _ in range(3))
    out["live_files"], out["snapshots"] = live, snapshots
    commits = [timed(writer.commit) for _ in range(reps)]  # from the size on: it grows by reps files
    out["commit_median"], out["commit_mean"] = statistics.median(commits), statistics.fmean(commits)
    return out


def retained(counts: list[int], reps: int, grown_dir: str | None = None) -> None:
    """The commit beside a long history under default options. One primary-key table (4 buckets,
    default options: writers compact as Paimon's do, nothing expires within
    ``snapshot.time-retained``) is grown by ``max(counts)`` 100-row upserts; a copy per count then
    keeps only that many snapshots (an expiry down to it), so every copy holds the same live files
    and manifests and differs only in its history. Then ``reps`` rounds of one more upsert into
    each copy in turn (interleaved, so the machine's drift falls on every side alike); medians."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())])
    rng = np.random.default_rng(11)

    def upsert(catalog: Catalog) -> None:
        ids = rng.choice(100_000, ROWS_PER_COMMIT, replace=False)
        catalog.get_table("b.t").write(pa.table({"id": ids, "v": rng.random(ROWS_PER_COMMIT)}, schema=schema))

    with tempfile.TemporaryDirectory() as root:
        source = grown_dir or f"{root}/grown"
        marker = f"{source}/.grown-by-{max(counts)}-upserts"
        # reused only while its snapshots are younger than snapshot.time-retained (1 h): older ones
        # would expire after each measured commit, which then measures an expiry
        if not os.path.exists(marker) or time.time() - os.path.getmtime(marker) > 50 * 60:
            shutil.rmtree(source, ignore_errors=True)
            grown = Catalog(source)
            grown.create_database("b")
            grown.create_table("b.t", schema, primary_keys=["id"], options={"bucket": "4"})
            started = time.perf_counter()
            for _ in range(max(counts)):
                upsert(grown)
            print(json.dumps({"upserts": max(counts),
                              "snapshots": len(grown.get_table("b.t").snapshot_manager.list_ids()),
                              "build_seconds": round(time.perf_counter() - started, 1)}), file=sys.stderr, flush=True)
            open(marker, "w").close()
        catalogs = []
        for count in counts:
            shutil.copytree(source, f"{root}/wh-{count}", ignore=shutil.ignore_patterns(".grown-by-*"))
            catalog = Catalog(f"{root}/wh-{count}")
            table = catalog.get_table("b.t")
            while len(table.snapshot_manager.list_ids()) > count:
                table.expire_snapshots(retain_min=count, retain_max=count, older_than_millis=0, max_deletes=1_000_000)
            catalogs.append(catalog)
        times: list[list[float]] = [[] for _ in counts]
        for _ in range(reps):
            for i, catalog in enumerate(catalogs):
                times[i].append(timed(lambda catalog=catalog: upsert(catalog)))
        print(f"Machine: {platform.machine()}, Python {platform.python_version()}; a 100-row upsert "
              f"(post-commit maintenance included) into copies of one table grown by {max(counts):,} upserts, "
              f"each keeping N snapshots; medians of {reps} interleaved commits, milliseconds")
        print("| retained snapshots | commit (median) | commit (mean) | vs the first |")
        print("|---|---|---|---|")
        base = statistics.median(times[0])
        for count, spent in zip(counts, times, strict=True):
            print(f"| {count:,} | {statistics.median(spent) * 1000:.1f} | {statistics.fmean(spent) * 1000:.1f} "
                  f"| {statistics.median(spent) / base:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,100,1000,10000")
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--retained", help="instead: the commit beside N retained snapshots, e.g. 1,1000,10000")
    parser.add_argument("--grown", help="with --retained: keep (and reuse) the grown table in this directory")
    args = parser.parse_args()
    if args.retained:
        retained([int(n) for n in args.retained.split(",")], args.reps, args.grown)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as warehouse:
        catalog = Catalog(warehouse)
        catalog.create_database("b")
        catalog.create_table("b.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": str(BUCKETS), "write-only": "true"})
        writer = Writer(catalog, "b.t")
        results = []
        started = time.perf_counter()
        for size in sizes:
            writer.grow_to(size)
            row = {"size": size, **measure(writer, args.reps)}
            row["build_seconds"] = round(time.perf_counter() - started, 1)
            results.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(results))
        return
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}; medians of {args.reps} "
          "(look-up for a user that never committed: 3), milliseconds")
    print("| live files / snapshots | commit (median) | commit (mean) | plan | plan 1 dt | plan 10 dt "
          "| look-up: retry | look-up: 50 back | look-up: never committed |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ms = {k: f"{v * 1000:.1f}" for k, v in r.items() if isinstance(v, float)}
        print(f"| {r['live_files']:,} / {r['snapshots']:,} | {ms['commit_median']} | {ms['commit_mean']} "
              f"| {ms['plan']} | {ms['plan_1_dt']} | {ms['plan_10_dt']} | {ms['lookup_retry']} "
              f"| {ms['lookup_50_back']} | {ms['lookup_never']} |")
    first = next((r for r in results if r["size"] == 100), results[0])
    last = results[-1]
    print(f"\ncommit at {last['size']:,} / commit at {first['size']:,}: "
          f"{last['commit_median'] / first['commit_median']:.2f}x (median), "
          f"{last['commit_mean'] / first['commit_mean']:.2f}x (mean)")


if __name__ == "__main__":
    main()
