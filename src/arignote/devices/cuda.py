"""Every ``torch.cuda`` / ``torch.backends.cudnn`` call arignote makes, in one small module.

Everything else asks this module; on a machine without CUDA each query answers with a value
(``False``, ``0``, ``None``, an empty list), never an exception. GPU numbers follow the PCI bus
(``CUDA_DEVICE_ORDER=PCI_BUS_ID``, set when the ``arignote.devices`` package is imported, which is
before this module and, through ``import arignote``, before the user's first CUDA call;
``DEVICE_ORDER`` says whether the driver was already up then: see ``devices/order.py``).

Example::

    >>> from arignote.devices import cuda
    >>> cuda.is_available() == (cuda.device_count() > 0)     # (False, 0) on a CPU-only machine
    True
    >>> allocated, reserved = cuda.peak_memory(0)           # bytes, like nvidia-smi's "Memory-Usage"
    >>> allocated <= reserved
    True
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import torch

from arignote.devices import (  # noqa: F401 - re-exported
    DEVICE_ORDER,
    ORDER_SET_TOO_LATE,
    ORDER_WAS_SET_BY_USER,
)
from arignote.devices.identity import uuid_key
from arignote.devices.info import GPUInfo

MiB = 1 << 20


# --------------------------------------------------------------------------- availability


def is_built() -> bool:
    """True when this torch build has CUDA support (``torch.version.cuda`` is set)."""
    return torch.version.cuda is not None and torch.backends.cuda.is_built()


def is_available() -> bool:
    """True when at least one CUDA GPU is usable (``torch.cuda.is_available()``)."""
    return is_built() and torch.cuda.is_available()


def device_count() -> int:
    """Number of visible CUDA GPUs (``nvidia-smi -L`` minus what CUDA_VISIBLE_DEVICES hides)."""
    return torch.cuda.device_count() if is_built() else 0


def driver_seen() -> bool:
    """True when the NVIDIA kernel driver is loaded (its /proc file exists)."""
    return os.path.exists("/proc/driver/nvidia/version")


def unavailable_reason() -> str | None:
    """Why no CUDA GPU is usable, in one phrase; None when one is."""
    if not is_built():
        return f"this torch build ({torch.__version__}) has no CUDA support"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
    if is_available() and device_count() > 0:
        return None
    if not driver_seen():
        return "no NVIDIA driver is loaded (/proc/driver/nvidia/version is missing)"
    return "torch.cuda.is_available() is False although the NVIDIA driver is loaded"


# --------------------------------------------------------------------------- inventory


def _pci_bus_id(props: Any) -> str:
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return ""
    domain = getattr(props, "pci_domain_id", 0) or 0
    dev = getattr(props, "pci_device_id", 0) or 0
    return f"{domain:04x}:{bus:02x}:{dev:02x}.0"


def _nvml_free_by_uuid() -> dict[str, int]:
    """Free bytes per GPU UUID from NVML, which does not create a CUDA context (torch's
    ``mem_get_info`` would cost ~300 MiB on every GPU of a shared box)."""
    # import time: NVML and its snapshot model load when a GPU's free memory is first asked for
    from arignote.devices import nvml

    try:
        pynvml = nvml.session()  # the process's one NVML session (devices/nvml.py)
    except nvml.NVMLUnavailable:
        return {}
    out: dict[str, int] = {}
    try:
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
            out[uuid_key(uuid)] = int(pynvml.nvmlDeviceGetMemoryInfo(handle).free)
    except pynvml.NVMLError:
        pass
    return out


def gpu_infos() -> list[GPUInfo]:
    """One :class:`GPUInfo` per visible GPU, in torch's (PCI bus) order; ``nvidia-smi -q`` in brief."""
    if not is_available():
        return []
    free_by_uuid = _nvml_free_by_uuid()
    out = []
    for index in range(device_count()):
        props = torch.cuda.get_device_properties(index)
        uuid = uuid_key(str(getattr(props, "uuid", "") or ""))
        free = free_by_uuid.get(uuid)
        if free is None:
            free = mem_get_info(index)[0]
        out.append(GPUInfo(index=index, name=props.name, pci_bus_id=_pci_bus_id(props),
                           total_memory=int(props.total_memory), free_memory=int(free),
                           capability=(props.major, props.minor), uuid=uuid))
    return out


def bf16_supported(index: int) -> bool:
    """True when GPU ``index`` computes in bfloat16 natively (compute capability >= 8.0)."""
    return is_available() and torch.cuda.get_device_capability(index) >= (8, 0)


# --------------------------------------------------------------------------- versions


def cuda_version() -> str | None:
    """CUDA version torch was built with (``12.8``), None for a CPU build."""
    return torch.version.cuda


def cudnn_available() -> bool:
    """True when torch can use cuDNN."""
    return is_built() and bool(torch.backends.cudnn.is_available())


def cudnn_version() -> int | None:
    """cuDNN version as torch reports it (``91000``), None without cuDNN."""
    return torch.backends.cudnn.version() if cudnn_available() else None


