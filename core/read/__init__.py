"""Reading a table: scan planning and merge-on-read (:mod:`.scan`), reading data written under older
schemas (:mod:`.evolution`), incremental reads between snapshots (:mod:`.incremental`), streaming
scans (:mod:`.stream`), the snapshot watch behind every sensor (:mod:`.watch`) and system tables
(:mod:`.system_tables`). Never imports :mod:`paimonflow.core.write`.
"""

from .incremental import read_changes
from .scan import ScanPlanner, Split, SplitReader
from .stream import StreamingScan
from .watch import Observation, watch

__all__ = [
    "Observation",
    "ScanPlanner",
    "Split",
    "SplitReader",
    "StreamingScan",
    "read_changes",
    "watch",
]
