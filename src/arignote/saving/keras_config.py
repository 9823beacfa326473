"""Model configurations between Keras 2's ``model_config`` JSON and arignote's layers.

Keras 2 writes every constructor argument (``kernel_regularizer: null``, ``unroll: true``,
initializers as ``{"class_name": "VarianceScaling", "config": {...}}``, the first layer's
``batch_input_shape`` with the batch dimension). :func:`layer_from_keras` keeps what the arignote
layer takes, drops what cannot change results (a ``null`` regularizer, ``unroll``,
``implementation``), turns default initializers into their names, and raises an error naming the
layer and the argument for anything else (those rules: :mod:`arignote.saving.layer_arguments`; the
way back, arignote's configs as Keras 2 writes them: :mod:`arignote.saving.config_to_keras`).

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

from dataclasses import dataclass, field
from typing import Any

from arignote.saving.channels_first import (
    channels_first_blockers,
    channels_first_spec,
    channels_last_shape,
    channels_last_transpose,
    has_channels_first,
    joins_columns,
)
from arignote.saving.config_to_keras import functional_to_keras, layer_to_keras, sequential_to_keras
from arignote.saving.config_to_keras import with_batch_input_shape as with_batch_input_shape  # its old home
from arignote.saving.layer_arguments import accepted_config, initializer_name, numeric_array

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
    return {"class_name": name, "config": accepted_config(name, config, custom_objects, where)}


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
    sequence = bool(specs) and isinstance(specs[0], dict) and channels_first_spec(
        specs[0].get("class_name"), specs[0].get("config") or {})[1]
    if conversion.channels_first and layers:
        first = layers[0]["config"]
        for key in ("batch_input_shape", "input_shape"):
            if first.get(key) is not None:
                shape = list(first[key])
                full = shape if key == "batch_input_shape" else [None, *shape]
                first[key] = channels_last_shape(full, sequence)
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
            build = channels_last_shape(build, sequence)
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
        spec_cf, takes_sequences = channels_first_spec(cls, raw)
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
                        "batch_input_shape": channels_last_shape(list(shape), sequence),
                    }
                    if len(shape) >= 3:
                        conversion.transposes[spec["name"]] = channels_last_transpose(
                            len(shape), sequence and len(shape) >= 4)
    return {**config, "layers": layers}, conversion
