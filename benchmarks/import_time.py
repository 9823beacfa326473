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
# the variance of torch's import (seconds on a loaded machine); prints "wall CPU"
IN_PROCESS = ("import time, torch\nw, c = time.perf_counter(), time.process_time()\n"
              + FIRST_USE.removeprefix("import torch; ").replace("; ", "\n")
              + "\nprint(time.perf_counter() - w, time.process_time() - c)")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def once(code: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh interpreter running ``code``."""
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - start, _children_cpu() - cpu


def in_process() -> tuple[float, float]:
    """(wall, CPU) seconds of the first use inside a fresh interpreter that imported torch."""
    out = subprocess.run([sys.executable, "-c", IN_PROCESS], check=True, capture_output=True, text=True)
    w, c = out.stdout.split()[-2:]
    return float(w), float(c)


def measure(rounds: int, cases: dict[str, str]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds per case, one per round (and the in-process first use, ``in process``)."""
    wall: dict[str, list[float]] = {name: [] for name in [*cases, "in process"]}
    cpu: dict[str, list[float]] = {name: [] for name in [*cases, "in process"]}
    names = [*cases, "in process"]
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]  # alternate the order each round
        for name in order:
            w, c = in_process() if name == "in process" else once(cases[name])
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
    parser.add_argument("--check", action="store_true", help=f"exit 1 if arignote costs > {BUDGET_S} s more "
                        f"or its first use > {FIRST_USE_BUDGET_S} s more than torch (wall)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
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