def nccl_version() -> str | None:
    """NCCL version (``2.27.3``), None when this build has no NCCL."""
    if not is_built():
        return None
    try:
        import torch.cuda.nccl as nccl

        version = nccl.version()
    except (AttributeError, RuntimeError, ImportError):
        return None
    # (major, minor, patch) plus NCCL's version suffix when it has one: (2, 27, 3, "+cuda12.9")
    return ".".join(str(part) for part in version[:3]) + "".join(str(part) for part in version[3:])


# --------------------------------------------------------------------------- memory


def mem_get_info(index: int) -> tuple[int, int]:
    """(free, total) bytes on GPU ``index`` as the driver sees them (creates a CUDA context)."""
    return torch.cuda.mem_get_info(index)


def memory_stats(index: int) -> dict[str, Any]:
    """The caching allocator's counters for GPU ``index`` ({} on a machine without CUDA)."""
    return torch.cuda.memory_stats(index) if is_available() else {}


def memory_in_use(index: int) -> tuple[int, int]:
    """(allocated, reserved) bytes now on GPU ``index`` by this process."""
    if not is_available():
        return 0, 0
    return torch.cuda.memory_allocated(index), torch.cuda.memory_reserved(index)


def peak_memory(index: int) -> tuple[int, int]:
    """Peak (allocated, reserved) bytes on GPU ``index`` since the last :func:`reset_peak_memory`."""
    if not is_available():
        return 0, 0
    return torch.cuda.max_memory_allocated(index), torch.cuda.max_memory_reserved(index)


def reset_peak_memory(index: int) -> None:
    """Start a new peak-memory window on GPU ``index``.

    Before CUDA is initialised there is no allocator yet (its counters start at 0 when it comes),
    and torch's ``reset_peak_memory_stats``, unlike ``memory_stats``, does not check: it raises
    "Invalid device argument: did you call init?". With NVML answering the inventory, nothing has
    initialised CUDA when a benchmark or a fit starts its first window.
    """
    if is_available() and torch.cuda.is_initialized():
        torch.cuda.reset_peak_memory_stats(index)


def empty_cache() -> None:
    """Return cached, unused blocks to the driver (others then see them free in nvidia-smi)."""
    if is_available():
        torch.cuda.empty_cache()


def set_memory_fraction(fraction: float, index: int) -> None:
    """Cap this process at ``fraction`` of GPU ``index``'s memory; beyond it allocations raise OOM."""
    torch.cuda.set_per_process_memory_fraction(float(fraction), index)


def memory_fraction(index: int) -> float:
    """The cap set by :func:`set_memory_fraction` (1.0 when none)."""
    return torch.cuda.get_per_process_memory_fraction(index)


def disable_caching() -> None:
    """Make every free return memory to the driver (PYTORCH_NO_CUDA_MEMORY_CACHING, at run time).

    torch's public ``torch.cuda.memory.caching_allocator_enable`` only acts once CUDA is
    initialised, so initialise first; no environment variable has to be set before start-up.
    """
    torch.cuda.init()
    torch.cuda.memory.caching_allocator_enable(False)


def caching_enabled() -> bool:
    """True while the caching allocator keeps freed blocks for reuse."""
    if not is_available() or not torch.cuda.is_initialized():
        return True
    return bool(torch._C._cuda_cudaCachingAllocator_is_enabled())


def preallocate(nbytes: int, index: int) -> None:
    """Reserve ``nbytes`` on GPU ``index``: allocate one block and free it, so the caching
    allocator keeps it for this process (Theano's ``gpuarray.preallocate``)."""
    block = torch.empty(int(nbytes), dtype=torch.uint8, device=f"cuda:{index}")
    del block


def synchronize(index: int | None = None) -> None:
    """Wait for queued GPU work (for timing); a no-op without CUDA."""
    if is_available():
        torch.cuda.synchronize(index)


def set_device(index: int) -> None:
    """Make GPU ``index`` this process's current CUDA device."""
    torch.cuda.set_device(index)


def rng_states() -> list[torch.Tensor]:
    """Random-number states of every visible GPU (dropout masks), for BackupAndRestore; [] without CUDA."""
    return list(torch.cuda.get_rng_state_all()) if is_available() and torch.cuda.is_initialized() else []


def set_rng_states(states: list[torch.Tensor]) -> None:
    """Restore :func:`rng_states` (ignored without CUDA or when the GPU count differs)."""
    if states and is_available() and len(states) == device_count():
        torch.cuda.set_rng_state_all(states)


# --------------------------------------------------------------------------- cuDNN


def set_cudnn(enabled: bool, benchmark: bool, deterministic: bool) -> None:
    """Apply the ``dnn.*`` flags (process-wide switches in torch)."""
    torch.backends.cudnn.enabled = enabled
    torch.backends.cudnn.benchmark = benchmark
    torch.backends.cudnn.deterministic = deterministic


