"""The classifier head trained from its logits (``training/fused_head.py``) against the plain head
(Keras's cross-entropy on the probabilities), side by side in one process (issue 18 item 6).

For each round, the same model (the seeds' MLP or CNN, ``categorical_crossentropy``, RMSprop,
``metrics=['accuracy']``) is built twice from the same seed and fitted one epoch with each head,
alternating which goes first; each fit is timed by the process's CPU time (1 torch thread). Also
prints the operators of one steady-state step with each head (``bench/opcount.py``).

    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/fused_head.py --model mlp --batch 32
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import nullcontext
from unittest import mock

import numpy as np
import torch

from arignote.bench import opcount
from arignote.bench.models import arignote_model
from arignote.training import fused_head

SHAPES = {"mlp": (784,), "cnn": (32, 32, 3)}


def _model(name: str):
    torch.manual_seed(0)
    model = arignote_model(name)
    model.compile("rmsprop", "categorical_crossentropy", metrics=["accuracy"])
    return model


def _head(plain: bool):
    if plain:
        return mock.patch.object(fused_head, "for_model", lambda m: fused_head.PlainHead())
    return nullcontext()


def _fit_seconds(name: str, plain: bool, x: np.ndarray, y: np.ndarray, batch: int) -> float:
    model = _model(name)
    with _head(plain):
        model.fit(x[:batch * 8], y[:batch * 8], batch_size=batch, epochs=1, verbose=0)  # warm-up
        t0 = time.process_time()
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
        return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(SHAPES), default="mlp")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--samples", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x = rng.random((args.samples, *SHAPES[args.model]), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, args.samples)]
    ops = {}
    for label, plain in (("fused", False), ("plain", True)):
        with _head(plain):
            n = args.batch * 4
            step = opcount.count_fit_step(_model(args.model), x[:n], y[:n], args.batch)
        ops[label] = len(step.ops)
    times: dict[str, list[float]] = {"fused": [], "plain": []}
    for r in range(args.rounds):
        order = ("fused", "plain") if r % 2 == 0 else ("plain", "fused")
        for label in order:
            times[label].append(_fit_seconds(args.model, label == "plain", x, y, args.batch))
    ratios = [f / p for f, p in zip(times["fused"], times["plain"])]
    print(f"{args.model} batch {args.batch}, {args.samples} samples, 1 thread: operators per step "
          f"fused {ops['fused']} / plain {ops['plain']}")
    for label in ("fused", "plain"):
        print(f"  {label}: CPU s per epoch {' '.join(f'{t:.3f}' for t in times[label])}")
    print(f"  fused / plain time per round: {' '.join(f'{r:.3f}' for r in ratios)} "
          f"(median {statistics.median(ratios):.3f})")


if __name__ == "__main__":
    main()
