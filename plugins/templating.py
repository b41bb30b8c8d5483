"""The HTML of the plugin's pages: one Jinja environment over ``plugins/templates/``, autoescaping.

Every value a template prints is HTML-escaped (``autoescape=True`` whatever the file name), so a
table comment, option value, tag or consumer name written by any engine shows as text, never as
markup. No page marks anything as safe: the SVG pictures are template markup too, fed numbers.
An undefined template variable raises instead of printing nothing. Names in links go through the
``path_segment`` filter (percent-encoding, then escaping).

The pages' one script is ``templates/color_mode.html`` (static: it prints no value), included by
the layout: it gives the page the Airflow UI's light or dark mode. :func:`page_headers` are the
headers every page is served with; their Content-Security-Policy lets that script run (by its
SHA-256) and no other script, loads nothing from anywhere, and lets only the same origin (the
Airflow UI) frame the pages.

Framework-free (no Airflow or Dagster imports); Jinja2 is imported on first render, so importing
:mod:`paimonflow.plugins` does not need it (Airflow and Dagster both depend on Jinja2).
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = Path(__file__).resolve().parent / "templates"
COLOR_MODE_SCRIPT = "color_mode.html"  # the layout's <script>, included verbatim


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


@cache
def page_headers() -> dict[str, str]:
    """The headers of every page (and error page): a Content-Security-Policy allowing the color-mode
    script alone (by hash), inline styles, no loads from anywhere and framing by the same origin
    only; ``nosniff``; ``no-store`` (a page shows what one user may read); no referrer."""
    script = render_template(COLOR_MODE_SCRIPT)
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    policy = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
              "frame-ancestors 'self'; base-uri 'none'; form-action 'none'")
    return {"Content-Security-Policy": policy, "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


__all__ = ["TEMPLATES", "page_headers", "path_segment", "render_template"]
