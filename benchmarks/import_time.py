"""How long ``import arignote`` takes next to ``import torch`` (acceptance: at most 0.3 s more).

Each case runs in a fresh interpreter; the cases alternate round by round so drift (other jobs,
disk cache) hits them all alike; the median of ``--rounds`` is reported. Wall time of the whole
process minus the empty interpreter's, so interpreter start-up cancels out.

Example::

    $ .venv/bin/python benchmarks/import_time.py --rounds 9
    $ .venv/bin/python benchmarks/import_time.py --check     # exit 1 when the budget is exceeded
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time

BUDGET_S = 0.3
CASES = {
    "python (empty)": "pass",
    "import torch": "import torch",
    "import arignote": "import arignote",
    "import torch, arignote": "import torch, arignote",
    "arignote + first device query": "import arignote; arignote.devices.configured_devices()",
}


def once(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - start


def measure(rounds: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    names = list(CASES)
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]  # alternate the order each round
        for name in order:
            samples[name].append(once(CASES[name]))
    return {name: statistics.median(v) for name, v in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--check", action="store_true", help=f"exit 1 if arignote costs > {BUDGET_S} s more")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    once("import torch, arignote")  # warm the file cache so round 1 is not an outlier
    med = measure(args.rounds)
    base = med["python (empty)"]
    print(f"{platform.node()} · Python {platform.python_version()} · {args.rounds} rounds, median, "
          f"minus the empty interpreter ({base * 1000:.0f} ms)\n")
    print("| case | seconds |\n| --- | ---: |")
    for name, t in med.items():
        if name != "python (empty)":
            print(f"| `{CASES[name]}` | {t - base:.3f} |")
    extra = med["import arignote"] - med["import torch"]
    on_top = med["import torch, arignote"] - med["import torch"]
    print(f"\nimport arignote - import torch = {extra:+.3f} s (budget +{BUDGET_S} s); "
          f"arignote on top of torch = {on_top:+.3f} s")
    return 1 if args.check and extra > BUDGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
