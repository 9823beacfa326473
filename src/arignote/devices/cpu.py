"""The host CPU: model name, threads, RAM (``lscpu`` and ``free -b`` in brief).

Example::

    >>> from arignote.devices import cpu
    >>> cpu.threads() >= 1
    True
"""

from __future__ import annotations

import os
import platform


def cpu_name() -> str:
    """CPU model as /proc/cpuinfo names it (``AMD EPYC 7763 64-Core Processor``), else platform's guess."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def logical_cores() -> int:
    """Logical cores this process may run on (its affinity mask, not the whole box)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def threads() -> int:
    """torch's intra-op thread count for this process."""
    import torch

    return torch.get_num_threads()


def set_threads(n: int) -> None:
    """Use ``n`` intra-op threads (the ``cpu.threads`` flag; 0 leaves torch's default)."""
    import torch

    if n > 0:
        torch.set_num_threads(n)


def ram() -> tuple[int, int]:
    """(total, available) RAM bytes; (0, 0) when psutil cannot tell."""
    try:
        import psutil
    except ImportError:
        return 0, 0
    vm = psutil.virtual_memory()
    return int(vm.total), int(vm.available)
