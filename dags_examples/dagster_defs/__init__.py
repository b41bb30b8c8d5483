"""The example project's component definitions: each folder holds a ``defs.yaml`` (loaded by
``dagster_definitions.py`` with ``dg.load_defs``)."""
