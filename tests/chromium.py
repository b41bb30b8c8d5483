"""Headless Chromium driven over the DevTools protocol (``websockets``), for pages behind a login:
the browser carries the session cookie the API server's login sets (``_token``), then loads the
page, returns its rendered DOM and a PNG screenshot. Chromium's command line has no way to send a
cookie, hence the protocol."""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Rendered:
    status: int
    dom: str
    png: bytes

    @property
    def text(self) -> list[str]:
        """The page's text nodes, as a reader sees them (no markup, styles or scripts)."""
        from html.parser import HTMLParser

        class Texts(HTMLParser):
            def __init__(self) -> None:
                super().__init__()
                self.found: list[str] = []
                self.hidden = 0

            def handle_starttag(self, tag, attrs) -> None:
                self.hidden += tag in ("script", "style")

            def handle_endtag(self, tag) -> None:
                self.hidden -= tag in ("script", "style")

            def handle_data(self, data) -> None:
                if not self.hidden and data.strip():
                    self.found.append(data.strip())

        parser = Texts()
        parser.feed(self.dom)
        return parser.found


def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "make test installs Chromium (Debian package 'chromium')"
    return found


def render(url: str, *, cookies: dict[str, str] | None = None, timeout: float = 90.0,
           until: str | None = None) -> Rendered:
    """Load ``url`` in a fresh headless Chromium with ``cookies`` set for its origin; with
    ``until``, wait (within ``timeout``) for that text in the page, as a single-page app renders
    after its data arrives."""
    from websockets.sync.client import connect

    profile = Path(tempfile.mkdtemp(prefix="paimonflow-chromium-"))
    browser = subprocess.Popen(
        [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", f"--user-data-dir={profile}",
         "--window-size=1280,1100", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        port = _devtools_port(profile, timeout)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            page = next(t for t in json.load(response) if t["type"] == "page")
        ids = itertools.count(1)
        events: list[dict[str, Any]] = []  # what Chromium sent while a call waited for its answer
        with connect(page["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024, open_timeout=timeout) as ws:
            def call(method: str, **params: Any) -> dict[str, Any]:
                ident = next(ids)
                ws.send(json.dumps({"id": ident, "method": method, "params": params}))
                while True:
                    message = json.loads(ws.recv(timeout=timeout))
                    if message.get("id") == ident:
                        assert "error" not in message, message
                        return message.get("result", {})
                    events.append(message)

            call("Network.enable")
            call("Page.enable")
            for name, value in (cookies or {}).items():
                assert call("Network.setCookie", name=name, value=value, url=url)["success"]
            call("Page.navigate", url=url)
            deadline = time.monotonic() + timeout
            while not any(e.get("method") == "Page.loadEventFired" for e in events):
                assert time.monotonic() < deadline, f"{url} did not load"
                events.append(json.loads(ws.recv(timeout=timeout)))
            status = next(e["params"]["response"]["status"] for e in events
                          if e.get("method") == "Network.responseReceived" and e["params"]["type"] == "Document")
            while until is not None and not call("Runtime.evaluate", returnByValue=True, expression=(
                    f"document.body && document.body.innerText.includes({json.dumps(until)})"))["result"]["value"]:
                assert time.monotonic() < deadline, f"{url} never showed {until!r}"
                time.sleep(0.5)
            dom = call("Runtime.evaluate", expression="document.documentElement.outerHTML",
                       returnByValue=True)["result"]["value"]
            png = base64.b64decode(call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"])
        return Rendered(status=status, dom=dom, png=png)
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=20)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait(timeout=20)
        shutil.rmtree(profile, ignore_errors=True)


def _devtools_port(profile: Path, timeout: float) -> int:
    """Chromium writes the port it chose (``--remote-debugging-port=0``) to ``DevToolsActivePort``."""
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while True:
        if marker.exists():
            first = marker.read_text().split("\n", 1)[0].strip()
            if first.isdigit():
                return int(first)
        assert time.monotonic() < deadline, "Chromium did not open its DevTools port"
        time.sleep(0.2)
