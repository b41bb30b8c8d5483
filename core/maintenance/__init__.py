"""Keeping a table healthy, each operation planned and then executed so that a crash leaves a
readable table and a rerun finishes: snapshot expiry (:mod:`.expire`), changelog expiry
(:mod:`.changelog_expire`), partition expiry (:mod:`.partition_expire`), tags (:mod:`.tags`),
automatic tags (:mod:`.auto_tag`), rollback (:mod:`.rollback`), branches (:mod:`.branches`), orphan
removal (:mod:`.orphans`), statistics (:mod:`.statistics`) and the maintenance after each commit
(:mod:`.post_commit`). Built on :mod:`paimonflow.core.meta` and below.
"""
