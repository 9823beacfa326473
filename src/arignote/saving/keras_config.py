"""Model configurations between Keras 2's ``model_config`` JSON and arignote's layers.

Keras 2 writes every constructor argument (``kernel_regularizer: null``, ``unroll: true``,
initializers as ``{"class_name": "VarianceScaling", "config": {...}}``, the first layer's
``batch_input_shape`` with the batch dimension). :func:`layer_from_keras` keeps what the arignote
layer takes, drops what cannot change results (a ``null`` regularizer, ``unroll``,
``implementation``), turns default initializers into their names, and raises an error naming the
layer and the argument for anything else.

``channels_first`` models (the Theano default) are rebuilt channels-last: ``data_format`` becomes
``channels_last``, the input shape ``(C, H, W)`` becomes ``(H, W, C)``, BatchNormalization's
``axis=1`` becomes ``-1``, and a Dense layer fed by a Flatten that flattened channels-first
features is recorded in ``Conversion.dense_after_flatten`` so its kernel rows get reordered.

Example::

    >>> spec = {"class_name": "Dense", "config": {"name": "d", "units": 2, "kernel_regularizer": None,
    ...         "kernel_initializer": {"class_name": "VarianceScaling", "config": {"scale": 1.0,
    ...         "mode": "fan_avg", "distribution": "uniform", "seed": None}}}}
    >>> layer_from_keras(spec, Conversion())["config"]["kernel_initializer"]
    'glorot_uniform'
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from arignote.layers import base as layer_base

__all__ = [
    "Conversion",
    "layer_from_keras",
    "sequential_from_keras",
    "sequential_to_keras",
    "initializer_name",
]

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


@dataclass
class Conversion:
    """What :func:`sequential_from_keras` changed, for the loader's one-line message and weights."""

    channels_first: bool = False
    dense_after_flatten: dict[str, str] = field(default_factory=dict)  # dense name -> flatten name
    source: str = "the file"


def _accepted(cls: type) -> set[str] | None:
    """Constructor keywords ``cls`` takes (following ``**kwargs`` up its bases), or None when it takes
    anything (a user's class with ``**kwargs``)."""
    names: set[str] = set()
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
    classes = {**layer_base._REGISTRY, **(custom_objects or {})}
    return classes.get(class_name)


def layer_from_keras(spec: dict, conversion: Conversion, custom_objects: dict | None = None) -> dict:
    """One Keras 2 layer spec -> the spec :func:`arignote.layers.deserialize` takes (see module doc)."""
    if not isinstance(spec, dict) or "class_name" not in spec:
        raise ValueError(
            f"{conversion.source}: a layer entry must be {{'class_name', 'config'}}, got {spec!r}"
        )
    name = spec["class_name"]
    config = dict(spec.get("config") or {})
    where = f"{conversion.source}: layer '{config.get('name', '?')}' ({name})"
    if config.get("data_format") == "channels_first":
        conversion.channels_first = True
        config["data_format"] = "channels_last"
    if name == "BatchNormalization" and conversion.channels_first and config.get("axis") in (1, [1]):
        config["axis"] = -1
    for key in ("layer", "forward_layer", "backward_layer"):  # wrappers: convert the inner layer too
        if isinstance(config.get(key), dict):
            config[key] = layer_from_keras(config[key], conversion, custom_objects)
    cls = _lookup(name, custom_objects)
    if cls is None:
        return {"class_name": name, "config": config}  # deserialize names the unknown class
    accepted = _accepted(cls)
    if accepted is None:
        return {"class_name": name, "config": config}
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
    return {"class_name": name, "config": out}


def _channels_last_shape(shape: list) -> list:
    # (batch, C, *spatial) -> (batch, *spatial, C)
    return [shape[0], *shape[2:], shape[1]] if len(shape) >= 3 else shape


def sequential_from_keras(
    config: Any, custom_objects: dict | None = None, source: str = "the file"
) -> tuple[dict, Conversion]:
    """A Keras 2 ``Sequential`` config (a dict, or the bare list Keras < 2.2 wrote) -> arignote's
    :meth:`Sequential.from_config` input, and what was converted."""
    if isinstance(config, list):
        config = {"layers": config}
    conversion = Conversion(source=source)
    specs = list(config.get("layers") or [])
    layers = []
    flatten_feeds_cf = None  # name of the last Flatten that flattened channels-first features
    for spec in specs:
        was_cf = conversion.channels_first
        cfg = (spec.get("config") or {}) if isinstance(spec, dict) else {}
        spec_cf = cfg.get("data_format") == "channels_first"
        converted = layer_from_keras(spec, conversion, custom_objects)
        cls = converted["class_name"]
        if cls == "Flatten":
            # Keras >= 2.2.3's Flatten(data_format='channels_first') flattens in channels-last order
            # itself; an older Flatten (or a channels_last one) on channels-first maps did not.
            flatten_feeds_cf = converted["config"].get("name") if (was_cf and not spec_cf) else None
        elif cls == "Dense" and flatten_feeds_cf is not None:
            conversion.dense_after_flatten[converted["config"].get("name")] = flatten_feeds_cf
            flatten_feeds_cf = None
        elif cls not in ("Dropout", "Activation"):
            flatten_feeds_cf = None
        layers.append(converted)
    if conversion.channels_first and layers:
        first = layers[0]["config"]
        for key in ("batch_input_shape", "input_shape"):
            if first.get(key) is not None:
                shape = list(first[key])
                first[key] = _channels_last_shape(shape if key == "batch_input_shape" else [None, *shape])
                if key == "input_shape":
                    first[key] = first[key][1:]
    out = {"name": config.get("name"), "layers": layers}
    build = config.get("build_input_shape")
    if build is not None:
        build = list(build)
        if conversion.channels_first:
            build = _channels_last_shape(build)
        out["build_input_shape"] = build[1:]
    return out, conversion


def sequential_to_keras(config: dict) -> dict:
    """arignote's Sequential config -> Keras 2.3.1's (batch dimension in ``batch_input_shape`` and
    ``build_input_shape``), ready for ``json.dumps``."""
    layers = []
    for i, spec in enumerate(config["layers"]):
        cfg = dict(spec["config"])
        shape = cfg.pop("input_shape", None)
        if shape is not None and i == 0:
            cfg["batch_input_shape"] = [None, *shape]
        cfg.setdefault("dtype", "float32")
        layers.append({"class_name": spec["class_name"], "config": cfg})
    out: dict[str, Any] = {"name": config.get("name"), "layers": layers}
    if config.get("build_input_shape") is not None:
        out["build_input_shape"] = [None, *config["build_input_shape"]]
    return out
