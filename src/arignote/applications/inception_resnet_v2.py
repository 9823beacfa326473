"""InceptionResNetV2 (Szegedy et al. 2016) with Keras 2's layer names (``block35_1``, ``mixed_6a``, ...).

Inception modules whose output, projected by a 1x1 convolution, is added to their input scaled
by 0.17 / 0.1 / 0.2 (blocks 35, 17 and 8; ``block{n}_{i}`` is that scaled sum).
Inputs: ``tf`` preprocessing (-1..1).

Example::

    >>> InceptionResNetV2(weights=None, include_top=False, input_shape=(75, 75, 3)).output_shape
    (None, 1, 1, 1536)
"""

from __future__ import annotations

from typing import Any

from arignote import backend
from arignote.applications import _weights
from arignote.applications._common import (
    channel_axis,
    classifier_or_pooling,
    image_input,
    int_shape,
    obtain_input_shape,
    reject_unknown,
    source_inputs,
)
from arignote.applications.imagenet_utils import decode_predictions
from arignote.applications.imagenet_utils import preprocess_input as _preprocess
from arignote.layers import (
    Activation,
    AveragePooling2D,
    BatchNormalization,
    Concatenate,
    Conv2D,
    Lambda,
    MaxPooling2D,
)
from arignote.models import Model

__all__ = ["InceptionResNetV2", "conv2d_bn", "preprocess_input", "decode_predictions"]

_BASE = _weights.FCHOLLET + "v0.7/"
_FILES = {
    True: _weights.WeightFile(
        "inception_resnet_v2_weights_tf_dim_ordering_tf_kernels.h5",
        _BASE + "inception_resnet_v2_weights_tf_dim_ordering_tf_kernels.h5",
        "e693bd0210a403b3192acc6073ad2e96",
    ),
    False: _weights.WeightFile(
        "inception_resnet_v2_weights_tf_dim_ordering_tf_kernels_notop.h5",
        _BASE + "inception_resnet_v2_weights_tf_dim_ordering_tf_kernels_notop.h5",
        "d19885ff4a710c122648d3b5c3b684e4",
    ),
}
# the branches of each residual block type: convolutions (filters, kernel) in a row
_BRANCHES = {
    "block35": (((32, 1),), ((32, 1), (32, 3)), ((32, 1), (48, 3), (64, 3))),
    "block17": (((192, 1),), ((128, 1), (160, (1, 7)), (192, (7, 1)))),
    "block8": (((192, 1),), ((192, 1), (224, (1, 3)), (256, (3, 1)))),
}


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """InceptionResNetV2's input preparation: ``tf`` mode (pixels scaled to -1..1)."""
    return _preprocess(x, data_format, mode="tf", **kwargs)


def conv2d_bn(
    x: Any,
    filters: int,
    kernel_size: Any,
    strides: int = 1,
    padding: str = "same",
    activation: str | None = "relu",
    use_bias: bool = False,
    name: str | None = None,
) -> Any:
    """Convolution, then batch normalization (no scale) unless it has a bias, then the activation."""
    x = Conv2D(filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias, name=name)(x)
    if not use_bias:
        x = BatchNormalization(axis=channel_axis(), scale=False, name=None if name is None else name + "_bn")(
            x
        )
    if activation is not None:
        x = Activation(activation, name=None if name is None else name + "_ac")(x)
    return x


def _scaled_sum(inputs: list, scale: float) -> Any:
    return inputs[0] + inputs[1] * scale


def _residual_block(
    x: Any, scale: float, block_type: str, index: int, activation: str | None = "relu"
) -> Any:
    branches = []
    for convs in _BRANCHES[block_type]:
        y = x
        for filters, kernel in convs:
            y = conv2d_bn(y, filters, kernel)
        branches.append(y)
    name = f"{block_type}_{index}"
    axis = channel_axis()
    mixed = Concatenate(axis=axis, name=name + "_mixed")(branches)
    up = conv2d_bn(mixed, int_shape(x)[axis], 1, activation=None, use_bias=True, name=name + "_conv")
    x = Lambda(_scaled_sum, output_shape=int_shape(x)[1:], arguments={"scale": scale}, name=name)(
        [x, up]
    )
    return x if activation is None else Activation(activation, name=name + "_ac")(x)


def InceptionResNetV2(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """InceptionResNetV2 (55,873,736 parameters with the top), Keras 2's arguments and defaults."""
    reject_unknown("InceptionResNetV2", kwargs)
    _weights.check_weights_argument(weights, include_top, classes)
    shape = obtain_input_shape(input_shape, 299, 75, backend.image_data_format(), include_top, weights)
    inputs = image_input(input_tensor, shape)
    axis = channel_axis()
    x = conv2d_bn(inputs, 32, 3, strides=2, padding="valid")
    x = conv2d_bn(x, 32, 3, padding="valid")
    x = conv2d_bn(x, 64, 3)
    x = MaxPooling2D(3, strides=2)(x)
    x = conv2d_bn(x, 80, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, padding="valid")
    x = MaxPooling2D(3, strides=2)(x)
    b0 = conv2d_bn(x, 96, 1)
    b1 = conv2d_bn(conv2d_bn(x, 48, 1), 64, 5)
    b2 = conv2d_bn(conv2d_bn(conv2d_bn(x, 64, 1), 96, 3), 96, 3)
    bp = conv2d_bn(AveragePooling2D(3, strides=1, padding="same")(x), 64, 1)
    x = Concatenate(axis=axis, name="mixed_5b")([b0, b1, b2, bp])
    for i in range(1, 11):
        x = _residual_block(x, 0.17, "block35", i)
    b0 = conv2d_bn(x, 384, 3, strides=2, padding="valid")
    b1 = conv2d_bn(conv2d_bn(conv2d_bn(x, 256, 1), 256, 3), 384, 3, strides=2, padding="valid")
    bp = MaxPooling2D(3, strides=2, padding="valid")(x)
    x = Concatenate(axis=axis, name="mixed_6a")([b0, b1, bp])
    for i in range(1, 21):
        x = _residual_block(x, 0.1, "block17", i)
    b0 = conv2d_bn(conv2d_bn(x, 256, 1), 384, 3, strides=2, padding="valid")
    b1 = conv2d_bn(conv2d_bn(x, 256, 1), 288, 3, strides=2, padding="valid")
    b2 = conv2d_bn(conv2d_bn(conv2d_bn(x, 256, 1), 288, 3), 320, 3, strides=2, padding="valid")
    bp = MaxPooling2D(3, strides=2, padding="valid")(x)
    x = Concatenate(axis=axis, name="mixed_7a")([b0, b1, b2, bp])
    for i in range(1, 10):
        x = _residual_block(x, 0.2, "block8", i)
    x = _residual_block(x, 1.0, "block8", 10, activation=None)
    x = conv2d_bn(x, 1536, 1, name="conv_7b")
    x = classifier_or_pooling(x, include_top, pooling, classes)
    model = Model(source_inputs(inputs), x, name="inception_resnet_v2")
    return _weights.load(model, weights, _FILES[include_top])
