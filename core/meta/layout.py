"""Where everything of a table lives: the one owner of every path under the table root.

    <table>/schema/schema-N                       schemas          (meta.schema_manager)
    <table>/snapshot/snapshot-N, LATEST, EARLIEST  snapshots        (meta.snapshots)
    <table>/tag/tag-<name>                        tags             (meta.tags)
    <table>/changelog/changelog-N                 long-lived changelogs (meta.changelogs)
    <table>/consumer/consumer-<id>                consumers        (meta.consumers)
    <table>/manifest/...                          manifests, manifest lists, index manifests
    <table>/index/...                             deletion vectors, hash indexes
    <table>/statistics/...                        table statistics
    <table>/[<dir>/]<k=v/...>/bucket-<n>/...      data and changelog files (``<dir>``: the option
                                                  ``data-file.path-directory``; ``bucket-postpone``
                                                  for the postpone bucket -2)
    <table>/branch/branch-<name>/...              a branch's schema, snapshot, tag, consumer folders
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..data.partition import partition_path
from ..fs import join
from ..names import validate_name
from ..options.core import CoreOptions

if TYPE_CHECKING:
    from .schema import TableSchema

MAIN_BRANCH = "main"
BRANCH_DIR, BRANCH_PREFIX = "branch", "branch-"


def branch_root(table_path: str, branch: str = MAIN_BRANCH) -> str:
    """Where a branch keeps its snapshots, tags and consumers: the table itself for ``main``,
    else ``<table>/branch/branch-<name>``."""
    if branch == MAIN_BRANCH:
        return table_path
    return join(table_path, BRANCH_DIR, f"{BRANCH_PREFIX}{validate_name('branch', branch)}")


POSTPONE_BUCKET = -2
BUCKET_PREFIX = "bucket-"


def bucket_name(bucket: int) -> str:
    """``bucket-<n>``, and ``bucket-postpone`` for Paimon's postpone bucket (-2)."""
    return f"{BUCKET_PREFIX}postpone" if bucket == POSTPONE_BUCKET else f"{BUCKET_PREFIX}{bucket}"


def data_root(table_path: str, options: CoreOptions) -> str:
    """Where partition and bucket directories start: the table, or ``data-file.path-directory``
    under it (the capability gate refuses a directory outside the table)."""
    directory = options.data_file_path_directory
    if not directory:
        return table_path
    parts = [p for p in directory.strip().strip("/").split("/") if p not in ("", ".")]
    return join(table_path, *parts) if parts else table_path


def bucket_directory(table_path: str, schema: TableSchema, options: CoreOptions,
                     partition: tuple[object, ...], bucket: int) -> str:
    """``<table>/[<path directory>/]<k=v/...>/bucket-<n>``."""
    root = data_root(table_path, options)
    if schema.partition_keys:
        arrow_schema = schema.arrow_schema()
        types = [arrow_schema.field(k).type for k in schema.partition_keys]
        rel = partition_path(list(schema.partition_keys), list(partition), types, options.partition_default_name,
                             legacy=options.partition_legacy_name)
        return join(root, rel, bucket_name(bucket))
    return join(root, bucket_name(bucket))
