"""fit's data-parallel step against a hand-written DDP loop, in the *same* two processes, block by block.

``ddp_overhead.py`` starts a fresh pair of processes for each side, so the two sides of a ratio run
seconds apart; on a shared 2-core machine the load changes in between and the per-round ratios
swing 0.8-1.5x. Here one pair of gloo processes (started with the torchrun variables, which fit
adopts) runs both sides on the same process group, alternating short blocks:

* ``fit``: ``Model(net).fit`` of one epoch of ``--steps`` global batches of ``2B`` rows
  (``B`` per rank), ``shuffle=False``, SGD, MSE; a step is timed from one ``on_train_batch_end``
  to the next;
* ``loop``: a second copy of the network (the same initial weights) in ``DistributedDataParallel``
  on the same process group and the same rows, in the loop a PyTorch user writes (slice, forward,
  loss, ``zero_grad``, backward, ``step``); a step is timed from one ``step()``'s end to the next.

Each block's figure is the median step after ``--warm`` steps (the first ones of a fit include
DDP's bucket rebuild); the blocks alternate which side goes first, and the result is the median of
the ratios of the two blocks of each pair (fit / loop), with the quartiles, in wall time and in
the process's CPU time per step (``time.process_time``: all of the process's threads, gloo's
included). Rank 0 reports; both ranks run the same blocks.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/ddp_paired.py --pairs 12 --steps 120 --warm 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from ddp_overhead import _machine, _port

WORKER = r'''
import copy, json, os, sys, time
import numpy as np, torch
import torch.distributed as dist

out, pairs, steps, batch, width, warm = sys.argv[1], *map(int, sys.argv[2:7])
torch.set_num_threads(1)
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
n = steps * 2 * batch
rng = np.random.default_rng(0)
x = rng.normal(size=(n, width)).astype("float32")
y = rng.normal(size=(n, 10)).astype("float32")
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                          torch.nn.ReLU(), torch.nn.Linear(width, 10))
twin = copy.deepcopy(net)

import arignote
from arignote.callbacks import Callback
from arignote.models import Model
from arignote.optimizers import SGD

arignote.configure(device="cpu", cpu_threads=1, print_active_device=False)
stamps = []


class Clock(Callback):
    def on_train_batch_end(self, batch, logs=None):
        stamps.append((time.perf_counter(), time.process_time()))


model = Model(net)
model.compile(SGD(lr=0.01), "mse")


def fit_block():
    model.fit(x, y, batch_size=2 * batch, epochs=1, shuffle=False, verbose=0, callbacks=[Clock()])


fit_block()  # joins the process group (torchrun variables); its steps are not counted
stamps.clear()
ddp = torch.nn.parallel.DistributedDataParallel(twin)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
xt, yt = torch.from_numpy(x), torch.from_numpy(y)
local = 2 * batch // world


def loop_block():
    for step in range(steps):
        start = step * 2 * batch + rank * local
        xb, yb = xt[start:start + local], yt[start:start + local]
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(xb), yb).backward()
        opt.step()
        stamps.append((time.perf_counter(), time.process_time()))


def timed(block):
    stamps.clear()
    block()
    marks = stamps[warm:]
    wall = sorted(b[0] - a[0] for a, b in zip(marks, marks[1:]))
    cpu = (marks[-1][1] - marks[0][1]) / (len(marks) - 1)
    return 1000 * wall[len(wall) // 2], 1000 * cpu


loop_block()  # DDP's first iterations (bucket rebuild) out of the count
result = {"fit": [], "loop": [], "fit_cpu": [], "loop_cpu": []}
for p in range(pairs):
    for side in (("fit", "loop") if p % 2 == 0 else ("loop", "fit")):
        wall, cpu = timed(fit_block if side == "fit" else loop_block)
        result[side].append(wall)
        result[side + "_cpu"].append(cpu)
if rank == 0:
    with open(out, "w") as fh:
        json.dump(result, fh)
'''


def _quartiles(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return f"{q[1]:.3f}x [{q[0]:.3f}, {q[2]:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=12, help="fit/loop block pairs")
    parser.add_argument("--steps", type=int, default=120, help="steps a block")
    parser.add_argument("--warm", type=int, default=10, help="steps of each block left out of the timing")
    parser.add_argument("--batch", type=int, default=32, help="rows per rank (the global batch is twice it)")
    parser.add_argument("--width", type=int, default=256, help="hidden width of the 3-layer MLP")
    args = parser.parse_args()
    drop = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
            "ARIGNOTE_FLAGS")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(OMP_NUM_THREADS="1", WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(_port()))
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        script, out = os.path.join(tmp, "worker.py"), os.path.join(tmp, "out.json")
        with open(script, "w") as fh:
            fh.write(WORKER)
        argv = [sys.executable, script, out, *map(str, (args.pairs, args.steps, args.batch, args.width,
                                                         args.warm))]
        ranks = [subprocess.Popen(argv, env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}) for r in range(2)]
        codes = [p.wait() for p in ranks]
        if any(codes):
            raise SystemExit(f"the paired run failed: exit codes {codes}")
        with open(out) as fh:
            res = json.load(fh)
    print(f"machine: {_machine()}; load average (1 min) before/after: {load_before:.1f}/"
          f"{os.getloadavg()[0]:.1f}")
    print(f"\n{args.pairs} pairs of blocks of {args.steps} steps (first {args.warm} of each left out), "
          f"batch {args.batch} per rank, 2 gloo processes, 1 thread each\n")
    print("| side | wall ms per step, median of blocks | CPU ms per step, median of blocks | blocks (wall) |")
    print("| --- | ---: | ---: | --- |")
    for side in ("fit", "loop"):
        wall, cpu = statistics.median(res[side]), statistics.median(res[side + "_cpu"])
        print(f"| {side} | {wall:.3f} | {cpu:.3f} | {', '.join(f'{v:.2f}' for v in res[side])} |")
    wall = [a / b for a, b in zip(res["fit"], res["loop"])]
    cpu = [a / b for a, b in zip(res["fit_cpu"], res["loop_cpu"])]
    print(f"\nfit / hand-written DDP loop, median of the pairs' ratios [quartiles]: wall {_quartiles(wall)}; "
          f"CPU {_quartiles(cpu)}")
    print("per pair (wall): " + ", ".join(f"{r:.2f}" for r in wall))


if __name__ == "__main__":
    main()
