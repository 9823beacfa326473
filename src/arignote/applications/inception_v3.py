"""InceptionV3 (Szegedy et al. 2015) with Keras 2's layer order and names (``mixed0`` ... ``mixed10``).

Every convolution is ``conv2d_bn``: a bias-free convolution, batch normalization without scale,
ReLU. The modules are written as tables of branches below. Inputs: ``tf`` preprocessing (-1..1).

Example::

    >>> InceptionV3(weights=None, include_top=False, input_shape=(75, 75, 3)).output_shape
    (None, 1, 1, 2048)
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
from arignote.layers import (
    Activation,
    AveragePooling2D,
    BatchNormalization,
    Conv2D,
    MaxPooling2D,
    concatenate,
)
from arignote.models import Model

__all__ = ["InceptionV3", "conv2d_bn", "preprocess_input", "decode_predictions"]

_V05 = _weights.FCHOLLET + "v0.5/"
_FILES = {
    True: _weights.WeightFile(
        "inception_v3_weights_tf_dim_ordering_tf_kernels.h5",
        _V05 + "inception_v3_weights_tf_dim_ordering_tf_kernels.h5",
        "9a0d58056eeedaa3f26cb7ebd46da564",
    ),
    False: _weights.WeightFile(
        "inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5",
        _V05 + "inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5",
        "bcbd6486424b2319ff4ef7d526e38f63",
    ),
}


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """InceptionV3's input preparation: ``tf`` mode (pixels scaled to -1..1)."""
    return _preprocess(x, data_format, mode="tf", **kwargs)


def conv2d_bn(
    x: Any,
    filters: int,
    num_row: int,
    num_col: int,
    padding: str = "same",
    strides: tuple = (1, 1),
    name: str | None = None,
) -> Any:
    """Convolution (no bias) + batch normalization (no scale) + ReLU, named ``{name}_conv/_bn`` if named."""
    x = Conv2D(
        filters,
        (num_row, num_col),
        strides=strides,
        padding=padding,
        use_bias=False,
        name=None if name is None else name + "_conv",
    )(x)
    x = BatchNormalization(axis=channel_axis(), scale=False, name=None if name is None else name + "_bn")(x)
    return Activation("relu", name=name)(x)


def _chain(x: Any, convs: tuple) -> Any:
    """A branch: ``conv2d_bn`` layers in a row, each ``(filters, rows, cols[, strides, padding])``."""
    for filters, rows, cols, *rest in convs:
        strides, padding = rest if rest else (1, "same")
        x = conv2d_bn(x, filters, rows, cols, padding=padding, strides=(strides, strides))
    return x


def _avg_branch(x: Any, filters: int) -> Any:
    return conv2d_bn(AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x), filters, 1, 1)


def _module_a(x: Any, pool_filters: int, name: str) -> Any:  # mixed0-2, 35 x 35
    return concatenate(
        [
            _chain(x, ((64, 1, 1),)),
            _chain(x, ((48, 1, 1), (64, 5, 5))),
            _chain(x, ((64, 1, 1), (96, 3, 3), (96, 3, 3))),
            _avg_branch(x, pool_filters),
        ],
        axis=channel_axis(),
        name=name,
    )


def _module_c(x: Any, mid: int, name: str) -> Any:  # mixed4-7, 17 x 17, factorised 7x7
    return concatenate(
        [
            _chain(x, ((192, 1, 1),)),
            _chain(x, ((mid, 1, 1), (mid, 1, 7), (192, 7, 1))),
            _chain(x, ((mid, 1, 1), (mid, 7, 1), (mid, 1, 7), (mid, 7, 1), (192, 1, 7))),
            _avg_branch(x, 192),
        ],
        axis=channel_axis(),
        name=name,
    )


def _module_e(x: Any, i: int) -> Any:  # mixed9-10, 8 x 8, expanded filter banks
    axis = channel_axis()
    b1 = conv2d_bn(x, 320, 1, 1)
    b3 = conv2d_bn(x, 384, 1, 1)
    b3 = concatenate([conv2d_bn(b3, 384, 1, 3), conv2d_bn(b3, 384, 3, 1)], axis=axis, name=f"mixed9_{i}")
    b3d = _chain(x, ((448, 1, 1), (384, 3, 3)))
    b3d = concatenate([conv2d_bn(b3d, 384, 1, 3), conv2d_bn(b3d, 384, 3, 1)], axis=axis)
    return concatenate([b1, b3, b3d, _avg_branch(x, 192)], axis=axis, name=f"mixed{9 + i}")


def InceptionV3(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """InceptionV3 (23,851,784 parameters with the top), Keras 2's arguments and defaults."""
    reject_unknown("InceptionV3", kwargs)
    _weights.check_weights_argument(weights, include_top, classes)
    shape = obtain_input_shape(input_shape, 299, 75, backend.image_data_format(), include_top, weights)
    inputs = image_input(input_tensor, shape)
    axis = channel_axis()
    x = _chain(inputs, ((32, 3, 3, 2, "valid"), (32, 3, 3, 1, "valid"), (64, 3, 3)))
    x = MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = _chain(x, ((80, 1, 1, 1, "valid"), (192, 3, 3, 1, "valid")))
    x = MaxPooling2D((3, 3), strides=(2, 2))(x)
    for i, pool_filters in enumerate((32, 64, 64)):
        x = _module_a(x, pool_filters, f"mixed{i}")
    x = concatenate(
        [
            _chain(x, ((384, 3, 3, 2, "valid"),)),
            _chain(x, ((64, 1, 1), (96, 3, 3), (96, 3, 3, 2, "valid"))),
            MaxPooling2D((3, 3), strides=(2, 2))(x),
        ],
        axis=axis,
        name="mixed3",
    )
    for i, mid in enumerate((128, 160, 160, 192)):
        x = _module_c(x, mid, f"mixed{4 + i}")
    x = concatenate(
        [
            _chain(x, ((192, 1, 1), (320, 3, 3, 2, "valid"))),
            _chain(x, ((192, 1, 1), (192, 1, 7), (192, 7, 1), (192, 3, 3, 2, "valid"))),
            MaxPooling2D((3, 3), strides=(2, 2))(x),
        ],
        axis=axis,
        name="mixed8",
    )
    for i in range(2):
        x = _module_e(x, i)
    x = classifier_or_pooling(x, include_top, pooling, classes)
    return _weights.load(Model(source_inputs(inputs), x, name="inception_v3"), weights, _FILES[include_top])
