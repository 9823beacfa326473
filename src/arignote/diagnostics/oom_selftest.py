"""``arignote selftest`` on a GPU: provoke a real out-of-memory and check that the step recovers.

Under a small cap of the caching allocator (set through ``devices/cuda.py``, like ``memory.limit``), a batch
whose activations do not fit is run through :class:`~arignote.training.oom.OOMGuard`: the plain
step must raise ``torch.OutOfMemoryError`` (so the out-of-memory is real), the guarded step must
succeed as k > 1 micro-batches, and its accumulated gradient must equal the full-batch gradient
computed before the cap.

Example::

    >>> record = real_oom_record("cuda:0")                # doctest: +SKIP
    >>> record["plain_oom"], record["k"] > 1              # doctest: +SKIP
    (True, True)
"""

from __future__ import annotations

import io
from typing import Any

import torch

from arignote.devices import cuda
from arignote.training.oom import OOMGuard, free_memory

__all__ = ["real_oom_record"]

MiB = 1 << 20
BATCH = 4096
WIDTH = 8192  # 32 KiB of activations per sample per hidden tensor: about 256 MiB for the batch
HEADROOM = 160 * MiB  # what the cap leaves above this process's current reservation


def _grads(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.grad.detach().clone() for p in model.parameters()]


def real_oom_record(device: Any) -> dict[str, Any]:
    """Provoke a real out-of-memory on CUDA ``device`` and record the recovery (see the module doc):
    ``plain_oom`` (the capped full-batch step ran out), ``k`` and ``failures`` of the guard,
    ``max_rel_diff`` of its gradient from the full-batch one, ``cap`` bytes, ``error`` (a recovery
    that ran out too). The cap is removed again before returning. Judged by
    ``bench.selfchecks_gpu.judge_real_oom``."""
    dev = torch.device(getattr(device, "torch", device))
    if dev.type != "cuda" or not cuda.is_available():
        raise ValueError(f"{dev} is not a usable CUDA GPU: the real out-of-memory test needs one")
    index = dev.index if dev.index is not None else 0
    dev = torch.device("cuda", index)
    gen = torch.Generator().manual_seed(0)
    layers = [torch.nn.Linear(64, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, 1)]
    model = torch.nn.Sequential(*layers).to(dev)
    x = torch.randn(BATCH, 64, generator=gen).to(dev)
    y = torch.randn(BATCH, 1, generator=gen).to(dev)

    def forward_backward(xb: torch.Tensor, yb: torch.Tensor, weight: float) -> torch.Tensor:
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        (loss * weight).backward()
        return loss.detach()

    def zero_grad() -> None:
        model.zero_grad(set_to_none=True)

    forward_backward(x, y, 1.0)  # the reference: the full batch, before any cap
    expected = _grads(model)
    zero_grad()
    free_memory(dev)

    old_fraction = cuda.memory_fraction(index)
    _, reserved = cuda.memory_in_use(index)
    _, total = cuda.mem_get_info(index)
    cap = reserved + HEADROOM
    got: list[torch.Tensor] = []
    record: dict[str, Any] = {"device": str(dev), "batch": BATCH, "cap": cap, "plain_oom": False, "k": 1,
                              "failures": 0, "max_rel_diff": None, "error": ""}
    guard = None
    try:
        cuda.set_memory_fraction(min(1.0, cap / total), index)
        try:
            forward_backward(x, y, 1.0)
        except torch.OutOfMemoryError:
            record["plain_oom"] = True
        zero_grad()
        free_memory(dev)
        guard = OOMGuard(on_oom="split", inject_above=0, device=dev, stream=io.StringIO())
        guard.step(x, y, forward_backward, lambda: got.extend(_grads(model)), zero_grad)
    except torch.OutOfMemoryError as exc:
        record["error"] = str(exc).splitlines()[0]
    finally:
        zero_grad()
        cuda.set_memory_fraction(old_fraction, index)
        free_memory(dev)
    if guard is not None:
        record["k"], record["failures"] = guard.k, guard.failures
    if got:
        record["max_rel_diff"] = max(float(((g - e).abs().max() / e.abs().max().clamp_min(1e-12)).item())
                                     for g, e in zip(got, expected))
    return record
