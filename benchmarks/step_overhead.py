"""What a ``fit`` step does beyond a hand-written PyTorch step, item by item (issue 18 item 6).

For each workload (the MLP 784-512-512-10 at batch 32 and 128, the seeds' CNN at batch 32; RMSprop
lr=1e-4 on both sides, one process, CPU):

* operators of one steady-state step (``arignote.bench.opcount``: aten operators seen by a dispatch
  mode; host syncs) and launches (``torch.profiler``: outermost working aten operators, what a GPU
  would launch) of ``fit`` and of the plain loop (logits + ``F.cross_entropy``, torch's RMSprop),
  and the operators ``fit`` runs that the plain loop does not, by name;
* the time of each fit-only item, measured alone (CPU time of this thread, best of ``--rounds``
  rounds of ``--reps`` calls, so other load slows it less): the Keras 2 cross-entropy on the
  softmax output (forward + backward) against ``F.cross_entropy`` on logits, the accuracy metric's
  update, the loss summed on the device, the batch gathered with ``index_select`` (fit) against
  advanced indexing (the usual loop), the gradients released by assignment (fit) against
  ``Optimizer.zero_grad``, and the forward of arignote's layers against the same ``torch.nn``
  modules;
* the loop's own Python: a ``fit`` step against the same step written by hand with the same
  module, loss, metric and optimizer objects, on a model so small that nothing else counts.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/step_overhead.py            # about 2 minutes
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/step_overhead.py --workloads mlp-b32 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F

WORKLOADS = {"mlp-b32": ("mlp", 32), "mlp-b128": ("mlp", 128), "cnn-b32": ("cnn", 32)}


def _best(fn, reps: int, rounds: int) -> float:
    """Microseconds of CPU time (this thread) per call of ``fn``, best of ``rounds``."""
    for _ in range(max(1, reps // 10)):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.thread_time()
        for _ in range(reps):
            fn()
        best = min(best, (time.thread_time() - start) / reps)
    return best * 1e6


def _compiled_model(name: str):
    from arignote.bench.models import arignote_model
    from arignote.optimizers import RMSprop

    model = arignote_model(name)
    model.compile(optimizer=RMSprop(lr=1e-4), loss="categorical_crossentropy", metrics=["accuracy"])
    return model


def _data(name: str, n: int):
    from arignote.utils import to_categorical

    rng = np.random.default_rng(0)
    shape = (32, 32, 3) if name == "cnn" else (784,)
    x = rng.random((n, *shape), dtype=np.float32)
    labels = rng.integers(0, 10, n)
    return x, to_categorical(labels, 10), labels


def _torch_side(name: str, x: np.ndarray, labels: np.ndarray):
    """The plain loop's network and batch: NCHW channels-last for the CNN, logits out."""
    from arignote.bench.models import torch_model

    net = torch_model(name)
    xt = torch.from_numpy(x)
    if name == "cnn":
        net = net.to(memory_format=torch.channels_last)
        xt = xt.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
    return net, xt, torch.from_numpy(labels).long()


def counts(name: str, batch: int) -> list[str]:
    from arignote.bench.opcount import count_fit_step, count_torch_step

    x, y, labels = _data(name, batch * 4)
    fit_step = count_fit_step(_compiled_model(name), x, y, batch)
    net, xt, yt = _torch_side(name, x[:batch], labels[:batch])
    opt = torch.optim.RMSprop(net.parameters(), lr=1e-4, alpha=0.9, eps=1e-7)
    plain = count_torch_step(net, opt, F.cross_entropy, xt, yt)
    fit_launches = _fit_launches(name, batch, x, y)
    lines = [f"  operators a step: fit {fit_step.launches}, plain loop {plain.launches} (+2 gathers and "
             f"1 loss sum when it keeps them, as benchmarks/bench_fit.py's loop does); host syncs: fit "
             f"{fit_step.syncs}, plain {plain.syncs}; launches (profiler view): fit {fit_launches}"]
    more = Counter(op.name for op in fit_step.ops) - Counter(op.name for op in plain.ops)
    fewer = Counter(op.name for op in plain.ops) - Counter(op.name for op in fit_step.ops)
    lines.append("  fit runs in addition: " + ", ".join(f"{k.removeprefix('aten.')} x{v}" for k, v in
                                                         sorted(more.items())))
    lines.append("  fit does not run: " + ", ".join(f"{k.removeprefix('aten.')} x{v}" for k, v in
                                                    sorted(fewer.items())))
    return lines


