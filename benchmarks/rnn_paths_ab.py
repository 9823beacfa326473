"""A/B of benchmarks/rnn_paths.py's cases between two source trees, side by side (issue 32 item 3).

Two worker processes, one per tree (``--a``, ``--b``: a ``src`` folder each, e.g. a ``git archive`` of
main and the branch), build the same cases once; the driver then asks them for one round at a time,
A then B, B then A in turn (never both at once), and each reports the CPU time of its own
``train_on_batch`` steps (median of ``--steps``). Printed per case: each tree's ms/step and ratio to
the fused case of its own round (median, min-max over rounds), B / A, and B / A of each side's
fastest round (contention on a shared machine only adds time).

Example::

    $ git archive main src | tar -x -C /tmp/main
    $ OMP_NUM_THREADS=1 .venv/bin/python benchmarks/rnn_paths_ab.py --a /tmp/main/src --b src --rounds 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CASES = ["LSTM (fused)", "LSTM recurrent_activation=hard_sigmoid", "LSTM with a mask (zeros inside)",
                 "LSTM hard_sigmoid with a mask", "LSTM recurrent_dropout=0.2",
                 "LSTM recurrent_dropout=0.2 implementation=1 (Keras <= 2.2)"]


def worker(cases: list[str], steps: int) -> None:
    import time  # why: the worker alone times steps

    import rnn_paths  # why: found on the worker's PYTHONPATH (this folder); imports the tree under test
    import torch  # why: the worker alone runs torch

    torch.set_num_threads(1)
    built = {name: rnn_paths.build(name) for name in cases}
    for model, x, y in built.values():
        for _ in range(2):
            model.train_on_batch(x, y)
    print(json.dumps({"ready": __import__("arignote").__file__}), flush=True)
    for line in sys.stdin:
        order = cases if line.strip() == "forward" else cases[::-1]
        result = {}
        for name in order:
            model, x, y = built[name]
            per = []
            for _ in range(steps):
                c = time.process_time()
                model.train_on_batch(x, y)
                per.append(time.process_time() - c)
            result[name] = statistics.median(per)
        print(json.dumps(result), flush=True)


def _reply(p: subprocess.Popen) -> dict:
    """The worker's next JSON line (arignote's banner lines pass through)."""
    while True:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError(f"a worker ended (exit code {p.wait()}); its error is above")
        if line.startswith("{"):
            return json.loads(line)
        print(line, end="")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="src folder of tree A (before)")
    parser.add_argument("--b", required=True, help="src folder of tree B (after)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--cases", nargs="*", default=DEFAULT_CASES, help="names from rnn_paths.CASES")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.cases, args.steps)
        return 0
    cases = args.cases if args.cases[0] == "LSTM (fused)" else ["LSTM (fused)", *args.cases]
    procs = {}
    for side, src in (("A", args.a), ("B", args.b)):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(src), HERE]), OMP_NUM_THREADS="1")
        procs[side] = subprocess.Popen(
            [sys.executable, __file__, "--worker", "--a", src, "--b", src, "--steps", str(args.steps),
             "--cases", *cases], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        ready = _reply(procs[side])
        print(f"{side}: {ready['ready']}")
    times = {side: {name: [] for name in cases} for side in procs}
    for r in range(args.rounds):
        for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
            p = procs[side]
            p.stdin.write("forward\n" if r % 2 == 0 else "reverse\n")
            p.stdin.flush()
            for name, t in _reply(p).items():
                times[side][name].append(t)
    for p in procs.values():
        p.stdin.close()
        p.wait()
    print(f"\n{args.rounds} rounds of {args.steps} steps, A and B alternating, 1 thread, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| case | A ms/step | A / fused | B ms/step | B / fused | B / A | B / A, fastest rounds |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in cases:
        cells = []
        for side in ("A", "B"):
            ts, ref = times[side][name], times[side]["LSTM (fused)"]
            ratios = [a / b for a, b in zip(ts, ref)]
            cells += [f"{1000 * statistics.median(ts):.1f}",
                      f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"]
        ba = [b / a for a, b in zip(times["A"][name], times["B"][name])]
        spread = f"{statistics.median(ba):.2f}x ({min(ba):.2f}-{max(ba):.2f})"
        fastest = min(times["B"][name]) / min(times["A"][name])  # contention only adds time
        print(f"| {name} | {' | '.join(cells)} | {spread} | {fastest:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
