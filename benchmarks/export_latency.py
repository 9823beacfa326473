"""Inference latency of the seeds' CIFAR-10 CNN: arignote eager vs its exported .pt2 vs ONNX in onnxruntime.

One run, the sides alternating within each round, median seconds per call, batch 1 and 64, CPU:

* ``model.predict(x, batch_size=B)`` (arignote's Keras API: data packing, the trainer's predict loop);
* the model's torch module called eagerly under ``torch.inference_mode()`` (what predict runs per batch);
* ``torch.export.load("cnn.pt2").module()`` (the file ``model.export(..., format="torch")`` writes);
* ``onnxruntime.InferenceSession("cnn.onnx")`` (``format="onnx"``), CPUExecutionProvider.

torch and onnxruntime get the same thread count (``--threads``). Needs the export extra (onnx, onnxscript,
onnxruntime).

Usage: ``.venv/bin/python benchmarks/export_latency.py [--rounds 9] [--steps 5] [--threads 1]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import tempfile
import time

import numpy as np
import torch

from arignote.bench.models import arignote_model


def timed(fn, steps: int) -> float:
    fn()  # a warm call per round: first-call allocations are not latency
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - start) / steps


def sides(model, tmp: str, threads: int) -> dict:
    import onnxruntime  # the export extra

    pt2, onnx_path = os.path.join(tmp, "cnn.pt2"), os.path.join(tmp, "cnn.onnx")
    model.export(pt2, format="torch")
    model.export(onnx_path, format="onnx")
    program = torch.export.load(pt2).module()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    module = model.module.eval()

    def eager(x):
        with torch.inference_mode():
            return module(torch.from_numpy(x))

    def exported(x):
        with torch.inference_mode():
            return program(torch.from_numpy(x))

    return {
        "arignote `model.predict`": lambda x: model.predict(x, batch_size=len(x)),
        "arignote module, eager": eager,
        "`.pt2` (torch.export.load)": exported,
        "ONNX in onnxruntime (CPU)": lambda x: session.run(None, {name: x}),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", default="1,64")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = arignote_model("cnn")
    batches = [int(b) for b in args.batches.split(",")]
    rng = np.random.default_rng(0)
    data = {b: rng.random((b, 32, 32, 3), dtype=np.float32) for b in batches}
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        cases = sides(model, tmp, args.threads)
        for fn in cases.values():  # the same numbers on every side before anything is timed
            np.testing.assert_allclose(np.asarray(fn(data[batches[0]])[0]).reshape(-1)[:10],
                                       np.asarray(model.predict(data[batches[0]]))[0].reshape(-1)[:10],
                                       atol=1e-4)
        times = {(c, b): [] for c in cases for b in batches}
        for r in range(args.rounds):
            order = list(cases) if r % 2 == 0 else list(reversed(cases))
            for b in batches:
                for c in order:
                    times[(c, b)].append(timed(lambda c=c, b=b: cases[c](data[b]), args.steps))
    head = "| side (median per call) | " + " | ".join(f"batch {b}" for b in batches) + " |"
    print(head)
    print("| --- |" + " ---: |" * len(batches))
    base = {b: statistics.median(times[("arignote module, eager", b)]) for b in batches}
    for c in cases:
        cells = []
        for b in batches:
            m = statistics.median(times[(c, b)])
            cells.append(f"{m * 1e3:.2f} ms ({m / base[b]:.2f}x)")
        print(f"| {c} | " + " | ".join(cells) + " |")
    print(f"\nthreads={args.threads} rounds={args.rounds} steps={args.steps}; (Nx) = / the eager module; "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
