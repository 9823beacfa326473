"""Which arguments of a Keras 2 layer config arignote's layer takes: the keywords of its constructor,
what cannot change results (a ``null`` regularizer, ``unroll``, ``implementation``) dropped, default
initializers as their names, a Lambda's stored numpy arguments as arrays again, and an error naming
the layer and the argument for anything else.

Example::

    >>> accepted_config("Dense", {"name": "d", "units": 2, "unroll": True, "implementation": 2,
    ...                           "kernel_initializer": {"class_name": "Zeros", "config": {}}}, None, "d")
    {'name': 'd', 'units': 2, 'kernel_initializer': 'zeros'}
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from arignote.backend.common import floatx
from arignote.layers import base as layer_base
from arignote.utils.generic_utils import get_custom_objects

__all__ = ["initializer_name", "numeric_array", "accepted_config"]

# arguments that never change what a layer computes from given weights
_NO_EFFECT = {"unroll", "implementation"}
# arguments a layer may lack because their only value is its behaviour
_ONLY_VALUE = {
    "data_format": "channels_last",
    "return_state": False,
    "go_backwards": False,
    "stateful": False,
    "dropout": 0.0,
    "recurrent_dropout": 0.0,
    "mask_zero": False,
}

_VARIANCE_SCALING = {
    (1.0, "fan_avg", "uniform"): "glorot_uniform",
    (1.0, "fan_avg", "normal"): "glorot_normal",
    (1.0, "fan_avg", "truncated_normal"): "glorot_normal",
    (2.0, "fan_in", "uniform"): "he_uniform",
    (2.0, "fan_in", "normal"): "he_normal",
    (2.0, "fan_in", "truncated_normal"): "he_normal",
    (1.0, "fan_in", "uniform"): "lecun_uniform",
    (1.0, "fan_in", "normal"): "lecun_normal",
    (1.0, "fan_in", "truncated_normal"): "lecun_normal",
}


def initializer_name(spec: Any) -> Any:
    """A Keras 2 initializer dict with default arguments -> its name; anything else unchanged."""
    if not isinstance(spec, dict) or "class_name" not in spec:
        return spec
    cls, cfg = spec["class_name"], spec.get("config") or {}
    if cfg.get("seed") is not None:
        return spec
    if cls in ("Zeros", "Ones"):
        return cls.lower()
    if cls == "VarianceScaling":
        key = (float(cfg.get("scale", 1.0)), cfg.get("mode", "fan_in"), cfg.get("distribution", "normal"))
        return _VARIANCE_SCALING.get(key, spec)
    if cls == "Orthogonal" and float(cfg.get("gain", 1.0)) == 1.0:
        return "orthogonal"
    if cls == "RandomUniform" and (cfg.get("minval"), cfg.get("maxval")) == (-0.05, 0.05):
        return "random_uniform"
    if cls == "RandomNormal" and (cfg.get("mean"), cfg.get("stddev")) == (0.0, 0.05):
        return "random_normal"
    return spec


def _accepted(cls: type) -> set[str] | None:
    """Constructor keywords ``cls`` takes (following ``**kwargs`` up its bases, plus the keys its
    ``get_config`` writes, which it also takes: ``_config_keys``, e.g. a cell's arguments a recurrent
    layer forwards), or None when it takes anything (a user's class with ``**kwargs``)."""
    ours = cls.__module__.startswith("arignote.")
    names: set[str] = set(getattr(cls, "_config_keys", ())) if ours else set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        if klass is layer_base.Layer:
            return names | set(layer_base._BASE_KWARGS)
        if not klass.__module__.startswith("arignote."):
            return None
        params = inspect.signature(klass.__init__).parameters
        names |= {
            n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and n != "self"
        }
        if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            return names
    return names


def _lookup(class_name: str, custom_objects: dict | None) -> type | None:
    layer_base.builtin_class(class_name)  # a built-in layer's module is imported when first met by name
    classes = {**layer_base._REGISTRY, **get_custom_objects(), **(custom_objects or {})}
    return classes.get(class_name)


def numeric_array(value: Any) -> Any:
    """A Lambda argument as stored (JSON has no arrays: Keras 2.3.1 wrote a numpy argument as nested
    lists) back as a numpy array when it is a non-empty nested list of numbers, so ``x - mu`` works on
    torch tensors as it did on TensorFlow's (floats as floatx); anything else as it is.

    >>> numeric_array([[1.0, 2.0]]).dtype, numeric_array(["a"]), numeric_array(3)
    (dtype('float32'), ['a'], 3)
    """
    if not isinstance(value, list) or not value:
        return value
    try:
        array = np.asarray(value)
    except ValueError:  # ragged
        return value
    if array.dtype.kind == "f":
        return array.astype(floatx())
    return array if array.dtype.kind in "iub" else value


def accepted_config(name: str, config: dict, custom_objects: dict | None, where: str) -> dict:
    """``config`` of a Keras 2 layer of class ``name`` with only what arignote's class takes (see the
    module doc); ``config`` itself for a class not found (deserialize names it) or one taking any
    keyword. ``where`` starts the error message."""
    cls = _lookup(name, custom_objects)
    if cls is None:
        return config  # deserialize names the unknown class
    accepted = _accepted(cls)
    if accepted is None:
        return config
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key.endswith("_initializer"):
            value = initializer_name(value)
        if key in accepted:
            out[key] = value
        elif value is None or key in _NO_EFFECT or (key in _ONLY_VALUE and value == _ONLY_VALUE[key]):
            continue
        else:
            raise ValueError(
                f"{where}: argument {key}={value!r} is not supported by arignote's {name}; "
                "the model cannot be rebuilt as saved"
            )
    return out
