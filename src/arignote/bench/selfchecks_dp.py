"""Self-test items for data parallel on GPUs (``arignote selftest``; they need 2 GPUs).

Each item runs in its own ``python -m arignote.bench.selfchecks NAME`` process; with ``device=all``
fit re-runs that command for the other ranks, so every function here runs on every rank and only
rank 0 reports. None of them could be run where they were written (no GPU there).

Example::

    $ arignote selftest     # ... PASS data-parallel-weights  NCCL weights = one process's (max diff 2e-07)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["dp_weights", "dp_out_of_memory", "dp_out_of_memory_in_sync", "sync_oom_job", "bf16_gpu",
           "dp_preallocation_after_oom", "dp_with_placement"]


def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise AssertionError(message)


def _data(n: int = 512, width: int = 64) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, width)).astype("float32"), rng.normal(size=(n, 8)).astype("float32")


def _model(width: int = 64, hidden: int = 256) -> Any:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote.models import Model

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 8))
    model = Model(net)
    model.compile("sgd", "mse")
    return model


def _train(flags: dict[str, Any], batch: int = 128, hook: Any = None) -> Any:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote import config

    config.configure(**{"print_active_device": False, "dnn.deterministic": True, **flags})
    x, y = _data()
    model = _model()
    if hook is not None:
        hook(model)
    torch.manual_seed(1)
    model.fit(x, y, batch_size=batch, epochs=2, shuffle=True, verbose=0)
    return model


def _max_diff(a: list, b: list) -> float:
    return max(float(np.max(np.abs(np.asarray(u, dtype=float) - np.asarray(v, dtype=float))))
               for u, v in zip(a, b))


def dp_weights() -> str:
    """NCCL data parallel over 2 GPUs ends with the weights of one process on one GPU."""
    one = _train({"device": "cuda0"}).get_weights()
    two = _train({"device": "cuda0,cuda1"})
    _expect(two.strategy.world_size == 2 and two.strategy.backend == "nccl", f"strategy {two.strategy!r}")
    diff = _max_diff(one, two.get_weights())
    _expect(diff < 1e-4, f"2-GPU weights differ from 1-GPU weights by {diff:.2e}")
    return f"NCCL weights = one process's (max diff {diff:.1e})"


def _cap_rank_1(model: Any) -> None:
    """On rank 1: cap the allocator so that a step at the full local batch does not fit but a
    quarter of it does (measured with a trial step of the bare module first)."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote.devices import cuda, rank

    if rank() != 1:
        return
    dev = torch.device("cuda", 1)
    net = model.module.to(dev)
    x = torch.zeros((64, 64), device=dev)
    cuda.synchronize(1)
    base, _ = cuda.memory_in_use(1)
    cuda.reset_peak_memory(1)
    net(x).sum().backward()
    peak, _ = cuda.peak_memory(1)
    net.zero_grad(set_to_none=True)
    _, total = cuda.mem_get_info(1)
    reserved = cuda.memory_in_use(1)[1]
    cuda.set_memory_fraction(min(1.0, (reserved + 0.4 * (peak - base)) / total), 1)


def dp_out_of_memory() -> str:
    """A real out-of-memory on one of 2 GPUs under data parallel: both ranks agree on k, recover,
    and end with one process's weights."""
    one = _train({"device": "cuda0"}).get_weights()
    two = _train({"device": "cuda0,cuda1"}, hook=_cap_rank_1)
    guard = two._trainer.oom
    _expect(guard.k > 1, f"no out-of-memory happened (k={guard.k}): the cap did not bite")
    diff = _max_diff(one, two.get_weights())
    _expect(diff < 1e-4, f"after recovery the weights differ from one process's by {diff:.2e}")
    return f"rank 1 ran out, every rank went to k={guard.k}, weights = one process's (max diff {diff:.1e})"


# A data-parallel job whose rank 1 runs out of memory in the backward of its 3rd step, while DDP is
# reducing the gradients: ``allocate`` asks the device's allocator for 64 TiB there (a real
# out-of-memory error from the CUDA caching allocator), ``raise`` raises torch's OutOfMemoryError
# itself (for the CPU, whose allocator's failure is no out-of-memory error to arignote).
SYNC_OOM_JOB = r"""
import sys
import numpy as np, torch
from arignote import config
from arignote.devices import rank
from arignote.models import Model

mode = sys.argv[1]
config.configure(print_active_device=False)
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
calls = [0]


def hook(grad):
    calls[0] += 1
    if rank() == 1 and calls[0] == 3:
        if mode == "allocate":
            torch.empty(1 << 46, dtype=torch.uint8, device=grad.device)
        raise torch.OutOfMemoryError("out of memory (raised by the self-test during the gradient sync)")
    return grad


net[0].weight.register_hook(hook)
m = Model(net)
m.compile("sgd", "mse")
x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
m.fit(x, x[:, :1], batch_size=16, epochs=2, verbose=0)
"""


