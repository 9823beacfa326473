"""The built docs site as a person sees it: served on localhost, opened in headless Chromium.

``python scripts/docs_browser.py [SITE_DIR]`` (after ``make docs``; default ``build/site``) serves the
site on 127.0.0.1, types "preallocate" into the search box (Material's search runs in the browser:
lunr in a web worker over ``search/search_index.json``, so only a browser shows what it finds),
prints the results, and saves screenshots of the home page and the configuration page as
``docs/screenshot-home.png`` and ``docs/screenshot-configuration.png``. tests/test_docs_site.py does
the same checks on a fresh build.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON messages
ending in a NUL byte on file descriptors 3 and 4), so nothing but Debian's ``chromium`` is needed.

Example::

    >>> with serve(ROOT / "docs") as url:
    ...     url.startswith("http://127.0.0.1:")
    True
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
# page (the configuration page at its generated flag table) -> screenshot file under docs/
SHOTS = {"index.html": "screenshot-home.png", "configuration.html#every-flag": "screenshot-configuration.png"}


LOADED = "document.readyState === 'complete'"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """``site`` served on 127.0.0.1 (a free port) for the ``with`` block; yields the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class Chromium:
    """Headless Chromium with one page, driven over the DevTools protocol on a pipe."""

    def __init__(self, width: int = 1280, height: int = 860, binary: str | None = None) -> None:
        binary = binary or CHROMIUM
        if binary is None:
            raise RuntimeError("no chromium on PATH (Debian: apt-get install chromium)")
        self._profile = tempfile.mkdtemp(prefix="docs-chromium-")
        to_child, self._out = os.pipe()
        self._in, from_child = os.pipe()

        def wire() -> None:  # the child reads commands on fd 3 and answers on fd 4
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self._proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-quic",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--hide-scrollbars", f"--window-size={width},{height}",
             f"--user-data-dir={self._profile}", "--remote-debugging-pipe", "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next = 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", page=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def call(self, method: str, page: bool = False, **params: Any) -> dict:
        """One DevTools command (on the page's session with ``page=True``); its result."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if page:
            message["sessionId"] = self._session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._in, 1 << 16)
                if not chunk:
                    raise RuntimeError(f"chromium exited (code {self._proc.poll()}) during {method}")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def evaluate(self, expression: str) -> Any:
        return self.call("Runtime.evaluate", page=True, expression=expression, returnByValue=True,
                         awaitPromise=True)["result"].get("value")

    def open(self, url: str, ready: str = LOADED, timeout: float = 30) -> None:
        """Load ``url`` and wait until the JavaScript ``ready`` is true."""
        self.call("Page.navigate", page=True, url=url)
        address = json.dumps(url.split("?")[0].split("#")[0])
        self.wait(f"location.href.startsWith({address}) && ({ready})", timeout)

    def wait(self, condition: str, timeout: float = 30) -> Any:
        end = time.monotonic() + timeout
        while True:
            value = self.evaluate(condition)
            if value:
                return value
            if time.monotonic() > end:
                raise TimeoutError(f"waited {timeout:g}s for {condition}")
            time.sleep(0.25)

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", page=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            self.call("Browser.close")
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._in, self._out):
            os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


RESULTS = "[...document.querySelectorAll('.md-search-result__item')]"


def search(browser: Chromium, base: str, query: str) -> list[dict[str, str]]:
    """What the site's search box lists for ``query`` (Material reads ``?q=`` into the box): each
    result's link and text."""
    browser.open(f"{base}index.html?q={query}")
    browser.wait(f"{RESULTS}.length > 0", timeout=30)
    return browser.evaluate(f"{RESULTS}.map(e => ({{href: e.querySelector('a').href, text: e.innerText}}))")


def screenshots(browser: Chromium, base: str, out: Path) -> list[Path]:
    """The home and configuration pages as PNG files in ``out``."""
    saved = []
    for page, name in SHOTS.items():
        browser.open(base + page, ready=f"{LOADED} && document.fonts.status === 'loaded'")
        time.sleep(1)  # the header's title slides in after a scroll to an anchor
        browser.screenshot(out / name)
        saved.append(out / name)
    return saved


def main(argv: list[str]) -> int:
    site = Path(argv[0]) if argv else ROOT / "build" / "site"
    if not (site / "index.html").exists():
        print(f"no built site in {site}: run make docs first", file=sys.stderr)
        return 1
    with serve(site) as base, Chromium() as browser:
        found = search(browser, base, "preallocate")
        for hit in found:
            print(hit["href"].removeprefix(base), "·", hit["text"].splitlines()[0])
        for path in screenshots(browser, base, ROOT / "docs"):
            print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
