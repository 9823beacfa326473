"""The fast defaults (issue 18 item 2) that can be measured on a CPU, each against its switch.

* ``memory_format``: the seeds' CNN trained by ``fit`` at batch 32 with ``memory_format=auto``
  (channels-last kernels) and ``contiguous``; seconds per 512-sample epoch, best of the epochs after
  the first, the two sides alternated for ``--rounds`` rounds, each round in a fresh process.
* ``optimizer.impl``: one Adam step over the seeds' CNN's parameters (1.25 M) with ``fused``,
  ``foreach`` and ``loop`` (what ``optimizer.impl`` picks), timed in one process, alternated.

What only a GPU shows (cuDNN autotuning, TF32, pinned copies) is not measured here.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/fast_defaults.py            # about 3 minutes
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/fast_defaults.py --quick
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def _fit_worker(memory_format: str, samples: int, epochs: int) -> None:
    # why (these imports): only the worker processes load torch and arignote; the parent just alternates them
    import numpy as np
    import torch

    from arignote import config
    from arignote.bench import models
    from arignote.optimizers import RMSprop

    config.configure(device="cpu", print_active_device=False, memory_format=memory_format)
    rng = np.random.default_rng(0)
    x = rng.random((samples, 32, 32, 3), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, samples)]
    model = models.arignote_model("cnn")
    model.compile(loss="categorical_crossentropy", optimizer=RMSprop(lr=1e-4), metrics=["accuracy"])
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        times.append(time.perf_counter() - t0)
    kernel = next(m.weight for m in model.module.modules() if getattr(m, "weight", None) is not None
                  and m.weight.dim() == 4)
    print(json.dumps({"epoch_s": min(times[1:]), "kernel_channels_last":
                      kernel.is_contiguous(memory_format=torch.channels_last)}))


def _optimizer_steps(rounds: int, steps: int) -> dict[str, float]:
    # why (these imports): torch loads after the fit workers ran, so they start from the same state
    import torch

    from arignote.bench import models

    params = [p.detach().clone().requires_grad_(True) for p in models.torch_model("cnn").parameters()]
    for p in params:
        p.grad = torch.randn_like(p)
    kinds = {"fused": {"fused": True}, "foreach": {"foreach": True}, "loop": {"foreach": False}}
    opts = {k: torch.optim.Adam(params, lr=1e-4, **kw) for k, kw in kinds.items()}
    for opt in opts.values():
        opt.step()  # state exists
    best: dict[str, list[float]] = {k: [] for k in kinds}
    for r in range(rounds):
        order = list(kinds) if r % 2 == 0 else list(reversed(kinds))
        for k in order:
            t0 = time.perf_counter()
            for _ in range(steps):
                opts[k].step()
            best[k].append((time.perf_counter() - t0) / steps * 1e3)
    return {k: statistics.median(v) for k, v in best.items()}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _fit_worker(args.worker[0], int(args.worker[1]), int(args.worker[2]))
        return 0
    rounds = 1 if args.quick else args.rounds
    samples, epochs = (128, 2) if args.quick else (512, 3)
    fit: dict[str, list[float]] = {"auto": [], "contiguous": []}
    layout = {}
    for r in range(rounds):
        for fmt in (["auto", "contiguous"] if r % 2 == 0 else ["contiguous", "auto"]):
            out = subprocess.run([sys.executable, __file__, "--worker", fmt, str(samples), str(epochs)],
                                 capture_output=True, text=True, check=True).stdout
            res = json.loads(out.strip().splitlines()[-1])
            fit[fmt].append(res["epoch_s"])
            layout[fmt] = res["kernel_channels_last"]
    print(f"seeds' CNN, fit, batch 32, {samples} samples per epoch, best epoch after the first, "
          f"median of {rounds} round(s):")
    for fmt, values in fit.items():
        med = statistics.median(values)
        print(f"  memory_format={fmt:10} {med:7.3f} s/epoch  {samples / med:7.1f} samples/s  "
              f"kernels channels-last: {layout[fmt]}  (rounds: {', '.join(f'{v:.3f}' for v in values)})")
    adam = _optimizer_steps(rounds=3 if args.quick else 7, steps=10 if args.quick else 40)
    print("Adam step over the CNN's 1.25 M parameters (ms, median of alternated rounds):")
    for k, ms in adam.items():
        print(f"  optimizer.impl={k:8} {ms:7.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
