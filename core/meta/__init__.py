"""A table's metadata on storage: where everything lives (:mod:`.layout`), snapshots and the
maintenance markers (:mod:`.snapshots`), tags (:mod:`.tags`), schemas (:mod:`.schema`,
:mod:`.schema_changes`, :mod:`.schema_manager`), manifests and manifest lists (:mod:`.manifest`,
:mod:`.manifest_io`), index files (:mod:`.index_files`), consumers (:mod:`.consumers`),
long-lived changelogs (:mod:`.changelogs`), and :mod:`.references`: the one answer to "what does this
snapshot, tag, changelog or branch need", which every deletion uses.
"""
