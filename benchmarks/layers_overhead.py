"""Do arignote's Keras layers and losses cost anything over plain torch.nn? (forward + backward)

Three comparisons, sides alternating within each round, median per side:

* the seeds' CIFAR-10 CNN built from ``arignote.layers`` vs the same ``torch.nn.Sequential``,
  both channels-last, softmax + Keras categorical cross-entropy vs logits + ``F.cross_entropy``;
* the same CNN with ``losses.from_logits`` (Keras-exact loss fused with the final softmax);
* the loss alone on (batch, 10): Keras formula after softmax, fused, and ``F.cross_entropy``.

Usage: ``.venv/bin/python benchmarks/layers_overhead.py [--batch 32] [--rounds 15] [--threads N]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from arignote import layers as L
from arignote import losses


def arignote_cnn() -> nn.Sequential:
    stack = [
        L.Conv2D(32, (3, 3), padding="same"), L.Activation("relu"),
        L.Conv2D(32, (3, 3)), L.Activation("relu"), L.MaxPooling2D((2, 2)), L.Dropout(0.25),
        L.Conv2D(64, (3, 3), padding="same"), L.Activation("relu"),
        L.Conv2D(64, (3, 3)), L.Activation("relu"), L.MaxPooling2D((2, 2)), L.Dropout(0.25),
        L.Flatten(), L.Dense(512), L.Activation("relu"), L.Dropout(0.5), L.Dense(10),
    ]  # fmt: skip
    shape = (None, 32, 32, 3)
    for layer in stack:
        layer.build(shape)
        shape = layer.compute_output_shape(shape)
    return nn.Sequential(*stack).to(memory_format=torch.channels_last)  # takes Keras NHWC batches


def torch_cnn() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(64 * 6 * 6, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, 10),
    ).to(memory_format=torch.channels_last)  # fmt: skip


def timed(fn, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - start) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--steps", type=int, default=5, help="steps per timing sample")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    b = args.batch
    x_nhwc = torch.randn(b, 32, 32, 3)  # Keras NHWC data (what arignote layers take)
    x = x_nhwc.permute(0, 3, 1, 2)  # the same memory seen as channels-last NCHW (what torch.nn takes)
    labels = torch.randint(0, 10, (b,))
    onehot = torch.eye(10)[labels]
    ours, plain = arignote_cnn(), torch_cnn()
    fused = losses.from_logits("categorical_crossentropy", "softmax")

    def step_ours():
        ours.zero_grad(set_to_none=True)
        losses.categorical_crossentropy(onehot, torch.softmax(ours(x_nhwc), -1)).mean().backward()

    def step_fused():
        ours.zero_grad(set_to_none=True)
        fused(onehot, ours(x_nhwc)).backward()

    def step_plain():
        plain.zero_grad(set_to_none=True)
        F.cross_entropy(plain(x), labels).backward()

    z = torch.randn(b, 10, requires_grad=True)

    def loss_keras():
        losses.categorical_crossentropy(onehot, torch.softmax(z, -1)).mean().backward()

    def loss_fused():
        fused(onehot, z).backward()

    def loss_torch():
        F.cross_entropy(z, labels).backward()

    cases = {"cnn arignote layers + Keras loss": step_ours, "cnn arignote layers + from_logits": step_fused,
             "cnn torch.nn + F.cross_entropy": step_plain, "loss: softmax + Keras formula": loss_keras,
             "loss: from_logits (fused)": loss_fused, "loss: F.cross_entropy": loss_torch}  # fmt: skip
    for fn in cases.values():
        fn()
    samples: dict[str, list[float]] = {k: [] for k in cases}
    for r in range(args.rounds):
        order = list(cases.items()) if r % 2 == 0 else list(reversed(cases.items()))
        for name, fn in order:
            steps = args.steps if name.startswith("cnn") else 200
            samples[name].append(timed(fn, steps))
    print(f"batch {b}, {args.rounds} rounds, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| case | median per step |")
    print("| --- | ---: |")
    for name, vals in samples.items():
        med = statistics.median(vals)
        print(f"| {name} | {med * 1e3:.3f} ms |" if med > 1e-3 else f"| {name} | {med * 1e6:.0f} us |")
    base = statistics.median(samples["cnn torch.nn + F.cross_entropy"])
    for name in ("cnn arignote layers + Keras loss", "cnn arignote layers + from_logits"):
        print(f"{name}: {statistics.median(samples[name]) / base:.3f}x the time of torch.nn")


if __name__ == "__main__":
    main()
