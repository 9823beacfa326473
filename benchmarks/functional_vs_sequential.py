"""Does a functional ``Model(inputs, outputs)`` train as fast as the same network as ``Sequential``?

The seeds' CIFAR-10 CNN (Conv2D/MaxPooling2D/Dropout/Flatten/Dense) is built both ways with the same
weights, compiled alike (RMSprop, categorical cross-entropy, accuracy) and trained with ``fit`` on the
same random 32x32x3 data; the two sides alternate each round and the median seconds per epoch is
compared (ratio = Sequential time / functional time; >= 1 means the functional model is as fast).

Usage: ``.venv/bin/python benchmarks/functional_vs_sequential.py [--samples 1024] [--rounds 7]
[--batch 32] [--threads 1]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

import arignote
from arignote import layers as L
from arignote.models import Model, Sequential


def stack() -> list:
    return [
        L.Conv2D(32, (3, 3), padding="same", activation="relu"), L.Conv2D(32, (3, 3), activation="relu"),
        L.MaxPooling2D((2, 2)), L.Dropout(0.25),
        L.Conv2D(64, (3, 3), padding="same", activation="relu"), L.Conv2D(64, (3, 3), activation="relu"),
        L.MaxPooling2D((2, 2)), L.Dropout(0.25),
        L.Flatten(), L.Dense(512, activation="relu"), L.Dropout(0.5), L.Dense(10, activation="softmax"),
    ]  # fmt: skip


def sequential() -> Sequential:
    return Sequential([L.InputLayer(input_shape=(32, 32, 3)), *stack()])


def functional() -> Model:
    x = inp = L.Input(shape=(32, 32, 3))
    for layer in stack():
        x = layer(x)
    return Model(inp, x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    arignote.configure(device="cpu")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.random((args.samples, 32, 32, 3), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, args.samples)]
    seq, fun = sequential(), functional()
    fun.set_weights(seq.get_weights())
    for m in (seq, fun):
        m.compile("rmsprop", "categorical_crossentropy", metrics=["accuracy"])
        m.fit(x[:args.batch * 2], y[:args.batch * 2], batch_size=args.batch, epochs=1, verbose=0)  # warm up
    times: dict[str, list[float]] = {"sequential": [], "functional": []}
    for r in range(args.rounds):
        order = [("sequential", seq), ("functional", fun)]
        for name, m in order if r % 2 == 0 else reversed(order):
            start = time.perf_counter()
            m.fit(x, y, batch_size=args.batch, epochs=1, verbose=0, shuffle=False)
            times[name].append(time.perf_counter() - start)
    s, f = statistics.median(times["sequential"]), statistics.median(times["functional"])
    print(f"samples {args.samples}, batch {args.batch}, {args.rounds} rounds, {args.threads} thread(s), "
          f"torch {torch.__version__}")
    print(f"sequential {s:.3f} s/epoch, functional {f:.3f} s/epoch, "
          f"ratio (sequential/functional) {s / f:.3f}")


if __name__ == "__main__":
    main()
