"""How long ``arignote smi`` takes from launch to exit (acceptance: under 0.3 s).

Each sample is a fresh process, timed wall-clock from spawn to exit, output discarded; the cases
alternate order round by round so background load hits them alike; the median is reported. The
figure includes interpreter start-up (what a user waits for); the empty interpreter is shown for
reference. ``--check`` exits 1 when a case's median exceeds the budget and also fails if torch
was imported.

Example::

    $ .venv/bin/python benchmarks/smi_startup.py --rounds 9
    $ .venv/bin/python benchmarks/smi_startup.py --check
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BUDGET_S = 0.3
FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "smi_4gpus.json"
PY = sys.executable
CASES = {
    "python (empty)": [PY, "-c", "pass"],
    "arignote smi": [PY, "-m", "arignote", "smi"],
    "arignote smi --json": [PY, "-m", "arignote", "smi", "--json"],
    "arignote smi --inventory (4 GPUs, 3 processes)":
        [PY, "-m", "arignote", "smi", "--inventory", str(FIXTURE)],
}
NO_TORCH = ("import sys; from arignote.cli import main; main(['smi']); "
            "sys.exit(any(m == 'torch' or m.startswith('torch.') for m in sys.modules))")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def once(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child): CPU time barely depends on other jobs' load."""
    cpu0, start = _children_cpu(), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "COLUMNS": "160"})
    return time.perf_counter() - start, _children_cpu() - cpu0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--check", action="store_true", help=f"exit 1 if a median exceeds {BUDGET_S} s")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    for cmd in CASES.values():
        once(cmd)  # warm the file cache
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in CASES}
    names = list(CASES)
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            samples[name].append(once(CASES[name]))
    torch_loaded = subprocess.run([PY, "-c", NO_TORCH], stdout=subprocess.DEVNULL).returncode != 0
    load = os.getloadavg()[0]
    print(f"{platform.node()} · Python {platform.python_version()} · {os.cpu_count()} cores · "
          f"load average {load:.1f} · {args.rounds} fresh runs each, wall time spawn to exit\n")
    print("| command | median wall s | min wall s | max wall s | median CPU s |\n"
          "| --- | ---: | ---: | ---: | ---: |")
    over = []
    for name, pairs in samples.items():
        values = [w for w, _ in pairs]
        med = statistics.median(values)
        cpu = statistics.median(c for _, c in pairs)
        print(f"| `{name}` | {med:.3f} | {min(values):.3f} | {max(values):.3f} | {cpu:.3f} |")
        if name.startswith("arignote") and med > BUDGET_S:
            over.append(name)
    print(f"\ntorch imported by smi: {'YES' if torch_loaded else 'no'}")
    if args.check and (over or torch_loaded):
        print(f"over the {BUDGET_S} s budget: {', '.join(over) or '-'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
