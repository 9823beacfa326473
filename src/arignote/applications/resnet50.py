"""ResNet50 (He et al. 2015) with Keras 2's layer names (``res2a_branch2a``, ``bn2a_branch2a``, ...).

Bottleneck blocks of 1x1 -> kxk -> 1x1 convolutions with batch normalization; the first block
of each stage projects the shortcut (``res{stage}a_branch1``). Inputs: ``caffe`` preprocessing.

Example::

    >>> ResNet50(weights=None, include_top=False, input_shape=(64, 64, 3)).output_shape
    (None, 2, 2, 2048)
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
from arignote.layers import Activation, BatchNormalization, Conv2D, MaxPooling2D, ZeroPadding2D, add
from arignote.models import Model

__all__ = ["ResNet50", "preprocess_input", "decode_predictions"]

_V02 = _weights.FCHOLLET + "v0.2/"
_FILES = {
    True: _weights.WeightFile(
        "resnet50_weights_tf_dim_ordering_tf_kernels.h5",
        _V02 + "resnet50_weights_tf_dim_ordering_tf_kernels.h5",
        "a7b3fe01876f51b976af0dea6bc144eb",
    ),
    False: _weights.WeightFile(
        "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5",
        _V02 + "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5",
        "a268eb855778b3df3c7506639542a6af",
    ),
}
# (stage, filters of the three convolutions, blocks)
_STAGES = ((2, (64, 64, 256), 3), (3, (128, 128, 512), 4), (4, (256, 256, 1024), 6), (5, (512, 512, 2048), 3))


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """ResNet50's input preparation: ``caffe`` mode (RGB -> BGR, ImageNet means subtracted)."""
    return _preprocess(x, data_format, mode="caffe", **kwargs)


def _bottleneck(x: Any, filters: tuple, stage: int, block: str, strides: int | None) -> Any:
    """One residual block; ``strides`` given: the first block of a stage, with a projected shortcut."""
    axis = channel_axis()
    conv, bn = f"res{stage}{block}_branch", f"bn{stage}{block}_branch"
    f1, f2, f3 = filters
    s = (strides, strides) if strides else (1, 1)
    y = Conv2D(f1, (1, 1), strides=s, kernel_initializer="he_normal", name=conv + "2a")(x)
    y = Activation("relu")(BatchNormalization(axis=axis, name=bn + "2a")(y))
    y = Conv2D(f2, (3, 3), padding="same", kernel_initializer="he_normal", name=conv + "2b")(y)
    y = Activation("relu")(BatchNormalization(axis=axis, name=bn + "2b")(y))
    y = Conv2D(f3, (1, 1), kernel_initializer="he_normal", name=conv + "2c")(y)
    y = BatchNormalization(axis=axis, name=bn + "2c")(y)
    if strides:
        x = Conv2D(f3, (1, 1), strides=s, kernel_initializer="he_normal", name=conv + "1")(x)
        x = BatchNormalization(axis=axis, name=bn + "1")(x)
    return Activation("relu")(add([y, x]))


def ResNet50(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """ResNet50 (25,636,712 parameters with the top), Keras 2's arguments and defaults."""
    reject_unknown("ResNet50", kwargs)
    _weights.check_weights_argument(weights, include_top, classes)
    shape = obtain_input_shape(input_shape, 224, 32, backend.image_data_format(), include_top, weights)
    inputs = image_input(input_tensor, shape)
    x = ZeroPadding2D(padding=(3, 3), name="conv1_pad")(inputs)
    x = Conv2D(64, (7, 7), strides=(2, 2), padding="valid", kernel_initializer="he_normal", name="conv1")(x)
    x = Activation("relu")(BatchNormalization(axis=channel_axis(), name="bn_conv1")(x))
    x = ZeroPadding2D(padding=(1, 1), name="pool1_pad")(x)
    x = MaxPooling2D((3, 3), strides=(2, 2))(x)
    for stage, filters, blocks in _STAGES:
        for i in range(blocks):
            strides = (1 if stage == 2 else 2) if i == 0 else None
            x = _bottleneck(x, filters, stage, "abcdef"[i], strides)
    x = classifier_or_pooling(x, include_top, pooling, classes, top_name="fc1000")
    return _weights.load(Model(source_inputs(inputs), x, name="resnet50"), weights, _FILES[include_top])
