"""GPU selection policy for shared servers: rank by free memory and utilization, explain the rest.

Pure functions of a :class:`~arignote.devices.nvml.Snapshot` and the current leases, so every rule
is tested on fixtures. :func:`select_gpus` is the public entry (``arignote.select_gpus``).

Example::

    >>> from arignote.share import select_gpus
    >>> select_gpus(2, min_free_memory="10GiB", max_utilization=20)   # doctest: +SKIP
    [3, 1]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from arignote.devices.nvml import NA, GPUSnapshot, Snapshot

__all__ = ["ShareError", "NoFreeGPUError", "Candidate", "parse_size", "format_size", "evaluate", "rank"]


class ShareError(RuntimeError):
    """A GPU request that cannot be met now (nothing free, lease directory unusable)."""


class NoFreeGPUError(ShareError):
    """Fewer GPUs pass the filters than asked; the message lists each GPU and why it was skipped."""

    def __init__(self, message: str, reasons: dict[int, str] | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.reasons = dict(reasons or {})
        self.detail = detail or message  # the per-GPU list without the advice line


_UNITS = {
    "b": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 1024**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1024**3, "gb": 1000**3, "gib": 1024**3, "t": 1024**4, "tb": 1000**4, "tib": 1024**4,
}


def parse_size(text: Any) -> int:
    """Bytes from ``"10GiB"``, ``"512MiB"``, ``"1.5GB"`` (KiB/MiB/GiB/TiB binary, kB/MB/GB/TB decimal,
    bare K/M/G/T binary). An int is taken as bytes. Raises ValueError naming the text and the fix.

    >>> parse_size("10GiB"), parse_size("1.5 GB")
    (10737418240, 1500000000)
    """
    if isinstance(text, bool):
        raise ValueError(f"memory size {text!r} is not a size; write e.g. 10GiB or 512MiB")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"memory size {text} is negative")
        return text
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(text))
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise ValueError(f"memory size {text!r} is not understood; write a number and a unit, "
                         "e.g. 10GiB, 512MiB or 1.5GB")
    return int(float(match.group(1)) * _UNITS[unit])


def format_size(n: Any) -> str:
    """``10.0 GiB`` / ``512 MiB`` / ``n/a``: the unit nvidia-smi users read at a glance."""
    if n is NA or n is None:
        return "n/a"
    if n >= 1024**3:
        return f"{n / 1024**3:.1f} GiB"
    return f"{n / 1024**2:.0f} MiB"


@dataclass(frozen=True)
class Candidate:
    """One GPU as the selector sees it: whether it passes the filters and, if not, why."""

    gpu: GPUSnapshot
    ok: bool
    why: str = ""

    @property
    def index(self) -> int:
        return self.gpu.index


def _rank_key(gpu: GPUSnapshot) -> tuple:
    # Most free memory first; then least busy (an unknown utilization ranks after known ones);
    # then nvidia-smi order, so ties are deterministic.
    free = gpu.memory_free
    util = gpu.utilization_gpu
    return (0 if free is NA else -free, util is NA, 0 if util is NA else util, gpu.index)


def evaluate(snapshot: Snapshot, min_free_memory: Any = None, max_utilization: Any = None,
             busy: dict[int, str] | None = None) -> list[Candidate]:
    """Every GPU of ``snapshot`` with its verdict, best first. ``busy`` maps an index to why it is
    taken (a lease held by another process); those never pass.
    """
    need = None if min_free_memory is None else parse_size(min_free_memory)
    if max_utilization is not None:
        max_utilization = float(max_utilization)
        if not 0 <= max_utilization <= 100:
            raise ValueError(f"max_utilization={max_utilization:g} is not a percentage; give 0 to 100")
    busy = busy or {}
    out = []
    for gpu in sorted(snapshot.gpus, key=_rank_key):
        why = busy.get(gpu.index, "")
        free = gpu.memory_free
        if not why and need is not None:
            if free is NA:
                why = "free memory n/a (the driver does not report it), cannot check --min-free-memory"
            elif free < need:
                why = f"{format_size(free)} free < {format_size(need)} asked"
        if not why and max_utilization is not None:
            util = gpu.utilization_gpu
            if util is NA:
                why = "utilization n/a (the driver does not report it), cannot check --max-utilization"
            elif util > max_utilization:
                why = f"utilization {util}% > {max_utilization:g}% allowed"
        out.append(Candidate(gpu, not why, why))
    return out


def rank(candidates: Iterable[Candidate]) -> list[int]:
    """Indices of the candidates that pass, best first."""
    return [c.index for c in candidates if c.ok]


def explain(n: int, snapshot: Snapshot, candidates: list[Candidate]) -> NoFreeGPUError:
    """The error for "fewer than n GPUs free": one line per GPU saying why it was skipped."""
    free = rank(candidates)
    if not snapshot.gpus:
        why = snapshot.nvml_error or "the snapshot lists no GPUs"
        return NoFreeGPUError(f"asked for {n} GPU(s) but this machine has none ({why})")
    head = (f"asked for {n} GPU(s), {len(free)} of {len(snapshot.gpus)} free"
            + (f" ({', '.join(map(str, free))})" if free else ""))
    lines = []
    for c in sorted(candidates, key=lambda c: c.index):
        name = "" if c.gpu.name is NA else f" ({c.gpu.name})"
        lines.append(f"  GPU {c.index}{name}: {c.why if c.why else 'free'}")
    hint = ("wait for them with `arignote run --wait` or acquire(..., wait=True)"
            if n <= len(snapshot.gpus) else f"this machine has only {len(snapshot.gpus)} GPU(s)")
    detail = head + ":\n" + "\n".join(lines)
    return NoFreeGPUError(f"{detail}\n{hint}", {c.index: c.why for c in candidates if c.why}, detail)