def _fit_launches(name: str, batch: int, x: np.ndarray, y: np.ndarray) -> int:
    """Outermost working aten operators of fit's third step under torch.profiler."""
    from arignote.bench.launches import _FREE_NAMES, _aten_ancestor
    from arignote.callbacks import Callback

    class Profile(Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == 2:
                self.prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
                self.prof.__enter__()
            elif batch == 3:
                self.prof.__exit__(None, None, None)

    cb = Profile()
    _compiled_model(name).fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False, callbacks=[cb])
    return sum(1 for e in cb.prof.events()
               if e.name.startswith("aten::") and e.name not in _FREE_NAMES and not _aten_ancestor(e))


def items(name: str, batch: int, reps: int, rounds: int) -> list[str]:
    from arignote.training.data import rows_of

    n = 4096 if name == "mlp" else 1024
    x, y, labels = _data(name, n)
    model = _compiled_model(name)
    model.fit(x[:batch * 2], y[:batch * 2], batch_size=batch, epochs=1, verbose=0)
    net, xt, yt = _torch_side(name, x, labels)
    xa, ya = torch.from_numpy(x), torch.from_numpy(y)
    idx = torch.randperm(n)[:batch]
    xb, yb = xa[idx], ya[idx]
    model.module.eval()
    net.eval()
    metric = model.metrics_list[0]
    with torch.no_grad():
        probs = model.module(xb)
        logits = net(xt[idx])
    lp = logits.detach().requires_grad_()
    total = torch.zeros((), dtype=torch.float64)
    loss = torch.tensor(1.5)
    opt = model.optimizer.torch
    params = [p for g in opt.param_groups for p in g["params"]]
    grads = [torch.zeros_like(p) for p in params]

    def give_grads():
        for p, g in zip(params, grads):
            p.grad = g

    def torch_zero_grad():
        give_grads()
        opt.zero_grad(set_to_none=True)

    def assign_none():
        give_grads()
        for p in params:
            p.grad = None

    fwd = min(reps, 50)
    with torch.no_grad():
        rows = [
            ("forward: arignote layers / the same torch.nn modules (eval, no grad)",
             _best(lambda: model.module(xb), fwd, rounds), _best(lambda: net(xt[idx]), fwd, rounds)),
            ("accuracy metric update (fit only)", _best(lambda: metric.update(yb, probs), reps, rounds), 0.0),
            ("loss summed on the device (both loops)",
             _best(lambda: total.add_(loss, alpha=batch), reps, rounds),
             _best(lambda: total.add_(loss, alpha=batch), reps, rounds)),
            ("gather x, y: fit's index_select / advanced indexing",
             _best(lambda: (rows_of(xa, idx), rows_of(ya, idx)), reps, rounds),
             _best(lambda: (xt[idx], yt[idx]), reps, rounds)),
        ]
    rows.insert(1, ("loss fwd+bwd: Keras CE on softmax / F.cross_entropy on logits",
                    _best(lambda: model.loss_fn(yb, torch.softmax(lp, -1)).backward(), reps, rounds),
                    _best(lambda: F.cross_entropy(lp, yt[idx]).backward(), reps, rounds)))
    base = _best(give_grads, reps, rounds)
    rows.append(("release gradients: assignment (fit) / Optimizer.zero_grad (plain loop)",
                 _best(assign_none, reps, rounds) - base, _best(torch_zero_grad, reps, rounds) - base))
    return [f"  {what:72s} {a:8.1f} us {b:8.1f} us  ({a - b:+.1f})" for what, a, b in rows]


