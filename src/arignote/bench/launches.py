"""Count the kernel launches of a training step with ``torch.profiler``: eager and compiled alike.

:mod:`arignote.bench.opcount` counts aten operators with a ``TorchDispatchMode``, which sees eager
execution only: inductor's generated kernels are not aten operators, and Dynamo does not compile
under an active Python dispatch mode. The profiler sees both, so this module is the one counter for
an eager-vs-compiled comparison. What is counted on the CPU:

* every *outermost* aten operator that does work (an ``aten::`` event with no ``aten::`` ancestor,
  views and allocations left out, as in opcount): eager operators, and the extern kernels a compiled
  graph calls (``aten::mm``, ``aten::convolution``, ...);
* every inductor-generated kernel (``cpp_fused_*`` on the CPU; inductor records them when
  ``torch._inductor.config.cpp.enable_kernel_profile`` is on, which :func:`kernel_profile` sets for
  the graphs compiled inside it).

On a GPU, the device kernels the profiler traced (``DeviceType.CUDA`` events) and the CUDA graph
replays (``cudaGraphLaunch`` calls) are counted too: one replay launches a whole captured graph.

Example::

    >>> import torch
    >>> count = count_launches(lambda: torch.ones(4, 8) @ torch.ones(8, 2))
    >>> count.ops >= 1, count.graph_replays
    (True, 0)
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch.profiler import ProfilerActivity, profile

from arignote.bench.opcount import _FREE

__all__ = ["LaunchCount", "count_launches", "kernel_profile"]

_FREE_NAMES = frozenset(f"aten::{name}" for name in _FREE) | {"aten::ones_like", "aten::zeros_like"}
_GENERATED = ("cpp_fused_", "triton_")


@dataclass(frozen=True)
class LaunchCount:
    """What one call asked of the device: ``ops`` (outermost working aten operators), ``generated``
    (inductor kernels), ``device_kernels`` (GPU kernels traced), ``graph_replays`` (CUDA graphs)."""

    ops: int
    generated: int
    device_kernels: int = 0
    graph_replays: int = 0
    names: Counter = field(default_factory=Counter, compare=False)

    @property
    def launches(self) -> int:
        """Kernel launches on the CPU view: aten operators plus generated kernels."""
        return self.ops + self.generated


def _aten_ancestor(event) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith("aten::"):
            return True
        parent = parent.cpu_parent
    return False


def count_launches(fn: Callable[[], object], cuda: bool = False) -> LaunchCount:
    """Run ``fn`` once under ``torch.profiler`` and count its launches (see the module docstring).
    ``cuda``: trace the GPU as well (kernels and CUDA graph replays)."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        fn()
    ops = generated = kernels = replays = 0
    names: Counter = Counter()
    for event in prof.events():
        name = event.name
        if getattr(event, "device_type", None) == torch.autograd.DeviceType.CUDA:
            kernels += 1
            continue
        if name == "cudaGraphLaunch":
            replays += 1
        elif any(g in name for g in _GENERATED):
            generated += 1
            names["<generated>"] += 1
        elif name.startswith("aten::") and name not in _FREE_NAMES and not _aten_ancestor(event):
            ops += 1
            names[name] += 1
    return LaunchCount(ops, generated, kernels, replays, names)


@contextlib.contextmanager
def kernel_profile() -> Iterator[None]:
    """Graphs compiled inside this block record each generated CPU kernel as a profiler event (a
    flag test per kernel when no profiler runs)."""
    from torch._inductor import config as inductor_config  # why: loads inductor, only when counting

    with inductor_config.patch({"cpp.enable_kernel_profile": True}):
        yield
