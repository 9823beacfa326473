"""Device specs: parse the ``device`` flag's text, then resolve it against an inventory (both pure).

Forms: ``cpu``; ``cuda`` (first visible GPU); ``cudaN`` / ``cuda:N``; ``gpu`` / ``gpuN`` (Theano);
``auto`` (all GPUs if any, else the CPU: the default); ``all`` (every GPU); lists ``cuda0,cuda2``;
``free:N`` (the N least-loaded GPUs, chosen by a selector). GPU numbers follow the PCI bus.

Example::

    >>> from arignote.devices import GPUInfo, Inventory, parse_spec, resolve
    >>> parse_spec("cuda0,cuda:2")
    Spec(kind='cuda', indices=(0, 2), count=0, text='cuda0,cuda:2')
    >>> two = Inventory((GPUInfo(0, "A100", "0000:07:00.0", 80 << 30, 80 << 30),
    ...                  GPUInfo(1, "A100", "0000:0f:00.0", 80 << 30, 40 << 30)), "EPYC", 2)
    >>> [str(d) for d in resolve("auto", two)]
    ['cuda:0', 'cuda:1']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arignote.devices.info import Device, Inventory, cpu_device, gpu_device
from arignote.errors import DeviceError

FORMS = "auto, cpu, cuda, cudaN, cuda:N, a list like cuda0,cuda2, all, or free:N"
_ONE_GPU = re.compile(r"^(?:cuda|gpu)(?::?(\d+))?$")
_FREE = re.compile(r"^free:(\d+)$")

# select(n, inventory) -> the chosen GPUs (indices or objects with .index), best first
Selector = Callable[[int, Inventory], Sequence[Any]]


@dataclass(frozen=True)
class Spec:
    """A parsed device spec: ``kind`` is cpu, auto, all, cuda (with ``indices``) or free (with ``count``)."""

    kind: str
    indices: tuple[int, ...] = ()
    count: int = 0
    text: str = ""


def parse_spec(text: str | Spec) -> Spec:
    """Parse a device spec (pure); raise :class:`DeviceError` listing the valid forms."""
    if isinstance(text, Spec):
        return text
    if not isinstance(text, str):
        raise DeviceError(f"device spec must be a string such as 'cuda1', not {type(text).__name__}")
    try:
        return _parse(text.strip())
    except _Problem as exc:
        raise DeviceError(f"device={text.strip()!r}: {exc}") from None


def spec_problem(text: str) -> str | None:
    """What is wrong with a spec, without the ``device=...`` prefix (the config registry's check)."""
    try:
        _parse(str(text).strip())
    except _Problem as exc:
        return str(exc)
    return None


class _Problem(ValueError):
    pass


def _parse(raw: str) -> Spec:
    s = raw.lower()
    if s in ("cpu", "auto", "all"):
        return Spec(s, text=raw)
    free = _FREE.match(s)
    if free:
        n = int(free.group(1))
        if n < 1:
            raise _Problem("free:N needs N >= 1 (e.g. free:1 for the least-loaded GPU)")
        return Spec("free", count=n, text=raw)
    if s.startswith("free"):
        raise _Problem("write free:N with N the number of GPUs, e.g. free:2")
    indices: list[int] = []
    for part in s.split(","):
        part = part.strip()
        m = _ONE_GPU.match(part)
        if not m:
            hint = " (cpu cannot be mixed with GPUs in one spec)" if part == "cpu" else ""
            raise _Problem(f"{part!r} is not a device{hint}; use {FORMS}")
        index = int(m.group(1)) if m.group(1) is not None else 0
        if index in indices:
            raise _Problem(f"cuda{index} is listed twice")
        indices.append(index)
    return Spec("cuda", indices=tuple(indices), text=raw)


def count_problem(text: str | Spec, gpu_count: int, reason: str | None = None) -> tuple[str, str] | None:
    """``(problem, fix)`` when a spec cannot be honoured by a machine with ``gpu_count`` visible GPUs
    (pure; what the config registry checks at the first read, before any GPU is touched), else None.

    ``reason`` says why there is no GPU (from :func:`arignote.devices.cuda.unavailable_reason`).

    Example::

        >>> count_problem("cuda7", 2)[0]
        'there is no cuda7; this machine has 2 GPUs (cuda0..cuda1)'
        >>> count_problem("free:3", 2)[1]
        'use free:2 or fewer'
        >>> count_problem("auto", 0) is None
        True
    """
    spec = parse_spec(text)
    if spec.kind in ("cpu", "auto"):
        return None
    if gpu_count == 0:
        return (f"needs a CUDA GPU, but none is usable: {reason or 'no CUDA GPU is visible'}",
                "use device=auto (GPUs when present, else the CPU) or device=cpu")
    have = f"this machine has {gpu_count} GPU{'s' if gpu_count != 1 else ''} (cuda0..cuda{gpu_count - 1})"
    if gpu_count == 1:
        have = "this machine has 1 GPU (cuda0)"
    if spec.kind == "free" and spec.count > gpu_count:
        return f"asks for {spec.count} GPUs but {have}", f"use free:{gpu_count} or fewer"
    missing = [i for i in spec.indices if i >= gpu_count]
    if missing:
        names = "cuda0" if gpu_count == 1 else f"cuda0..cuda{gpu_count - 1}"
        return f"there is no cuda{missing[0]}; {have}", f"use {names}, device=all or device=auto"
    return None


def rank_by_free_memory(n: int, inventory: Inventory) -> list[int]:
    """The default ``free:N`` selector: the n GPUs with the most free memory (ties: lower index)."""
    ranked = sorted(inventory.gpus, key=lambda g: (-g.free_memory, g.index))
    return [g.index for g in ranked[:n]]


def _no_gpu(spec: Spec, inventory: Inventory) -> DeviceError:
    reason = inventory.cuda_reason or "no CUDA GPU is visible"
    return DeviceError(f"device={spec.text} needs a CUDA GPU, but none is usable: {reason}. "
                       "Use device=auto (GPUs when present, else the CPU) or device=cpu.")


def resolve(spec: str | Spec, inventory: Inventory, select: Selector | None = None) -> list[Device]:
    """The devices a spec names on this inventory (pure); :class:`DeviceError` when it can't be honoured.

    ``select(n, inventory)`` picks GPUs for ``free:N`` (default :func:`rank_by_free_memory`).
    """
    spec = parse_spec(spec)
    gpus = {g.index: g for g in inventory.gpus}
    if spec.kind == "cpu" or (spec.kind == "auto" and not gpus):
        return [cpu_device(inventory)]
    if spec.kind in ("auto", "all"):
        if not gpus:
            raise _no_gpu(spec, inventory)
        return [gpu_device(g) for g in inventory.gpus]
    if not gpus:
        raise _no_gpu(spec, inventory)
    if spec.kind == "free":
        if spec.count > len(gpus):
            raise DeviceError(f"device={spec.text} asks for {spec.count} GPUs but this machine has "
                              f"{len(gpus)}: {inventory.gpu_names()}. Use free:{len(gpus)} or fewer.")
        chosen = [getattr(c, "index", c) for c in (select or rank_by_free_memory)(spec.count, inventory)]
        unknown = [c for c in chosen if c not in gpus]
        if len(chosen) != spec.count or unknown or len(set(chosen)) != len(chosen):
            raise DeviceError(f"device={spec.text}: the GPU selector returned {chosen}, "
                              f"expected {spec.count} distinct GPUs of {inventory.gpu_names()}")
        return [gpu_device(gpus[i]) for i in chosen]
    missing = [i for i in spec.indices if i not in gpus]
    if missing:
        have = len(gpus)
        raise DeviceError(f"device={spec.text}: there is no cuda{missing[0]}; this machine has {have} "
                          f"GPU{'s' if have != 1 else ''}: {inventory.gpu_names()}. "
                          f"Use cuda0..cuda{have - 1}, device=all or device=auto.")
    return [gpu_device(gpus[i]) for i in spec.indices]
