"""``memory.host_cache`` on the zoo's batch methods, side by side (issue 32).

Two long-lived arignote workers (:mod:`arignote.bench.zoo_timing`, the ones ``vs_keras3.py`` uses),
one with arignote's defaults (the cache applied at the process's first training call and kept) and
one with ``ARIGNOTE_FLAGS=memory.host_cache=0`` (glibc's own behaviour: what every batch method ran
with before issue 32), build the same models; for each model the parent runs alternating rounds
(the cached side first in even rounds) of ``--steps`` ``train_on_batch`` calls after ``--warmup``
ones, then ``predict`` at batch 1 and 64. Per round the ratio is the uncached side's median step CPU
time over the cached side's (> 1: the cache is faster); the table gives the median over rounds with
its spread (min-max), 1 thread per worker.

Example::

    $ OMP_NUM_THREADS=1 .venv/bin/python benchmarks/host_memory_ab.py --models mlp,cnn --rounds 3
    $ .venv/bin/python benchmarks/host_memory_ab.py --models conv_lstm --rounds 3 --steps 2 --warmup 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1] / "src"))

from arignote.bench.zoo_timing import PREDICT_BATCHES, Worker  # noqa: E402

SIDES = {"cache": "", "no cache": "memory.host_cache=0"}


def _worker(flags: str) -> Worker:
    """A cpu worker with ``ARIGNOTE_FLAGS=flags`` (empty: the user's own, usually none)."""
    saved = os.environ.get("ARIGNOTE_FLAGS")
    os.environ["ARIGNOTE_FLAGS"] = flags
    try:
        return Worker("arignote", sys.executable, "cpu", threads=1)
    finally:
        if saved is None:
            os.environ.pop("ARIGNOTE_FLAGS")
        else:
            os.environ["ARIGNOTE_FLAGS"] = saved


def _spread(values: list[float], fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def compare(models: list[str], rounds: int, steps: int, warmup: int, predict_reps: int) -> list[dict]:
    workers = {side: _worker(flags) for side, flags in SIDES.items()}
    rows = []
    try:
        for name in models:
            step = {side: [] for side in SIDES}
            faults = {side: [] for side in SIDES}
            pred = {side: {b: [] for b in PREDICT_BATCHES} for side in SIDES}
            for r in range(rounds):
                order = list(SIDES) if r % 2 == 0 else list(SIDES)[::-1]
                for side in order:
                    got = workers[side].run(name, warmup if r < 2 else 0, steps, predict_reps)
                    step[side].append(statistics.median(got["cpu"]))
                    faults[side].append(got["minflt"] / steps)
                    for b in PREDICT_BATCHES:
                        pred[side][b].append(got["predict"][str(b)]["cpu"])
            ratios = [n / c for c, n in zip(step["cache"], step["no cache"])]
            pratios = {b: [n / c for c, n in zip(pred["cache"][b], pred["no cache"][b])]
                       for b in PREDICT_BATCHES}
            rows.append({"model": name, "cache_ms": [s * 1e3 for s in step["cache"]],
                         "nocache_ms": [s * 1e3 for s in step["no cache"]], "ratio": ratios,
                         "faults": {side: statistics.median(v) for side, v in faults.items()},
                         "predict_ratio": pratios})
            print(f"# {name}: done", file=sys.stderr, flush=True)
    finally:
        for w in workers.values():
            w.close()
    return rows


def markdown(rows: list[dict]) -> str:
    head = ("| model | step CPU ms, cache | step CPU ms, host_cache=0 | no cache / cache, step | "
            + " | ".join(f"predict b{b} ratio" for b in PREDICT_BATCHES)
            + " | page faults a step, cache / 0 |")
    lines = [head, "|" + " --- |" + " ---: |" * (4 + len(PREDICT_BATCHES))]
    for r in rows:
        preds = " | ".join(_spread(r["predict_ratio"][b]) + "x" for b in PREDICT_BATCHES)
        ms = f"{_spread(r['cache_ms'], '{:.1f}')} | {_spread(r['nocache_ms'], '{:.1f}')}"
        faults = f"{r['faults']['cache']:.0f} / {r['faults']['no cache']:.0f}"
        lines.append(f"| {r['model']} | {ms} | {_spread(r['ratio'])}x | {preds} | {faults} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="mlp,cnn,seeds_cnn,conv1d_text")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--predict-reps", type=int, default=3)
    args = p.parse_args(argv)
    rows = compare(args.models.split(","), args.rounds, args.steps, args.warmup, args.predict_reps)
    print(markdown(rows))
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
