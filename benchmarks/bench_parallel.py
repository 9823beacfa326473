"""Data parallel on CPU: 1 process x 2 threads against 2 gloo processes x 1 thread.

The seeds' network (the Keras 2 cifar10_cnn, RMSprop(lr=1e-4, decay=1e-6)) on synthetic
CIFAR-shaped data, trained by a plain ``python train.py`` through ``fit`` with ``device=cpu``
and ``cpu.processes`` = 1 or 2 (the script launcher starts rank 1 itself). Per run: samples/s
over the epochs after a warm-up epoch, and the wall time from starting ``python train.py`` to the
end of the first training step (interpreter start, imports, data, process group, first step).
The four configurations alternate within each round so machine noise hits them alike; the table
shows medians over rounds.

Usage::

    .venv/bin/python benchmarks/bench_parallel.py --rounds 3 --samples 1536 --epochs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

WORKER = r'''
import json, sys, time
import torch
import arignote
from arignote.bench.data import load
from arignote.bench.models import arignote_model
from arignote.callbacks import Callback
from arignote.optimizers import RMSprop

out, procs, threads, batch, samples, epochs, t0 = sys.argv[1:8]
arignote.configure(device="cpu", cpu_processes=int(procs), cpu_threads=int(threads),
                   print_active_device=False)
torch.manual_seed(0)
data = load("cnn", int(samples), 0, source="synthetic")
model = arignote_model("cnn")
model.compile(loss="categorical_crossentropy", optimizer=RMSprop(lr=1e-4, decay=1e-6), metrics=["acc"])


class Clock(Callback):
    def __init__(self):
        super().__init__()
        self.first_step = None
        self.epoch_times = []

    def on_train_batch_end(self, batch, logs=None):
        if self.first_step is None:
            self.first_step = time.time() - float(t0)

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_times.append(time.perf_counter() - self.start)


clock = Clock()
model.fit(data.x_train, data.y_train, batch_size=int(batch), epochs=int(epochs), verbose=0,
          callbacks=[clock])
strategy = model._trainer.strategy
if strategy.is_main:
    measured = clock.epoch_times[1:]
    rate = len(data.x_train) * len(measured) / sum(measured)
    json.dump({"first_step": clock.first_step, "samples_per_s": rate,
               "world": strategy.world_size, "threads": torch.get_num_threads()}, open(out, "w"))
'''

CONFIGS = [(1, 2, 32), (2, 1, 32), (1, 2, 128), (2, 1, 128)]  # (processes, threads each, global batch)


def _load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run_once(worker: str, procs: int, threads: int, batch: int, samples: int, epochs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        t0 = time.time()
        proc = subprocess.run([sys.executable, worker, out, str(procs), str(threads), str(batch),
                               str(samples), str(epochs), repr(t0)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"run {procs}x{threads} batch {batch} failed:\n{proc.stderr[-3000:]}")
        result = json.load(open(out))
    result["wall"] = time.time() - t0
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=1536, help="training samples (multiple of 256)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per run; the first is warm-up")
    args = parser.parse_args(argv)
    if args.samples % 256 or args.epochs < 2 or args.rounds < 1:
        parser.error("--samples must be a multiple of 256, --epochs >= 2, --rounds >= 1")
    results: dict[tuple, list[dict]] = {c: [] for c in CONFIGS}
    loads = [_load_average()]
    with tempfile.TemporaryDirectory() as tmp:
        worker = os.path.join(tmp, "train.py")
        with open(worker, "w") as fh:
            fh.write(WORKER)
        for r in range(args.rounds):
            order = CONFIGS if r % 2 == 0 else CONFIGS[::-1]
            for procs, threads, batch in order:
                res = run_once(worker, procs, threads, batch, args.samples, args.epochs)
                results[(procs, threads, batch)].append(res)
                print(f"round {r + 1}: {procs} proc x {threads} thr, batch {batch}: "
                      f"{res['samples_per_s']:.1f} samples/s, first step after {res['first_step']:.2f} s",
                      file=sys.stderr, flush=True)
            loads.append(_load_average())

    def med(c: tuple, key: str) -> float:
        return statistics.median(x[key] for x in results[c])

    print(f"load average (1/5/15 min) before and after each round: {' | '.join(loads)}")
    print()
    print("| global batch | 1 process x 2 threads (samples/s) | 2 processes x 1 thread (samples/s) | "
          "2x1 / 1x2 |")
    print("| ---: | ---: | ---: | ---: |")
    for batch in (32, 128):
        one, two = med((1, 2, batch), "samples_per_s"), med((2, 1, batch), "samples_per_s")
        print(f"| {batch} | {one:.1f} | {two:.1f} | {two / one:.2f}x |")
    print()
    print("| processes | `python train.py` to end of first step (s), median of batch 32 and 128 runs |")
    print("| ---: | ---: |")
    for procs, threads in ((1, 2), (2, 1)):
        vals = [x["first_step"] for b in (32, 128) for x in results[(procs, threads, b)]]
        print(f"| {procs} | {statistics.median(vals):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
