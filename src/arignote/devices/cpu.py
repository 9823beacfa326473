"""The host CPU: model name, threads, RAM (``lscpu`` and ``free -b`` in brief), and the host
memory cache (``memory.host_cache``).

Example::

    >>> from arignote.devices import cpu
    >>> cpu.threads() >= 1
    True
"""

from __future__ import annotations

import ctypes
import platform
from typing import Any

MiB = 1 << 20
# glibc <malloc.h>: mallopt parameters, and the largest mmap threshold glibc accepts on 64-bit
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4
MMAP_THRESHOLD_MAX = 32 * MiB


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


def host_cache_settings(mib: int) -> dict[str, int]:
    """The glibc ``mallopt`` settings that keep up to ``mib`` MiB of freed memory in the process.

    Every block comes from the heap, not a fresh ``mmap`` each time (``M_MMAP_MAX=0``: glibc's
    mmap threshold cannot go above 32 MiB, and the zoo's conv_lstm step frees and maps ~350 MB of
    larger tensors, ~87 000 page faults a step, without it), and freed memory at the top of the heap
    is returned to the OS only when more than ``mib`` MiB of it is free. ``mib=0`` keeps glibc's
    own behaviour (no settings).

    >>> host_cache_settings(1024)
    {'M_MMAP_THRESHOLD': 33554432, 'M_TRIM_THRESHOLD': 1073741824, 'M_MMAP_MAX': 0}
    >>> host_cache_settings(0)
    {}
    """
    if mib < 0:
        raise ValueError(f"memory.host_cache must be >= 0 MiB, got {mib}")
    if mib == 0:
        return {}
    return {"M_MMAP_THRESHOLD": MMAP_THRESHOLD_MAX, "M_TRIM_THRESHOLD": mib * MiB, "M_MMAP_MAX": 0}


_CODES = {"M_MMAP_THRESHOLD": _M_MMAP_THRESHOLD, "M_TRIM_THRESHOLD": _M_TRIM_THRESHOLD,
          "M_MMAP_MAX": _M_MMAP_MAX}


def _glibc() -> Any:
    """The C library when it is glibc (``mallopt``/``malloc_trim`` exist), else None."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes, libc.mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = (ctypes.c_size_t,), ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


def _mallopt(libc: Any, settings: dict[str, int]) -> bool:
    # mallopt's argument is an int: a cache above 2 GiB - 1 is capped there
    return all(libc.mallopt(_CODES[k], min(v, 2**31 - 1)) == 1 for k, v in settings.items())


def keep_freed_memory(mib: int) -> bool:
    """Let this process's ``malloc`` keep up to ``mib`` MiB of freed host memory for reuse (the
    ``memory.host_cache`` flag): the host-side counterpart of the CUDA caching allocator.

    glibc's default returns a freed tensor's pages to the OS (``munmap``, heap trimming), so the
    next step's tensors page-fault their memory back in; on the seeds' CNN on 2 CPU cores that is
    about 500 000 page faults in 10 short epochs and 10-15 % of the training time (benchmarks/RESULTS.md).
    Returns True when the settings were applied, False when ``mib`` is 0 or the C library is not
    glibc (musl, macOS, Windows: nothing to do, training works as before). Process-wide and for good:
    glibc starts with a *dynamic* mmap threshold that ``mallopt`` cannot switch back on, so there is
    no undoing it; :func:`release_host_memory` hands the kept memory back to the OS.
    (:class:`arignote.runtime.setup.HostMemory` calls this once per process, at the first training or
    inference call.)

    >>> keep_freed_memory(0)
    False
    """
    settings = host_cache_settings(mib)
    libc = _glibc() if settings else None
    return libc is not None and _mallopt(libc, settings)


def release_host_memory() -> bool:
    """Return the freed host memory ``malloc`` keeps (``memory.host_cache``) to the OS now: glibc's
    ``malloc_trim(0)``, the host-side counterpart of ``torch.cuda.empty_cache()``. The settings stay
    in force, so later steps keep memory again. Returns True when ``malloc_trim`` ran (glibc), False
    when the C library is not glibc (nothing kept, nothing to do).

    >>> from arignote import devices
    >>> devices.release_host_memory() in (True, False)
    True
    """
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
