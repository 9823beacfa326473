"""The dash's HTTP server: one process, the standard library's ``http.server``, read-only.

Routes (GET/HEAD only; anything else is 405):

* ``/``: the page (``static/index.html`` with the current state embedded, so it shows at once);
* ``/dash.js``, ``/dash.css``: its script and style, served from the package (no CDN: works offline);
* ``/api/state``: the state as JSON (:func:`arignote.dash.state.collect`), re-read at most once a
  second however many browsers poll.

With a token every request must carry ``?token=...`` (the page passes it on); a wrong or missing
token is 403. A token is required whenever the server listens beyond the loopback interface.

Example::

    >>> server = make_server("127.0.0.1", 0, read=lambda: {"gpus": []})   # doctest: +SKIP
    >>> threading.Thread(target=server.serve_forever, daemon=True).start()  # doctest: +SKIP
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["make_server", "is_loopback", "DashServer"]

_ASSETS = {"/dash.js": ("dash.js", "text/javascript; charset=utf-8"),
           "/dash.css": ("dash.css", "text/css; charset=utf-8")}
_SECURITY = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the token is in the URL
    "Cache-Control": "no-store",
}


def is_loopback(host: str) -> bool:
    """Does ``host`` listen on this machine only (127.0.0.0/8, ::1, localhost)?"""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _asset(name: str) -> bytes:
    return resources.files("arignote.dash").joinpath("static", name).read_bytes()


class _Cache:
    """``read()`` at most once every ``ttl`` seconds, shared by all request threads."""

    def __init__(self, read: Callable[[], dict[str, Any]], ttl: float) -> None:
        self.read, self.ttl = read, ttl
        self.lock = threading.Lock()
        self.value: bytes | None = None
        self.at = 0.0

    def get(self) -> bytes:
        with self.lock:
            if self.value is None or time.monotonic() - self.at >= self.ttl:
                try:
                    state = self.read()
                except Exception as exc:  # the page must keep working: show the failure instead
                    state = {"format": "arignote-dash/1", "time": time.time(), "gpus": [], "runs": [],
                             "recent": [], "leases": [], "queue": [], "no_gpu": True,
                             "problems": [{"file": "", "problem": f"reading the machine failed: "
                                                                  f"{type(exc).__name__}: {exc}"}]}
                self.value = json.dumps(state, allow_nan=False, default=str).encode()
                self.at = time.monotonic()
            return self.value


class DashServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], read: Callable[[], dict[str, Any]], token: str | None,
                 interval: float) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.cache = _Cache(read, ttl=min(1.0, interval))
        self.token = token
        self.interval = interval

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        return f"http://{shown}:{port}/" + (f"?token={self.token}" if self.token else "")


class _Handler(BaseHTTPRequestHandler):
    server: DashServer
    server_version = "arignote-dash"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # quiet: a page polling every 2 s would fill the terminal

    def _send(self, code: int, body: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for key, value in _SECURITY.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _allowed(self, query: dict[str, list[str]]) -> bool:
        if not self.server.token:
            return True
        given = (query.get("token") or [""])[0]
        return hmac.compare_digest(given.encode(), self.server.token.encode())

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        url = urlsplit(self.path)
        if not self._allowed(parse_qs(url.query)):
            self._send(HTTPStatus.FORBIDDEN, b"arignote dash: a token is required; open the URL that "
                                             b"`arignote dash` printed (it ends in ?token=...)\n",
                       "text/plain; charset=utf-8")
            return
        if url.path == "/api/state":
            self._send(HTTPStatus.OK, self.server.cache.get(), "application/json")
        elif url.path in ("/", "/index.html"):
            # the first state is embedded, so the page is complete before any script fetches
            state = self.server.cache.get().decode().replace("<", "\\u003c")
            page = (_asset("index.html").decode()
                    .replace("{{STATE}}", state)
                    .replace("{{INTERVAL}}", f"{self.server.interval:g}"))
            self._send(HTTPStatus.OK, page.encode(), "text/html; charset=utf-8")
        elif url.path in _ASSETS:
            name, kind = _ASSETS[url.path]
            self._send(HTTPStatus.OK, _asset(name), kind)
        elif url.path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")

    do_HEAD = do_GET

    def _read_only(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"arignote dash is read-only\n",
                   "text/plain; charset=utf-8")

    do_POST = do_PUT = do_DELETE = do_PATCH = _read_only


def make_server(host: str, port: int, read: Callable[[], dict[str, Any]], token: str | None = None,
                interval: float = 2.0) -> DashServer:
    """A server bound to ``host:port`` (port 0: any free port; see ``server.url``). Raises
    ValueError when ``host`` is not loopback and no token is given."""
    if not is_loopback(host) and not token:
        raise ValueError(f"listening on {host} (beyond this machine) needs a token")
    return DashServer((host, port), read, token, interval)
