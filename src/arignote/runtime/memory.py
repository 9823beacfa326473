"""The GPU memory policy: ``memory.preallocate`` and ``memory.limit`` as pure arithmetic, then applied.

``memory.preallocate`` (Theano's ``gpuarray.preallocate``): ``0`` grow on demand (default);
``0 < x <= 1`` reserve that fraction of the GPU's total memory; ``x > 1`` reserve that many MiB;
``x < 0`` disable caching (every free returns memory to the driver, so others see it free; torch's
peak-memory counters then stay at 0, as they count the caching allocator's blocks only).
``memory.limit``: a cap of torch's caching allocator in this process, a fraction (``0.5``) or MiB
(``4096``); ``0`` none. It bounds what torch allocates through that allocator (tensors and its
cache), not the process: the CUDA context (a few hundred MiB), NCCL's buffers and what libraries
allocate themselves (cuDNN/cuBLAS workspaces outside it) come on top, so ``nvidia-smi`` shows more.
The cap lives in the caching allocator, so it cannot be combined with ``memory.preallocate < 0``.

Example::

    >>> from arignote.runtime import memory
    >>> p = memory.plan(0.8, 0, total_bytes=81559 << 20, free_bytes=81000 << 20)
    >>> p.text[0]
    'Preallocating 65247/81559 MiB (0.80) on cuda:0'
    >>> p.preallocate_bytes == 65247 << 20, p.caching, p.limit_fraction
    (True, True, None)
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from arignote import config
from arignote.config import ConfigError

MiB = 1 << 20

__all__ = ["MemoryPolicy", "MemoryPlanError", "plan", "plan_for", "apply", "applied", "explain_oom",
           "oom_device", "oom_explained", "offer_bytes", "prepared_gpus"]


class MemoryPlanError(ConfigError):
    """A memory policy this GPU cannot honour (asks for more than it has); names the flag and its source."""


@dataclass(frozen=True)
class MemoryPolicy:
    """What to do on one GPU: bytes to reserve now, the cap (fraction of total), caching on/off."""

    device: str
    total_bytes: int
    free_bytes: int
    preallocate: float = 0.0
    limit: float = 0.0
    preallocate_bytes: int = 0
    limit_bytes: int = 0
    limit_fraction: float | None = None
    caching: bool = True
    text: tuple[str, ...] = ()
    limit_source: str = ""  # where memory.limit's value came from (a file:line, an env var), for errors


def _mib(n: int) -> int:
    return n // MiB


def _flag(name: str, value: float, sources: Mapping[str, str] | None) -> str:
    where = (sources or {}).get(name)
    shown = f"{value:g}"
    return f"{name}={shown} (from {where})" if where and where != "default" else f"{name}={shown}"


def _bytes_of(x: float, total: int) -> int:
    """A fraction of ``total`` (0 < x <= 1) or MiB (x > 1), rounded down to whole MiB."""
    return (int(x * total) // MiB) * MiB if x <= 1 else int(x * MiB)


def plan(preallocate: float, limit: float, total_bytes: int, free_bytes: int, device: str = "cuda:0",
         sources: Mapping[str, str] | None = None) -> MemoryPolicy:
    """The memory policy for one GPU as numbers and banner text (pure).

    ``sources`` maps flag names to where their values came from, for error messages. Raises
    :class:`MemoryPlanError` when the GPU cannot honour the request.
    """
    total, free = int(total_bytes), int(free_bytes)
    pre = _flag("memory.preallocate", preallocate, sources)
    lim = _flag("memory.limit", limit, sources)
    text: list[str] = []
    limit_bytes, limit_fraction = 0, None
    if limit < 0:
        raise MemoryPlanError(f"{lim} must be >= 0: 0 for no cap, a fraction in (0, 1] or MiB > 1")
    if limit > 0:
        limit_bytes = _bytes_of(limit, total)
        if limit_bytes > total:
            raise MemoryPlanError(f"{lim} asks for a {_mib(limit_bytes)} MiB cap but {device} has "
                                  f"{_mib(total)} MiB; use at most {_mib(total)} or a fraction like 0.5")
        limit_fraction = limit_bytes / total if total else 1.0
        text.append(f"Capping {device} at {_mib(limit_bytes)}/{_mib(total)} MiB ({limit_fraction:.2f}) "
                    "by memory.limit")
    pre_bytes, caching = 0, True
    if preallocate < 0 and limit_bytes:
        # torch enforces the per-process fraction inside its caching allocator only; with caching off
        # every allocation is a plain cudaMalloc that neither the cap nor the peak counters see
        raise MemoryPlanError(f"{pre} turns torch's caching allocator off, and {lim} is enforced only by "
                              "that allocator (uncached allocations go straight to cudaMalloc), so the cap "
                              "would not hold; set memory.limit=0 or memory.preallocate>=0")
    if preallocate < 0:
        caching = False
        text.insert(0, f"Caching disabled on {device}: every free returns memory to the driver "
                       "(memory.preallocate<0)")
    elif preallocate > 0:
        pre_bytes = _bytes_of(preallocate, total)
        if pre_bytes > free:
            fits = f"{(free // MiB) / (total // MiB):.2f}" if total >= MiB else "0"
            raise MemoryPlanError(
                f"{pre} asks for {_mib(pre_bytes)} MiB on {device} but only {_mib(free)} of "
                f"{_mib(total)} MiB are free; lower memory.preallocate (at most {fits} or "
                f"{_mib(free)} MiB) or pick a freer GPU with device=free:1")
        if limit_bytes and pre_bytes > limit_bytes:
            raise MemoryPlanError(f"{pre} reserves {_mib(pre_bytes)} MiB on {device}, more than the "
                                  f"{_mib(limit_bytes)} MiB cap of {lim}; lower one of them")
        text.insert(0, f"Preallocating {_mib(pre_bytes)}/{_mib(total)} MiB ({pre_bytes / total:.2f}) "
                       f"on {device}")
    else:
        text.insert(0, f"Memory on {device}: grow on demand, cached for reuse (memory.preallocate=0)")
    return MemoryPolicy(device, total, free, float(preallocate), float(limit), pre_bytes, limit_bytes,
                        limit_fraction, caching, tuple(text), (sources or {}).get("memory.limit", ""))


def plan_for(device) -> MemoryPolicy | None:
    """The plan for a :class:`~arignote.devices.Device` from the current flags (None on CPU)."""
    if not device.is_cuda:
        return None
    names = ("memory.preallocate", "memory.limit")
    return plan(config.get(names[0]), config.get(names[1]), device.total_memory, device.free_memory,
                str(device), {n: config.source(n) for n in names})


# device name -> the plan applied there (explain_oom reads it)
_applied: dict[str, MemoryPolicy] = {}


def apply(policy: MemoryPolicy, device) -> None:
    """Carry out a policy on its GPU: caching switch, cap, then the reservation (in that order, so the
    reservation counts against the cap)."""
    # imports torch: the policy math above stays torch-free (`arignote config` reads it)
    from arignote.devices import cuda

    index = device.index if hasattr(device, "index") else int(str(device).rsplit(":", 1)[-1])
    if not policy.caching:
        cuda.disable_caching()
    if policy.limit_fraction is not None:
        cuda.set_memory_fraction(policy.limit_fraction, index)
    if policy.preallocate_bytes:
        cuda.preallocate(policy.preallocate_bytes, index)
    _applied[str(device)] = policy


def applied(device) -> MemoryPolicy | None:
    """The plan applied on ``device`` in this process, if any."""
    return _applied.get(str(device))


def prepared_gpus() -> list[str]:
    """The GPUs this process applied a plan to (``cuda:0``, ``cuda:1`` under placement contexts),
    in index order."""
    return sorted((d for d in _applied if d.startswith("cuda")), key=lambda d: int(d.rsplit(":", 1)[-1]))


def offer_bytes(index: int) -> int:
    """Bytes this process can still allocate on GPU ``index`` under the policy applied there: the
    driver's free memory plus the blocks this process has cached but not in use (a
    ``memory.preallocate`` reservation), and never more than the ``memory.limit`` cap minus what the
    process's tensors hold (the driver knows nothing of the cap). Creates a CUDA context.
    """
    from arignote.devices import cuda  # imports torch: the policy math above stays torch-free

    free, _ = cuda.mem_get_info(index)
    allocated, reserved = cuda.memory_in_use(index)
    offer = free + max(0, reserved - allocated)
    p = _applied.get(f"cuda:{index}")
    if p is not None and p.limit_bytes:
        offer = min(offer, max(0, p.limit_bytes - allocated))
    return int(offer)


_GPU_IN_OOM = re.compile(r"\bGPU (\d+) has a total capacity of\b")


def oom_device(exc: BaseException, device) -> str:
    """The GPU an out-of-memory error happened on: the one torch's message names (the CUDA caching
    allocator says ``GPU 1 has a total capacity of ...``), else ``device``. Under placement contexts a
    step runs on several GPUs; the error may come from any of them (issue 28 W4).

    >>> oom_device(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
    ...                         "capacity of 79.25 GiB of which 8.94 MiB is free."), "cuda:0")
    'cuda:1'
    >>> oom_device(RuntimeError("out of memory"), "cuda:0")
    'cuda:0'
    """
    found = _GPU_IN_OOM.search(str(exc))
    return f"cuda:{found.group(1)}" if found else str(device)


# what to try, by what filled the memory: the batch's activations (a split may still help), the
# activations of a batch that cannot be split further, the optimizer's state
_REMEDIES = {
    "batch": ("lower the batch size", "precision=mixed-bf16 (halves activations)",
              "keep memory.on_oom=split (the default)"),
    "activations": ("precision=mixed-bf16 (halves activations)", "a smaller model"),
    "optimizer": ("an optimizer with less state (SGD keeps 0-1 values per parameter, Adam/Adadelta 2)",
                  "a smaller model"),
}


def explain_oom(exc: BaseException | str | None, device, filled_by: str = "batch") -> str:
    """The one explanation of an out-of-memory: on which device (the GPU ``exc`` names, else
    ``device``; ``None`` is the CPU), under the memory policy :func:`apply` applied there (the cap,
    the ``memory.limit`` value and where it came from, as applied, not the flags as they are now) and
    what to try, by what ``filled_by`` the memory: ``"batch"`` (a step's activations, a split may
    help), ``"activations"`` (a batch that cannot be split further) or ``"optimizer"`` (its state).
    The cap is the caching allocator's: what torch allocates through it (tensors, its cache); the CUDA
    context, NCCL's buffers and libraries' own allocations are not in it.

    >>> p = plan(0, 0.5, 81559 << 20, 81559 << 20, "cuda:0", {"memory.limit": "ARIGNOTE_FLAGS"})
    >>> _applied["cuda:0"] = p   # what apply() records after setting the cap
    >>> what, _, tries = explain_oom(None, "cuda:0", "optimizer").partition("; try: ")
    >>> what
    "cuda:0 hit the caching allocator's cap of 40779/81559 MiB set by memory.limit=0.5 (from ARIGNOTE_FLAGS)"
    >>> tries.split(", ")[0], tries.endswith("or a smaller model")
    ('raise memory.limit (0 removes the cap)', True)
    >>> _applied.clear()
    """
    if filled_by not in _REMEDIES:
        raise ValueError(f"filled_by must be one of {', '.join(_REMEDIES)}, got {filled_by!r}")
    name = oom_device(exc, "cpu" if device is None else device) if exc is not None else str(device or "cpu")
    name = "cuda:0" if name == "cuda" else name  # torch.device("cuda"): the first GPU
    p = _applied.get(name)
    remedies = list(_REMEDIES[filled_by])
    if p is not None and p.limit_bytes:
        flag = _flag("memory.limit", p.limit, {"memory.limit": p.limit_source})
        what = (f"{name} hit the caching allocator's cap of {_mib(p.limit_bytes)}/{_mib(p.total_bytes)} MiB "
                f"set by {flag}")
        remedies.insert(0, "raise memory.limit (0 removes the cap)")
    elif name.startswith("cuda"):
        total = f" ({_mib(p.total_bytes)} MiB total)" if p is not None else ""
        what = f"{name} ran out of memory{total} with no memory.limit set"
    else:
        what = f"{name} ran out of memory"
    return f"{what}; try: {', '.join(remedies[:-1])}, or {remedies[-1]}"


@contextlib.contextmanager
def oom_explained(device) -> Iterator[None]:
    """Re-raise ``torch.OutOfMemoryError`` from the block with :func:`explain_oom`'s text appended."""
    import torch

    try:
        yield
    except torch.OutOfMemoryError as exc:
        raise torch.OutOfMemoryError(f"{exc}\narignote: {explain_oom(exc, device)}") from exc
