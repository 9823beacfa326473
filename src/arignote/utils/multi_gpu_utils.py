"""Keras 2 ``multi_gpu_model``: train one model on several GPUs of this machine.

Keras 2's answer to "only 1 of my 4 GPUs is used". Here it marks the model so that its
``fit``/``evaluate``/``predict`` run through arignote's data parallel strategy on those GPUs,
exactly as ``device=cuda0,cuda1,...`` would (one process per GPU, DDP over NCCL, gradients
averaged once per step). As in Keras 2, ``batch_size`` is the global batch: each GPU gets
``batch_size / gpus`` samples of it. The returned model is the same object (so saving the
"template" model saves the trained weights, as Keras 2's weight sharing did); a line says which
GPUs are used, once.

Like Keras 2, a machine without the GPUs asked for raises ``ValueError``, so the usual pattern
keeps working::

    >>> from arignote.utils import multi_gpu_model
    >>> try:                                                  # doctest: +SKIP
    ...     parallel_model = multi_gpu_model(model, gpus=4)
    ... except ValueError:
    ...     parallel_model = model
"""

from __future__ import annotations

import sys
from typing import Any

from arignote import config, devices

__all__ = ["multi_gpu_model", "device_spec_for"]

_told: set[str] = set()


def _available() -> list[str]:
    return [f"cuda{d.index}" for d in devices.list_devices("cuda")]


def device_spec_for(gpus: Any) -> str:
    """The ``device`` flag value naming the GPUs of ``gpus`` (an int >= 2, a list of >= 2 ids, or
    None for every GPU), checked against this machine; ValueError as Keras 2 otherwise."""
    available = _available()
    if gpus is None:
        ids = list(range(len(available)))
        if len(ids) < 2:
            raise ValueError(f"multi_gpu_model: gpus=None uses every GPU, and this machine has {len(ids)} "
                             f"({', '.join(available) or 'none'}); data parallel needs 2 or more")
    elif isinstance(gpus, (list, tuple)):
        ids = list(gpus)
        if len(ids) < 2:
            raise ValueError("For multi-gpu usage to be effective, call `multi_gpu_model` with "
                             f"`len(gpus) >= 2`. Received: `gpus={gpus!r}`")
        bad = any(not isinstance(i, int) or isinstance(i, bool) or i < 0 for i in ids)
        if bad or len(set(ids)) != len(ids):
            raise ValueError(f"multi_gpu_model: gpus={gpus!r} must list distinct GPU ids (ints >= 0)")
    elif isinstance(gpus, int) and not isinstance(gpus, bool):
        if gpus < 2:
            raise ValueError("For multi-gpu usage to be effective, call `multi_gpu_model` with "
                             f"`gpus >= 2`. Received: `gpus={gpus}`")
        ids = list(range(gpus))
    else:
        raise ValueError(f"multi_gpu_model: gpus={gpus!r} must be an int >= 2, a list of GPU ids, or None")
    wanted = [f"cuda{i}" for i in ids]
    missing = [w for w in wanted if w not in available]
    if missing:
        raise ValueError(f"To call `multi_gpu_model` with `gpus={gpus!r}`, we expect the following devices "
                         f"to be available: {wanted}. However this machine only has: "
                         f"{available or ['cpu']}. Try reducing `gpus`.")
    return ",".join(wanted)


def multi_gpu_model(model: Any, gpus: Any = None, cpu_merge: bool = True,
                    cpu_relocation: bool = False) -> Any:
    """``model``, set to train data parallel on ``gpus`` (see the module docstring).

    ``cpu_merge`` and ``cpu_relocation`` (Keras 2's placement of the merged weights on the CPU)
    have no counterpart: each GPU holds a full replica and DDP averages gradients in place, so
    nothing is merged on the CPU; they are accepted for Keras 2 scripts (booleans only).
    """
    for name, value in (("cpu_merge", cpu_merge), ("cpu_relocation", cpu_relocation)):
        if not isinstance(value, bool):
            raise ValueError(f"multi_gpu_model: {name}={value!r} must be True or False")
    if not hasattr(model, "fit") or not hasattr(model, "module"):
        raise ValueError("multi_gpu_model takes an arignote model (Sequential, Model), "
                         f"got {type(model).__name__}")
    spec = device_spec_for(gpus)
    trainer = getattr(model, "_trainer", None)
    if trainer is not None and getattr(model, "device_spec", None) != spec:
        raise ValueError("multi_gpu_model: this model has already trained or predicted on "
                         f"{trainer.strategy.device}; call multi_gpu_model before the first fit/predict")
    model.device_spec = spec
    if spec not in _told and config.environ("RANK", "0") in ("0", ""):
        _told.add(spec)
        print(f"multi_gpu_model: fit runs data parallel on {spec.replace(',', ', ')} (the same as "
              f"device={spec}); batch_size is split across the {spec.count(',') + 1} GPUs", file=sys.stderr)
    return model
