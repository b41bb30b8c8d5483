"""The pages take the Airflow UI's color mode, rendered in headless Chromium (``tests/chromium.py``).

The Airflow 3 UI (Chakra UI with next-themes) keeps the user's choice in ``localStorage["theme"]``
of its origin: ``"light"``, ``"dark"``, or ``"system"`` / unset for the system's
(``prefers-color-scheme``). The UI shows the pages in a same-origin frame, so they read the same
key. A local server plays the API server: it serves a table-health page with the headers the pages
are served with (their Content-Security-Policy included, so the script must be the one it allows)
and a stand-in of the UI that sets the key, frames the page and reports the colours Chromium
computed, then changes the key while the page is open, as the UI's color-mode menu does.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from paimonflow.plugins.health import Health, render_html
from paimonflow.plugins.templating import page_headers

pytestmark = pytest.mark.slow

PAGE = "/paimonflow/connections/paimon_default/health/lab.orders"
SNAPSHOTS = [{"id": 1, "kind": "APPEND", "time": "2026-11-20 08:00:00 UTC", "delta": 3, "total": 3},
             {"id": 2, "kind": "COMPACT", "time": "2026-11-20 09:00:00 UTC", "delta": 0, "total": 3}]
LIGHT = {"mode": "light", "bg": "rgb(255, 255, 255)", "fg": "rgb(0, 0, 0)", "svg_text": "rgb(0, 0, 0)"}
DARK = {"mode": "dark", "bg": "rgb(0, 0, 0)", "fg": "rgb(250, 250, 250)", "svg_text": "rgb(250, 250, 250)"}

# The stand-in of the Airflow UI: for each stored mode, frame the page and read its computed colours.
UI = """<!doctype html><html><head><meta charset="utf-8"><title>Airflow</title></head><body>
<pre id="result"></pre>
<script>
function framed(mode) {
  if (mode === null) { localStorage.removeItem("theme"); } else { localStorage.setItem("theme", mode); }
  return new Promise(function (resolve) {
    var frame = document.createElement("iframe");
    frame.width = 900; frame.height = 700; frame.src = "PAGE";
    frame.onload = function () { resolve(frame); };
    document.body.appendChild(frame);
  });
}
function colours(frame) {
  var page = frame.contentDocument, body = frame.contentWindow.getComputedStyle(page.body);
  return {mode: page.documentElement.className, bg: body.backgroundColor, fg: body.color,
          svg_text: frame.contentWindow.getComputedStyle(page.querySelector("svg text")).fill};
}
async function run() {
  var seen = {prefers: matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"};
  for (var mode of ["dark", "light", "system", null]) {
    var frame = await framed(mode);
    seen[String(mode)] = colours(frame);
    frame.remove();
  }
  var open = await framed("light");
  localStorage.setItem("theme", "dark");  // the UI's color-mode menu, while the page is open
  for (var waited = 0; open.contentDocument.documentElement.className !== "dark" && waited < 100; waited++) {
    await new Promise(function (resolve) { setTimeout(resolve, 50); });
  }
  seen.switched = colours(open);
  document.getElementById("result").textContent = "RESULT " + JSON.stringify(seen);
}
run().catch(function (error) {
  document.getElementById("result").textContent = "RESULT " + JSON.stringify({error: String(error)});
});
</script></body></html>""".replace("PAGE", PAGE)


class _Server(BaseHTTPRequestHandler):
    """The page with the pages' own headers, and the stand-in UI at ``/``."""

    def do_GET(self) -> None:
        if self.path == PAGE:
            body, headers = render_html(Health(table="lab.orders", snapshots=SNAPSHOTS)), page_headers()
        elif self.path == "/":
            body, headers = UI, {}
        else:
            self.send_error(404)
            return
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # quiet: pytest shows failures
        pass


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


def test_the_page_takes_the_ui_color_mode_and_follows_its_changes(origin: str) -> None:
    from tests.chromium import render

    shown = render(origin + "/", until="RESULT")
    [found] = re.findall(r"RESULT (\{.*?\})</pre>", shown.dom, flags=re.S)
    seen = json.loads(html.unescape(found))
    assert "error" not in seen, seen
    assert seen["dark"] == DARK  # the script ran: the policy allowed it, and only it
    assert seen["light"] == LIGHT
    system = {"dark": DARK, "light": LIGHT}[seen["prefers"]]  # the browser's prefers-color-scheme
    assert seen["system"] == seen["null"] == system  # "system", and no choice stored
    assert seen["switched"] == DARK  # changed in the UI while the page was open: followed at once
