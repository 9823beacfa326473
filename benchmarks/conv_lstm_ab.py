"""A/B of ConvLSTM2D's training step between two source trees, side by side (issue 32 item 2).

Two worker processes, one per tree (``--a``, ``--b``: a ``src`` folder each, e.g. a ``git archive`` of
main and the branch), 1 thread each, build the zoo's ``conv_lstm`` model (:mod:`arignote.bench.zoo`:
two ConvLSTM2D(40, 3x3) + BatchNormalization, Conv3D; batch 10 of 15 frames of 40x40x1) and the
recurrence alone on its first layer's shapes (``conv_lstm_sequence.run``: forward and backward of
the steps, hard_sigmoid, fresh states, channels_last). The driver asks them for one round at a time,
A then B, B then A in turn (never both at once); each reports the CPU time (its own
``process_time``) of ``--steps`` ``train_on_batch`` calls and recurrence runs (medians). Printed per
case: each tree's ms, B / A per round (median, min-max) and B / A of each side's fastest round
(contention on a shared machine only adds time).

Example::

    $ git archive main src | tar -x -C /tmp/main
    $ OMP_NUM_THREADS=1 .venv/bin/python benchmarks/conv_lstm_ab.py --a /tmp/main/src --b src --rounds 7
    $ OMP_NUM_THREADS=1 .venv/bin/python benchmarks/conv_lstm_ab.py --a /tmp/main/src --b src --cases 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from rnn_paths_ab import _reply

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = ["zoo conv_lstm train_on_batch", "recurrence forward + backward (first layer)"]


def _recurrence_case() -> callable:
    """One run of the first ConvLSTM2D's steps on the zoo's shapes, forward and backward."""
    import torch  # why: the worker alone runs torch

    from arignote import activations  # why: the tree under test, from the worker's PYTHONPATH
    from arignote.layers.recurrent import conv_lstm_sequence as recurrence  # why: as above

    n, t, f, rows, cols = 10, 15, 40, 40, 40
    g = torch.Generator().manual_seed(0)
    last = torch.channels_last
    spec = recurrence.Recurrence(f, (1, 1), activations.get("tanh"), activations.get("hard_sigmoid"),
                                 True, False)
    xc = torch.randn(n * t, 4 * f, rows, cols, generator=g).contiguous(memory_format=last).requires_grad_()
    w = (torch.randn(4 * f, f, 3, 3, generator=g) * 0.1).requires_grad_()
    h = torch.zeros(n, f, rows, cols).contiguous(memory_format=last)
    proj = torch.randn(n, t, rows, cols, f, generator=g)

    def run() -> None:
        folded, ww = spec, w
        if hasattr(recurrence, "fold"):  # as ConvLSTM2D runs it: hard_sigmoid's affine in the kernels
            folded, _, _, ww = recurrence.fold(spec, w, None, w)
        out, _ = recurrence.run(xc, h, h, ww, folded)
        out.backward(proj)
        xc.grad = w.grad = None

    return run


def worker(steps: int, cases: list[str]) -> None:
    import time  # why: the worker alone times steps

    import torch  # why: the worker alone runs torch

    from arignote.bench import zoo  # why: the tree under test, from the worker's PYTHONPATH

    torch.set_num_threads(1)
    runs = {}
    if CASES[0] in cases:
        model, x, y = zoo.build("conv_lstm", zoo.arignote_api())
        runs[CASES[0]] = lambda: model.train_on_batch(x, y)
    if CASES[1] in cases:
        runs[CASES[1]] = _recurrence_case()
    for run in runs.values():
        run()
        run()
    print(json.dumps({"ready": __import__("arignote").__file__}), flush=True)
    for _ in sys.stdin:
        result = {}
        for name, run in runs.items():
            per = []
            for _ in range(steps):
                c = time.process_time()
                run()
                per.append(time.process_time() - c)
            result[name] = statistics.median(per)
        print(json.dumps(result), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="src folder of tree A (before)")
    parser.add_argument("--b", required=True, help="src folder of tree B (after)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--cases", type=int, nargs="*", default=[0, 1],
                        help=f"which cases (0: {CASES[0]}, 1: {CASES[1]})")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = [CASES[i] for i in args.cases]
    if args.worker:
        worker(args.steps, cases)
        return 0
    procs = {}
    for side, src in (("A", args.a), ("B", args.b)):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(src), HERE]), OMP_NUM_THREADS="1")
        procs[side] = subprocess.Popen(
            [sys.executable, __file__, "--worker", "--a", src, "--b", src, "--steps", str(args.steps),
             "--cases", *map(str, args.cases)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        print(f"{side}: {_reply(procs[side])['ready']}")
    times = {side: {name: [] for name in cases} for side in procs}
    for r in range(args.rounds):
        for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
            procs[side].stdin.write("round\n")
            procs[side].stdin.flush()
            for name, t in _reply(procs[side]).items():
                times[side][name].append(t)
    for p in procs.values():
        p.stdin.close()
        p.wait()
    print(f"\n{args.rounds} rounds of {args.steps} runs, A and B alternating, 1 thread, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| case | A ms | B ms | B / A | B / A, fastest rounds |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in cases:
        a, b = times["A"][name], times["B"][name]
        ba = [y / x for x, y in zip(a, b)]
        print(f"| {name} | {1000 * statistics.median(a):.0f} | {1000 * statistics.median(b):.0f} | "
              f"{statistics.median(ba):.3f}x ({min(ba):.3f}-{max(ba):.3f}) | {min(b) / min(a):.3f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
