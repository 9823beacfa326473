"""``CUDA_DEVICE_ORDER=PCI_BUS_ID`` once, at import, and whether it came too late.

CUDA numbers GPUs fastest-first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; nvidia-smi numbers them by
PCI bus. The driver reads the variable once, when it initialises (``cuInit``), which happens on the
first CUDA runtime call: ``torch.cuda.is_available()``, ``torch.cuda.device_count()`` when NVML
cannot answer it, any tensor on a GPU, or another library. So ``arignote.devices`` sets it on import
(``import arignote`` does), unless the user chose an order, and records whether the driver was
already up by then, when the setting has no effect. Torch-free (``devices/cuda.py`` re-exports
the record) so the package import stays cheap.

The driver probe asks libcuda itself, and only when this process has already loaded it:
``cuDeviceGetCount`` answers ``CUDA_ERROR_NOT_INITIALIZED`` before ``cuInit``, so the probe never
initialises anything. ``torch.cuda.is_initialized()`` alone misses an earlier ``is_available()``.

Example::

    >>> class Torch:
    ...     class cuda:
    ...         is_initialized = staticmethod(lambda: False)
    >>> driver_initialised(Torch, libcuda=None) is None
    True
    >>> set_pci_bus_order({"CUDA_DEVICE_ORDER": "FASTEST_FIRST"}, Torch, None)
    DeviceOrder(set_by_user=True, too_late_reason=None)
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DeviceOrder", "set_pci_bus_order", "driver_initialised", "loaded_libcuda"]

CUDA_ERROR_NOT_INITIALIZED = 3  # cuda.h: CUresult of a driver call made before cuInit


@dataclass(frozen=True)
class DeviceOrder:
    """What :func:`set_pci_bus_order` found: the user's own choice, or why setting it came too late."""

    set_by_user: bool
    too_late_reason: str | None = None

    @property
    def too_late(self) -> bool:
        return self.too_late_reason is not None

    def note(self) -> str | None:
        """The banner's line when the order came too late (None when it did not).

        >>> print(DeviceOrder(False, "torch.cuda is initialised").note())
        note: CUDA_DEVICE_ORDER=PCI_BUS_ID came too late (torch.cuda is initialised before arignote was \
imported): GPU numbers follow CUDA's fastest-first order (so do the processes it starts) and may differ \
from nvidia-smi; import arignote first, or set CUDA_DEVICE_ORDER yourself
        """
        if self.too_late_reason is None:
            return None
        return (f"note: CUDA_DEVICE_ORDER=PCI_BUS_ID came too late ({self.too_late_reason} before arignote "
                "was imported): GPU numbers follow CUDA's fastest-first order (so do the processes it "
                "starts) and may differ from nvidia-smi; import arignote first, or set CUDA_DEVICE_ORDER "
                "yourself")


def loaded_libcuda() -> Any:
    """This process's libcuda when something already loaded it (``RTLD_NOLOAD``: never loads it), or None."""
    if not hasattr(os, "RTLD_NOLOAD"):
        return None
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            return ctypes.CDLL(name, mode=os.RTLD_NOLOAD)
        except OSError:
            continue
    return None


def driver_initialised(torch_module: Any, libcuda: Any) -> str | None:
    """Why this process's CUDA driver is already initialised, or None when it is not.

    ``torch_module`` is ``sys.modules.get("torch")`` (None when torch is not imported yet: then only
    another library can have initialised the driver); ``libcuda`` is :func:`loaded_libcuda`'s answer.
    """
    cuda = getattr(torch_module, "cuda", None)
    if cuda is not None and cuda.is_initialized():
        return "torch.cuda is initialised (a tensor or call on a GPU ran)"
    if libcuda is not None:
        count = ctypes.c_int(0)
        try:
            status = libcuda.cuDeviceGetCount(ctypes.byref(count))
        except (AttributeError, OSError, TypeError):
            return None
        if status != CUDA_ERROR_NOT_INITIALIZED:
            return ("the CUDA driver is initialised (torch.cuda.is_available(), torch.cuda.device_count() "
                    "or another library called it)")
    return None


def set_pci_bus_order(environ: MutableMapping[str, str], torch_module: Any, libcuda: Any) -> DeviceOrder:
    """Set ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` in ``environ`` unless the user chose an order; say whether the
    driver had initialised before, when the setting no longer changes CUDA's numbering.

    When it had, ``environ`` gets the order this process really has, ``FASTEST_FIRST``: the processes
    it starts inherit ``environ`` and import arignote before CUDA, so with ``PCI_BUS_ID`` they would
    number the GPUs by PCI bus while this one numbers them fastest-first (CUDA reads the variable at
    ``cuInit`` only), and a data-parallel rank reading rank 0's indices would take another GPU on a
    box of mixed models.

    >>> class Up:
    ...     class cuda:
    ...         is_initialized = staticmethod(lambda: True)
    >>> env = {}; set_pci_bus_order(env, Up, None).too_late, env
    (True, {'CUDA_DEVICE_ORDER': 'FASTEST_FIRST'})
    """
    if "CUDA_DEVICE_ORDER" in environ:
        return DeviceOrder(set_by_user=True)
    reason = driver_initialised(torch_module, libcuda)
    # too late: this process numbers GPUs fastest-first (CUDA's default, read once at cuInit), and so
    # must the processes it starts (data-parallel ranks 1..N read rank 0's indices, runtime/setup.py)
    environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID" if reason is None else "FASTEST_FIRST"
    return DeviceOrder(set_by_user=False, too_late_reason=reason)


def at_import() -> DeviceOrder:
    """What ``import arignote.devices`` does, on this process's real environment."""
    return set_pci_bus_order(os.environ, sys.modules.get("torch"), loaded_libcuda())
