"""Which ``channels_first`` Keras 2 models the channels-last rebuild reproduces exactly.

Asked to (``load_model(path, data_format='channels_last')``), the loader rebuilds a ``channels_first``
model channels-last (:mod:`arignote.saving.keras_config`):
layers with a ``data_format`` switch it, BatchNormalization's ``axis=1`` becomes ``-1``, a Dense behind
a Flatten of channels-first maps gets its kernel rows reordered. A layer that reads the axes of
channels-first maps any other way would compute something else on the rebuilt maps, silently:
``Concatenate`` (any axis), ``Reshape``, ``Permute``, ``Lambda``, a ``Dense`` on the maps themselves,
``Bidirectional(merge_mode='concat')`` around a channels_first layer (Keras joins the last axis: the
columns), ``TimeDistributed(Dense)`` behind ``TimeDistributed(Flatten())``, a channels_first
``LocallyConnected2D`` itself (its kernel flattens each patch channels first, and Keras's ``bias_add``
reshapes its ``(rows, cols, filters)`` bias to ``(filters, rows, cols)``)... :func:`channels_first_blockers`
names them, and the rebuild of a model with any is refused; as saved (the default; arignote's layers
take ``channels_first`` too) it computes exactly what Keras computed, on the same channels-first arrays.
The rebuild's input shapes and array transposes are here too (:func:`channels_last_transpose`).

Example::

    >>> conv = {"class_name": "Conv2D", "config": {"name": "c", "data_format": "channels_first"}}
    >>> cat = {"class_name": "Concatenate", "config": {"name": "cat", "axis": 1}}
    >>> channels_first_blockers({"class_name": "Sequential", "config": {"layers": [conv, cat]}})
    ['cat']
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["channels_first_blockers", "joins_columns", "has_channels_first", "channels_first_spec",
           "channels_last_transpose", "channels_last_shape"]

_MODELS = ("Sequential", "Model", "Functional")
_WRAPPERS = ("Bidirectional", "TimeDistributed")
# layers whose inputs are sequences of images (batch, time, C, *spatial) when channels_first
_SEQUENCE_OF_IMAGES = ("ConvLSTM2D", "ConvRNN2D")
# layers that treat every element alike: the rebuilt maps pass through them unchanged in meaning
_ELEMENTWISE = {
    "Activation", "Dropout", "GaussianNoise", "GaussianDropout", "AlphaDropout", "ActivityRegularization",
    "LeakyReLU", "ELU", "ThresholdedReLU", "ReLU", "Add", "Subtract", "Multiply", "Average", "Maximum",
    "Minimum",
}
# channels_first layers whose output has no channel axis left (and Flatten: Keras >= 2.2.3's
# Flatten(data_format='channels_first') flattens in channels-last order itself)
_POOLED = {"GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D", "GlobalMaxPooling3D", "Flatten"}

# channels_first layers whose weights a channels-last rebuild would have to re-lay (see the module doc)
_KEPT_AS_SAVED = {"LocallyConnected2D"}

MAPS, FLAT = "maps", "flat"  # channels-first maps; a channels-last Flatten of them (Dense reorders it)


def joins_columns(spec: Any) -> bool:
    """A ``Bidirectional(merge_mode='concat')`` around a channels_first layer: Keras 2 joins the last
    axis, the columns of the maps, which a channels-last rebuild has nowhere to join."""
    config = spec.get("config") or {}
    inner = config.get("layer")
    return (spec.get("class_name") == "Bidirectional" and config.get("merge_mode", "concat") == "concat"
            and isinstance(inner, dict)
            and (inner.get("config") or {}).get("data_format") == "channels_first")


def _is_cf(spec: dict) -> bool:
    config = spec.get("config") or {}
    if spec.get("class_name") in _WRAPPERS and isinstance(config.get("layer"), dict):
        return _is_cf(config["layer"])
    return config.get("data_format") == "channels_first"


def _after(spec: dict, states: list[str | None], dense_ok: bool) -> tuple[str | None, bool]:
    """``(output state, reproduced)`` of a layer given its inputs' states (see :data:`MAPS`)."""
    cls, config = spec.get("class_name"), spec.get("config") or {}
    if cls in _KEPT_AS_SAVED and _is_cf(spec):
        return MAPS, False
    if cls in _MODELS:  # judged on its own; what it gives is taken as maps if it holds channels_first layers
        return (MAPS if '"channels_first"' in json.dumps(config) else None), True
    if not any(states):
        # a channels_first layer behind a Reshape, Dense, Embedding...: the rebuild would read that
        # tensor's axes as channels-last (the model's inputs and a Sequential's first layer are MAPS)
        return (None if cls in _POOLED else MAPS) if _is_cf(spec) else None, not _is_cf(spec)
    if cls == "TimeDistributed" and isinstance(config.get("layer"), dict):
        # per step, the inner layer's rule; no Dense inside is reordered
        return _after(config["layer"], states, dense_ok=False)
    if MAPS in states:
        if joins_columns(spec):
            return MAPS, False
        if _is_cf(spec):
            return (None if cls in _POOLED else MAPS), True
        if cls == "BatchNormalization":
            return MAPS, config.get("axis", -1) in (1, [1])
        if cls == "Flatten":
            return FLAT, True
        return MAPS, cls in _ELEMENTWISE
    if cls == "Dense":  # a Flatten of channels-first maps: reordered only right behind it
        return None, dense_ok
    return FLAT, cls in ("Dropout", "Activation")