def sync_oom_job(device: str, mode: str, timeout: float = 300.0) -> str:
    """Run :data:`SYNC_OOM_JOB` as a plain ``python job.py`` with ``ARIGNOTE_FLAGS=device=<device>``
    and check it ended the way it must: a non-zero exit within a minute (nobody waits for a
    collective's timeout), with the one error naming rank 1 and where it ran out."""
    import os
    import subprocess
    import sys
    import tempfile
    import time

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sync_oom.py")
        with open(path, "w") as fh:
            fh.write(SYNC_OOM_JOB)
        env = {**os.environ, "ARIGNOTE_FLAGS": f"device={device}"}
        started = time.monotonic()
        proc = subprocess.run([sys.executable, path, mode], env=env, capture_output=True, text=True,
                              timeout=timeout, cwd=tmp)
        seconds = time.monotonic() - started
    _expect(proc.returncode != 0, "the job went on after rank 1 ran out of memory in the gradient sync")
    wanted = "rank 1: out of memory in the backward pass while the gradients were being reduced"
    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    _expect(wanted in proc.stderr, f"the job's error does not say so: {last}")
    _expect(seconds < 60, f"the job took {seconds:.0f} s to stop: a rank waited for a collective's timeout")
    return f"rank 1 ran out during the gradient sync: every rank stopped in {seconds:.0f} s with one error"


def dp_out_of_memory_in_sync() -> str:
    """A real out-of-memory on rank 1 of 2 GPUs in the backward while NCCL reduces the gradients:
    the ranks cannot recover together from there, so every rank stops with one clear error."""
    return sync_oom_job("cuda0,cuda1", "allocate")


def bf16_gpu() -> str:
    """Training with precision=mixed-bf16 on a GPU (autocast bf16, no grad scaler)."""
    model = _train({"device": "cuda0", "precision": "mixed-bf16"})
    losses = model.history.history["loss"]
    _expect(all(np.isfinite(losses)) and losses[-1] < losses[0], f"bf16 losses {losses}")
    return f"bf16 loss {losses[0]:.3f} -> {losses[-1]:.3f}"


def dp_preallocation_after_oom() -> str:
    """memory.preallocate=0.5 still holds its block after an (injected) out-of-memory recovery."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.devices import cuda

    model = _train({"device": "cuda0", "memory.preallocate": 0.5, "memory.oom_inject_above": 32})
    _expect(model._trainer.oom.k > 1, "the injected out-of-memory did not split the batch")
    _, reserved = cuda.memory_in_use(0)
    _, total = cuda.mem_get_info(0)
    _expect(reserved >= 0.45 * total,
            f"only {reserved >> 20} MiB reserved of {total >> 20} MiB after recovery")
    k = model._trainer.oom.k
    return f"{reserved >> 20} MiB still reserved of {total >> 20} MiB after recovering at k={k}"


def dp_with_placement() -> str:
    """Placement + data parallel on 4 GPUs: 2 replicas, each with its layers on its own 2 GPUs."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.devices import current_inventory
    from arignote.layers import Dense
    from arignote.models import Sequential
    from arignote.parallel.placement import device

    config.configure(device="all", contexts="dev0->cuda0;dev1->cuda1", print_active_device=False)
    x, y = _data()
    model = Sequential()
    with device("dev0"):
        model.add(Dense(256, activation="tanh", input_shape=(64,)))
    with device("dev1"):
        model.add(Dense(8))
    model.compile("sgd", "mse")
    model.fit(x, y, batch_size=128, epochs=1, verbose=0)
    strategy, n = model.strategy, len(current_inventory().gpus)
    _expect(strategy.world_size == n // 2, f"{strategy.world_size} replicas for {n} GPUs, expected {n // 2}")
    where = sorted({str(p.device) for p in model.module.parameters()})
    own = [f"cuda:{2 * strategy.rank + i}" for i in range(2)]
    _expect(where == own, f"replica {strategy.rank}'s parameters on {where}, expected {own}")
    return f"{strategy.world_size} replicas of 2 GPUs each, layers on each replica's own GPUs"
