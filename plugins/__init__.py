"""paimonflow.plugins: what the schedulers show of a table.

* :mod:`paimonflow.plugins.health` (framework-free, exported here): :func:`table_health` collects a
  table's health report and :func:`render_html` draws it; the Airflow page serves it and the
  Dagster asset checks read its numbers;
* :mod:`paimonflow.plugins.templating` (framework-free): the autoescaping Jinja environment over
  ``templates/`` that renders every page (Jinja2 is imported on first render);
* :mod:`paimonflow.plugins.airflow`: the Airflow plugin (macros, the table-health page) and the
  provider's ``get_provider_info``.

Importing this package imports neither Airflow nor Dagster.
"""

from .health import Health, render_html, table_health

__all__ = ["Health", "render_html", "table_health"]
