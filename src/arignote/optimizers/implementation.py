"""Which torch implementation runs an optimizer's update (fused, multi-tensor ``foreach`` or the
per-tensor loop), chosen for this run's devices by the ``optimizer.impl`` flag, and kept when a
state dict written by another run is loaded.

Example::

    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> _impl_kwargs(torch.optim.Adam, [w])  # CPU: Adam has a fused kernel there
    {'fused': True}
"""

from __future__ import annotations

import torch

from arignote import config
from arignote.devices import fastpaths


def _impl_kwargs(torch_cls: type, params: list[torch.Tensor]) -> dict:
    """torch's implementation the ``optimizer.impl`` flag and the params allow
    (:func:`arignote.devices.fastpaths.optimizer_impl`): fused where torch has a kernel; else
    foreach on accelerators and the per-tensor loop on CPU (measured on the MLP 784-512-512-10 at
    batch 128 on 2 CPU cores: foreach RMSprop was 5-40 % slower a step than the per-tensor loop)."""
    devices = {p.device.type for p in params}
    all_float = all(p.is_floating_point() for p in params)
    name = torch_cls.__name__.removeprefix("Keras")  # optim_kernels' KerasRMSprop runs the RMSprop rule
    impl = fastpaths.optimizer_impl(config.get, name, devices, all_float).value
    if impl == "fused":
        return {"fused": True}
    return {"foreach": impl == "foreach"}


# how torch runs the update: chosen for this run's devices when built (optimizer.impl), not by a file
_IMPL_KEYS = ("foreach", "fused", "capturable", "differentiable")
# per-parameter scalars torch keeps on the CPU unless the group is capturable or fused
_HOST_SCALARS = ("step", "mu_product")


def _keep_implementation(opt: torch.optim.Optimizer, impl: list[dict]) -> None:
    """After ``opt.load_state_dict``: the groups' implementation flags back to ``impl`` (torch takes a
    file's: a GPU run's ``capturable`` fails a CPU run's eager step, and a fused run's ``fused=True``
    would override a run set to ``optimizer.impl=foreach``), and the step counters where that
    implementation keeps them: on the CPU unless capturable or fused (a compiled GPU run leaves them
    on the GPU; torch's eager update would read each with ``.item()``, a host sync per parameter and
    step)."""
    for group, flags in zip(opt.param_groups, impl):
        group.update(flags)
        on_device = bool(group.get("capturable") or group.get("fused"))
        for param in group["params"]:
            slots = opt.state.get(param, {})
            for key in _HOST_SCALARS:
                value = slots.get(key)
                if torch.is_tensor(value):
                    where = param.device if on_device else torch.device("cpu")
                    dtype = torch.float32 if group.get("fused") else value.dtype
                    if value.device != where or value.dtype != dtype:
                        slots[key] = value.to(device=where, dtype=dtype)

