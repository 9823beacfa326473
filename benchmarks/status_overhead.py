"""What the status record of a fit (issue 19, ``RunStatus``, flag ``share.status``) costs per step.

Two measurements:

* **hook**: what one training step pays for the record when nothing is due: the loop building the
  batch logs (a dict and a LazyLogs, only needed because RunStatus listens to batch ends) plus
  ``RunStatus.on_train_batch_end`` (two adds, a clock read, a comparison). Median of ``--rounds``
  x ``--calls`` calls, minus an empty loop.
* **fit**: seconds per step of a small MLP ``fit`` (``verbose=0``, so no other callback listens to
  batches and the whole per-step cost of the record shows) with ``share.status`` on and off, the
  two alternating each round; median of ``--rounds``. Records go to a temp lease directory.

Usage::

    .venv/bin/python benchmarks/status_overhead.py --rounds 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from arignote import config
from arignote.callbacks.base import LazyLogs
from arignote.callbacks.status import RunStatus
from arignote.layers import Dense
from arignote.models import Sequential


def hook_cost(calls: int, directory: str) -> float:
    """Seconds per step added by the record between two writes (the loop's logs + the hook)."""
    cb = RunStatus(interval=3600, directory=directory)
    cb.set_params({"epochs": 1, "steps": calls, "batch_size": 32, "samples": 32 * calls})
    cb.on_train_begin()
    cb.on_epoch_begin(0)
    compute, keys = (lambda: {"loss": 0.5}), ("loss",)
    t = time.perf_counter()
    for step in range(calls):
        fixed = {"batch": step, "size": 32}
        cb.on_train_batch_end(step, LazyLogs(fixed, compute, keys))
    listened = time.perf_counter() - t
    t = time.perf_counter()
    for _step in range(calls):
        pass
    empty = time.perf_counter() - t
    cb.on_train_end()
    return (listened - empty) / calls


def fit_step(status: bool, steps: int) -> float:
    rng = np.random.default_rng(0)
    x, y = rng.random((32 * steps, 32), dtype="float32"), rng.random((32 * steps, 1), dtype="float32")
    model = Sequential([Dense(32, activation="relu", input_shape=(32,)), Dense(1)])
    model.compile("sgd", "mse")
    with config.override(share_status=status, print_active_device=False):
        model.fit(x[:64], y[:64], epochs=1, batch_size=32, verbose=0)  # warm-up
        t = time.perf_counter()
        model.fit(x, y, epochs=1, batch_size=32, verbose=0, shuffle=False)
        return (time.perf_counter() - t) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--steps", type=int, default=2000, help="steps of the fit measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ARIGNOTE_LEASE_DIR"] = os.path.join(tmp, "leases")
        config.reload()
        hooks = [hook_cost(args.calls, tmp) for _ in range(args.rounds)]
        on, off = [], []
        for r in range(args.rounds):
            order = (True, False) if r % 2 == 0 else (False, True)
            for status in order:
                (on if status else off).append(fit_step(status, args.steps))
    med_on, med_off = statistics.median(on), statistics.median(off)
    print(f"hook + batch logs per step: median {statistics.median(hooks) * 1e6:.2f} us "
          f"(min {min(hooks) * 1e6:.2f}, max {max(hooks) * 1e6:.2f}) over {args.rounds} x {args.calls} calls")
    print(f"fit, share.status on : median {med_on * 1e6:.1f} us/step "
          f"({', '.join(f'{v * 1e6:.1f}' for v in on)})")
    print(f"fit, share.status off: median {med_off * 1e6:.1f} us/step "
          f"({', '.join(f'{v * 1e6:.1f}' for v in off)})")
    print(f"on / off: {med_on / med_off:.3f}  (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
