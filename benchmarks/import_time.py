"""How long ``import arignote`` and the first use of its Keras API take next to ``import torch``.

Acceptance: ``import arignote`` at most 0.3 s more than ``import torch`` (issue 2); the first use
(``from arignote.models import Sequential; from arignote.layers import Dense, Conv2D`` after torch)
at most 0.15 s more (issue 32), median of 7 fresh processes. CPU time of the child processes is
printed beside wall time: on a shared machine it moves much less with the load. The spread of the
first use's cost over torch is the range of the per-round differences (each round runs both).

Python reads each module's cached bytecode (``__pycache__``) as an installed package does; with
``PYTHONDONTWRITEBYTECODE=1`` and no cache it compiles every arignote module from source in every
process, which costs more than the imports themselves: ``python -m compileall -q src`` first.

Each case runs in a fresh interpreter; the cases alternate round by round so drift (other jobs,
disk cache) hits them all alike; the median of ``--rounds`` is reported. Wall time of the whole
process minus the empty interpreter's, so interpreter start-up cancels out.

Example::

    $ .venv/bin/python benchmarks/import_time.py --rounds 9
    $ .venv/bin/python benchmarks/import_time.py --check     # exit 1 when the budget is exceeded
    $ .venv/bin/python benchmarks/import_time.py --rounds 7 --srcs /tmp/main/src /tmp/branch/src
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BUDGET_S = 0.3
FIRST_USE_BUDGET_S = 0.15
FIRST_USE = "import torch; from arignote.models import Sequential; from arignote.layers import Dense, Conv2D"
CASES = {
    "python (empty)": "pass",
    "import torch": "import torch",
    "import arignote": "import arignote",
    "import torch, arignote": "import torch, arignote",
    "arignote + first device query": "import arignote.runtime.setup as s; s.configured_devices()",
    "first use of the Keras API": FIRST_USE,
}
# the first use timed inside the process, after its own `import torch`: the increment alone, without
# the variance of torch's import (seconds on a loaded machine); prints "wall CPU full-GC": the last is
# the wall time of the full (generation 2) garbage collections that ran meanwhile (torch's ~170k
# objects walked once the new objects cross the collector's threshold, not arignote's own work)
IN_PROCESS = ("import gc, time, torch\nfull, t = [], {}\n"
              "gc.callbacks.append(lambda phase, info: info['generation'] == 2 and (t.__setitem__('s', "
              "time.perf_counter()) if phase == 'start' else full.append(time.perf_counter() - t['s'])))\n"
              "w, c = time.perf_counter(), time.process_time()\n"
              + FIRST_USE.removeprefix("import torch; ").replace("; ", "\n")
              + "\nprint(time.perf_counter() - w, time.process_time() - c, sum(full))")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _env(src: str | None) -> dict[str, str] | None:
    """The children's environment: ``src`` first on PYTHONPATH (None: this process's own)."""
    return None if src is None else {**os.environ, "PYTHONPATH": src}


def once(code: str, src: str | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh interpreter running ``code``."""
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=_env(src))
    return time.perf_counter() - start, _children_cpu() - cpu


def in_process(src: str | None = None) -> tuple[float, float, float]:
    """(wall, CPU, full-GC wall) seconds of the first use inside a fresh interpreter that imported torch."""
    out = subprocess.run([sys.executable, "-c", IN_PROCESS], check=True, capture_output=True, text=True,
                         env=_env(src))
    w, c, g = out.stdout.split()[-3:]
    return float(w), float(c), float(g)


def side_by_side(rounds: int, srcs: list[str]) -> None:
    """The first use of each ``src`` (a compiled copy of ``src/``) and ``import torch``, alternating
    round by round: per src the median (range) of the process minus torch's in the same round, and of
    the in-process timing; each src's arignote module count at the first use."""
    names = ["import torch", *(f"first use {i}" for i in range(len(srcs))),
             *(f"in process {i}" for i in range(len(srcs)))]
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    full_gc: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            kind, _, i = name.rpartition(" ")
            if name == "import torch":
                w, c = once("import torch")
            elif kind == "in process":
                w, c, g = in_process(srcs[int(i)])
                full_gc[name].append(g)
            else:
                w, c = once(FIRST_USE, srcs[int(i)])
            wall[name].append(w)
            cpu[name].append(c)
    count = "import sys, torch; n = len(sys.modules); " + FIRST_USE.removeprefix("import torch; ") + (
        "; print(sum(m.startswith('arignote') for m in sys.modules), len(sys.modules) - n)")

    def stat(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} ({min(values):.3f} .. {max(values):.3f})"

    print(f"{platform.node()} · Python {platform.python_version()} · {rounds} rounds side by side · load "
          f"average {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print("| src | first use - torch, wall s | same, CPU s | in process, wall s | in process, CPU s "
          "| of which full GC, wall s | arignote modules (all new) |\n| --- | ---: | ---: | ---: | ---: "
          "| ---: | ---: |")
    for i, src in enumerate(srcs):
        dw = [a - b for a, b in zip(wall[f"first use {i}"], wall["import torch"])]
        dc = [a - b for a, b in zip(cpu[f"first use {i}"], cpu["import torch"])]
        mods = subprocess.run([sys.executable, "-c", count], check=True, capture_output=True, text=True,
                              env=_env(src)).stdout.split()
        print(f"| {src} | {stat(dw)} | {stat(dc)} | {stat(wall[f'in process {i}'])} | "
              f"{stat(cpu[f'in process {i}'])} | {stat(full_gc[f'in process {i}'])} | "
              f"{mods[0]} ({mods[1]}) |")
    print(f"\nimport torch: {stat(wall['import torch'])} s wall, {stat(cpu['import torch'])} s CPU")


