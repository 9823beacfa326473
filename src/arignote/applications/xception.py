"""Xception (Chollet 2016) with Keras 2's layer names (``block{n}_sepconv{i}``, ``..._bn``, ``..._act``).

An entry flow of three downsampling blocks with projected shortcuts, eight middle-flow blocks
of three separable convolutions, and an exit flow. Inputs: ``tf`` preprocessing (-1..1).

Example::

    >>> Xception(weights=None, include_top=False, input_shape=(71, 71, 3)).output_shape
    (None, 3, 3, 2048)
"""

from __future__ import annotations

from typing import Any

from arignote import backend
from arignote.applications import _weights
from arignote.applications._common import (
    channel_axis,
    classifier_or_pooling,
    image_input,
    obtain_input_shape,
    reject_unknown,
    source_inputs,
)
from arignote.applications.imagenet_utils import decode_predictions
from arignote.applications.imagenet_utils import preprocess_input as _preprocess
from arignote.layers import Activation, BatchNormalization, Conv2D, MaxPooling2D, SeparableConv2D, add
from arignote.models import Model

__all__ = ["Xception", "preprocess_input", "decode_predictions"]

_V04 = _weights.FCHOLLET + "v0.4/"
_FILES = {
    True: _weights.WeightFile(
        "xception_weights_tf_dim_ordering_tf_kernels.h5",
        _V04 + "xception_weights_tf_dim_ordering_tf_kernels.h5",
        "0a58e3b7378bc2990ea3b43d5981f1f6",
    ),
    False: _weights.WeightFile(
        "xception_weights_tf_dim_ordering_tf_kernels_notop.h5",
        _V04 + "xception_weights_tf_dim_ordering_tf_kernels_notop.h5",
        "b0042744bf5b25fce3cb969f33bebb97",
    ),
}


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """Xception's input preparation: ``tf`` mode (pixels scaled to -1..1)."""
    return _preprocess(x, data_format, mode="tf", **kwargs)


def _sep(x: Any, filters: int, name: str, relu_before: bool = True) -> Any:
    """(ReLU) -> 3x3 separable convolution -> batch normalization, with Keras 2's names."""
    if relu_before:
        x = Activation("relu", name=name + "_act")(x)
    x = SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return BatchNormalization(axis=channel_axis(), name=name + "_bn")(x)


def _down(x: Any, filters: tuple, block: int, first_relu: bool = True) -> Any:
    """An entry/exit block: two separable convolutions and a strided max pooling, plus a 1x1 shortcut."""
    axis = channel_axis()
    shortcut = Conv2D(filters[1], (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    shortcut = BatchNormalization(axis=axis)(shortcut)
    if first_relu:
        x = Activation("relu", name=f"block{block}_sepconv1_act")(x)
    x = SeparableConv2D(filters[0], (3, 3), padding="same", use_bias=False, name=f"block{block}_sepconv1")(x)
    x = BatchNormalization(axis=axis, name=f"block{block}_sepconv1_bn")(x)
    x = _sep(x, filters[1], f"block{block}_sepconv2")
    x = MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=f"block{block}_pool")(x)
    return add([x, shortcut])


def Xception(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """Xception (22,910,480 parameters with the top), Keras 2's arguments and defaults."""
    reject_unknown("Xception", kwargs)
    _weights.check_weights_argument(weights, include_top, classes)
    shape = obtain_input_shape(input_shape, 299, 71, backend.image_data_format(), include_top, weights)
    inputs = image_input(input_tensor, shape)
    axis = channel_axis()
    x = inputs
    for i, filters in enumerate((32, 64), start=1):
        x = Conv2D(
            filters, (3, 3), strides=(2, 2) if i == 1 else (1, 1), use_bias=False, name=f"block1_conv{i}"
        )(x)
        x = BatchNormalization(axis=axis, name=f"block1_conv{i}_bn")(x)
        x = Activation("relu", name=f"block1_conv{i}_act")(x)
    x = _down(x, (128, 128), 2, first_relu=False)
    x = _down(x, (256, 256), 3)
    x = _down(x, (728, 728), 4)
    for block in range(5, 13):
        y = x
        for i in range(1, 4):
            y = _sep(y, 728, f"block{block}_sepconv{i}")
        x = add([y, x])
    x = _down(x, (728, 1024), 13)
    for i, filters in enumerate((1536, 2048), start=1):
        x = SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=f"block14_sepconv{i}")(x)
        x = BatchNormalization(axis=axis, name=f"block14_sepconv{i}_bn")(x)
        x = Activation("relu", name=f"block14_sepconv{i}_act")(x)
    x = classifier_or_pooling(x, include_top, pooling, classes)
    return _weights.load(Model(source_inputs(inputs), x, name="xception"), weights, _FILES[include_top])
