"""Table options: the one registry of Paimon keys (:mod:`.registry`), their value parsers
(:mod:`.parse`), the whole-map validator for options a user sets (:mod:`.validate`), the typed view
parsed once per table open (:class:`~.core.CoreOptions`), and the typed settings of compaction,
automatic tags, long-lived changelogs and merge engines (:mod:`.compaction`, :mod:`.tagging`,
:mod:`.changelog`, :mod:`.merge`).
"""
