"""Runs INSIDE the pypaimon 2.1.0 virtual environment (never imported by paimonflow).

Reads one JSON request from stdin: {"ops": [...]}; executes the ops in order with pypaimon and
prints one JSON response: {"results": [...]}. Table data travels as Arrow IPC files (the two
environments have different pyarrow versions; IPC is the stable format between them). The
feature-frontier ops (make_frontier_table, read_rows, missing_files) live in frontier_driver.py.
"""

import json
import sys
import traceback

import pyarrow as pa
from frontier_driver import FRONTIER_OPS  # this script's folder is on sys.path
from pypaimon import CatalogFactory, Schema


def _catalog(op):
    return CatalogFactory.create({"warehouse": op["warehouse"]})


def _read_ipc(path):
    with pa.OSFile(path, "rb") as f:
        return pa.ipc.open_file(f).read_all()


def _write_ipc(path, table):
    with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)


def create_table(op):
    cat = _catalog(op)
    cat.create_database(op["identifier"].split(".")[0], True)
    schema = Schema.from_pyarrow_schema(_read_ipc(op["schema_ipc"]).schema,
                                        partition_keys=op.get("partition_keys") or None,
                                        primary_keys=op.get("primary_keys") or None,
                                        options=op.get("options") or {})
    cat.create_table(op["identifier"], schema, False)
    return {}


def write(op):
    table = _catalog(op).get_table(op["identifier"])
    data = _read_ipc(op["data_ipc"])
    builder = table.new_batch_write_builder()
    if op.get("overwrite") is not None:
        builder = builder.overwrite(op["overwrite"] or None)
    writer, commit = builder.new_write(), builder.new_commit()
    writer.write_arrow(data)
    commit.commit(writer.prepare_commit())
    writer.close()
    commit.close()
    return {"latest_snapshot": table.snapshot_manager().get_latest_snapshot().id}


def read(op):
    table = _catalog(op).get_table(op["identifier"])
    if op.get("snapshot_id") is not None:
        table = table.copy({"scan.snapshot-id": str(op["snapshot_id"])})
    if op.get("tag") is not None:
        table = table.copy({"scan.tag-name": op["tag"]})
    if op.get("options"):
        table = table.copy(op["options"])
    rb = table.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    _write_ipc(op["out_ipc"], out)
    return {"rows": out.num_rows}


def snapshots(op):
    table = _catalog(op).get_table(op["identifier"])
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    return {"latest": latest.id if latest else None}


def alter_table(op):
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    changes = []
    for change in op["changes"]:
        if change["kind"] == "add_column":
            changes.append(SchemaChange.add_column(change["name"], AtomicType(change["type"])))
        elif change["kind"] == "rename_column":
            changes.append(SchemaChange.rename_column(change["name"], change["new_name"]))
        elif change["kind"] == "drop_column":
            changes.append(SchemaChange.drop_column(change["name"]))
    _catalog(op).alter_table(op["identifier"], changes)
    return {}


def create_tag(op):
    _catalog(op).get_table(op["identifier"]).create_tag(op["tag"], snapshot_id=op.get("snapshot_id"))
    return {}


def create_branch(op):
    _catalog(op).get_table(op["identifier"]).branch_manager().create_branch(op["branch"], op.get("tag"))
    return {}


def fast_forward(op):
    _catalog(op).get_table(op["identifier"]).branch_manager().fast_forward(op["branch"])
    return {}


BRANCH_OPS = {"create_tag": create_tag, "create_branch": create_branch, "fast_forward": fast_forward}
OPS = {**BRANCH_OPS, **FRONTIER_OPS, "create_table": create_table, "write": write, "read": read, "snapshots": snapshots, "alter_table": alter_table}


def main():
    request = json.load(sys.stdin)
    results = []
    for op in request["ops"]:
        try:
            results.append({"ok": True, **OPS[op["op"]](op)})
        except Exception as exc:  # report, do not crash: the caller decides
            results.append({"ok": False, "error_type": type(exc).__name__, "message": str(exc),
                            "trace": traceback.format_exc()})
            if request.get("stop_on_error", True):
                break
    json.dump({"results": results}, sys.stdout)


if __name__ == "__main__":
    main()