def measure(rounds: int, cases: dict[str, str]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds per case, one per round (and the in-process first use, ``in process``)."""
    wall: dict[str, list[float]] = {name: [] for name in [*cases, "in process"]}
    cpu: dict[str, list[float]] = {name: [] for name in [*cases, "in process"]}
    names = [*cases, "in process"]
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]  # alternate the order each round
        for name in order:
            w, c = in_process()[:2] if name == "in process" else once(cases[name])
            wall[name].append(w)
            cpu[name].append(c)
    return wall, cpu


def spread(a: list[float], b: list[float]) -> str:
    """The range of the per-round differences ``a - b``."""
    d = sorted(x - y for x, y in zip(a, b))
    return f"{d[0]:+.3f} .. {d[-1]:+.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--first-use-only", action="store_true",
                        help="only the empty interpreter, torch and the first use (faster, more rounds)")
    parser.add_argument("--srcs", nargs="+", metavar="SRC", help="side by side: the first use with each "
                        "SRC (a compiled copy of src/) first on PYTHONPATH, alternating round by round")
    parser.add_argument("--check", action="store_true", help=f"exit 1 if arignote costs > {BUDGET_S} s more "
                        f"or its first use > {FIRST_USE_BUDGET_S} s more than torch (wall)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    if args.srcs:
        for src in args.srcs:
            once("import torch, arignote", src)  # warm the file cache so round 1 is not an outlier
        side_by_side(args.rounds, args.srcs)
        return 0
    once("import torch, arignote")  # warm the file cache so round 1 is not an outlier
    cases = {k: v for k, v in CASES.items() if not args.first_use_only or k in (
        "python (empty)", "import torch", "first use of the Keras API")}
    walls, cpus = measure(args.rounds, cases)
    med = {name: statistics.median(v) for name, v in walls.items()}
    cpu = {name: statistics.median(v) for name, v in cpus.items()}
    base, base_cpu = med["python (empty)"], cpu["python (empty)"]
    print(f"{platform.node()} · Python {platform.python_version()} · {args.rounds} rounds, median, "
          f"minus the empty interpreter ({base * 1000:.0f} ms wall, {base_cpu * 1000:.0f} ms CPU) · "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| case | wall s | CPU s |\n| --- | ---: | ---: |")
    for name, t in med.items():
        if name not in ("python (empty)", "in process"):
            print(f"| `{CASES[name]}` | {t - base:.3f} | {cpu[name] - base_cpu:.3f} |")
    extra = med.get("import arignote", 0.0) - med["import torch"]
    on_top = med.get("import torch, arignote", 0.0) - med["import torch"]
    first = med["first use of the Keras API"] - med["import torch"]
    first_cpu = cpu["first use of the Keras API"] - cpu["import torch"]
    if not args.first_use_only:
        print(f"\nimport arignote - import torch = {extra:+.3f} s (budget +{BUDGET_S} s); "
              f"arignote on top of torch = {on_top:+.3f} s")
    key = "first use of the Keras API"
    print(f"first use - import torch = {first:+.3f} s wall, {first_cpu:+.3f} s CPU "
          f"(budget +{FIRST_USE_BUDGET_S} s); per round: wall {spread(walls[key], walls['import torch'])}, "
          f"CPU {spread(cpus[key], cpus['import torch'])}")
    iw, ic = walls["in process"], cpus["in process"]
    print(f"first use timed inside the process after its torch import: {statistics.median(iw):.3f} s wall "
          f"({min(iw):.3f} .. {max(iw):.3f}), {statistics.median(ic):.3f} s CPU "
          f"({min(ic):.3f} .. {max(ic):.3f})")
    package = Path(importlib.util.find_spec("arignote").origin).parent
    cached = any((package / "__pycache__").glob("*.pyc"))
    print("arignote's bytecode cache: " + ("present" if cached else "ABSENT (each module compiled anew)"))
    over = first > FIRST_USE_BUDGET_S or (not args.first_use_only and extra > BUDGET_S)
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
