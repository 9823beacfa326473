"""What an out-of-memory is and what it leaves: the classification of allocation failures, the
memory figures printed with a notice or an error, and freeing what a failed attempt held.

Example::

    >>> is_out_of_memory(RuntimeError("cuDNN error: CUDNN_STATUS_ALLOC_FAILED"))
    True
    >>> memory_figures("cpu").startswith("cpu: RAM")
    True
"""

from __future__ import annotations

import gc

import torch

from arignote.devices import cuda as cuda_dev
from arignote.runtime import memory
from arignote.sizes import format_mib

__all__ = ["is_out_of_memory", "memory_figures", "free_memory"]


# --------------------------------------------------------------------------- memory figures


def _cuda_index(dev: torch.device) -> int:
    return dev.index if dev.index is not None else 0


def memory_figures(device: torch.device | str | None) -> str:
    """One line of memory numbers for ``device``: this process's allocator figures, the driver's
    free/total and the ``memory.limit`` cap on a GPU (and on every other GPU this process prepared:
    a model placed over several GPUs may run out on any of them); available RAM on the CPU."""
    dev = torch.device(device) if device is not None else torch.device("cpu")
    if dev.type == "cuda":
        others = [d for d in memory.prepared_gpus() if d != f"cuda:{_cuda_index(dev)}"]
        return " | ".join(_gpu_figures(torch.device(d)) for d in [str(dev), *others])
    import psutil

    vm = psutil.virtual_memory()
    return f"cpu: RAM {format_mib(vm.available)} available of {format_mib(vm.total)}"


def _gpu_figures(dev: torch.device) -> str:
    index = _cuda_index(dev)
    allocated, reserved = cuda_dev.memory_in_use(index)
    peak, _ = cuda_dev.peak_memory(index)
    free, total = cuda_dev.mem_get_info(index)
    text = (f"{dev}: {format_mib(allocated)} allocated, {format_mib(reserved)} reserved, "
            f"peak {format_mib(peak)}; {format_mib(free)} free of {format_mib(total)}")
    applied = memory.applied(f"cuda:{index}")
    if applied is not None and applied.limit_bytes:
        text += f"; capped at {format_mib(applied.limit_bytes)} by memory.limit={applied.limit:g}"
    return text


def free_memory(device: torch.device | str | None) -> None:
    """Return what a failed attempt held: collect reference cycles (a traceback can pin tensors),
    then empty the caching allocator (devices/cuda.py) unless ``memory.preallocate`` holds memory
    for this process: emptying the cache would hand the preallocated block back to the driver, and
    the freed tensors are reusable from the cache anyway. On the CPU, reference counting already
    returned it, so this does nothing (a full ``gc.collect`` costs ~0.1-0.3 s there)."""
    dev = torch.device(device) if device is not None else torch.device("cpu")
    if dev.type == "cuda":
        gc.collect()
        held = memory.applied(f"cuda:{_cuda_index(dev)}")
        if held is None or not held.preallocate_bytes:
            cuda_dev.empty_cache()


# --------------------------------------------------------------------------- what counts as OOM

# Allocation failures that torch raises as a plain RuntimeError (or DistBackendError, a subclass)
# rather than torch.OutOfMemoryError: a library's own allocation inside cuBLAS, cuDNN or NCCL, and a
# cudaMalloc that is not the caching allocator's. Torch gives them no type of their own, so the
# status names are the only handle; they are matched here and nowhere else.
_ALLOCATION_FAILURES = (
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_NOT_ENOUGH_WORKSPACE",
    "CUDA error: out of memory",
    "Cuda failure 'out of memory'",  # NCCL
    "NCCL WARN Cuda failure 2",
)


def is_out_of_memory(exc: BaseException) -> bool:
    """True for ``torch.OutOfMemoryError`` and for the allocation failures of cuBLAS, cuDNN and NCCL
    that torch raises as ``RuntimeError`` (their status names are the only handle torch gives).

    >>> is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory"))
    True
    >>> is_out_of_memory(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"))
    True
    >>> is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    False
    """
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    if not isinstance(exc, RuntimeError):
        return False
    text = str(exc)
    return any(marker in text for marker in _ALLOCATION_FAILURES)
