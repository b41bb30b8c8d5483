"""Paimon's file indexes (``file-index.*``): per data file, a bloom filter or bitmap of chosen
columns, in one container (:mod:`.container`) that a manifest entry embeds or that sits beside
the data file as ``<data file>.index`` (listed in the entry's extra files). Built when data files
are written (:mod:`.builder`), used by scans to skip files (:mod:`.pruning`)."""

from .builder import BuiltFileIndex, FileIndexBuilder, index_file_name
from .pruning import FileIndexPruner, IndexedColumn
from .settings import FileIndexSettings, file_index_read_enabled, unsupported_file_index_options

__all__ = ["BuiltFileIndex", "FileIndexBuilder", "FileIndexPruner", "FileIndexSettings", "IndexedColumn",
           "file_index_read_enabled", "index_file_name", "unsupported_file_index_options"]
