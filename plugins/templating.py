"""The HTML of the plugin's pages: one Jinja environment over ``plugins/templates/``, autoescaping.

Every value a template prints is HTML-escaped (``autoescape=True`` whatever the file name), so a
table comment, option value, tag or consumer name written by any engine shows as text, never as
markup. No page marks anything as safe: the SVG pictures are template markup too, fed numbers.
An undefined template variable raises instead of printing nothing. Names in links go through the
``path_segment`` filter (percent-encoding, then escaping).

Framework-free (no Airflow or Dagster imports); Jinja2 is imported on first render, so importing
:mod:`paimonflow.plugins` does not need it (Airflow and Dagster both depend on Jinja2).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = Path(__file__).resolve().parent / "templates"


@cache
def _environment() -> Environment:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    environment = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)
    environment.filters["path_segment"] = path_segment
    return environment


def path_segment(value: object) -> str:
    """``value`` percent-encoded as one URL path segment (``/`` included); a template filter."""
    return quote(str(value), safe="")


def render_template(name: str, **context: Any) -> str:
    """Render ``plugins/templates/<name>`` with ``context``, every printed value escaped."""
    return _environment().get_template(name).render(**context)


__all__ = ["TEMPLATES", "path_segment", "render_template"]
