"""The ``arignote`` command: one subcommand a module under :mod:`arignote.commands`.

Each command module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``;
it is imported only when its command runs, so ``arignote smi`` never pays for torch.

Exit codes: 0 success, 1 the command's own failure, 2 a bad command line, flag or device (the
message names the culprit and the fix), 130 Ctrl-C, 141 the reader of the output went away
(``arignote config | head``), quietly.

Example::

    $ arignote config --json
    $ arignote devices
    $ arignote --version
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from importlib import metadata

from arignote import __version__, config
from arignote.errors import ArignoteError, ConfigError

# command name -> module under arignote.commands
COMMANDS = {
    "config": "config_cmd",
    "devices": "devices_cmd",
    "doctor": "doctor_cmd",
    "smi": "smi_cmd",
    "run": "run_cmd",
    "dash": "dash_cmd",
    "bench": "bench_cmd",
    "demo": "demo_cmd",
    "selftest": "selftest_cmd",
    "convert": "convert_cmd",
}
# commands that show the flags and the machine: a device this machine lacks (device=cuda7) is what they
# report, so their config reads do not raise it (config.unchecked); the others fail at the first read
SHOW_COMMANDS = {"config", "devices", "doctor", "smi", "dash"}


def _load(name: str):
    return importlib.import_module(f"arignote.commands.{COMMANDS[name]}")


def _version() -> str:
    """``arignote 0.1.0 (torch 2.13.0+cpu, python 3.11.7)``, read without importing torch."""
    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = "not installed"
    return f"arignote {__version__} (torch {torch}, python {sys.version.split()[0]})"


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command (``only``: import just that command's module, the rest stay stubs)."""
    parser = argparse.ArgumentParser(prog="arignote", description="Painless neural-network training on GPUs.")
    parser.add_argument("-V", "--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and name != only:
            sub.add_parser(name, help=f"see 'arignote {name} --help'", add_help=False)
            continue
        module = _load(name)
        # argparse %-formats help strings: a literal % in HELP ("95% accuracy") must be doubled
        p = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.add_arguments(p)
    return parser


def _refuse_unknown(parser: argparse.ArgumentParser, command: str, extra: list[str]) -> None:
    """Exit 2 through the command's own parser (its usage line), with a "did you mean" per option."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    known = [o for a in sub._actions for o in a.option_strings]
    words = []
    for item in extra:
        hint = _did_you_mean(item.split("=", 1)[0], known) if item.startswith("-") else ""
        words.append(f"{item}{hint}")
    sub.error(f"unrecognized arguments: {', '.join(words)} (see 'arignote {command} --help')")


def _main(argv: list[str]) -> int:
    first = next((a for a in argv if not a.startswith("-")), None)
    only = first if first in COMMANDS else None
    if only is None and first is not None:
        print(f"arignote: unknown command '{first}'{_did_you_mean(first, list(COMMANDS))} "
              f"(commands: {', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    parser = build_parser(only)
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if extra and not getattr(args, "accepts_extra", False):
        _refuse_unknown(parser, args.command, extra)
    args.extra = extra
    try:
        if args.command in SHOW_COMMANDS:
            with config.unchecked():
                return int(_load(args.command).run(args) or 0)
        return int(_load(args.command).run(args) or 0)
    except ConfigError as exc:  # DeviceError and MemoryPlanError too: the user's input, exit 2
        print(f"arignote: {exc}", file=sys.stderr)
        return 2
    except ArignoteError as exc:
        print(f"arignote: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script and of ``python -m arignote``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _main(argv)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader (head, less) went away: no traceback, and no second error when Python flushes
        # stdout at exit (the recipe of the signal module's documentation)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
