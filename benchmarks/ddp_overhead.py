"""Per-step overhead of data parallel: ``fit`` against a hand-written DDP loop, and against one process.

Four configurations of the same network, optimizer (SGD) and loss (MSE) on the same synthetic data,
each process with 1 intra-op thread:

* ``fit, 1 process``: ``Model(net).fit(x, y, batch_size=2B)``;
* ``loop, 1 process``: a plain torch loop on the same global batch ``2B``;
* ``fit, 2 gloo processes``: the same ``fit`` with the global batch ``2B`` (``B`` rows per rank);
* ``loop, 2 gloo processes``: ``DistributedDataParallel`` in a hand-written loop, ``B`` rows per rank
  (slice, forward, loss, ``zero_grad``, backward, ``step``), nothing else;
* ``--carrier-loop``: that loop with arignote's flag carrier (``parallel/flag_carrier.py``: DDP
  wraps a module with one more parameter, whose gradient carries the step's three flags), the
  forward under ``no_sync`` and the reduction armed after it as fit does, the flags sent and read
  each step: what carrying the flags costs against DDP's plain reduction.

Both 2-process runs are started the same way (two processes with the torchrun variables set; fit
adopts them, the loop calls ``init_process_group("gloo")``). A step is timed from one step's end to
the next (a callback for fit, ``perf_counter`` in the loop); a run's figure is the median over the
steps after a warm-up. The configurations alternate within a round, in the opposite order every
other round (so neither side always runs first or after the same neighbour), and the table shows
the median over rounds; the ratios are medians of the per-round ratios of the two runs measured
side by side. The machine (CPU, cores, torch) and its load average before and after each run are
printed with the table: on a shared machine the load decides more than the code does.

Usage::

    .venv/bin/python benchmarks/ddp_overhead.py --rounds 4 --steps 300 --batch 32 --width 256
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile

WORKER = r'''
import json, os, sys, time
import numpy as np, torch

kind, out, steps, batch, width, warm = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
torch.set_num_threads(1)
world = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
n = steps * 2 * batch
rng = np.random.default_rng(0)
x = rng.normal(size=(n, width)).astype("float32")
y = rng.normal(size=(n, 10)).astype("float32")
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                          torch.nn.ReLU(), torch.nn.Linear(width, 10))
stamps = []
if kind == "fit":
    import arignote
    from arignote.callbacks import Callback
    from arignote.models import Model
    from arignote.optimizers import SGD

    arignote.configure(device="cpu", cpu_threads=1, print_active_device=False)

    class Clock(Callback):
        def on_train_batch_end(self, batch, logs=None):
            stamps.append(time.perf_counter())

    model = Model(net)
    model.compile(SGD(lr=0.01), "mse")
    model.fit(x, y, batch_size=2 * batch, epochs=1, shuffle=False, verbose=0, callbacks=[Clock()])
else:
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        if kind == "loop+carrier":  # the same loop with arignote's flag carrier around the module
            from arignote.parallel.flag_carrier import FlagCarrier
            carrier = FlagCarrier(net, rank, world, 3)
            net = torch.nn.parallel.DistributedDataParallel(carrier)
        else:
            net = torch.nn.parallel.DistributedDataParallel(net)
    carry = kind == "loop+carrier"
    opt = torch.optim.SGD(carrier.module.parameters() if carry else net.parameters(), lr=0.01)
    local = 2 * batch // world
    for step in range(steps):
        start = step * 2 * batch + rank * local
        xb, yb = xt[start:start + local], yt[start:start + local]
        opt.zero_grad()
        if carry:
            with net.no_sync():  # fit's way: the forward unarmed, the reduction armed after it
                loss = torch.nn.functional.mse_loss(net(xb), yb)
            carrier.send([0, 0, 0])  # what fit's step sends: [k wanted, stop, fatal]
            loss = carrier.attach(loss)
            net.reducer.prepare_for_forward()
            net.require_forward_param_sync = True
            net.reducer.prepare_for_backward([])
            loss.backward()
            carrier.received()
        else:
            torch.nn.functional.mse_loss(net(xb), yb).backward()
        opt.step()
        stamps.append(time.perf_counter())
    if world > 1:
        dist.destroy_process_group()
if rank == 0:
    gaps = [b - a for a, b in zip(stamps[warm:], stamps[warm + 1:])]
    with open(out, "w") as fh:
        json.dump({"median_ms": 1000 * sorted(gaps)[len(gaps) // 2], "steps": len(stamps)}, fh)
'''


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(script: str, kind: str, procs: int, args: argparse.Namespace, tmp: str) -> float:
    out = os.path.join(tmp, f"{kind}{procs}.json")
    drop = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
            "ARIGNOTE_FLAGS")
    base = {k: v for k, v in os.environ.items() if k not in drop}
    base["OMP_NUM_THREADS"] = "1"
    if kind == "fit@other":  # the same fit from another source tree (before/after a change)
        base["PYTHONPATH"] = args.other_src
        kind = "fit"
    argv = [sys.executable, script, kind, out, *map(str, (args.steps, args.batch, args.width, args.warm))]
    if procs == 1:
        subprocess.run(argv, check=True, env=base)
    else:
        port = str(_port())
        torchrun = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": port}
        ranks = [subprocess.Popen(argv, env={**base, **torchrun, "RANK": str(r), "LOCAL_RANK": str(r)})
                 for r in range(procs)]
        codes = [p.wait() for p in ranks]
        if any(codes):
            raise SystemExit(f"{kind} with {procs} processes failed: exit codes {codes}")
    with open(out) as fh:
        return json.load(fh)["median_ms"]


def _machine() -> str:
    import platform

    import torch

    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{model}, {os.cpu_count()} logical cores, torch {torch.__version__}, Python "
            f"{platform.python_version()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warm", type=int, default=30, help="steps left out of the timing")
    parser.add_argument("--batch", type=int, default=32, help="rows per rank (the global batch is twice it)")
    parser.add_argument("--width", type=int, default=256, help="hidden width of the 3-layer MLP")
    parser.add_argument("--only-parallel", action="store_true", help="skip the 1-process configurations")
    parser.add_argument("--other-src", default="", help="also time fit (2 processes) with arignote "
                        "imported from this src directory (e.g. a checkout of the previous commit)")
    parser.add_argument("--carrier-loop", action="store_true", help="also time the hand-written DDP "
                        "loop with arignote's flag-carrying comm hook (what the hook alone costs)")
    args = parser.parse_args()
    configs = [("fit", 2), ("loop", 2)]
    if args.carrier_loop:
        configs.append(("loop+carrier", 2))
    if args.other_src:
        configs.append(("fit@other", 2))
    if not args.only_parallel:
        configs = [("fit", 1), ("loop", 1), *configs]
    times: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "worker.py")
        with open(script, "w") as fh:
            fh.write(WORKER)
        for r in range(args.rounds):
            for kind, procs in (configs if r % 2 == 0 else configs[::-1]):
                loads.append(os.getloadavg()[0])
                times[kind, procs].append(_run(script, kind, procs, args, tmp))
        loads.append(os.getloadavg()[0])
    med = {c: statistics.median(v) for c, v in times.items()}
    print(f"machine: {_machine()}; load average (1 min) before/after the runs: "
          f"{min(loads):.1f}-{max(loads):.1f}")
    print(f"\n| configuration | ms per step (median of {args.rounds} rounds) | rounds |")
    print("| --- | --- | --- |")
    for (kind, procs), value in med.items():
        rounds = ", ".join(f"{t:.2f}" for t in times[kind, procs])
        print(f"| {kind}, {procs} process{'es' if procs > 1 else ''} | {value:.2f} | {rounds} |")

    def ratio(a: tuple[str, int], b: tuple[str, int]) -> str:
        per_round = [x / y for x, y in zip(times[a], times[b])]
        return (f"{statistics.median(per_round):.2f}x (rounds: {', '.join(f'{q:.2f}' for q in per_round)}; "
                f"ratio of medians {med[a] / med[b]:.2f}x)")

    print(f"\nfit / hand-written DDP loop (2 processes): {ratio(('fit', 2), ('loop', 2))}")
    if args.other_src:
        print(f"fit ({args.other_src}) / hand-written DDP loop (2 processes): "
              f"{ratio(('fit@other', 2), ('loop', 2))}")
        print(f"fit / fit ({args.other_src}) (2 processes): {ratio(('fit', 2), ('fit@other', 2))}")
    if args.carrier_loop:
        print(f"loop with the flag carrier / hand-written DDP loop (2 processes): "
              f"{ratio(('loop+carrier', 2), ('loop', 2))}")
    if not args.only_parallel:
        print(f"fit / plain loop (1 process): {ratio(('fit', 1), ('loop', 1))}")
        print(f"fit, 2-process step / 1-process step (same global batch): {ratio(('fit', 2), ('fit', 1))}")


if __name__ == "__main__":
    main()
