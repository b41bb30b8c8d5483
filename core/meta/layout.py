"""Where everything of a table lives: the one owner of every path under the table root.

    <table>/schema/schema-N                       schemas          (meta.schema_manager)
    <table>/snapshot/snapshot-N, LATEST, EARLIEST  snapshots        (meta.snapshots)
    <table>/tag/tag-<name>                        tags             (meta.tags)
    <table>/changelog/changelog-N                 long-lived changelogs (meta.changelogs)
    <table>/consumer/consumer-<id>                consumers        (meta.consumers)
    <table>/manifest/...                          manifests, manifest lists, index manifests
    <table>/index/...                             deletion vectors, hash indexes
    <table>/statistics/...                        table statistics
    <table>/<k=v/...>/bucket-<n>/...              data and changelog files
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


def bucket_directory(table_path: str, schema: TableSchema, options: CoreOptions,
                     partition: tuple[object, ...], bucket: int) -> str:
    """``<table>/<k=v/...>/bucket-<n>``."""
    if schema.partition_keys:
        arrow_schema = schema.arrow_schema()
        types = [arrow_schema.field(k).type for k in schema.partition_keys]
        rel = partition_path(list(schema.partition_keys), list(partition), types, options.partition_default_name,
                             legacy=options.partition_legacy_name)
        return join(table_path, rel, f"bucket-{bucket}")
    return join(table_path, f"bucket-{bucket}")
