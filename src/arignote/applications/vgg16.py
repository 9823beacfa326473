"""VGG16 (Simonyan & Zisserman 2014) with Keras 2's layer names and weight files (VGG19: :mod:`.vgg19`).

Five blocks of 3x3 convolutions (``block{b}_conv{i}``) each closed by a 2x2 max pooling
(``block{b}_pool``); the top is ``flatten``, ``fc1``, ``fc2`` (4096 units) and ``predictions``.
Inputs are prepared with :func:`preprocess_input` (``caffe`` mode: BGR, mean-centred).

Example::

    >>> model = VGG16(weights=None, include_top=False, input_shape=(32, 32, 3))
    >>> model.output_shape
    (None, 1, 1, 512)
"""

from __future__ import annotations

from typing import Any

from arignote import backend
from arignote.applications import _weights
from arignote.applications._common import (
    classifier_or_pooling,
    image_input,
    obtain_input_shape,
    reject_unknown,
    source_inputs,
)
from arignote.applications.imagenet_utils import decode_predictions
from arignote.applications.imagenet_utils import preprocess_input as _preprocess
from arignote.layers import Conv2D, Dense, Flatten, MaxPooling2D
from arignote.models import Model

__all__ = ["VGG16", "preprocess_input", "decode_predictions"]

_V01 = _weights.FCHOLLET + "v0.1/"
_FILES = {
    ("vgg16", True): _weights.WeightFile(
        "vgg16_weights_tf_dim_ordering_tf_kernels.h5",
        _V01 + "vgg16_weights_tf_dim_ordering_tf_kernels.h5",
        "64373286793e3c8b2b4e3219cbf3544b",
    ),
    ("vgg16", False): _weights.WeightFile(
        "vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5",
        _V01 + "vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5",
        "6d6bbae143d832006294945121d1f1fc",
    ),
    ("vgg19", True): _weights.WeightFile(
        "vgg19_weights_tf_dim_ordering_tf_kernels.h5",
        _V01 + "vgg19_weights_tf_dim_ordering_tf_kernels.h5",
        "cbe5617147190e668d6c5d5026f83318",
    ),
    ("vgg19", False): _weights.WeightFile(
        "vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5",
        _V01 + "vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5",
        "253f8cb515780f3b799900260a226db6",
    ),
}
# convolutions per block and their filters
_BLOCKS = {
    "vgg16": ((2, 64), (2, 128), (3, 256), (3, 512), (3, 512)),
    "vgg19": ((2, 64), (2, 128), (4, 256), (4, 512), (4, 512)),
}


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """VGG's input preparation: ``caffe`` mode (RGB -> BGR, ImageNet means subtracted)."""
    return _preprocess(x, data_format, mode="caffe", **kwargs)


def build_vgg(
    name: str,
    include_top: bool,
    weights: Any,
    input_tensor: Any,
    input_shape: Any,
    pooling: Any,
    classes: int,
) -> Model:
    _weights.check_weights_argument(weights, include_top, classes)
    shape = obtain_input_shape(input_shape, 224, 32, backend.image_data_format(), include_top, weights)
    inputs = image_input(input_tensor, shape)
    x = inputs
    for b, (convs, filters) in enumerate(_BLOCKS[name], start=1):
        for i in range(1, convs + 1):
            x = Conv2D(filters, (3, 3), activation="relu", padding="same", name=f"block{b}_conv{i}")(x)
        x = MaxPooling2D((2, 2), strides=(2, 2), name=f"block{b}_pool")(x)
    if include_top:
        x = Flatten(name="flatten")(x)
        x = Dense(4096, activation="relu", name="fc1")(x)
        x = Dense(4096, activation="relu", name="fc2")(x)
        x = Dense(classes, activation="softmax", name="predictions")(x)
    else:
        x = classifier_or_pooling(x, False, pooling, classes)
    model = Model(source_inputs(inputs), x, name=name)
    return _weights.load(model, weights, _FILES[(name, include_top)])


def VGG16(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """VGG16 (138,357,544 parameters with the top), Keras 2's arguments and defaults."""
    reject_unknown("VGG16", kwargs)
    return build_vgg("vgg16", include_top, weights, input_tensor, input_shape, pooling, classes)
