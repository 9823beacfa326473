"""What every application shares: the input shape rules, the model input and the classifier top.

Example::

    >>> obtain_input_shape(None, 224, 32, "channels_last", require_flatten=True, weights=None)
    (224, 224, 3)
    >>> obtain_input_shape(None, 224, 32, "channels_last", require_flatten=False, weights=None)
    (None, None, 3)
"""

from __future__ import annotations

import warnings
from typing import Any

from arignote import backend
from arignote.graph.tensor import get_source_inputs, is_symbolic
from arignote.layers import Dense, GlobalAveragePooling2D, GlobalMaxPooling2D, Input

__all__ = [
    "obtain_input_shape",
    "image_input",
    "classifier_or_pooling",
    "channel_axis",
    "reject_unknown",
    "POOLINGS",
]

POOLINGS = (None, "avg", "max")


def channel_axis() -> int:
    """The channel axis of an image batch in the current ``image_data_format``."""
    return 1 if backend.image_data_format() == "channels_first" else -1


def int_shape(x: Any) -> tuple:
    """The shape of a symbolic tensor, batch dimension first (``None``)."""
    return tuple(x.shape)


def obtain_input_shape(
    input_shape: Any,
    default_size: int,
    min_size: int,
    data_format: str,
    require_flatten: bool,
    weights: Any = None,
) -> tuple:
    """The network's per-image input shape: the default, or ``input_shape`` checked (Keras 2's rules).

    With the ImageNet weights and the classifier top the shape must be the default one; the
    image sides must be at least ``min_size``; a classifier top needs a fixed size.
    """
    first = data_format == "channels_first"

    def square(channels: int) -> tuple:
        return (channels, default_size, default_size) if first else (default_size, default_size, channels)

    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        channels = input_shape[0] if first else input_shape[-1]
        if channels not in (1, 3):
            warnings.warn(
                f"This model usually expects 1 or 3 input channels; input_shape={input_shape} "
                f"has {channels}.",
                stacklevel=3,
            )
        default = square(channels)
    else:
        default = square(3)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and tuple(input_shape) != default:
            raise ValueError(
                f"When setting `include_top=True` and loading `imagenet` weights, `input_shape` "
                f"should be {default}; got {tuple(input_shape)}"
            )
        return default
    if input_shape:
        input_shape = tuple(input_shape)
        if len(input_shape) != 3:
            raise ValueError(f"`input_shape` must be a tuple of three integers, got {input_shape}")
        channels, sides = (input_shape[0], input_shape[1:]) if first else (input_shape[-1], input_shape[:2])
        if weights == "imagenet" and channels != 3:
            raise ValueError(f"The input must have 3 channels; got `input_shape={input_shape}`")
        if any(s is not None and s < min_size for s in sides):
            raise ValueError(
                f"Input size must be at least {min_size}x{min_size}; got `input_shape={input_shape}`"
            )
    else:
        input_shape = default if require_flatten else ((3, None, None) if first else (None, None, 3))
    if require_flatten and None in input_shape:
        raise ValueError(
            f"If `include_top` is True, you should specify a static `input_shape`; "
            f"got `input_shape={input_shape}`"
        )
    return input_shape


def source_inputs(inputs: Any) -> Any:
    """The model's inputs for a graph built on ``inputs``: ``inputs`` itself when it is an ``Input``,
    else the ``Input``s it was computed from (Keras 2's ``get_source_inputs``: an ``input_tensor``
    such as ``K.concatenate([image, K.placeholder(...)])`` in the style-transfer examples)."""
    sources = get_source_inputs(inputs)
    return inputs if len(sources) == 1 and sources[0] is inputs else sources


def image_input(input_tensor: Any, input_shape: tuple) -> Any:
    """The model's input: a new ``Input`` of ``input_shape``, or the symbolic ``input_tensor`` given."""
    if input_tensor is None:
        return Input(shape=input_shape)
    if not is_symbolic(input_tensor):
        raise ValueError(
            "input_tensor must be the output of arignote.layers.Input() or of a layer (a symbolic "
            f"tensor); got {type(input_tensor).__name__}"
        )
    if type(input_tensor._keras_history[0]).__name__ == "OpLayer":
        # Keras 2: a backend tensor (K.concatenate of images and a placeholder) is no Keras tensor, so
        # the model starts at Input(tensor=input_tensor): layers[0] is that InputLayer (neural_doodle)
        return Input(tensor=input_tensor)
    return input_tensor


def classifier_or_pooling(
    x: Any,
    include_top: bool,
    pooling: Any,
    classes: int,
    *,
    top_name: str = "predictions",
    pool_name: str | None = "avg_pool",
    pooling_names: tuple = (None, None),
) -> Any:
    """Global average pooling + softmax ``Dense`` (the top), or the ``pooling`` asked for, or ``x`` as is."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be None, 'avg' or 'max'; got {pooling!r}")
    if include_top:
        x = GlobalAveragePooling2D(name=pool_name)(x)
        return Dense(classes, activation="softmax", name=top_name)(x)
    if pooling == "avg":
        return GlobalAveragePooling2D(name=pooling_names[0])(x)
    if pooling == "max":
        return GlobalMaxPooling2D(name=pooling_names[1])(x)
    return x


def reject_unknown(where: str, kwargs: dict) -> None:
    """Keras 2's applications took ``backend=``, ``layers=``, ``models=``, ``utils=`` to pick a framework
    (keras_applications); arignote has one and ignores them. Anything else is an error."""
    unknown = sorted(set(kwargs) - {"backend", "layers", "models", "utils"})
    if unknown:
        raise TypeError(f"{where} got unexpected keyword arguments {unknown}")
