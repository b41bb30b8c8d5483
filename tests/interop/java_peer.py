"""Drive Apache Paimon's Java core (0.9) — the second interop peer — through one long-lived JVM.

`make java-peer` (run by `make test`) takes the jar bundling Paimon 0.9's Java core from pypaimon
0.2.0's source distribution on PyPI, Hadoop's client jars from PySpark's wheel, and compiles
``tests/interop/java/PaimonPeer.java`` against them into ``build/java-peer``. The JVM starts once per
test session (a few seconds) and then answers batches of operations in milliseconds.

Data goes both ways as Arrow IPC stream files; rows read by Java carry their row kind.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa

from paimonflow.core.data.types import from_arrow, type_to_json
from paimonflow.core.meta.schema import Schema

REPO = Path(__file__).resolve().parents[2]
PEER_DIR = Path(os.environ.get("PAIMONFLOW_JAVA_PEER", REPO / "build" / "java-peer"))
KIND_COLUMN = "_row_kind"
KIND_NAMES = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}
PAIMON_JAVA_VERSION = "0.9.0"


class JavaPeerError(AssertionError):
    """Java Paimon failed an operation (the message carries its exception and stack)."""

    def __init__(self, op: str, error_type: str, message: str, trace: str) -> None:
        super().__init__(f"Java Paimon {op} failed: {error_type}: {message}\n{trace[-3000:]}")
        self.op = op
        self.error_type = error_type
        self.java_message = message


def peer_available() -> bool:
    return (PEER_DIR / "classpath").exists() and (PEER_DIR / "classes" / "PaimonPeer.class").exists()


class JavaPeer:
    """One JVM running ``PaimonPeer``; queue operations, then :meth:`run` them in one round trip."""

    def __init__(self, workdir: Path) -> None:
        if not peer_available():
            raise RuntimeError(f"the Java peer is not built in {PEER_DIR}: run `make java-peer` (make test does)")
        classpath = (PEER_DIR / "classpath").read_text().strip()
        self._workdir = Path(workdir)
        self._workdir.mkdir(parents=True, exist_ok=True)
        self._stderr = tempfile.TemporaryFile(dir=self._workdir)  # noqa: SIM115 - lives as long as the JVM
        self._proc = subprocess.Popen(
            ["java", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/java.lang=ALL-UNNAMED",
             "--add-opens=java.base/java.util=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
             "-Dlog4j.configuration=file:" + str(PEER_DIR / "log4j.properties"),
             "-Dlog4j2.configurationFile=" + str(PEER_DIR / "log4j2.properties"),
             "-cp", f"{PEER_DIR / 'classes'}:{classpath}", "PaimonPeer"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1,
            cwd=self._workdir)
        self._lock = threading.Lock()
        self._ops: list[dict[str, Any]] = []
        self._reads: list[Path] = []
        self._n = 0
        #: the results of the last :meth:`run`, one per operation (e.g. a write's ``snapshot_id``)
        self.last_results: list[dict[str, Any]] = []

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._stderr.close()

    # -- queueing -----------------------------------------------------------------------------

    def _path(self, stem: str) -> Path:
        self._n += 1
        return self._workdir / f"{stem}-{self._n}.arrow"

    def _ipc(self, table: pa.Table) -> str:
        path = self._path("in")
        with pa.OSFile(str(path), "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
            w.write_table(table)
        return str(path)

    def _op(self, op: str, warehouse, identifier: str, **fields: Any) -> None:
        self._ops.append({"op": op, "warehouse": str(warehouse), "identifier": identifier, **fields})

    def create_table(self, warehouse, identifier: str, schema: pa.Schema, *, primary_keys=(), partition_keys=(),
                     options=None) -> None:
        table_schema = Schema.from_arrow(schema, primary_keys=primary_keys,
                                         partition_keys=partition_keys).to_table_schema()
        fields = table_schema.to_dict()["fields"]
        self._op("create_table", warehouse, identifier, fields=fields, primary_keys=list(primary_keys),
                 partition_keys=list(partition_keys), table_options=dict(options or {}))

    def alter_table(self, warehouse, identifier: str, changes: list[dict[str, Any]]) -> None:
        """``changes``: ``{"kind": "add_column"|"update_column_type", "name", "type": pa.DataType}``,
        ``{"kind": "rename_column", "name", "new_name"}``, ``{"kind": "drop_column", "name"}``."""
        encoded = []
        for change in changes:
            change = dict(change)
            if "type" in change:
                change["type"] = type_to_json(from_arrow(change["type"]))
            encoded.append(change)
        self._op("alter_table", warehouse, identifier, changes=encoded)

    def write(self, warehouse, identifier: str, data: pa.Table, *, kinds=None, commit_user=None,
              options=None) -> None:
        """One commit of ``data`` (row kinds ``kinds``: a sequence of "+I"/"-U"/"+U"/"-D")."""
        self._op("write", warehouse, identifier, data=self._ipc(data), kinds=list(kinds) if kinds else None,
                 commit_user=commit_user, options=options)

    def stream_write(self, warehouse, identifier: str, *, commit_user: str, commits: int, key_base: int,
                     rows_per_commit: int, updates_per_commit: int = 0, sleep_ms: int = 0,
                     options=None) -> None:
        """One long-lived, write-only streaming writer and committer (``PaimonPeer.streamWrite``)
        committing ``commits`` times, commit identifiers 1..``commits``, on a table with columns
        (BIGINT key, BIGINT commit, STRING note); the rows follow the rule documented there.
        The op's result (:attr:`last_results`) holds ``snapshot_ids`` (the snapshot each commit
        got, -1 if Java did not find it), ``commit_user`` and ``elapsed_ms``. The JVM answers
        nothing else until the op ends: race it from another thread, on a peer of its own."""
        self._op("stream_write", warehouse, identifier, commit_user=commit_user, commits=commits,
                 key_base=key_base, rows_per_commit=rows_per_commit, updates_per_commit=updates_per_commit,
                 sleep_ms=sleep_ms, options=options)

    def compact(self, warehouse, identifier: str, *, full: bool = True, options=None) -> None:
        self._op("compact", warehouse, identifier, full=full, options=options)

    def read(self, warehouse, identifier: str, *, snapshot_id=None, tag=None, options=None,
             equal: tuple[str, Any] | None = None) -> int:
        """Queue a batch read; :meth:`run` returns its rows (with ``_row_kind``) at this position.
        ``equal`` (column, value: a string or an integer) filters as Java does: whole files are
        skipped by statistics and file indexes, the rows of the others all come back; the
        result's ``files`` (in :attr:`last_results`) counts the data files Java planned."""
        out = self._path("out")
        filters = {"equal": {"column": equal[0], "value": equal[1]}} if equal is not None else {}
        self._op("read", warehouse, identifier, out=str(out), snapshot_id=snapshot_id, tag=tag, options=options,
                 **filters)
        self._reads.append(out)
        return len(self._reads) - 1

    def stream(self, warehouse, identifier: str, *, options=None) -> int:
        """Queue a streaming read from its start options up to the latest snapshot."""
        out = self._path("stream")
        self._op("stream", warehouse, identifier, out=str(out), options=options)
        self._reads.append(out)
        return len(self._reads) - 1

    def create_tag(self, warehouse, identifier: str, tag: str, *, snapshot_id=None) -> None:
        self._op("create_tag", warehouse, identifier, tag=tag, snapshot_id=snapshot_id)

    def rollback(self, warehouse, identifier: str, *, snapshot_id=None, tag=None) -> None:
        self._op("rollback", warehouse, identifier, snapshot_id=snapshot_id, tag=tag)

    def create_branch(self, warehouse, identifier: str, branch: str, *, tag=None) -> None:
        self._op("create_branch", warehouse, identifier, branch=branch, tag=tag)

    def snapshots(self, warehouse, identifier: str) -> None:
        self._op("snapshots", warehouse, identifier)

    def expire_snapshots(self, warehouse, identifier: str, *, retain_min: int, retain_max: int) -> None:
        """Java's snapshot expiry (no time retention), which also deletes expired changelogs."""
        self._op("expire_snapshots", warehouse, identifier, retain_min=retain_min, retain_max=retain_max)

    def analyze(self, warehouse, identifier: str) -> None:
        """Table statistics of the latest snapshot as Spark's ANALYZE TABLE commits them (a new
        ANALYZE snapshot naming a file in ``statistics/``)."""
        self._op("analyze", warehouse, identifier)

    # -- running ------------------------------------------------------------------------------

    def run(self) -> list[pa.Table]:
        """Run the queued operations in order; the tables of the queued reads, in order.

        Raises :class:`JavaPeerError` for the first operation Java failed (later ones do not run)."""
        ops, reads = self._ops, self._reads
        self._ops, self._reads = [], []
        results = self.call(ops)
        tables = []
        for path in reads:
            with pa.OSFile(str(path), "rb") as f:
                tables.append(pa.ipc.open_stream(f).read_all())
        self.last_results = results
        return tables

    def call(self, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with self._lock:
            if self._proc.poll() is not None:
                raise RuntimeError(f"the Java peer exited ({self._proc.returncode}): {self._tail()}")
            self._proc.stdin.write(json.dumps({"ops": ops}) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Java peer died: {self._tail()}")
        results = json.loads(line)["results"]
        for op, result in zip(ops, results, strict=False):
            if not result["ok"]:
                raise JavaPeerError(op["op"], result["error_type"], result["message"], result["trace"])
        if len(results) != len(ops):
            raise RuntimeError("the Java peer stopped early")
        return results

    def _tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-4000:].decode(errors="replace")


def without_kinds(table: pa.Table) -> pa.Table:
    return table.drop_columns([KIND_COLUMN]) if KIND_COLUMN in table.column_names else table


def kinds_of(table: pa.Table) -> list[str]:
    return [KIND_NAMES[k] for k in table.column(KIND_COLUMN).to_pylist()]
