"""What this machine has: the live queries (``nvidia-smi -L`` and friends) over :mod:`.info`'s data.

Only :func:`current_inventory` asks the hardware, through ``devices/cuda.py`` and ``devices/cpu.py``;
the types live in :mod:`arignote.devices.info` (torch-free) and are re-exported here.

Example::

    >>> from arignote.devices import GPUInfo, Inventory, list_devices
    >>> gpu = GPUInfo(0, "NVIDIA A100-SXM4-80GB", "0000:07:00.0", 81559 << 20, 81000 << 20, (8, 0), "u0")
    >>> inv = Inventory(gpus=(gpu,), cpu_name="AMD EPYC", cpu_threads=2, cuda_reason=None)
    >>> [str(d) for d in list_devices(inventory=inv)]
    ['cpu', 'cuda:0']
"""

from __future__ import annotations

import functools

from arignote.devices import cpu, cuda
from arignote.devices.info import CPUInfo, Device, GPUInfo, Inventory, cpu_device, gpu_device
from arignote.errors import DeviceError

__all__ = ["CPUInfo", "Device", "GPUInfo", "Inventory", "cpu_device", "gpu_device", "current_inventory",
           "list_devices", "is_gpu_available", "gpu_device_name", "cudnn_version", "gpu_count"]




@functools.lru_cache(maxsize=1)
def _cached_inventory() -> Inventory:
    ram_total, ram_free = cpu.ram()
    return Inventory(gpus=tuple(cuda.gpu_infos()), cpu_name=cpu.cpu_name(), cpu_threads=cpu.threads(),
                     cuda_reason=cuda.unavailable_reason(), cpu_memory=ram_total, cpu_free_memory=ram_free)


def gpu_count() -> tuple[int, str | None]:
    """``(visible GPUs, why none)`` without creating a CUDA context (``nvidia-smi -L | wc -l`` minus
    what ``CUDA_VISIBLE_DEVICES`` hides): the cheap count the config registry checks a device spec
    against at the first read. ``why none`` is None when there is a GPU."""
    count = cuda.device_count()
    return count, (None if count else cuda.unavailable_reason())


def current_inventory(refresh: bool = False) -> Inventory:
    """This machine's inventory, read once per process; ``refresh=True`` re-reads free memory."""
    if refresh:
        _cached_inventory.cache_clear()
    return _cached_inventory()


def list_devices(kind: str | None = None, inventory: Inventory | None = None) -> list[Device]:
    """Every device of this machine (``kind="cpu"`` or ``"cuda"``/``"gpu"`` to filter), CPU first.

    Each carries name, index, PCI bus id, total/free memory and compute capability (``nvidia-smi -L``
    plus ``--query-gpu=memory.total,memory.free``).
    """
    if kind not in (None, "cpu", "cuda", "gpu"):
        raise DeviceError(f"list_devices(kind={kind!r}): kind must be None, 'cpu' or 'cuda'")
    inv = inventory if inventory is not None else current_inventory()
    out = []
    if kind in (None, "cpu"):
        out.append(cpu_device(inv))
    if kind in (None, "cuda", "gpu"):
        out.extend(gpu_device(g) for g in inv.gpus)
    return out


def is_gpu_available(inventory: Inventory | None = None) -> bool:
    """True when at least one CUDA GPU is usable."""
    inv = inventory if inventory is not None else current_inventory()
    return bool(inv.gpus)


def gpu_device_name(index: int = 0, inventory: Inventory | None = None) -> str | None:
    """Name of GPU ``index`` (``NVIDIA A100-SXM4-80GB``), None when there is no such GPU."""
    inv = inventory if inventory is not None else current_inventory()
    return next((g.name for g in inv.gpus if g.index == index), None)


def cudnn_version() -> int | None:
    """cuDNN version torch uses (``91000``), None without cuDNN."""
    return cuda.cudnn_version()
