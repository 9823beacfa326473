"""The ``arignote`` command: one subcommand a module under :mod:`arignote.commands`.

Each command module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``;
it is imported only when its command runs, so ``arignote smi`` never pays for torch.

Example::

    $ arignote config --json
    $ arignote devices
"""

from __future__ import annotations

import argparse
import importlib
import sys

from arignote.config import ConfigError

# command name -> module under arignote.commands
COMMANDS = {
    "config": "config_cmd",
    "devices": "devices_cmd",
    "doctor": "doctor_cmd",
    "smi": "smi_cmd",
    "run": "run_cmd",
    "bench": "bench_cmd",
    "demo": "demo_cmd",
    "selftest": "selftest_cmd",
}


def _load(name: str):
    return importlib.import_module(f"arignote.commands.{COMMANDS[name]}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arignote", description="Painless neural-network training on GPUs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and name != only:
            sub.add_parser(name, help=f"see 'arignote {name} --help'", add_help=False)
            continue
        module = _load(name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script and of ``python -m arignote``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in argv if not a.startswith("-")), None)
    only = first if first in COMMANDS else None
    if only is None and first is not None:
        print(f"arignote: unknown command '{first}'; commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    parser = build_parser(only)
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if extra and not getattr(args, "accepts_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    try:
        return int(_load(args.command).run(args) or 0)
    except ConfigError as exc:
        print(f"arignote: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
