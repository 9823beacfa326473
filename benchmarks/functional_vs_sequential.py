"""Does a functional ``Model(inputs, outputs)`` train as fast as the same network as ``Sequential``?

The seeds' CIFAR-10 CNN (Conv2D/MaxPooling2D/Dropout/Flatten/Dense) is built both ways with the same
weights, compiled alike (RMSprop, categorical cross-entropy, accuracy) and trained on the same random
32x32x3 data. A third contender is the functional model with its chain fast path switched off (the
general slot-by-slot graph loop), to show what the fast path buys.

Made for a noisy shared machine:

* rounds are interleaved and the order rotates every round (ABC, BCA, CAB, ...), so a burst of load
  hits every side alike, and no side always runs first or last;
* each round gives a *paired* ratio (Sequential time / functional time of that round); the figure is
  the median of those ratios, with the interquartile range, so slow drifts of the load cancel;
* times are both wall clock and this process's CPU time (``time.process_time``: with one thread it
  leaves out the time the process waits for a core, the main noise under load).

Two measures: ``step`` (blocks of ``--steps`` ``train_on_batch`` calls: the per-step cost alone) and
``fit`` (whole ``fit`` epochs of ``--samples`` samples: the per-step cost plus fit's setup).
Ratio >= 1 means the functional model is at least as fast; the goal is >= 0.98.

``--model mlp`` swaps the CNN for a 13-layer MLP of 8 units, where the per-layer Python cost (what
the graph's bookkeeping adds) is most of a step.

Usage: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/functional_vs_sequential.py [--mode step fit]
[--model cnn] [--rounds 12] [--steps 3] [--samples 256] [--batch 32] [--threads 1]``
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import torch

import arignote
from arignote import layers as L
from arignote.models import Model, Sequential


def stack(kind: str = "cnn") -> list:
    if kind == "mlp":  # tiny layers: the per-layer Python cost is most of a step
        return [L.Dense(8, activation="relu") for _ in range(12)] + [L.Dense(10, activation="softmax")]
    return [
        L.Conv2D(32, (3, 3), padding="same", activation="relu"), L.Conv2D(32, (3, 3), activation="relu"),
        L.MaxPooling2D((2, 2)), L.Dropout(0.25),
        L.Conv2D(64, (3, 3), padding="same", activation="relu"), L.Conv2D(64, (3, 3), activation="relu"),
        L.MaxPooling2D((2, 2)), L.Dropout(0.25),
        L.Flatten(), L.Dense(512, activation="relu"), L.Dropout(0.5), L.Dense(10, activation="softmax"),
    ]  # fmt: skip


SHAPES = {"cnn": (32, 32, 3), "mlp": (8,)}


def sequential(kind: str = "cnn") -> Sequential:
    return Sequential([L.InputLayer(input_shape=SHAPES[kind]), *stack(kind)])


def functional(chain: bool = True, kind: str = "cnn") -> Model:
    x = inp = L.Input(shape=SHAPES[kind])
    for layer in stack(kind):
        x = layer(x)
    model = Model(inp, x)
    if not chain:  # the general graph loop, as any branching graph runs
        object.__setattr__(model.module, "_chain", None)
    return model


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return q[0], statistics.median(values), q[-1]


def measure(models: dict, run, rounds: int) -> dict[str, dict[str, list[float]]]:
    """``run(model)`` once per model per round, the order rotating; wall and CPU seconds."""
    names = list(models)
    times: dict[str, dict[str, list[float]]] = {n: {"wall": [], "cpu": []} for n in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            wall, cpu = time.perf_counter(), time.process_time()
            run(models[name])
            times[name]["cpu"].append(time.process_time() - cpu)
            times[name]["wall"].append(time.perf_counter() - wall)
    return times


def report(title: str, times: dict, unit: float, unit_name: str) -> None:
    print(f"\n{title}")
    print(f"| clock | sequential {unit_name} | functional {unit_name} | ratio seq/fun, median [IQR] "
          f"| functional without chain path {unit_name} | ratio seq/no-chain |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for clock in ("cpu", "wall"):
        seq, fun, slow = (times[n][clock] for n in ("sequential", "functional", "functional_loop"))
        ratios = [s / f for s, f in zip(seq, fun)]
        slow_ratios = [s / f for s, f in zip(seq, slow)]
        lo, mid, hi = _quartiles(ratios)
        print(f"| {clock} | {statistics.median(seq) * unit:.4g} | {statistics.median(fun) * unit:.4g} | "
              f"{mid:.3f} [{lo:.3f}, {hi:.3f}] | {statistics.median(slow) * unit:.4g} | "
              f"{statistics.median(slow_ratios):.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", nargs="+", choices=["step", "fit"], default=["step", "fit"])
    ap.add_argument("--model", choices=["cnn", "mlp"], default="cnn",
                    help="the seeds' CIFAR-10 CNN, or a 13-layer MLP of 8 units (Python overhead)")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--steps", type=int, default=3, help="train_on_batch calls per timed block (step mode)")
    ap.add_argument("--samples", type=int, default=256, help="samples per fit epoch (fit mode)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    arignote.configure(device="cpu", print_active_device=False)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.random((args.samples, *SHAPES[args.model]), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, args.samples)]
    models = {"sequential": sequential(args.model), "functional": functional(kind=args.model),
              "functional_loop": functional(False, args.model)}
    weights = models["sequential"].get_weights()
    for m in models.values():
        m.set_weights(weights)
        m.compile("rmsprop", "categorical_crossentropy", metrics=["accuracy"])
        m.fit(x[:args.batch * 2], y[:args.batch * 2], batch_size=args.batch, epochs=1, verbose=0)  # warm up
    assert models["functional"].module._chain is not None
    cpu = platform.processor() or platform.machine()
    print(f"{args.model}: torch {torch.__version__}, {args.threads} thread(s), {cpu}, batch {args.batch}, "
          f"{args.rounds} rounds (order rotating)")
    if "step" in args.mode:
        xb, yb = x[:args.batch], y[:args.batch]

        def steps(m):
            for _ in range(args.steps):
                m.train_on_batch(xb, yb)

        times = measure(models, steps, args.rounds)
        report(f"step: {args.steps} train_on_batch calls per block, ms per step", times,
               1000.0 / args.steps, "ms/step")
    if "fit" in args.mode:
        times = measure(models, lambda m: m.fit(x, y, batch_size=args.batch, epochs=1, verbose=0,
                                                shuffle=False), args.rounds)
        report(f"fit: one epoch of {args.samples} samples, s per epoch", times, 1.0, "s/epoch")


if __name__ == "__main__":
    main()
