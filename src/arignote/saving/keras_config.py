"""Model configurations between Keras 2's ``model_config`` JSON and arignote's layers.

Keras 2 writes every constructor argument (``kernel_regularizer: null``, ``unroll: true``,
initializers as ``{"class_name": "VarianceScaling", "config": {...}}``, the first layer's
``batch_input_shape`` with the batch dimension). :func:`layer_from_keras` keeps what the arignote
layer takes, drops what cannot change results (a ``null`` regularizer, ``unroll``,
``implementation``), turns default initializers into their names, and raises an error naming the
layer and the argument for anything else.

``channels_first`` models (the Theano default) load as saved, whatever the configured
``image_data_format``, as in Keras 2.3.1 (each layer's ``data_format`` is in its config and wins):
they take channels-first arrays (``Conversion.kept_channels_first`` is ``[AS_SAVED]``). On request
(``data_format='channels_last'``) they are rebuilt channels-last instead: ``data_format`` becomes
``channels_last``, the input shape ``(C, H, W)`` becomes ``(H, W, C)``, BatchNormalization's
``axis=1`` becomes ``-1``, and a Dense layer fed by a Flatten that flattened channels-first
features is recorded in ``Conversion.dense_after_flatten`` so its kernel rows get reordered. A model
that rebuild cannot reproduce (a ``Concatenate``, ``Reshape`` or ``Bidirectional(merge_mode='concat')``
on channels-first maps...: :mod:`arignote.saving.channels_first`) is refused with the layers' names.

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

import numpy as np

from arignote.backend.common import floatx
from arignote.layers import base as layer_base
from arignote.saving.channels_first import channels_first_blockers, joins_columns
from arignote.utils.generic_utils import get_custom_objects

__all__ = [
    "AS_SAVED",
    "Conversion",
    "layer_from_keras",
    "sequential_from_keras",
    "sequential_to_keras",
    "functional_to_keras",
    "layer_to_keras",
    "initializer_name",
    "channels_first_blockers",
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
    # input name -> the transpose that turns its channels-first arrays into what the rebuilt model takes
    transposes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # non-empty: the model keeps channels_first as saved ([AS_SAVED]); empty: rebuilt channels-last
    kept_channels_first: list[str] = field(default_factory=list)
    # the model has channels_first layers and keeps them as saved (the loader's default)
    as_saved: bool = False


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


def layer_from_keras(spec: dict, conversion: Conversion, custom_objects: dict | None = None) -> dict:
    """One Keras 2 layer spec -> the spec :func:`arignote.layers.deserialize` takes (see module doc)."""
    if not isinstance(spec, dict) or "class_name" not in spec:
        raise ValueError(
            f"{conversion.source}: a layer entry must be {{'class_name', 'config'}}, got {spec!r}"
        )
    name = spec["class_name"]
    config = dict(spec.get("config") or {})
    where = f"{conversion.source}: layer '{config.get('name', '?')}' ({name})"
    if config.get("data_format") == "channels_first" and not conversion.kept_channels_first:
        conversion.channels_first = True
        config["data_format"] = "channels_last"
    if name == "BatchNormalization" and conversion.channels_first and config.get("axis") in (1, [1]):
        config["axis"] = -1
    if joins_columns({"class_name": name, "config": config}) and not conversion.kept_channels_first:
        raise ValueError(
            f"{where}: 'concat' joins the last axis, the columns of its channels_first layer's maps, "
            "which a channels-last rebuild cannot join; convert the whole model with model_from_keras "
            "(it keeps such a model channels_first), not layer by layer"
        )
    if name == "Lambda" and isinstance(config.get("arguments"), dict):
        config["arguments"] = {k: numeric_array(v) for k, v in config["arguments"].items()}
    for key in ("layer", "forward_layer", "backward_layer"):  # wrappers: convert the inner layer too
        inner = config.get(key)
        if isinstance(inner, dict) and inner.get("class_name") in ("Sequential", "Model", "Functional"):
            config[key], sub = model_from_keras(  # a model
                inner, custom_objects, conversion.source, conversion.kept_channels_first)
            _merge(conversion, sub)
        elif isinstance(inner, dict):
            config[key] = layer_from_keras(inner, conversion, custom_objects)
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


# layers whose inputs are sequences of images (batch, time, C, *spatial) when channels_first
_SEQUENCE_OF_IMAGES = ("ConvLSTM2D", "ConvRNN2D")
_WRAPPERS = ("Bidirectional", "TimeDistributed")


def _channels_first_spec(class_name: str, config: dict) -> tuple[bool, bool]:
    """``(channels_first, takes sequences of images)`` for a Keras 2 layer spec: a wrapper answers for
    its inner layer (``TimeDistributed(Conv2D)`` and ``Bidirectional(ConvLSTM2D)`` take sequences)."""
    if class_name in _WRAPPERS and isinstance(config.get("layer"), dict):
        inner = config["layer"]
        cf, _ = _channels_first_spec(inner.get("class_name"), inner.get("config") or {})
        return cf, True
    return config.get("data_format") == "channels_first", class_name in _SEQUENCE_OF_IMAGES


def channels_last_transpose(rank: int, sequence: bool = False) -> tuple[int, ...]:
    """The ``x.transpose(...)`` that turns channels-first arrays of ``rank`` dimensions (batch
    included) into channels-last ones: images ``(N, C, H, W)`` -> ``(0, 2, 3, 1)``; a sequence keeps
    its time axis, ``(N, T, C, H, W)`` -> ``(0, 1, 3, 4, 2)``.

    Example::

        >>> channels_last_transpose(4), channels_last_transpose(5, sequence=True)
        ((0, 2, 3, 1), (0, 1, 3, 4, 2))
    """
    first = 2 if sequence else 1
    return (*range(first), *range(first + 1, rank), first)


def _channels_last_shape(shape: list, sequence: bool = False) -> list:
    # (batch, C, *spatial) -> (batch, *spatial, C); a sequence keeps its time axis after the batch
    if sequence:
        return [shape[0], *_channels_last_shape(shape[1:])] if len(shape) >= 4 else shape
    return [shape[0], *shape[2:], shape[1]] if len(shape) >= 3 else shape


def _auto_input_layer(specs: list) -> bool:
    if len(specs) < 2 or not all(isinstance(s, dict) for s in specs[:2]):
        return False
    if specs[0].get("class_name") != "InputLayer":
        return False
    first, second = specs[0].get("config") or {}, specs[1].get("config") or {}
    return first.get("name") == f"{second.get('name')}_input"


# what kept_channels_first holds when a channels_first model loads as saved (the default)
AS_SAVED = "(as saved)"
DATA_FORMATS = (None, "channels_first", "channels_last")


def has_channels_first(spec: Any) -> bool:
    """Whether any layer of a Keras 2 spec (nested models and wrappers included) is channels_first.

    Example::

        >>> has_channels_first({"class_name": "Conv2D", "config": {"data_format": "channels_first"}})
        True
    """
    if isinstance(spec, dict):
        return spec.get("data_format") == "channels_first" or any(map(has_channels_first, spec.values()))
    return isinstance(spec, list) and any(map(has_channels_first, spec))


def _start(class_name: str, config: Any, source: str, kept: list[str] | None,
           data_format: str | None = None) -> Conversion:
    """The conversion of a whole model (``kept`` None) or of a nested one (its outer model's ``kept``).
    A whole model keeps its layout as saved unless ``data_format='channels_last'`` asks for the
    channels-last rebuild, which is refused for a model it would not reproduce."""
    if data_format not in DATA_FORMATS:
        raise ValueError(f"{source}: data_format={data_format!r}; use None (as saved), 'channels_first' "
                         "(the same) or 'channels_last' (rebuild a channels_first model channels-last)")
    if kept is None:
        kept = [AS_SAVED]
        if data_format == "channels_last":
            kept = channels_first_blockers({"class_name": class_name, "config": config})
            if kept:
                raise ValueError(
                    f"{source}: data_format='channels_last' cannot rebuild this channels_first model: "
                    f"{', '.join(kept)} read the axes of channels-first maps and would compute something "
                    "else; load it as saved (without data_format) and feed channels-first arrays")
    as_saved = kept == [AS_SAVED] and has_channels_first(config)
    return Conversion(source=source, kept_channels_first=list(kept), as_saved=as_saved)


def sequential_from_keras(
    config: Any, custom_objects: dict | None = None, source: str = "the file", kept: list[str] | None = None,
    data_format: str | None = None,
) -> tuple[dict, Conversion]:
    """A Keras 2 ``Sequential`` config (a dict, or the bare list Keras < 2.2 wrote) -> arignote's
    :meth:`Sequential.from_config` input, and what was converted."""
    if isinstance(config, list):
        config = {"layers": config}
    conversion = _start("Sequential", config, source, kept, data_format)
    specs = [dict(s) if isinstance(s, dict) else s for s in (config.get("layers") or [])]
    if _auto_input_layer(specs):
        # tf.keras 2 (and arignote before session 9) write the input as an InputLayer named
        # '<first layer>_input', which Sequential.layers does not list: put its shape on the first
        # real layer, as Keras 2.3.1 writes it
        cfg = specs[0].get("config") or {}
        shape = cfg.get("batch_input_shape", cfg.get("batch_shape"))
        first = dict(specs[1].get("config") or {})
        if shape is not None:
            first["batch_input_shape"] = list(shape)
        specs = [{**specs[1], "config": first}, *specs[2:]]
    layers = []
    flatten_feeds_cf = None  # name of the last Flatten that flattened channels-first features
    for spec in specs:
        was_cf = conversion.channels_first
        cfg = (spec.get("config") or {}) if isinstance(spec, dict) else {}
        spec_cf = cfg.get("data_format") == "channels_first"
        if isinstance(spec, dict) and spec.get("class_name") in ("Sequential", "Model", "Functional"):
            converted, sub = model_from_keras(spec, custom_objects, source, conversion.kept_channels_first)
            _merge(conversion, sub)
        else:
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
    sequence = bool(specs) and isinstance(specs[0], dict) and _channels_first_spec(
        specs[0].get("class_name"), specs[0].get("config") or {})[1]
    if conversion.channels_first and layers:
        first = layers[0]["config"]
        for key in ("batch_input_shape", "input_shape"):
            if first.get(key) is not None:
                shape = list(first[key])
                full = shape if key == "batch_input_shape" else [None, *shape]
                first[key] = _channels_last_shape(full, sequence)
                if len(full) >= 3:
                    conversion.transposes[first.get("name") or "x"] = channels_last_transpose(
                        len(full), sequence and len(full) >= 4)
                if key == "input_shape":
                    first[key] = first[key][1:]
    out = {"name": config.get("name"), "layers": layers}
    build = config.get("build_input_shape")
    if build is not None:
        build = list(build)
        if conversion.channels_first:
            build = _channels_last_shape(build, sequence)
        out["build_input_shape"] = build  # with the batch dimension, as Keras 2 and arignote write it
    return out, conversion


def _merge(into: Conversion, sub: Conversion) -> None:
    into.channels_first |= sub.channels_first
    into.dense_after_flatten.update(sub.dense_after_flatten)
    into.transposes.update(sub.transposes)


def model_from_keras(
    spec: dict, custom_objects: dict | None = None, source: str = "the file", kept: list[str] | None = None,
    data_format: str | None = None,
) -> tuple[dict, Conversion]:
    """A Keras 2 ``{"class_name": "Sequential" | "Model", "config"}`` -> the same with arignote's layer
    configs (what ``Sequential.from_config`` / ``Model.from_config`` take), and what was converted.
    ``kept``: the outermost model's, for a nested one (None: this is the outermost); ``data_format``:
    ``'channels_last'`` rebuilds a channels_first model channels-last (see the module doc)."""
    name = spec.get("class_name")
    if name == "Sequential":
        cfg, conversion = sequential_from_keras(spec.get("config"), custom_objects, source, kept, data_format)
        return {"class_name": "Sequential", "config": cfg}, conversion
    if name in ("Model", "Functional"):
        cfg, conversion = functional_from_keras(spec.get("config") or {}, custom_objects, source, kept,
                                                  data_format)
        return {"class_name": "Model", "config": cfg}, conversion
    raise ValueError(
        f"{source}: model class '{name}' is not a Keras 2 model configuration (Sequential or Model)"
    )


def functional_from_keras(
    config: dict, custom_objects: dict | None = None, source: str = "the file", kept: list[str] | None = None,
    data_format: str | None = None,
) -> tuple[dict, Conversion]:
    """A Keras 2 functional ``Model`` config (``layers`` with ``inbound_nodes``, ``input_layers``,
    ``output_layers``): every layer config converted as in :func:`layer_from_keras`; nested models
    recursively; a channels_first model as saved, or (``data_format='channels_last'``) rebuilt
    channels-last, inputs included."""
    conversion = _start("Model", config, source, kept, data_format)
    cf_out: dict[str, bool] = {}  # layer name -> its output is channels-first in the file
    flattened_cf: dict[str, str] = {}  # Flatten name that flattened channels-first maps -> itself
    feeds_cf: set[str] = set()  # InputLayers whose images go into channels-first layers
    feeds_sequences: set[str] = set()  # ... whose sequences of images go into ConvLSTM2D/ConvRNN2D
    layers = []
    for spec in config.get("layers") or []:
        name, cls = spec.get("name"), spec.get("class_name")
        raw = spec.get("config") or {}
        sources = [ref[0] for node in spec.get("inbound_nodes") or [] for ref in node]
        spec_cf, takes_sequences = _channels_first_spec(cls, raw)
        in_cf = any(cf_out.get(s, False) for s in sources)
        if cls in ("Sequential", "Model", "Functional"):
            converted, sub = model_from_keras({"class_name": cls, "config": raw}, custom_objects, source,
                                              conversion.kept_channels_first)
            _merge(conversion, sub)
        else:
            converted = layer_from_keras({"class_name": cls, "config": raw}, conversion, custom_objects)
        if spec_cf:
            feeds_cf.update(s for s in sources)
            if takes_sequences:
                feeds_sequences.update(sources)
        if cls == "Flatten":
            if in_cf and not spec_cf:
                flattened_cf[name] = name
            cf_out[name] = False
        elif cls == "Dense":
            flat = [s for s in sources if s in flattened_cf]
            if flat and not conversion.kept_channels_first:  # kept: it flattens as in Keras
                conversion.dense_after_flatten[name] = flat[0]
            cf_out[name] = False
        else:
            cf_out[name] = spec_cf or in_cf
        layers.append({**spec, "class_name": converted["class_name"], "config": converted["config"]})
    if conversion.channels_first:
        for spec in layers:
            if spec["class_name"] == "InputLayer" and spec["name"] in feeds_cf:
                shape = spec["config"].get("batch_input_shape")
                if shape is not None:
                    sequence = spec["name"] in feeds_sequences
                    spec["config"] = {
                        **spec["config"],
                        "batch_input_shape": _channels_last_shape(list(shape), sequence),
                    }
                    if len(shape) >= 3:
                        conversion.transposes[spec["name"]] = channels_last_transpose(
                            len(shape), sequence and len(shape) >= 4)
    return {**config, "layers": layers}, conversion


def with_batch_input_shape(config: dict, shape: Any) -> dict:
    """A layer config with ``batch_input_shape`` where Keras 2.3.1's ``Layer.get_config`` puts it
    (after ``trainable``), in place of any ``input_shape`` / ``batch_input_shape`` it had.

    Example::

        >>> with_batch_input_shape({"name": "d", "trainable": True, "units": 2}, (None, 3))
        {'name': 'd', 'trainable': True, 'batch_input_shape': [None, 3], 'units': 2}
    """
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key in ("batch_input_shape", "input_shape"):
            continue
        out[key] = value
        if key == "trainable":
            out["batch_input_shape"] = list(shape)
    out.setdefault("batch_input_shape", list(shape))
    return out


def sequential_to_keras(config: dict, input_layer: bool = False) -> dict:
    """arignote's Sequential config -> Keras 2.3.1's, ready for ``json.dumps``: the layers the user
    added, the first with the declared input shape as ``batch_input_shape`` (with the batch
    dimension), and ``build_input_shape`` for a model built from data.

    ``input_layer`` (what HDF5 files get): the declared input shape as an explicit first
    ``InputLayer`` instead, as tf.keras 2 writes Sequential models. Keras 2.3.1 reads both forms;
    Keras 3's legacy HDF5 loader reads only this one right (``batch_input_shape`` on any other layer
    is taken as ``input_shape``, one dimension too many, for Keras 2.3.1's own files too).

    >>> spec = {"name": "s", "layers": [{"class_name": "Dense", "config": {"name": "d",
    ...         "batch_input_shape": [None, 3]}}]}
    >>> [layer["class_name"] for layer in sequential_to_keras(spec)["layers"]]
    ['Dense']
    >>> [layer["class_name"] for layer in sequential_to_keras(spec, input_layer=True)["layers"]]
    ['InputLayer', 'Dense']
    """
    layers = []
    for i, spec in enumerate(config["layers"]):
        cfg = dict(spec["config"])
        shape = cfg.get("input_shape")
        batch_shape = [None, *shape] if shape is not None else cfg.get("batch_input_shape")
        if batch_shape is not None and i == 0 and not input_layer:
            cfg = with_batch_input_shape(cfg, batch_shape)
        else:
            cfg.pop("input_shape", None)
            cfg.pop("batch_input_shape", None)
            if batch_shape is not None and i == 0 and spec["class_name"] != "InputLayer":
                layers.append({"class_name": "InputLayer", "config": {
                    "batch_input_shape": list(batch_shape), "dtype": cfg.get("dtype", "float32"),
                    "sparse": False, "name": f"{cfg.get('name', 'layer')}_input"}})
            elif batch_shape is not None and i == 0:
                cfg["batch_input_shape"] = list(batch_shape)
        cfg.setdefault("dtype", "float32")
        layers.append(layer_to_keras({"class_name": spec["class_name"], "config": cfg}, input_layer))
    out: dict[str, Any] = {"name": config.get("name"), "layers": layers}
    if config.get("build_input_shape") is not None:
        out["build_input_shape"] = list(config["build_input_shape"])  # already with the batch dimension
    return out


def functional_to_keras(config: dict, input_layer: bool = False) -> dict:
    """arignote's functional ``Model`` config -> Keras 2's (its nested models and wrappers converted;
    ``input_layer``: nested Sequentials as :func:`sequential_to_keras` writes them for files)."""
    return {**config, "layers": [layer_to_keras(spec, input_layer) for spec in config.get("layers") or []]}


# Keras 3's deserializer finds a built-in class inside a wrapper only by its module (tf.keras >= 2.13
# writes it too); Keras 2 ignores the key, and a user's registered class is still looked up first
_INNER_MODULE = "keras.layers"


def layer_to_keras(spec: dict, input_layer: bool = False) -> dict:
    """One layer spec (a functional entry with ``name``/``inbound_nodes``, or a Sequential entry) as
    Keras 2 writes it: a nested Sequential or Model converted likewise (``input_layer``: see
    :func:`sequential_to_keras`), a wrapper's inner layer with its ``module``.
    """
    cls = spec.get("class_name")
    config = spec.get("config") or {}
    if cls == "Sequential":
        return {**spec, "config": sequential_to_keras(config, input_layer)}
    if cls in ("Model", "Functional"):
        return {**spec, "config": functional_to_keras(config, input_layer)}
    inner = {k: config[k] for k in ("layer", "forward_layer", "backward_layer")
             if isinstance(config.get(k), dict) and "class_name" in config[k]}
    if inner:
        config = {**config, **{k: {**layer_to_keras(v, input_layer), "module": _INNER_MODULE}
                               for k, v in inner.items()}}
    return {**spec, "config": config}
