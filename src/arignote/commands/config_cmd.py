"""``arignote config``: every flag, its value and where that value came from."""

from __future__ import annotations

import json

from arignote import config

HELP = "print every flag, its value and its source (default, rc file:line, ARIGNOTE_FLAGS, code)"


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args) -> int:
    rows = config.flags()
    if args.json:
        print(json.dumps([{"name": r.name, "value": r.value, "source": r.source, "type": r.kind,
                           "default": r.default, "doc": r.doc} for r in rows], indent=2))
        return 0
    width = max(len(r.name) for r in rows)
    vwidth = max(len(repr(r.value)) for r in rows)
    for r in rows:
        print(f"{r.name:<{width}}  {r.value!r:<{vwidth}}  {r.source}")
    return 0
