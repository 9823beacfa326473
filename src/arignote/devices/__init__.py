"""Devices: what the machine has and how a device spec resolves on it; no flag is read here.

Choosing the devices the ``device`` flag names and getting them ready (``configured_devices``,
``prepare``, ``rank``, ``HOST_MEMORY``, ``fast_paths``) is :mod:`arignote.runtime.setup`'s work.
``release_host_memory()`` returns the freed host memory ``memory.host_cache`` keeps to the OS
(like ``torch.cuda.empty_cache()``).

Names load lazily, so ``import arignote.devices.nvml`` (or the spec parser) never pays for torch.
``devices/cuda.py`` is the only module that calls ``torch.cuda`` / ``torch.backends.cudnn``.

Importing this package (``import arignote`` does) sets ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` unless the
user chose an order, so GPU numbers match ``nvidia-smi``: CUDA reads it once, at initialisation.

Example::

    >>> from arignote import devices
    >>> [str(d) for d in devices.resolve("auto", devices.Inventory((), "EPYC", 2, "no driver"))]
    ['cpu']
"""

from __future__ import annotations

import importlib
from typing import Any

from arignote.devices import order as _order

# GPU numbers follow the PCI bus, as nvidia-smi shows them; CUDA reads this only when it initialises
# (devices/order.py: set once here, the earliest moment, and whether the driver was already up).
DEVICE_ORDER = _order.at_import()
ORDER_WAS_SET_BY_USER = DEVICE_ORDER.set_by_user
ORDER_SET_TOO_LATE = DEVICE_ORDER.too_late

# public name -> submodule defining it
_NAMES = {
    "Device": "info", "GPUInfo": "info", "CPUInfo": "info", "Inventory": "info",
    "current_inventory": "inventory", "list_devices": "inventory", "is_gpu_available": "inventory",
    "gpu_device_name": "inventory", "cudnn_version": "inventory", "gpu_count": "inventory",
    "DeviceError": "spec", "Spec": "spec", "parse_spec": "spec", "resolve": "spec",
    "rank_by_free_memory": "spec",
    "FitFacts": "fastpaths",
    "release_host_memory": "cpu",
    "Versions": "banner",
}

__all__ = sorted(_NAMES)
# read by tests/test_import_graph.py as this face's edges
_LAZY_TARGETS = {name: where if "." in where else f"arignote.devices.{where}"
                 for name, where in _NAMES.items()}


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        value = getattr(importlib.import_module(_LAZY_TARGETS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'arignote.devices' has no attribute '{name}'")