def _sequential(config: Any) -> list[str]:
    specs = config if isinstance(config, list) else (config or {}).get("layers") or []
    specs = [s for s in specs if isinstance(s, dict) and s.get("class_name") != "InputLayer"]
    state = MAPS if specs and _is_cf(specs[0]) else None
    found = []
    for spec in specs:
        state, ok = _after(spec, [state], dense_ok=True)
        if not ok:
            found.append(str((spec.get("config") or {}).get("name") or "?"))
    return found


def _functional(config: dict) -> list[str]:
    layers = [s for s in config.get("layers") or [] if isinstance(s, dict)]
    sources = {s.get("name"): [ref[0] for node in s.get("inbound_nodes") or [] for ref in node]
               for s in layers}
    cf_inputs = {src for s in layers if _is_cf(s) for src in sources[s.get("name")]}
    kind = {s.get("name"): s.get("class_name") for s in layers}
    state: dict[str, str | None] = {}
    found = []
    for spec in layers:
        name = spec.get("name")
        if spec.get("class_name") == "InputLayer":
            state[name] = MAPS if name in cf_inputs else None
            continue
        srcs = sources[name]
        dense_ok = len(srcs) == 1 and kind.get(srcs[0]) == "Flatten"
        state[name], ok = _after(spec, [state.get(s) for s in srcs], dense_ok)
        if not ok:
            found.append(str(name))
    return found


def channels_first_blockers(spec: Any) -> list[str]:
    """Names of the layers, anywhere in a Keras 2 model or layer spec (nested models and wrappers
    included), that a channels-last rebuild would not reproduce (see the module doc)."""
    found: list[str] = []
    if isinstance(spec, dict):
        cls, config = spec.get("class_name"), spec.get("config")
        if cls == "Sequential" and config is not None:
            found += _sequential(config)
        elif cls in _MODELS and isinstance(config, dict) and "layers" in config:
            found += _functional(config)
        elif cls == "Bidirectional" and joins_columns(spec):
            found.append(str((config or {}).get("name") or spec.get("name") or "?"))
        for value in spec.values():
            found += channels_first_blockers(value)
    elif isinstance(spec, list):
        for value in spec:
            found += channels_first_blockers(value)
    return list(dict.fromkeys(found))


def has_channels_first(spec: Any) -> bool:
    """Whether any layer of a Keras 2 spec (nested models and wrappers included) is channels_first.

    Example::

        >>> has_channels_first({"class_name": "Conv2D", "config": {"data_format": "channels_first"}})
        True
    """
    if isinstance(spec, dict):
        return spec.get("data_format") == "channels_first" or any(map(has_channels_first, spec.values()))
    return isinstance(spec, list) and any(map(has_channels_first, spec))


def channels_first_spec(class_name: str, config: dict) -> tuple[bool, bool]:
    """``(channels_first, takes sequences of images)`` for a Keras 2 layer spec: a wrapper answers for
    its inner layer (``TimeDistributed(Conv2D)`` and ``Bidirectional(ConvLSTM2D)`` take sequences)."""
    if class_name in _WRAPPERS and isinstance(config.get("layer"), dict):
        inner = config["layer"]
        cf, _ = channels_first_spec(inner.get("class_name"), inner.get("config") or {})
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


def channels_last_shape(shape: list, sequence: bool = False) -> list:
    """``(batch, C, *spatial)`` -> ``(batch, *spatial, C)``; a sequence keeps its time axis after the
    batch; a shape of fewer dimensions as it is."""
    if sequence:
        return [shape[0], *channels_last_shape(shape[1:])] if len(shape) >= 4 else shape
    return [shape[0], *shape[2:], shape[1]] if len(shape) >= 3 else shape
