"""Table options: the one registry of Paimon keys (:mod:`.registry`), their value parsers
(:mod:`.parse`), the whole-map validator for options a user sets (:mod:`.validate`), the typed view
parsed once per table open (:class:`~.core.CoreOptions`), and the typed settings of compaction,
automatic tags, long-lived changelogs and merge engines (:mod:`.compaction`, :mod:`.tagging`,
:mod:`.changelog`, :mod:`.merge`), and the counts a manual expiry keeps (:mod:`.retention`).
"""

from .changelog import changelog_settings
from .compaction import CompactionOptions
from .core import CoreOptions
from .merge import merge_spec_for
from .retention import retained_counts
from .tagging import AutoTagSettings
from .validate import validate_user_options

__all__ = [
    "AutoTagSettings",
    "CompactionOptions",
    "CoreOptions",
    "changelog_settings",
    "merge_spec_for",
    "retained_counts",
    "validate_user_options",
]
