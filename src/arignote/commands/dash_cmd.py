"""``arignote dash``: serve the live status page of this machine (GPUs, leases, queue, runs).

Binds 127.0.0.1 by default. Listening beyond this machine (``--host 0.0.0.0``) needs a token: give
one with ``--token`` or let the command make one; every request then carries ``?token=...`` and
the printed URL includes it. Read-only; Ctrl-C stops it.

Example::

    $ arignote dash                       # open http://127.0.0.1:8470/
    $ arignote dash --host 0.0.0.0 --port 9000
    $ arignote dash --json                # the page's data once, as JSON, then exit
"""

from __future__ import annotations

import json
import secrets
import sys
import threading

from arignote.dash import collect, is_loopback, make_server

HELP = "serve a live web page of the GPUs, leases, the run --wait queue and every training run's progress"


def add_arguments(parser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; "
                             "anything else requires a token)")
    parser.add_argument("--port", type=int, default=8470, help="port (default 8470; 0 picks a free one)")
    parser.add_argument("--token", help="secret every request must carry as ?token=...; made up when "
                                        "--host is not a loopback address and none is given")
    parser.add_argument("--interval", type=float, default=2.0, metavar="SECONDS",
                        help="how often the page refreshes itself (default 2)")
    parser.add_argument("--hours", type=float, default=12.0,
                        help="show finished, failed and stopped runs of the last HOURS (default 12)")
    parser.add_argument("--inventory", metavar="FILE",
                        help="read the GPUs from FILE, a JSON snapshot as `arignote smi --json` writes it, "
                             "instead of NVML (re-read at every refresh; for tests and demos)")
    parser.add_argument("--json", action="store_true", help="print the page's data once as JSON and exit")


def _bad(message: str) -> int:
    print(f"arignote dash: {message}", file=sys.stderr)
    return 2


def run(args) -> int:
    if not args.interval > 0:
        return _bad(f"--interval {args.interval:g}: give seconds > 0")
    if args.hours < 0:
        return _bad(f"--hours {args.hours:g}: give hours >= 0")
    if not 0 <= args.port <= 65535:
        return _bad(f"--port {args.port}: give a port from 0 to 65535")

    def read():
        return collect(inventory=args.inventory, hours=args.hours)

    if args.json:
        print(json.dumps(read(), indent=2, allow_nan=False, default=str))
        return 0
    token = args.token
    if token is None and not is_loopback(args.host):
        token = secrets.token_urlsafe(16)
    try:
        server = make_server(args.host, args.port, read, token=token, interval=args.interval)
    except OSError as exc:
        return _bad(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    print(f"arignote dash: serving {server.url} (read-only; Ctrl-C stops it)", flush=True)
    thread = threading.Thread(target=server.serve_forever, name="arignote-dash", daemon=True)
    thread.start()
    try:
        thread.join()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return 0
