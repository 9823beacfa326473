"""Which GPU is which: one identity for the spellings arignote meets, without torch.

A GPU has two index spaces: NVML's (every GPU of the machine, PCI bus order, what ``nvidia-smi``
shows) and torch's (only the GPUs ``CUDA_VISIBLE_DEVICES`` leaves, renumbered from 0). Indices are
therefore never compared across the two: :class:`GPUIdentity` compares by UUID, else by PCI bus
id, the two names both sides know. Spellings it normalises:

* UUIDs: ``GPU-8a1f...`` (NVML, CUDA_VISIBLE_DEVICES) and ``8a1f...`` (torch's ``props.uuid``);
* PCI bus ids: ``00000000:07:00.0`` (NVML, 8-digit domain) and ``0000:07:00.0`` (torch, sysfs);
* MIG instances in ``CUDA_VISIBLE_DEVICES``: ``MIG-<uuid>`` (driver R470 and later) and
  ``MIG-GPU-<gpu uuid>/<gi>/<ci>`` (earlier drivers: the parent GPU is named).

Example::

    >>> a = GPUIdentity(uuid=uuid_key("GPU-8a1f2c"), pci_bus_id=pci_key("00000000:07:00.0"), index=3)
    >>> b = GPUIdentity(uuid="8a1f2c", pci_bus_id=pci_key("0000:07:00.0"), index=0)   # torch's view
    >>> a.same_gpu(b), a.cuda_name
    (True, 'GPU-8a1f2c')
    >>> [str(e) for e in parse_visible_devices("0, GPU-8a1f, MIG-GPU-8a1f2c/1/0, -1, 5")]
    ['0', 'GPU-8a1f', 'MIG-GPU-8a1f2c/1/0']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arignote.errors import ConfigError

__all__ = ["GPUIdentity", "VisibleEntry", "uuid_key", "pci_key", "parse_visible_devices"]


def uuid_key(text: Any) -> str:
    """A GPU UUID without NVML's ``GPU-`` prefix (``""`` for a missing reading)."""
    if text is None or not isinstance(text, str):
        return ""
    return text.strip().removeprefix("GPU-")


def pci_key(text: Any) -> str:
    """A PCI bus id as ``dddd:bb:dd.f``, lower case, 4-digit domain: NVML's ``00000000:07:00.0``
    and torch's ``0000:07:00.0`` give the same key; ``""`` for a missing or malformed reading."""
    if not isinstance(text, str) or text.count(":") != 2:
        return ""
    domain, bus, rest = text.strip().lower().split(":")
    try:
        return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{rest}"
    except ValueError:
        return ""


@dataclass(frozen=True)
class GPUIdentity:
    """One physical GPU: ``index`` in the space of whoever made it (NVML's or torch's: never compare
    indices across the two), ``uuid`` (:func:`uuid_key` form), ``pci_bus_id`` (:func:`pci_key` form)."""

    index: int | None = None
    uuid: str = ""
    pci_bus_id: str = ""

    @classmethod
    def of(cls, gpu: Any) -> GPUIdentity:
        """The identity of anything with ``index``/``uuid``/``pci_bus_id`` (a torch-side
        :class:`~arignote.devices.info.GPUInfo`, an NVML :class:`~arignote.devices.snapshot.GPUSnapshot`;
        ``NA`` readings become empty)."""
        index = getattr(gpu, "index", None)
        return cls(index=index if isinstance(index, int) else None, uuid=uuid_key(getattr(gpu, "uuid", "")),
                   pci_bus_id=pci_key(getattr(gpu, "pci_bus_id", "")))

    def same_gpu(self, other: GPUIdentity) -> bool:
        """The same device: equal UUIDs when both know one, else equal PCI bus ids; never by index."""
        if self.uuid and other.uuid:
            return self.uuid == other.uuid
        return bool(self.pci_bus_id) and self.pci_bus_id == other.pci_bus_id

    @property
    def cuda_name(self) -> str:
        """The name CUDA_VISIBLE_DEVICES and NVML's ``nvmlDeviceGetHandleByUUID`` take: ``GPU-<uuid>``
        (else ``""``)."""
        return f"GPU-{self.uuid}" if self.uuid else ""


@dataclass(frozen=True)
class VisibleEntry:
    """One item of ``CUDA_VISIBLE_DEVICES``: an NVML index, a GPU UUID (or a prefix of one, as CUDA
    accepts), or a MIG instance (``mig``: its UUID, or ``GPU-<uuid>/<gi>/<ci>``; ``uuid`` is then
    the parent GPU when the old form names it)."""

    text: str
    index: int | None = None
    uuid: str = ""
    mig: str = ""

    def __str__(self) -> str:
        return self.text

    def names(self, gpu: GPUIdentity) -> bool:
        """Whether this entry selects ``gpu`` (an NVML-side identity: indices are NVML's, which they
        are under ``CUDA_DEVICE_ORDER=PCI_BUS_ID``: :func:`parse_visible_devices` refuses them under
        FASTEST_FIRST). A MIG instance of the new form names no whole GPU this can tell."""
        if self.index is not None:
            return gpu.index == self.index
        return bool(self.uuid) and gpu.uuid.startswith(self.uuid)


def parse_visible_devices(value: str | None, order: str | None = None) -> tuple[VisibleEntry, ...] | None:
    """The entries of ``CUDA_VISIBLE_DEVICES`` as CUDA reads them: None when unset; CUDA stops at the
    first invalid entry (a negative index, ``-1``, or text that is neither an index nor a ``GPU-`` /
    ``MIG-`` name), so the entries after it are not returned. ``""`` gives none.

    An index is NVML's (nvidia-smi's, PCI bus order) only when CUDA numbers by PCI bus: with ``order``
    (the ``CUDA_DEVICE_ORDER`` in force) ``FASTEST_FIRST`` CUDA reads it in its own fastest-first
    numbering, which no NVML reading gives, so index entries are refused (ConfigError naming the fix).

    >>> [e.mig for e in parse_visible_devices("MIG-4b2c, MIG-GPU-8a1f/2/0")]
    ['4b2c', 'GPU-8a1f/2/0']
    >>> parse_visible_devices("1", order="FASTEST_FIRST")
    Traceback (most recent call last):
    arignote.errors.ConfigError: CUDA_VISIBLE_DEVICES='1' names GPUs by index while CUDA_DEVICE_ORDER=...
    """
    if value is None:
        return None
    if order == "FASTEST_FIRST" and any(t.strip().lstrip("-").isdigit() for t in value.split(",")):
        raise ConfigError(
            f"CUDA_VISIBLE_DEVICES={value!r} names GPUs by index while CUDA_DEVICE_ORDER=FASTEST_FIRST: CUDA "
            "then counts them fastest first, nvidia-smi (NVML) by PCI bus, so which GPU an index means "
            "cannot be told; name them by UUID (GPU-..., nvidia-smi -L) or set CUDA_DEVICE_ORDER=PCI_BUS_ID")
    out = []
    for raw in value.split(","):
        text = raw.strip()
        if not text:
            continue
        if text.lstrip("-").isdigit():
            if int(text) < 0:
                break
            out.append(VisibleEntry(text, index=int(text)))
        elif text.startswith("GPU-"):
            out.append(VisibleEntry(text, uuid=uuid_key(text)))
        elif text.startswith("MIG-"):
            mig = text.removeprefix("MIG-")
            parent = uuid_key(mig.split("/")[0]) if mig.startswith("GPU-") else ""
            out.append(VisibleEntry(text, uuid=parent, mig=mig))
        else:
            break
    return tuple(out)
