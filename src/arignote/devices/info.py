"""What a machine has, as plain data: GPUs, CPU, devices, and why CUDA is unusable when it is.

The bottom floor of ``devices/``: no torch, no hardware query, so device resolution, the banner and
the CLI tables are tested on any machine with hand-written inventories (two 80 GB GPUs, one half
used, ...), and ``devices/cuda.py`` builds :class:`GPUInfo` without importing the queries that call
it. :mod:`arignote.devices.inventory` asks the hardware.

Example::

    >>> from arignote.devices import GPUInfo, Inventory
    >>> gpu = GPUInfo(0, "NVIDIA A100-SXM4-80GB", "0000:07:00.0", 81559 << 20, 81000 << 20, (8, 0), "u0")
    >>> inv = Inventory(gpus=(gpu,), cpu_name="AMD EPYC", cpu_threads=2, cuda_reason=None)
    >>> inv.gpu_names()
    'cuda:0 (NVIDIA A100-SXM4-80GB)'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GPUInfo:
    """One visible GPU; memory in bytes, ``index`` in torch's numbering (PCI bus order)."""

    index: int
    name: str
    pci_bus_id: str
    total_memory: int
    free_memory: int
    capability: tuple[int, int] | None = None
    uuid: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"kind": "cuda", "index": self.index, "name": self.name, "pci_bus_id": self.pci_bus_id,
                "total_memory": self.total_memory, "free_memory": self.free_memory,
                "capability": ".".join(map(str, self.capability)) if self.capability else None,
                "uuid": self.uuid}


@dataclass(frozen=True)
class CPUInfo:
    """The host CPU: model name, torch's intra-op threads, and RAM in bytes (0 when unknown)."""

    name: str
    threads: int
    total_memory: int = 0
    free_memory: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"kind": "cpu", "index": None, "name": self.name, "threads": self.threads,
                "total_memory": self.total_memory, "free_memory": self.free_memory}


@dataclass(frozen=True)
class Inventory:
    """Everything device resolution needs; ``cuda_reason`` says why there are no GPUs (None if some)."""

    gpus: tuple[GPUInfo, ...]
    cpu_name: str
    cpu_threads: int
    cuda_reason: str | None = None
    cpu_memory: int = 0
    cpu_free_memory: int = 0

    @property
    def cpu(self) -> CPUInfo:
        return CPUInfo(self.cpu_name, self.cpu_threads, self.cpu_memory, self.cpu_free_memory)

    def gpu_names(self) -> str:
        """``cuda:0 (A100), cuda:1 (A100)`` for error messages."""
        return ", ".join(f"cuda:{g.index} ({g.name})" for g in self.gpus)


@dataclass(frozen=True)
class Device:
    """A place to compute: ``Device("cpu")`` or ``Device("cuda", 1, info)``; ``str()`` is ``cuda:1``.

    Equality and hashing use kind and index only, so devices from two inventory snapshots match.
    """

    kind: str
    index: int | None = None
    info: GPUInfo | CPUInfo | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return self.kind if self.index is None else f"{self.kind}:{self.index}"

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    @property
    def torch(self):
        """The matching ``torch.device``."""
        import torch

        return torch.device(str(self))

    @property
    def name(self) -> str:
        return self.info.name if self.info is not None else str(self)

    @property
    def total_memory(self) -> int:
        return self.info.total_memory if self.info is not None else 0

    @property
    def free_memory(self) -> int:
        return self.info.free_memory if self.info is not None else 0

    @property
    def pci_bus_id(self) -> str | None:
        return self.info.pci_bus_id if isinstance(self.info, GPUInfo) else None

    @property
    def capability(self) -> tuple[int, int] | None:
        return self.info.capability if isinstance(self.info, GPUInfo) else None

    def as_dict(self) -> dict[str, Any]:
        base = self.info.as_dict() if self.info is not None else {"kind": self.kind, "index": self.index}
        return {"device": str(self), **base}


def cpu_device(inventory: Inventory) -> Device:
    return Device("cpu", None, inventory.cpu)


def gpu_device(info: GPUInfo) -> Device:
    return Device("cuda", info.index, info)
