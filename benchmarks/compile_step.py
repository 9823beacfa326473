"""CPU eager vs compiled (``compile(jit_compile=True)``) training step: seconds and launches per step.

For the seeds' CIFAR-10 CNN and the MLP 784-512-512-10 (``arignote.bench.models``, Keras 2 style,
RMSprop lr=1e-4 as the seeds, or ``--optimizer adam``): two models with the same weights, one eager
and one compiled (inductor, mode default on the CPU). Warm-up fits first (the compiled side compiles
there: its seconds are reported), then ``--rounds`` rounds of one ``fit`` epoch of ``--steps`` full
batches each, the two sides alternating (eager first on even rounds, compiled first on odd ones);
median seconds per step per side.

Launches per step: one steady-state ``Trainer.train_step`` under ``torch.profiler``
(:func:`arignote.bench.launches.count_launches`: outermost working aten operators + inductor's
generated kernels; the compiled side is compiled with ``cpp.enable_kernel_profile`` so that its
kernels show). For the eager side the ``TorchDispatchMode`` counter of ``bench/opcount.py`` is
printed too (it cannot see inside a compiled graph).

Usage: ``.venv/bin/python benchmarks/compile_step.py [--models cnn,mlp] [--batch 32] [--steps 16]
[--rounds 5] [--threads 1] [--optimizer rmsprop|adam]``
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import torch

from arignote import config
from arignote.bench import launches, models, opcount
from arignote.optimizers import RMSprop, get


def build(name: str, optimizer: str, jit: bool, seed: int = 0):
    torch.manual_seed(seed)
    model = models.arignote_model(name)
    opt = RMSprop(lr=models.LEARNING_RATE, rho=models.RMSPROP_RHO, epsilon=models.RMSPROP_EPS) \
        if optimizer == "rmsprop" else get(optimizer)
    model.compile(opt, "categorical_crossentropy", metrics=["accuracy"], jit_compile=jit)
    return model


def data(name: str, n: int):
    spec = models.spec(name)
    rng = np.random.default_rng(0)
    x = rng.random((n, *spec.input_shape), dtype=np.float32)
    y = np.eye(spec.classes, dtype=np.float32)[rng.integers(0, spec.classes, n)]
    return x, y


def fit_seconds(model, x, y, batch: int) -> float:
    start = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    return time.perf_counter() - start


def one_step(model, x, y, batch: int):
    xb, yb = torch.as_tensor(x[:batch]), torch.as_tensor(y[:batch])
    trainer = model._trainer
    return lambda: trainer.train_step(xb, yb)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="cnn,mlp")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--optimizer", default="rmsprop", choices=["rmsprop", "adam", "sgd"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    config.configure(device="cpu", print_active_device=False, cpu_threads=args.threads)
    print(f"# torch {torch.__version__}, {platform.processor() or platform.machine()}, "
          f"{args.threads} thread(s), batch {args.batch}, {args.steps} steps a fit, {args.rounds} rounds, "
          f"{args.optimizer}")
    print("| model | eager s/step | compiled s/step | speed-up | compile s | launches/step eager -> "
          "compiled | eager aten ops (dispatch mode) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in args.models.split(","):
        x, y = data(name, args.batch * args.steps)
        eager = build(name, args.optimizer, False)
        with launches.kernel_profile():
            jit = build(name, args.optimizer, True)
            fit_seconds(eager, x, y, args.batch)
            compile_s = fit_seconds(jit, x, y, args.batch)
            fit_seconds(jit, x, y, args.batch)  # any remaining first-call work
            graphs = jit._trainer.compiled.graphs
        times: dict[str, list[float]] = {"eager": [], "compiled": []}
        for r in range(args.rounds):
            sides = [("eager", eager), ("compiled", jit)]
            for side, model in sides if r % 2 == 0 else reversed(sides):
                times[side].append(fit_seconds(model, x, y, args.batch) / args.steps)
        count_e = launches.count_launches(one_step(eager, x, y, args.batch))
        count_j = launches.count_launches(one_step(jit, x, y, args.batch))
        dispatch = opcount.count_fit_step(build(name, args.optimizer, False), x, y, args.batch).launches
        assert jit._trainer.compiled.graphs == graphs, "a timed fit recompiled"
        e, j = statistics.median(times["eager"]), statistics.median(times["compiled"])
        print(f"| {name} | {e * 1e3:.1f} ms | {j * 1e3:.1f} ms | {e / j:.2f}x | {compile_s:.0f} | "
              f"{count_e.launches} -> {count_j.launches} ({count_j.ops} aten + {count_j.generated} "
              f"generated) | {dispatch} |")
        print(f"#   {name}: eager per round {[round(t * 1e3, 1) for t in times['eager']]} ms, compiled "
              f"{[round(t * 1e3, 1) for t in times['compiled']]} ms; graphs {graphs}; compiled step's "
              f"aten ops {dict(count_j.names.most_common(6))}", flush=True)


if __name__ == "__main__":
    main()
