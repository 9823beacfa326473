"""arignote: painless neural-network training on GPUs, on PyTorch.

Configure once (rc file, ``ARIGNOTE_FLAGS`` or code), then train Keras-style models or any
``torch.nn.Module`` on the device the configuration names.

Example::

    >>> import arignote
    >>> arignote.configure(device="cpu")
    >>> arignote.config.get("device")
    'cpu'

Heavy submodules (torch) load on first use of the names below, so ``import arignote`` is cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from arignote import _moved, config
from arignote import devices as _devices  # noqa: F401 - cheap (no torch): sets CUDA_DEVICE_ORDER early
from arignote._version import __version__  # noqa: F401 - arignote.__version__
from arignote.config import configure, override
from arignote.errors import ArignoteError, ConfigError, DeviceError

_moved.install()  # old module names of the house move load (pickles made before it), for one release

# the device flag is checked against this machine's GPU count at the first config read (issue 15)
config.set_machine_check("device", lambda spec: _machine_check().device_on_this_machine(spec), DeviceError)
config.set_machine_check("contexts", lambda spec: _machine_check().contexts_on_this_machine(spec),
                         DeviceError)


def _machine_check() -> Any:
    # why: the device spec parser loads when a device or contexts flag is first read, not at import
    # (the first use of the Keras API reads no flag, issue 32)
    from arignote.devices import machine_check

    return machine_check


# public name -> module that defines it (imported on first access)
_LAZY = {
    "is_gpu_available": "arignote.devices",
    "list_devices": "arignote.devices",
    "gpu_device_name": "arignote.devices",
    "cudnn_version": "arignote.devices",
    "select_gpus": "arignote.share",
    "device": "arignote.parallel.placement",
    # Keras 2's root names (keras/__init__.py: `keras.Input`, `keras.Model`, `keras.Sequential`)
    "Input": "arignote.layers",
    "Model": "arignote.models",
    "Sequential": "arignote.models",
}
_SUBMODULES = {
    "backend", "callbacks", "datasets", "devices", "layers", "losses", "metrics", "models",
    "optimizers", "utils", "share", "monitor", "parallel", "memory", "precision", "bench", "training",
    "preprocessing", "errors", "sizes", "wrappers", "metric_names",
    # the rest of Keras 2's root submodules (`keras.applications.VGG16` after `import keras`)
    "activations", "applications", "constraints", "engine", "initializers", "regularizers",
}

# root names of modules that moved into a package (issue 33): arignote.runtime.memory is runtime.memory
_SUBMODULE_PATHS = {"memory": "arignote.runtime.memory", "precision": "arignote.runtime.precision",
                    "metric_names": "arignote.metrics.names"}

# read by tests/test_import_graph.py as this face's edges
_LAZY_TARGETS = {**_LAZY, **{name: _SUBMODULE_PATHS.get(name, f"arignote.{name}") for name in _SUBMODULES}}

__all__ = ["config", "configure", "override", "ArignoteError", "ConfigError", "DeviceError", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        module = importlib.import_module(_SUBMODULE_PATHS.get(name, f"arignote.{name}"))
        globals()[name] = module
        return module
    raise AttributeError(f"module 'arignote' has no attribute '{name}'")
