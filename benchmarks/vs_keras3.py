"""arignote against Keras 3 (torch backend) on the Keras 2 zoo (:mod:`arignote.bench.zoo`), side by side.

Two long-lived workers, one per framework (arignote in this interpreter's venv, Keras 3 in the side
venv of ``scripts/setup-keras3-venv.sh``, both on the same torch; :mod:`arignote.bench.zoo_timing`,
which ``arignote bench --zoo --vs-keras3`` uses too), build the same models; for each
model the parent runs alternating rounds (arignote first in even rounds, Keras 3 first in odd ones)
of ``--steps`` ``train_on_batch`` calls after ``--warmup`` ones, then ``predict`` at batch 1 and 64.
Per round, the ratio is Keras 3's median step time over arignote's (> 1: arignote faster); the table
gives the median ratio over rounds with its spread (min-max), in CPU time (each worker's own
``process_time``; 1 thread, so load on a shared machine moves it much less than wall time) and wall.

Example::

    $ OMP_NUM_THREADS=1 .venv/bin/python benchmarks/vs_keras3.py --rounds 3 --models mlp,conv_lstm
    $ .venv/bin/python benchmarks/vs_keras3.py --keras3-python /work/k3venv/bin/python --markdown
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
SRC = HERE.parents[1] / "src"
sys.path.insert(0, str(SRC))

from arignote.bench.zoo_timing import PREDICT_BATCHES, Worker  # noqa: E402


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def compare(
    models: list[str], rounds: int, steps: int, warmup: int, predict_reps: int, k3_python: str
) -> list:
    ours = Worker("arignote", sys.executable, "cpu", threads=1)
    theirs = Worker("keras3", k3_python, threads=1)
    print(f"# {ours.hello['ready']} vs {theirs.hello['ready']}, torch {ours.hello['torch']}", file=sys.stderr)
    rows = []
    try:
        for name in models:
            ratios_cpu, ratios_wall, ours_cpu, theirs_cpu, pred = (
                [],
                [],
                [],
                [],
                {b: [] for b in PREDICT_BATCHES},
            )
            for r in range(rounds):
                pair = (ours, theirs) if r % 2 == 0 else (theirs, ours)
                got = {id(w): w.run(name, warmup if r < 2 else 0, steps, predict_reps) for w in pair}
                a, k = got[id(ours)], got[id(theirs)]
                ours_cpu.append(statistics.median(a["cpu"]))
                theirs_cpu.append(statistics.median(k["cpu"]))
                ratios_cpu.append(theirs_cpu[-1] / ours_cpu[-1])
                ratios_wall.append(statistics.median(k["wall"]) / statistics.median(a["wall"]))
                for b in PREDICT_BATCHES if predict_reps else ():
                    pred[b].append((a["predict"][str(b)]["cpu"], k["predict"][str(b)]["cpu"]))
            row = {
                "model": name,
                "arignote_ms": 1000 * statistics.median(ours_cpu),
                "keras3_ms": 1000 * statistics.median(theirs_cpu),
                "cpu_ratio": _spread(ratios_cpu),
                "wall_ratio": _spread(ratios_wall),
                "min_cpu_ratio": min(ratios_cpu),
                "cpu_ratios": [round(r, 3) for r in ratios_cpu],  # per round, in order (stderr's JSON)
            }
            for b in PREDICT_BATCHES:
                row[f"predict{b}"] = (
                    f"{1000 * statistics.median(p for p, _ in pred[b]):.1f} / "
                    f"{1000 * statistics.median(q for _, q in pred[b]):.1f} ms"
                ) if pred[b] else "not timed"
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        ours.close()
        theirs.close()
    return rows


def markdown(rows: list, args: argparse.Namespace) -> str:
    head = (
        f"{platform.node()} · {os.cpu_count()} cores · load average {os.getloadavg()[0]:.1f} at the end · "
        f"{args.rounds} alternating rounds of {args.steps} steps (after {args.warmup} warm-up), 1 thread\n\n"
        "| model | arignote ms/step (CPU) | Keras 3 ms/step (CPU) | Keras 3 / arignote, CPU (min-max) "
        "| same, wall | predict batch 1, arignote / Keras 3 | predict batch 64 |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    )
    return head + "\n".join(
        f"| {r['model']} | {r['arignote_ms']:.1f} | {r['keras3_ms']:.1f} | {r['cpu_ratio']} "
        f"| {r['wall_ratio']} | {r['predict1']} | {r['predict64']} |"
        for r in rows
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help="comma-separated zoo names (default: all)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5, help="timed train_on_batch steps per round")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--predict-reps", type=int, default=5,
                        help="0: no predict, rounds of training steps alone (--steps 1: a step each in turn)")
    parser.add_argument("--keras3-python", default="/work/k3venv/bin/python")
    parser.add_argument("--goal", type=float, default=1.5, help="--check: every model's lowest CPU ratio")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when a model's lowest ratio is under --goal"
    )
    args = parser.parse_args()
    from arignote.bench.zoo import MODELS

    models = [m for m in args.models.split(",") if m] or list(MODELS)
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown zoo models {unknown}; choose from {', '.join(MODELS)}")
    rows = compare(models, args.rounds, args.steps, args.warmup, args.predict_reps, args.keras3_python)
    print(markdown(rows, args))
    behind = [r["model"] for r in rows if r["min_cpu_ratio"] < args.goal]
    if behind:
        print(f"\nunder {args.goal}x in some round: {', '.join(behind)}")
    return 1 if args.check and behind else 0


if __name__ == "__main__":
    sys.exit(main())
