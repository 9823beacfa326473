"""``arignote selftest`` on a GPU: provoke a real out-of-memory and check that the step recovers.

Under a small per-process cap (set through ``devices/cuda.py``, like ``memory.limit``), a batch
whose activations do not fit is run through :class:`~arignote.training.oom.OOMGuard`: the plain
step must raise ``torch.OutOfMemoryError`` (so the out-of-memory is real), the guarded step must
succeed as k > 1 micro-batches, and its accumulated gradient must equal the full-batch gradient
computed before the cap.

Example::

    >>> ok, detail = selftest_real_oom("cuda:0")
    >>> ok, detail
    (True, 'cuda:0: real out-of-memory at batch 4096 under a 160 MiB cap; recovered as 4 micro-batches ...')
"""

from __future__ import annotations

import io
from typing import Any

import torch

from arignote.devices import cuda
from arignote.training.oom import OOMGuard, free_memory

__all__ = ["selftest_real_oom"]

MiB = 1 << 20
BATCH = 4096
WIDTH = 8192  # 32 KiB of activations per sample per hidden tensor: about 256 MiB for the batch
HEADROOM = 160 * MiB  # what the cap leaves above this process's current reservation


def _grads(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.grad.detach().clone() for p in model.parameters()]


def selftest_real_oom(device: Any) -> tuple[bool, str]:
    """Provoke a real out-of-memory on CUDA ``device`` and check recovery: ``(ok, detail)``.

    On a device that is not a CUDA GPU it does nothing and returns ``(False, "skipped: ...")``:
    call it for GPUs only. The cap is removed again before returning.
    """
    dev = torch.device(getattr(device, "torch", device))
    if dev.type != "cuda" or not cuda.is_available():
        return False, f"skipped: {dev} is not a usable CUDA GPU (the real out-of-memory test needs one)"
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
    try:
        cuda.set_memory_fraction(min(1.0, cap / total), index)
        try:
            forward_backward(x, y, 1.0)
            return False, (f"{dev}: batch {BATCH} fitted under a {cap // MiB} MiB cap, so no out-of-memory "
                           "was provoked; the cap did not take effect")
        except torch.OutOfMemoryError:
            pass
        zero_grad()
        free_memory(dev)
        guard = OOMGuard(on_oom="split", inject_above=0, device=dev, stream=io.StringIO())
        guard.step(x, y, forward_backward, lambda: got.extend(_grads(model)), zero_grad)
    except torch.OutOfMemoryError as exc:
        return False, f"{dev}: recovery failed under a {cap // MiB} MiB cap: {str(exc).splitlines()[0]}"
    finally:
        zero_grad()
        cuda.set_memory_fraction(old_fraction, index)
        free_memory(dev)
    worst = max(float(((g - e).abs().max() / e.abs().max().clamp_min(1e-12)).item())
                for g, e in zip(got, expected))
    if guard.k < 2 or guard.failures < 1:
        return False, f"{dev}: no out-of-memory reached the guard (k={guard.k})"
    if worst > 1e-3:
        return False, (f"{dev}: recovered as {guard.k} micro-batches but the gradients differ from the "
                       f"full batch's (max rel diff {worst:.1e})")
    return True, (f"{dev}: real out-of-memory at batch {BATCH} under a {cap // MiB} MiB cap; recovered as "
                  f"{guard.k} micro-batches with the full-batch gradient (max rel diff {worst:.1e})")
