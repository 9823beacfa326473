"""The host CPU: model name, threads, RAM (``lscpu`` and ``free -b`` in brief), and the host
memory cache (``memory.host_cache``).

Example::

    >>> from arignote.devices import cpu
    >>> cpu.threads() >= 1
    True
"""

from __future__ import annotations

import contextlib
import ctypes
import platform
from collections.abc import Callable, Iterator
from typing import Any

MiB = 1 << 20
# glibc <malloc.h>: mallopt parameters, and the largest mmap threshold glibc accepts on 64-bit
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
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

    Blocks up to 32 MiB come from the heap (not a fresh ``mmap`` each time) and freed memory at the
    top of the heap is returned to the OS only when more than ``mib`` MiB of it is free. ``mib=0``
    keeps glibc's own behaviour (no settings).

    >>> host_cache_settings(1024)
    {'M_MMAP_THRESHOLD': 33554432, 'M_TRIM_THRESHOLD': 1073741824}
    >>> host_cache_settings(0)
    {}
    """
    if mib < 0:
        raise ValueError(f"memory.host_cache must be >= 0 MiB, got {mib}")
    if mib == 0:
        return {}
    return {"M_MMAP_THRESHOLD": MMAP_THRESHOLD_MAX, "M_TRIM_THRESHOLD": mib * MiB}


# glibc's values at process start: its defaults (malloc/malloc.c: DEFAULT_MMAP_THRESHOLD_MIN and
# DEFAULT_TRIM_THRESHOLD, 128 KiB each) unless the MALLOC_*_ environment variables set them
GLIBC_DEFAULTS = {"M_MMAP_THRESHOLD": 128 * 1024, "M_TRIM_THRESHOLD": 128 * 1024}
_START_VARIABLES = {"M_MMAP_THRESHOLD": "MALLOC_MMAP_THRESHOLD_",
                    "M_TRIM_THRESHOLD": "MALLOC_TRIM_THRESHOLD_"}
_CODES = {"M_MMAP_THRESHOLD": _M_MMAP_THRESHOLD, "M_TRIM_THRESHOLD": _M_TRIM_THRESHOLD}
_KEEPING = [0]  # depth of nested keeping_freed_memory blocks (only the outermost applies and restores)


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


def malloc_start_settings(getenv: Callable[[str], str | None]) -> dict[str, int]:
    """The ``mallopt`` values glibc started this process with: ``MALLOC_MMAP_THRESHOLD_`` /
    ``MALLOC_TRIM_THRESHOLD_`` when set (``getenv`` reads them), else glibc's 128 KiB defaults.

    >>> malloc_start_settings({"MALLOC_TRIM_THRESHOLD_": "262144"}.get)
    {'M_MMAP_THRESHOLD': 131072, 'M_TRIM_THRESHOLD': 262144}
    """
    out = dict(GLIBC_DEFAULTS)
    for key, variable in _START_VARIABLES.items():
        text = getenv(variable)
        if text is not None and text.strip().isdigit():
            out[key] = int(text)
    return out


def keep_freed_memory(mib: int) -> bool:
    """Let this process's ``malloc`` keep up to ``mib`` MiB of freed host memory for reuse (the
    ``memory.host_cache`` flag): the host-side counterpart of the CUDA caching allocator.

    glibc's default returns a freed tensor's pages to the OS (``munmap``, heap trimming), so the
    next step's tensors page-fault their memory back in; on the seeds' CNN on 2 CPU cores that is
    about 500 000 page faults in 10 short epochs and 10-15 % of the training time (benchmarks/RESULTS.md).
    Returns True when the settings were applied, False when ``mib`` is 0 or the C library is not
    glibc (musl, macOS, Windows: nothing to do, training works as before). Process-wide until
    undone: :func:`keeping_freed_memory` scopes it to a block (what ``fit`` uses).

    >>> keep_freed_memory(0)
    False
    """
    settings = host_cache_settings(mib)
    libc = _glibc() if settings else None
    return libc is not None and _mallopt(libc, settings)


@contextlib.contextmanager
def keeping_freed_memory(mib: int, restore: dict[str, int]) -> Iterator[bool]:
    """:func:`keep_freed_memory` for the duration of a block; on leaving it, ``restore``'s ``mallopt``
    values (:func:`malloc_start_settings`) are set again and ``malloc_trim(0)`` returns the kept
    memory to the OS, so nothing outlives the block. Nested blocks leave it to the outermost one.
    Yields whether the settings are in force. (glibc starts with a *dynamic* mmap threshold that
    ``mallopt`` cannot switch back on: after a block it stays at its start value.)

    >>> with keeping_freed_memory(0, GLIBC_DEFAULTS) as applied:
    ...     applied
    False
    """
    if _KEEPING[0]:
        _KEEPING[0] += 1
        try:
            yield True
        finally:
            _KEEPING[0] -= 1
        return
    applied = keep_freed_memory(mib)
    _KEEPING[0] = 1 if applied else 0
    try:
        yield applied
    finally:
        if applied:
            _KEEPING[0] = 0
            libc = _glibc()
            if libc is not None:
                _mallopt(libc, restore)
                libc.malloc_trim(0)
