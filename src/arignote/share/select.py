"""GPU selection policy for shared servers: rank by free memory and utilization, explain the rest.

Pure functions of a :class:`~arignote.devices.nvml.Snapshot` and the current leases, so every rule
is tested on fixtures. :func:`select_gpus` is the public entry (``arignote.select_gpus``).

Example::

    >>> from arignote.share import select_gpus
    >>> select_gpus(2, min_free_memory="10GiB", max_utilization=20)   # doctest: +SKIP
    [3, 1]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from arignote.devices.nvml import NA, GPUSnapshot, Snapshot
from arignote.errors import ShareError
from arignote.sizes import format_mib, parse_size

__all__ = ["ShareError", "NoFreeGPUError", "Candidate", "parse_size", "format_mib", "evaluate", "rank"]


class NoFreeGPUError(ShareError):
    """Fewer GPUs pass the filters than asked; the message lists each GPU and why it was skipped."""

    def __init__(self, message: str, reasons: dict[int, str] | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.reasons = dict(reasons or {})
        self.detail = detail or message  # the per-GPU list without the advice line


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
            total = gpu.memory_total
            if free is NA or (need.fraction is not None and total is NA):
                why = "free memory n/a (the driver does not report it), cannot check --min-free-memory"
            elif free < need.of(total):
                why = f"{format_mib(free)} free < {format_mib(need.of(total))} asked"
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