def loop_python(rounds: int) -> list[str]:
    """fit's step against the same step by hand, on a model too small for the arithmetic to count."""
    from arignote.callbacks import Callback
    from arignote.layers import Dense
    from arignote.models import Sequential
    from arignote.training.data import rows_of

    n, batch = 8192, 32
    rng = np.random.default_rng(0)
    x = rng.random((n, 8), dtype=np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, n)]

    def model():
        m = Sequential([Dense(4, input_dim=8, activation="softmax")])
        m.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])
        m.fit(x[:64], y[:64], batch_size=batch, epochs=1, verbose=0)
        return m

    times: list[float] = []

    class Timer(Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.thread_time()

        def on_epoch_end(self, epoch, logs=None):
            times.append(time.thread_time() - self.t0)

    fitted, hand = model(), model()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    params = list(hand.module.parameters())

    def by_hand() -> float:
        start = time.thread_time()
        hand.module.train()
        order = torch.randperm(n)
        total = torch.zeros((), dtype=torch.float64)
        for metric in hand.metrics_list:
            metric.reset()
        for i in range(0, n, batch):
            idx = order[i:i + batch]
            xb, yb = rows_of(xt, idx), rows_of(yt, idx)
            pred = hand.module(xb)
            loss = hand.loss_fn(yb, pred)
            for p in params:
                p.grad = None
            loss.backward()
            hand.optimizer.step()
            total.add_(loss.detach(), alpha=len(idx))
            with torch.no_grad():
                for metric in hand.metrics_list:
                    metric.update(yb, pred.detach())
        float(total)
        return time.thread_time() - start

    from arignote import config

    def fit_epoch(status: bool) -> float:
        with config.override(**{"share.status": status}):
            fitted.fit(x, y, batch_size=batch, epochs=1, verbose=0, callbacks=[Timer()])
        return times[-1]

    sides = {"fit": lambda: fit_epoch(True), "fit, share.status=false": lambda: fit_epoch(False),
             "by hand": by_hand}
    spent: dict[str, list[float]] = {k: [] for k in sides}
    for r in range(rounds):
        for side in (list(sides) if r % 2 == 0 else list(reversed(sides))):
            spent[side].append(sides[side]())
    per_step = {k: min(v) / (n // batch) * 1e6 for k, v in spent.items()}
    hand_us = per_step["by hand"]
    return [f"  Dense(4) on 8 features, batch 32 ({n // batch} steps an epoch): " + ", ".join(
        f"{k} {v:.0f} us a step" for k, v in per_step.items()),
        "  the loop's own cost (epoch loop, batch source, OOM guard, record, callbacks; the status record "
        f"of `arignote dash`): {per_step['fit'] - hand_us:+.0f} us a step, "
        f"{per_step['fit, share.status=false'] - hand_us:+.0f} us without the status record"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help="comma-separated: " + ", ".join(WORKLOADS))
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--reps", type=int, default=200, help="calls per timed round of a small item")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per item (the best counts)")
    args = p.parse_args(argv)
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        print(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    from arignote import config

    config.configure(device="cpu", print_active_device=False)
    torch.set_num_threads(args.threads)
    print(f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
          f"torch {torch.__version__}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, threads {args.threads}, load average "
          f"{os.getloadavg()[0]:.1f}; times: CPU time of this thread, best of {args.rounds} rounds",
          flush=True)
    for w in workloads:
        name, batch = WORKLOADS[w]
        print(f"{w}:", flush=True)
        header = ["  item" + " " * 69 + "     fit side  plain side"]
        for line in counts(name, batch) + header + items(name, batch, args.reps, args.rounds):
            print(line, flush=True)
    print("loop machinery:", flush=True)
    for line in loop_python(args.rounds):
        print(line)
    print(f"# load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
