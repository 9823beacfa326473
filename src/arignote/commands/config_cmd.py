"""``arignote config``: every flag, its value, where that value came from and what it means.

The listing is followed by the checks ``fit`` makes before it trains (the device flag resolved on
this machine, the data-parallel layout, precision against floatX and the device, the GPU memory
plan): a setting ``fit`` would refuse is reported here with the same message and exit status 2;
a setting that cannot take effect on this machine gets one note.

``--from-theano`` writes the ``~/.arignoterc`` equivalent to ``~/.theanorc`` and ``THEANO_FLAGS``
(see :mod:`arignote.config.theanorc`), listing what has no equivalent.

Example::

    $ arignote config
    device              'auto'     default
        where to train: auto, cpu, cuda, cudaN, cuda:N, all, cuda0,cuda2, free:N (gpu/gpuN accepted)
    ...
    $ THEANO_FLAGS=device=cuda0,floatX=float32 arignote config --from-theano --output -
"""

from __future__ import annotations

import json
import os
import sys

from arignote import config
from arignote.atomic_file import write_atomically
from arignote.config import theanorc
from arignote.devices import banner
from arignote.errors import ConfigError
from arignote.runtime import memory

HELP = "print every flag, its value, source and doc, then check them as fit would (exit 2: unusable)"


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--from-theano", action="store_true",
                        help="write the arignote rc equivalent to ~/.theanorc and THEANO_FLAGS")
    parser.add_argument("--output", metavar="PATH", default="~/.arignoterc",
                        help="with --from-theano: the file to write ('-': print it), default ~/.arignoterc")
    parser.add_argument("--force", action="store_true", help="with --from-theano: replace an existing file")


def check() -> tuple[list[str], list[str]]:
    """``(errors, notes)``: what ``fit`` would refuse with these flags on this machine, and the
    settings that cannot take effect here. Looks only (a ``free:N`` device is not leased)."""
    # both import torch: kept off `arignote --help` and `config --from-theano`
    from arignote.parallel import check_layout
    from arignote.runtime import setup  # (torch)
    from arignote.runtime.precision import Precision  # (torch)

    try:
        chosen = setup.configured_devices(lease=False)
    except ConfigError as exc:
        return [str(exc)], []
    errors = []
    steps = [lambda: check_layout(chosen)]
    steps += [lambda d=d: Precision.from_config(d) for d in chosen]
    steps += [lambda d=d: memory.plan_for(d) for d in chosen if d.is_cuda]
    steps += [lambda: jit_plan(chosen)]
    for step in steps:
        try:
            step()
        except ConfigError as exc:
            errors.append(str(exc))
    return errors, banner.setting_notes(chosen, config.get)


def jit_plan(chosen: list) -> None:
    """The ``jit`` flag resolved as ``fit`` resolves it for the first chosen device (its refusals:
    CUDA graphs with the caching allocator off)."""
    import torch  # why: torch stays off `arignote --help` and `config --from-theano`

    from arignote.training import compiled  # why: imports torch (as above)

    compiled.resolve(None, torch.device("cuda" if chosen[0].is_cuda else "cpu"))


def _from_theano(args) -> int:
    conv = theanorc.convert(theanorc.read_theano())
    if not conv.flags and not conv.unconverted:
        print("arignote config: no Theano settings found (THEANORC or ~/.theanorc, THEANO_FLAGS)",
              file=sys.stderr)
        return 1
    text = theanorc.render(conv)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    path = os.path.expanduser(args.output)
    if os.path.exists(path) and not args.force:
        print(f"arignote config: {path} exists; pass --force to replace it, or --output - to print the "
              "converted settings", file=sys.stderr)
        return 2
    # replaced whole or not at all: an interrupted --force never leaves a half-written rc file
    try:
        write_atomically(path, text)
    except OSError as exc:
        print(f"arignote config: could not write {path}: {exc.strerror or exc}; nothing was changed there",
              file=sys.stderr)
        return 1
    print(f"wrote {path}: {len(conv.flags)} setting(s) converted")
    for s in conv.unconverted:
        print(f"  no equivalent: {s.key} = {s.value} ({s.origin}): {s.reason}")
    return 0


def run(args) -> int:
    if args.from_theano:
        return _from_theano(args)
    rows = config.flags()
    errors, notes = check()
    if args.json:  # the flags only; notes and errors go to stderr as below
        print(json.dumps([{"name": r.name, "value": r.value, "source": r.source, "type": r.kind,
                           "default": r.default, "doc": r.doc} for r in rows], indent=2))
    else:
        width = max(len(r.name) for r in rows)
        vwidth = max(len(repr(r.value)) for r in rows)
        for r in rows:
            print(f"{r.name:<{width}}  {r.value!r:<{vwidth}}  {r.source}")
            print(f"    {r.doc}")
    for line in notes:
        print(line, file=sys.stderr if args.json else sys.stdout)
    for line in errors:
        print(f"arignote config: {line}", file=sys.stderr)
    return 2 if errors else 0