def flatten_rnn_weights(weights: list[torch.Tensor], mode: str, input_size: int, hidden_size: int) -> bool:
    """Put one layer's RNN weights (``w_ih, w_hh[, b_ih, b_hh]``, torch's layout and gate order) into
    one contiguous buffer cuDNN reads as it is, in place (each tensor becomes a view of the buffer):
    what ``torch.nn.RNNBase.flatten_parameters`` does (``torch/nn/modules/rnn.py``: same dtype, all
    ``cudnn.is_acceptable``, no aliasing, then ``torch._cudnn_rnn_flatten_weight`` with one layer,
    no projection, unidirectional; here ``batch_first``). Without it, cuDNN warns "RNN module
    weights are not part of single contiguous chunk of memory" and copies every weight at every
    forward. ``mode``: ``LSTM``, ``GRU``, ``RNN_TANH`` or ``RNN_RELU``. Returns False (nothing done)
    where cuDNN would not take them."""
    import torch.backends.cudnn.rnn as cudnn_rnn

    dtype = weights[0].dtype
    if (not torch._use_cudnn_rnn_flatten_weight()
            or any(w.dtype != dtype or not torch.backends.cudnn.is_acceptable(w) for w in weights)
            or len({w.data_ptr() for w in weights}) != len(weights)):
        return False
    with torch.cuda.device_of(weights[0]), torch.no_grad():
        torch._cudnn_rnn_flatten_weight(weights, len(weights), input_size, cudnn_rnn.get_cudnn_mode(mode),
                                        hidden_size, 0, 1, True, False)
    return True


def cudnn_flags() -> tuple[bool, bool, bool]:
    """The current (enabled, benchmark, deterministic) cuDNN switches."""
    c = torch.backends.cudnn
    return bool(c.enabled), bool(c.benchmark), bool(c.deterministic)


def set_benchmark(benchmark: bool) -> None:
    """Switch cuDNN autotuning (``torch.backends.cudnn.benchmark``) for what runs next."""
    torch.backends.cudnn.benchmark = bool(benchmark)


# --------------------------------------------------------------------------- TensorFloat-32


def _new_tf32_api() -> bool:
    """torch >= 2.9 also spells TF32 as ``fp32_precision`` ('tf32'/'ieee'/'none': inherit)."""
    return hasattr(torch.backends.cuda.matmul, "fp32_precision") and hasattr(torch.backends.cudnn, "conv")


def set_tf32(matmul: bool, conv: bool) -> None:
    """Allow TensorFloat-32 in float32 matmuls (cuBLAS) and convolutions (cuDNN); process-wide.
    Changes nothing below compute capability 8.0, where the GPU has no TF32 units.

    Set through the ``allow_tf32`` switches: torch (2.9+) writes those into both its legacy state and
    the ``fp32_precision`` one, so every reader agrees. Setting only ``fp32_precision`` leaves the
    legacy state behind, and then ``torch.get_float32_matmul_precision()`` and
    ``torch.backends.cudnn.allow_tf32`` (read by inductor's autotuning, ``jit=max-autotune``, and its
    GPU convolution templates; and by user code) raise "you have used mix of the legacy and new
    APIs".

    >>> before = tf32_state()
    >>> set_tf32(True, False); tf32_state(), torch.get_float32_matmul_precision()
    ((True, False), 'high')
    >>> set_tf32(*before)
    """
    torch.backends.cuda.matmul.allow_tf32 = bool(matmul)
    torch.backends.cudnn.allow_tf32 = bool(conv)


def tf32_state() -> tuple[bool, bool]:
    """The current (matmul, conv) TensorFloat-32 switches (readable on any build; read through
    ``fp32_precision`` where torch has it, which never raises on a mix of the two APIs)."""
    if _new_tf32_api():
        matmul = torch.backends.cuda.matmul.fp32_precision
        if matmul == "none":  # inherits the global setting ('ieee' by default)
            matmul = torch.backends.fp32_precision
        conv = torch.backends.cudnn.conv.fp32_precision
        if conv == "none":
            conv = torch.backends.cudnn.fp32_precision
            conv = torch.backends.fp32_precision if conv == "none" else conv
        return matmul == "tf32", conv == "tf32"
    return bool(torch.backends.cuda.matmul.allow_tf32), bool(torch.backends.cudnn.allow_tf32)


# --------------------------------------------------------------------------- host syncs


@contextlib.contextmanager
def sync_errors(enabled: bool = True):
    """A block in which an operation that makes the host wait for a GPU raises
    (``torch.cuda.set_sync_debug_mode("error")``); the previous mode is restored on leaving.

    >>> with sync_errors(enabled=False):   # a no-op when off, and on a machine without CUDA
    ...     pass
    """
    if not enabled or not is_available():
        yield
        return
    before = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode(before)


def set_sync_errors(enabled: bool) -> None:
    """Switch ``torch.cuda.set_sync_debug_mode`` between ``error`` and ``default`` (for a callback
    that covers steps 2..N of a fit; :func:`sync_errors` is the block form)."""
    if is_available():
        torch.cuda.set_sync_debug_mode("error" if enabled else "default")
