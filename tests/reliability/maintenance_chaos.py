"""The maintenance-race harness (issue 15, part 3): random schedules of maintenance operations,
writers and compactors, run in separate processes, with the invariants checked after every step.

A *schedule* is a sequence of steps. In each step the parent picks two to four operations that
may run together (:data:`EXCLUSIVE` says which may not: rollback and fast-forward rewrite which
snapshot ids exist, so they never run beside a writer of the same branch, as documented in
docs/reliability.md) and hands each to its own worker process, with a random start delay so
the interleavings differ. Some steps SIGKILL one maintenance operation at a random moment.

After the step:

* an operation that failed must have failed with a typed error from :data:`RETRYABLE` (then it is
  run again alone, and the rerun must complete) or from :data:`PRECONDITION` (its target was
  removed by a neighbour: a tag, a branch, a snapshot); anything else fails the harness;
* a killed operation is run again alone and must complete;
* the oracle checks I3 (contiguous, parsable snapshots in every branch), I4 (every file a
  snapshot, tag, branch, long-lived changelog or unchanged consumer needs exists), I5 (the
  latest snapshot is found), I6 (every retained snapshot of every branch and every tag reads
  exactly the rows the model gives for its snapshot id; this is also I1: the model holds every
  acknowledged commit), and I7 (nothing outside the table root changes). At the end, orphan
  removal with window 0 must remove exactly the garbage and leave every needed file (I8).

The model is a list of events per branch, ``(snapshot id, kind, payload)``: upserted rows,
dropped partitions, or a whole state (a branch's first snapshot). The rows at snapshot ``s`` are
the events up to ``s`` applied in order; rollback truncates the list, fast-forward splices the
branch's list in, so a tag or snapshot read is checked against its own id whatever happened since.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import signal
import time
import traceback
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from paimonflow.core import Catalog
from paimonflow.core import errors as E
from paimonflow.core.fs import join
from paimonflow.core.maintenance.branches import BranchManager, open_branch
from paimonflow.core.meta.changelogs import ChangelogManager
from paimonflow.core.read.stream import StreamingScan
from paimonflow.core.table import Table
from tests.reliability import chaos
from tests.reliability.oracle import garbage, missing_needed_files, needed_files, snapshot_ids_on_storage

IDENTIFIER = "db.t"
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                    pa.field("v", pa.string())])
OLD_DAYS = ("2020-01-01", "2020-01-02")  # partition expiry (30 days) removes these
NEW_DAYS = ("2999-12-30", "2999-12-31")
OPTIONS = {
    "bucket": "2", "write-only": "true", "changelog-producer": "input",
    # a long-lived changelog outlives its snapshot, so changelog expiry has its own files to delete
    "changelog.num-retained.min": "3", "changelog.num-retained.max": "6",
    "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
    "tag.automatic-creation": "process-time", "tag.creation-period": "daily", "tag.num-retained-max": "3",
    "partition.expiration-time": "30 d", "partition.timestamp-formatter": "yyyy-MM-dd",
    "commit.max-retries": "300", "commit.min-retry-wait": "5 ms", "commit.max-retry-wait": "200 ms",
}
#: typed failures that a concurrent neighbour may cause; the operation is then run again alone
RETRYABLE = ("MaintenanceConflictError", "TagTargetExpiringError", "CommitConflictError",
             # orphan removal met a branch half created (or half deleted) and deleted nothing
             "OrphanCleanAbortedError")
#: typed failures meaning the operation's target was removed by a neighbour (nothing to redo)
PRECONDITION = ("TagNotFoundError", "BranchNotFoundError", "TagAlreadyExistsError", "BranchAlreadyExistsError")
#: operations whose target may legitimately be a snapshot a neighbour removed
SNAPSHOT_TARGETS = ("rollback", "tag_create", "reader", "branch_create", "fast_forward")
#: operations that commit to the main branch, and those that must not run beside them
MAIN_WRITERS = frozenset({"write", "compact", "partition_expire"})
EXCLUSIVE = frozenset({"rollback", "fast_forward"})
#: orphan removal's window in the race: longer than any maintenance step keeps a temp file
ORPHAN_WINDOW_MILLIS = 10_000
#: maintenance that may be SIGKILLed mid-way (a killed tag creation is a documented limit)
KILLABLE = frozenset({"expire", "expire_changelogs", "rollback", "fast_forward", "tag_delete", "branch_delete",
                      "orphans"})
TRACE = bool(os.environ.get("PAIMONFLOW_CHAOS_TRACE"))  # print every step's operations and outcomes
OPERATIONS = ("write", "write", "write", "compact", "expire", "expire_changelogs", "partition_expire",
              "tag_create", "tag_create", "tag_delete", "tag_rename", "auto_tag", "rollback",
              "branch_create", "branch_delete", "branch_write", "fast_forward", "orphans", "reader",
              "consumer_expire")


# -- the worker side ---------------------------------------------------------------------------


def open_table(warehouse: str, storage_options: Mapping[str, str] | None, branch: str | None = None) -> Table:
    table = chaos.open_table(warehouse, storage_options, IDENTIFIER)
    return open_branch(table, branch) if branch else table


def run_operation(warehouse: str, storage_options: Mapping[str, str] | None, op: Mapping[str, object]) -> dict:
    """Run one operation as a user would (the public API, fresh table handle) and say what it did."""
    kind, args = op["kind"], op.get("args", {})
    table = open_table(warehouse, storage_options, args.get("branch"))
    if kind in ("write", "branch_write"):
        data = pa.table({"dt": [r[0] for r in args["rows"]], "k": [r[1] for r in args["rows"]],
                         "v": [args["value"]] * len(args["rows"])}, schema=SCHEMA)
        result = table.write(data, commit_user=args["user"], commit_identifier=args["identifier"])
        return {"snapshot_id": result.snapshot_id}
    if kind == "compact":
        return {"snapshot_id": table.compact(full=True).snapshot_id}
    if kind == "expire":
        if args.get("unsafe"):  # the negative control: an expiry that does not see the tags
            table.tag_manager.list_tags = lambda: {}
        result = table.expire_snapshots(retain_min=args["retain_min"], retain_max=args["retain_min"],
                                        older_than_millis=0)
        return {"expired": result.expired_snapshots}
    if kind == "expire_changelogs":
        return {"expired": len(table.expire_changelogs(retain_min=1, retain_max=2, older_than_millis=0).changelog_ids)}
    if kind == "partition_expire":
        result = table.expire_partitions(commit_user="partition-expirer")
        return {"snapshot_id": result.snapshot_id, "dropped": sorted(p["dt"] for p in result.expired)}
    if kind == "tag_create":
        tag = table.tags.create(args["name"], snapshot_id=args.get("snapshot_id"))
        return {"snapshot_id": tag.id}
    if kind == "tag_delete":
        table.tags.delete(args["name"])
        return {}
    if kind == "tag_rename":
        table.tags.rename(args["name"], args["new"])
        return {}
    if kind == "auto_tag":
        result = table.run_auto_tag(clock=lambda: args["now"])
        return {"created": [list(c) for c in result.created], "deleted": [list(d) for d in result.deleted]}
    if kind == "rollback":
        done = table.rollback(snapshot_id=args.get("snapshot_id"), tag=args.get("tag"))
        return {"target": done.target}
    if kind == "branch_create":
        branch = table.branches.create(args["name"], tag=args["tag"])
        return {"snapshot_id": branch.snapshot_manager.latest_id()}
    if kind == "branch_delete":
        table.branches.delete(args["name"])
        return {}
    if kind == "fast_forward":
        done = table.branches.fast_forward(args["name"])
        return {"from": done.from_snapshot, "copied": list(done.copied_snapshots)}
    if kind == "orphans":
        plan = table.remove_orphan_files(older_than_millis=args.get("window", ORPHAN_WINDOW_MILLIS))
        return {"deleted": len(plan.orphans)}
    if kind == "reader":  # a streaming reader that keeps its progress under a consumer id
        scan = StreamingScan(table, mode="from-snapshot", snapshot_id=table.snapshot_manager.earliest_id() or 1,
                             consumer_id=args["consumer"])
        batch = scan.poll(max_snapshots=3)
        scan.checkpoint()
        return {"rows": 0 if batch is None else batch.rows.num_rows, "next": scan.next_snapshot}
    if kind == "consumer_expire":
        return {"expired": len(table.consumer_manager.expire(0))}
    raise AssertionError(f"unknown operation {kind!r}")


def worker_main(warehouse: str, storage_options: Mapping[str, str] | None, conn) -> None:
    """One worker process: run the operations the parent sends, answer with the outcome."""
    while True:
        op = conn.recv()
        if op is None:
            return
        time.sleep(op.get("delay", 0.0))
        started = time.monotonic()
        try:
            outcome = {"ok": True, **run_operation(warehouse, storage_options, op)}
        except E.PaimonflowError as exc:
            outcome = {"ok": False, "error": type(exc).__name__, "message": str(exc)}
        except BaseException as exc:  # reported to the parent, which fails the run
            outcome = {"ok": False, "error": type(exc).__name__, "message": str(exc),
                       "traceback": traceback.format_exc(), "untyped": True}
        outcome["seconds"] = time.monotonic() - started
        conn.send(outcome)


class Worker:
    def __init__(self, ctx, warehouse: str, storage_options: Mapping[str, str] | None) -> None:
        self._args = (warehouse, dict(storage_options) if storage_options else None)
        self._ctx = ctx
        self.start()

    def start(self) -> None:
        self.conn, child = self._ctx.Pipe()
        self.process = self._ctx.Process(target=worker_main, args=(*self._args, child), daemon=True)
        self.process.start()
        child.close()

    def send(self, op: Mapping[str, object]) -> None:
        self.conn.send(dict(op))

    def result(self, timeout: float = 300.0) -> dict:
        if not self.conn.poll(timeout):
            raise AssertionError(f"a worker did not answer in {timeout} s")
        return self.conn.recv()

    def kill_and_restart(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.join()
        self.conn.close()
        self.start()

    def stop(self) -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            self.conn.send(None)
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


# -- the model -----------------------------------------------------------------------------------


Rows = dict[tuple[str, int], str]


def rows_at(events: list[tuple[int, str, object]], snapshot_id: int) -> Rows:
    state: Rows = {}
    for sid, kind, payload in sorted(events, key=lambda e: e[0]):
        if sid > snapshot_id:
            break
        if kind == "rows":
            state.update(payload)
        elif kind == "drop":
            state = {key: v for key, v in state.items() if key[0] not in payload}
        else:  # "set": a branch's first snapshot
            state = dict(payload)
    return state


def read_rows(table: Table, **at) -> Rows:
    data = table.read(columns=["dt", "k", "v"], **at)
    return dict(zip(zip(data.column("dt").to_pylist(), data.column("k").to_pylist(), strict=True),
                    data.column("v").to_pylist(), strict=True))


@dataclass
class Counts:
    steps: int = 0
    operations: Counter = field(default_factory=Counter)
    interleavings: int = 0  # pairs of operations that ran at the same time
    kills: int = 0
    refused: Counter = field(default_factory=Counter)  # typed failures, by error
    reruns: int = 0
    checks: int = 0

    def as_record(self) -> dict[str, int]:
        return {"steps": self.steps, "maintenance_operations": sum(self.operations.values()),
                "interleavings": self.interleavings, "kills": self.kills, "typed_refusals": sum(self.refused.values()),
                "reruns": self.reruns, "invariant_checks": self.checks}


class Violation(AssertionError):
    pass


# -- the parent: schedules, model, oracle ----------------------------------------------------------


class Harness:
    """Runs random schedules against one table; :meth:`step` runs one step and checks it."""

    def __init__(self, warehouse: str, storage_options: Mapping[str, str] | None, seed: int, *, workers: int = 4,
                 kill_rate: float = 0.1, max_parallel: int = 3) -> None:
        self.warehouse, self.storage_options = warehouse, dict(storage_options) if storage_options else None
        self.rng = random.Random(seed)
        self.seed, self.kill_rate, self.max_parallel = seed, kill_rate, max_parallel
        self.counts = Counts()
        self.events: dict[str, list[tuple[int, str, object]]] = {"main": []}
        self._before = self.events  # the model as a step began (see :meth:`step`)
        self._uid = 0
        self._now = 1_900_000_000.0  # the auto-tag clock: one day further at every run
        catalog = Catalog(warehouse, storage_options=self.storage_options)
        catalog.create_database("db", ignore_if_exists=True)
        catalog.create_table(IDENTIFIER, SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], options=OPTIONS)
        self.table = self._open()
        self._outside = self._outside_listing()
        ctx = multiprocessing.get_context("spawn")
        self.workers = [Worker(ctx, warehouse, self.storage_options) for _ in range(workers)]
        self._consumers: dict[str, int] = {}
        for _ in range(3):  # a base to work on
            op = self._write_op("main")
            self._apply(op, {"ok": True, **run_operation(warehouse, self.storage_options, op)})

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()

    def _open(self, branch: str | None = None) -> Table:
        return open_table(self.warehouse, self.storage_options, branch)

    def _next(self, prefix: str) -> str:
        self._uid += 1
        return f"{prefix}{self._uid}"

    # -- choosing operations ------------------------------------------------------------------

    def _write_op(self, branch: str, slot: int = 0) -> dict:
        """An upsert of a few keys. Concurrent writers of one bucket number their rows from the
        same base, so which of two racing upserts of one key wins is not defined (in Paimon
        either): writers in one step get disjoint keys (``slot``)."""
        self._uid += 1
        rows = sorted({(self.rng.choice(OLD_DAYS + NEW_DAYS), 4 * self.rng.randrange(6) + slot) for _ in range(5)})
        # one commit user per write (as the operators do: one per task run): identifiers of one
        # user must grow, so two users racing under one name would drop each other's commits
        args = {"rows": rows, "value": f"u{self._uid}", "user": f"writer-{self._uid}", "identifier": 1}
        if branch != "main":
            return {"kind": "branch_write", "args": {**args, "branch": branch}}
        return {"kind": "write", "args": args}

    def _choose(self, kind: str, chosen: list[dict], tags: list[str], branches: list[str],
                ids: list[int]) -> dict | None:
        rng = self.rng
        slot = sum(c["kind"] in ("write", "branch_write") for c in chosen)
        if kind == "write":
            return self._write_op("main", slot)
        if kind in ("compact", "partition_expire", "expire_changelogs", "orphans", "consumer_expire"):
            return {"kind": kind, "args": {}}
        if kind == "expire":
            return {"kind": kind, "args": {"retain_min": rng.choice((1, 1, 2, 3))}}
        if kind == "tag_create":
            on = rng.choice(ids) if ids and rng.random() < 0.5 else None
            return {"kind": kind, "args": {"name": self._next("t"), "snapshot_id": on}}
        if kind in ("tag_delete", "tag_rename"):
            if not tags:
                return None
            return {"kind": kind, "args": {"name": rng.choice(tags), "new": self._next("r")}}
        if kind == "auto_tag":
            self._now += 86_400
            return {"kind": kind, "args": {"now": self._now}}
        if kind == "rollback":
            older = [i for i in ids if i < max(ids, default=0)]
            if tags and rng.random() < 0.4:
                return {"kind": kind, "args": {"tag": rng.choice(tags)}}
            return {"kind": kind, "args": {"snapshot_id": rng.choice(older)}} if older else None
        if kind == "branch_create":
            return {"kind": kind, "args": {"name": self._next("b"), "tag": rng.choice(tags)}} if tags else None
        if kind in ("branch_delete", "branch_write", "fast_forward"):
            if not branches:
                return None
            name = rng.choice(branches)
            return self._write_op(name, slot) if kind == "branch_write" else {"kind": kind, "args": {"name": name}}
        if kind == "reader":
            return {"kind": kind, "args": {"consumer": f"c{rng.randrange(2)}"}}
        raise AssertionError(kind)

    def _compatible(self, chosen: list[dict], op: dict) -> bool:
        kinds = {c["kind"] for c in chosen}
        if op["kind"] in kinds and op["kind"] not in ("write", "tag_create"):
            return False  # one of each maintenance kind per step (auto-tag's clock, one rollback...)
        new_writes = op["kind"] in MAIN_WRITERS or op["kind"] == "branch_write"
        if op["kind"] in EXCLUSIVE and (kinds & (MAIN_WRITERS | {"branch_write"} | EXCLUSIVE)):
            return False
        if new_writes and kinds & EXCLUSIVE:
            return False
        # orphan removal's window is for writers (docs/reliability.md): not beside fresh data files
        if op["kind"] == "orphans" and kinds & (MAIN_WRITERS | {"branch_write"}):
            return False
        return not (new_writes and "orphans" in kinds)

    def plan_step(self) -> list[dict]:
        table = self.table
        tags = sorted(table.tag_manager.list_tags())
        branches = BranchManager(table).list()
        ids = snapshot_ids_on_storage(table)
        chosen: list[dict] = []
        want = self.rng.randint(2, self.max_parallel)
        for _ in range(20):
            if len(chosen) >= want:
                break
            kind = self.rng.choice(OPERATIONS)
            if self.rng.random() < 0.25:  # now and then the kind run least so far: every kind runs
                kind = min(set(OPERATIONS), key=lambda k: (self.counts.operations[k], k))
            op = self._choose(kind, chosen, tags, branches, ids)
            if op is not None and self._compatible(chosen, op):
                chosen.append(op)
        return chosen

    # -- running a step ------------------------------------------------------------------------

    def step(self, ops: list[dict] | None = None) -> list[tuple[dict, dict]]:
        ops = self.plan_step() if ops is None else ops
        self.counts.steps += 1
        # a branch made in this step starts from main as it was before the step (a rollback in
        # the same step may remove the tag after the branch was made from it)
        self._before = {name: list(events) for name, events in self.events.items()}
        # consumers that protect a retained snapshot now must still protect it after the step (one
        # recorded beside an expiry may point below the earliest already: Paimon's reader race)
        earliest = self.table.snapshot_manager.earliest_id()
        self._consumers = {cid: c.next_snapshot for cid, c in self.table.consumer_manager.list().items()
                           if earliest is not None and c.next_snapshot >= earliest}
        killable = [i for i, op in enumerate(ops) if op["kind"] in KILLABLE]
        victim = self.rng.choice(killable) if killable and self.rng.random() < self.kill_rate else None
        for i, op in enumerate(ops):
            self.workers[i].send({**op, "delay": self.rng.uniform(0, 0.05)})
        if victim is not None:
            time.sleep(self.rng.uniform(0.0, 0.25))
            self.workers[victim].kill_and_restart()
            self.counts.kills += 1
        outcomes = []
        for i, op in enumerate(ops):
            outcome = {"ok": False, "error": "Killed"} if i == victim else self.workers[i].result()
            outcomes.append((op, outcome))
        self.counts.interleavings += len(ops) * (len(ops) - 1) // 2
        if TRACE:
            for op, outcome in outcomes:
                print(f"  step {self.counts.steps}: {op['kind']} {op.get('args')} -> "
                      f"{ {k: v for k, v in outcome.items() if k not in ('traceback', 'seconds')} }")
        # a killed operation is rerun first: its rerun is what clears what it left (an expiry's
        # marker, a rollback's), which a refused neighbour's rerun may be waiting for
        for op, outcome in sorted(outcomes, key=lambda o: o[1].get("error") != "Killed"):
            self.counts.operations[op["kind"]] += 1
            self._settle(op, outcome, ops)
        if TRACE:
            manager = self._open().snapshot_manager
            print(f"  after step {self.counts.steps}: ids {snapshot_ids_on_storage(self._open())}, "
                  f"EARLIEST {manager._read_hint('EARLIEST')}, LATEST {manager._read_hint('LATEST')}")
        self.check(f"step {self.counts.steps} {[o['kind'] for o in ops]}")
        return outcomes

    def _settle(self, op: dict, outcome: dict, ops: list[dict]) -> None:
        """Record a successful operation in the model; rerun one that was refused or killed."""
        if outcome.get("untyped"):
            raise Violation(f"{op['kind']} {op.get('args')} failed untyped beside {[o['kind'] for o in ops]}:\n"
                            f"{outcome['traceback']}")
        if outcome["ok"]:
            self._apply(op, outcome)
            return
        error = outcome["error"]
        self.counts.refused[error] += 1
        if self._precondition(op, error):
            return
        if error not in RETRYABLE and error != "Killed":
            raise Violation(f"{op['kind']} {op.get('args')} failed with {error}: {outcome['message']} "
                            f"beside {[o['kind'] for o in ops]}")
        self.counts.reruns += 1
        self.workers[0].send(op)
        again = self.workers[0].result()
        if TRACE:
            print(f"  rerun: {op['kind']} -> { {k: v for k, v in again.items() if k not in ('traceback', 'seconds')} }")
        if not again["ok"] and not self._precondition(op, again["error"]):
            raise Violation(f"rerun of {op['kind']} {op.get('args')} (first {error}) did not complete: "
                            f"{again['error']}: {again['message']}{again.get('traceback', '')}")
        if again["ok"]:
            self._apply(op, again)
        elif error == "Killed" and op["kind"] in ("branch_delete", "tag_delete"):
            self._apply(op, {"ok": True})  # "not found" on the rerun: the killed run had finished

    @staticmethod
    def _precondition(op: dict, error: str) -> bool:
        """Whether ``error`` says the operation's target went away (nothing to redo)."""
        return (error in PRECONDITION or (error == "SnapshotNotFoundError" and op["kind"] in SNAPSHOT_TARGETS)
                # main was rolled back below the branch's start: the fast-forward would leave a gap
                or (error == "InvalidArgumentError" and op["kind"] == "fast_forward"))

    def _apply(self, op: dict, outcome: dict) -> None:
        kind, args = op["kind"], op.get("args", {})
        if kind in ("write", "branch_write"):
            branch = args.get("branch", "main")
            rows = {(dt, k): args["value"] for dt, k in args["rows"]}
            if outcome["snapshot_id"] is not None and branch in self.events:
                event = (outcome["snapshot_id"], "rows", rows)
                if event not in self.events[branch]:  # an exactly-once rerun reports the same snapshot
                    self.events[branch].append(event)
        elif kind == "partition_expire" and outcome["snapshot_id"] is not None:
            self.events["main"].append((outcome["snapshot_id"], "drop", frozenset(outcome["dropped"])))
        elif kind == "rollback":
            self.events["main"] = [e for e in self.events["main"] if e[0] <= outcome["target"]]
        elif kind == "branch_create":
            tag_id = outcome["snapshot_id"]
            self.events[args["name"]] = [(tag_id, "set", rows_at(self._before["main"], tag_id))]
        elif kind == "branch_delete":
            self.events.pop(args["name"], None)
        elif kind == "fast_forward":
            # the branch as before the step: a deletion in the same step may have come after the
            # fast-forward read it (branch writers never run beside a fast-forward)
            branch = self._before[args["name"]]
            self.events["main"] = [e for e in self.events["main"] if e[0] < outcome["from"]] + list(branch)

    # -- the oracle ----------------------------------------------------------------------------

    def _outside_listing(self) -> set[str]:
        """I7: what exists beside the table (the warehouse root and the database directory)."""
        io = self.table.file_io
        root = self.warehouse.rstrip("/")
        out = {s.path.rstrip("/") for s in io.list_dir(root)}
        out |= {s.path.rstrip("/") for s in io.list_dir(join(root, "db.db"))}
        return out

    def check(self, context: str) -> None:
        self.counts.checks += 1
        table = self.table = self._open()
        problems: list[str] = []
        if self._outside_listing() != self._outside:
            problems.append(f"I7: the warehouse outside the table changed: {self._outside_listing() ^ self._outside}")
        branches = ["main", *BranchManager(table).list()]
        if set(branches) != set(self.events):
            problems.append(f"branches on storage {sorted(branches)} but the model has {sorted(self.events)}")
        for name in branches:
            view = table if name == "main" else self._open(name)
            problems += [f"{name}: {p}" for p in self._check_branch(view, self.events.get(name, []))]
        earliest = table.snapshot_manager.earliest_id()
        latest = table.snapshot_manager.latest_id()
        for cid, next_snapshot in self._consumers.items():  # consumers the step did not move
            now = table.consumer_manager.get(cid)
            if now is not None and now.next_snapshot == next_snapshot and latest is not None \
                    and next_snapshot <= latest and earliest is not None and next_snapshot < earliest:
                problems.append(f"I4: consumer {cid} needs snapshot {next_snapshot} but the earliest is {earliest}")
        if problems:
            raise Violation(f"seed {self.seed}, {context}:\n  " + "\n  ".join(problems))

    def _check_branch(self, table: Table, events: list[tuple[int, str, object]]) -> list[str]:
        problems = []
        ids = snapshot_ids_on_storage(table)
        if ids and ids != list(range(ids[0], ids[-1] + 1)):
            problems.append(f"I3: snapshot ids are not contiguous: {ids}")
        latest = table.snapshot_manager.latest_id()
        if (ids[-1] if ids else None) != latest:
            problems.append(f"I5: latest is {latest}, storage has {ids[-1:] or 'none'}")
        missing = missing_needed_files(table)
        if missing:
            problems.append(f"I4: {len(missing)} needed files missing, e.g. {missing[:3]}")
        changelogs = ChangelogManager(table.file_io, table.path, table.branch)
        for cid in changelogs.list_ids():
            changelog = changelogs.try_changelog(cid)
            if changelog is None:
                continue
            try:
                table.manifest_io.changelog_entries(changelog)
            except E.PaimonflowError as exc:
                problems.append(f"I4: long-lived changelog {cid} does not read: {exc}")
        if problems:
            return problems
        sample = ids if len(ids) <= 4 else [ids[0], *self.rng.sample(ids[1:-1], 2), ids[-1]]
        for sid in sample:
            got, want = read_rows(table, snapshot_id=sid), rows_at(events, sid)
            if got != want:
                problems.append(f"I6: snapshot {sid} reads {len(got)} rows, the model has {len(want)}: "
                                f"{_diff(got, want)}")
        for name, tag in table.tag_manager.list_tags().items():
            got, want = read_rows(table, tag=name), rows_at(events, tag.id)
            if got != want:
                problems.append(f"I6: tag {name} (snapshot {tag.id}) reads {len(got)} rows, the model has "
                                f"{len(want)}: {_diff(got, want)}")
        return problems

    def finish(self) -> None:
        """I8: orphan removal (window 0, nothing running) removes exactly the garbage."""
        before = garbage(self.table)
        needed, _ = needed_files(self.table)
        self.table.remove_orphan_files(older_than_millis=0)
        after = garbage(self.table)
        if after:
            raise Violation(f"I8: orphan removal left garbage: {sorted(after)[:5]}")
        lost = [p for p in needed if not self.table.file_io.exists(p)]
        if lost:
            raise Violation(f"I8: orphan removal deleted needed files: {lost[:5]}")
        self.counts.operations["final_orphans"] += 1
        self.check("after the final orphan removal")
        self.garbage_collected = len(before)


def _diff(got: Rows, want: Rows) -> str:
    extra = sorted(set(got.items()) - set(want.items()))[:3]
    lacking = sorted(set(want.items()) - set(got.items()))[:3]
    return f"unexpected {extra}, lacking {lacking}"
