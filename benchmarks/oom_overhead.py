"""What out-of-memory resilience costs when nothing runs out (issue 7).

1. The guard's per-step overhead on one device: ``OOMGuard.step`` around no-op step functions,
   against calling them directly (pure Python cost; a real step adds nothing else).
2. Data parallel on 2 gloo CPU processes, the MLP 784-512-512-10 at batch 128: ``memory.on_oom=
   split`` (steps on the unwrapped module, one agreement + one gradient reduction per step) against
   ``raise`` (DDP's overlapped bucket reductions), alternating the two, samples/s from rank 0.

Usage::

    .venv/bin/python benchmarks/oom_overhead.py --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def guard_overhead(n: int = 200_000) -> float:
    """Microseconds the guard adds to one step (median of 5)."""
    import torch

    from arignote.training.oom import OOMGuard

    x = torch.zeros(32, 8)
    guard = OOMGuard(on_oom="split", inject_above=0)

    def noop(*_):
        return None

    out = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            noop(x, x, 1.0)
            noop()
        plain = time.perf_counter() - t
        t = time.perf_counter()
        for _ in range(n):
            guard.step(x, x, noop, noop, noop)
        out.append((time.perf_counter() - t - plain) / n * 1e6)
    return statistics.median(out)


def dp_worker(mode: str) -> None:
    """One data-parallel run (rank 0 prints samples/s as JSON); re-run by the launcher for rank 1."""
    import numpy as np
    import torch

    import arignote
    from arignote.models import Model

    rank = int(os.environ.get("RANK", "0"))
    arignote.configure(device="cpu", cpu_processes=2, print_active_device=False, memory_on_oom=mode)
    rng = np.random.default_rng(0)
    x = rng.random((128 * 60, 784)).astype("float32")
    y = rng.integers(0, 10, len(x))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                              torch.nn.ReLU(), torch.nn.Linear(512, 10), torch.nn.Softmax(-1))
    model = Model(net)
    model.compile("rmsprop", "sparse_categorical_crossentropy")
    model.fit(x[:1024], y[:1024], batch_size=128, epochs=1, verbose=0)  # warm-up
    t = time.perf_counter()
    model.fit(x, y, batch_size=128, epochs=2, verbose=0)
    if rank == 0:
        print(json.dumps({"mode": mode, "samples_per_s": 2 * len(x) / (time.perf_counter() - t)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", choices=["split", "raise"])
    args = parser.parse_args()
    if args.worker:
        dp_worker(args.worker)
        return 0
    print(f"guard overhead per step: {guard_overhead():.2f} us")
    speeds: dict[str, list[float]] = {"raise": [], "split": []}
    for r in range(args.rounds):
        order = ["raise", "split"] if r % 2 == 0 else ["split", "raise"]
        for mode in order:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", mode],
                                  capture_output=True, text=True, timeout=600)
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not line:
                print(proc.stderr[-2000:], file=sys.stderr)
                return 1
            speeds[mode].append(json.loads(line[-1])["samples_per_s"])
    for mode, values in speeds.items():
        print(f"data parallel, memory.on_oom={mode}: median {statistics.median(values):.0f} samples/s "
              f"({', '.join(f'{v:.0f}' for v in values)})")
    ratio = statistics.median(speeds["split"]) / statistics.median(speeds["raise"])
    print(f"split / raise: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
