"""``arignote smi``: who uses which GPU, how hot and how full it is, which GPUs arignote leases, and
the job (script, epoch, ETA) of each GPU process that is an arignote training run.

Never imports torch (NVML through ``nvidia-ml-py``, CPU/RAM through psutil), so it starts fast.

Example::

    $ arignote smi                       # one table per machine, like nvidia-smi
    $ arignote smi --json > snap.json    # for scripts; also what --inventory reads
    $ arignote smi --watch 1             # live view, Ctrl-C to stop
    $ arignote smi --inventory snap.json # render a saved snapshot (tests, other machines)
"""

from __future__ import annotations

import sys

from arignote.devices import nvml
from arignote.devices.nvml import SnapshotFormatError
from arignote.errors import ShareError
from arignote.share.leases import current_leases
from arignote.share.status import read_runs

HELP = "show GPUs, their processes and arignote leases (like nvidia-smi; --json, --watch)"


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print the snapshot as JSON (GPUs, processes with their arignote job, "
                             "host, leases, running arignote runs; n/a readings are null)")
    parser.add_argument("--watch", nargs="?", type=float, const=2.0, default=None, metavar="SECONDS",
                        help="redraw every SECONDS (default 2) until Ctrl-C")
    parser.add_argument("--no-processes", action="store_true", help="leave out the process table")
    parser.add_argument("--inventory", metavar="FILE",
                        help="read the machine from FILE, a JSON snapshot as written by "
                             "`arignote smi --json`, instead of NVML (re-read at every --watch refresh)")


def _reader(args):
    """A function returning a fresh (snapshot, leases, runs)."""
    def read():
        if args.inventory:
            snap = nvml.load(args.inventory)
        else:
            # CPU use since start-up (at least 30 ms), then since the previous refresh (--watch)
            snap = nvml.snapshot(processes=not args.no_processes, cpu_interval=0.03)
        runs, _ = read_runs(hours=0)  # running ones; `arignote dash` shows unreadable records
        return snap, current_leases(), runs

    return read


def run(args) -> int:
    nvml.prime_cpu()  # the CPU-use window spans our own start-up instead of an extra sleep
    from arignote import monitor  # after prime_cpu(): its import (rich) counts toward that window

    if args.watch is not None and args.watch <= 0:
        print(f"arignote smi: --watch {args.watch:g}: the refresh interval must be > 0 seconds",
              file=sys.stderr)
        return 2
    if args.watch is not None and args.json:
        print("arignote smi: --watch and --json do not combine; loop over `arignote smi --json` instead",
              file=sys.stderr)
        return 2
    read = _reader(args)
    try:
        if args.watch is not None:
            monitor.watch(read, interval=args.watch, processes=not args.no_processes)
            return 0
        snap, leases, runs = read()
    except SnapshotFormatError as exc:
        print(f"arignote smi: {exc}", file=sys.stderr)
        return 2
    except ShareError as exc:
        print(f"arignote smi: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(monitor.to_json(snap, leases, processes=not args.no_processes, runs=runs))
    else:
        from rich.console import Console

        # piped output is not cut at 80 columns: a log file or `less -S` can show the full table
        width = None if sys.stdout.isatty() else 200
        console = Console(highlight=False, width=width)
        console.print(monitor.render(snap, leases, processes=not args.no_processes, runs=runs))
    return 0
