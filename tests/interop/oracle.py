"""Drive pypaimon 2.1.0 (the interop oracle) through a subprocess in its own virtual environment."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa

from .dataset import canonical as canonical  # re-exported: the interop tests import it from here

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("oracle_driver.py")


def oracle_python() -> str:
    path = os.environ.get("PAIMONFLOW_PYPAIMON_PYTHON") or str(REPO / ".venv-pypaimon" / "bin" / "python")
    if not Path(path).exists():
        raise RuntimeError(f"pypaimon's interpreter {path} is missing: run `make pypaimon-venv` (make test does)")
    return path


class PypaimonError(AssertionError):
    pass


class Oracle:
    """Queue operations and run them in one pypaimon process (start-up costs ~1 s)."""

    def __init__(self, workdir: Path) -> None:
        self._dir = Path(tempfile.mkdtemp(dir=workdir, prefix="oracle-"))
        self._ops: list[dict[str, Any]] = []
        self._reads: list[tuple[int, Path]] = []
        self._n = 0

    def _ipc(self, table: pa.Table) -> str:
        self._n += 1
        path = self._dir / f"in-{self._n}.arrow"
        with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)
        return str(path)

    def create_table(self, warehouse, identifier, schema: pa.Schema, *, primary_keys=(), partition_keys=(),
                     options=None) -> None:
        self._ops.append({"op": "create_table", "warehouse": str(warehouse), "identifier": identifier,
                          "schema_ipc": self._ipc(schema.empty_table()), "primary_keys": list(primary_keys),
                          "partition_keys": list(partition_keys), "options": dict(options or {})})

    def write(self, warehouse, identifier, data: pa.Table, *, overwrite=None) -> None:
        self._ops.append({"op": "write", "warehouse": str(warehouse), "identifier": identifier,
                          "data_ipc": self._ipc(data), "overwrite": overwrite})

    def alter_table(self, warehouse, identifier, changes: list[dict[str, str]]) -> None:
        """``changes``: ``{"kind": "add_column", "name", "type"}``, ``rename_column`` (name, new_name),
        ``drop_column`` (name)."""
        self._ops.append({"op": "alter_table", "warehouse": str(warehouse), "identifier": identifier,
                          "changes": changes})

    def create_tag(self, warehouse, identifier, tag: str, *, snapshot_id=None) -> None:
        self._ops.append({"op": "create_tag", "warehouse": str(warehouse), "identifier": identifier, "tag": tag,
                          "snapshot_id": snapshot_id})

    def create_branch(self, warehouse, identifier, branch: str, *, tag=None) -> None:
        self._ops.append({"op": "create_branch", "warehouse": str(warehouse), "identifier": identifier,
                          "branch": branch, "tag": tag})

    def fast_forward(self, warehouse, identifier, branch: str) -> None:
        self._ops.append({"op": "fast_forward", "warehouse": str(warehouse), "identifier": identifier,
                          "branch": branch})

    def read(self, warehouse, identifier, *, snapshot_id=None, tag=None, options=None) -> int:
        self._n += 1
        out = self._dir / f"out-{self._n}.arrow"
        self._ops.append({"op": "read", "warehouse": str(warehouse), "identifier": identifier,
                          "out_ipc": str(out), "snapshot_id": snapshot_id, "tag": tag, "options": options})
        self._reads.append((len(self._ops) - 1, out))
        return len(self._reads) - 1

    def run(self) -> list[pa.Table]:
        """Run the queued ops; returns the tables of the queued reads, in order."""
        ops, reads = self._ops, self._reads
        self._ops, self._reads = [], []
        proc = subprocess.run([oracle_python(), str(DRIVER)], input=json.dumps({"ops": ops}), capture_output=True,
                              text=True, timeout=600, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if proc.returncode != 0:
            raise PypaimonError(f"pypaimon driver failed:\n{proc.stderr[-4000:]}")
        results = json.loads(proc.stdout)["results"]
        for op, result in zip(ops, results, strict=False):
            if not result["ok"]:
                raise PypaimonError(f"pypaimon {op['op']} failed: {result['error_type']}: {result['message']}\n"
                                    f"{result['trace'][-3000:]}")
        if len(results) != len(ops):
            raise PypaimonError("pypaimon driver stopped early")
        tables = []
        for _, path in reads:
            with pa.OSFile(str(path), "rb") as f:
                tables.append(pa.ipc.open_file(f).read_all())
        return tables
