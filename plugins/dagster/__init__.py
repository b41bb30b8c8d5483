"""paimonflow.plugins.dagster: the Dagster face of a table as a Component (Dagster code only,
never Airflow): :class:`PaimonTableComponent`, registered for the ``dg`` CLI (entry point
``dagster_dg_cli.registry_modules``), with its scaffolder."""

from .component import PaimonTableComponent, PaimonTableScaffolder

__all__ = ["PaimonTableComponent", "PaimonTableScaffolder"]
