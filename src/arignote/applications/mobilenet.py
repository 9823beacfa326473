"""MobileNet (Howard et al. 2017) with Keras 2's layer names (``conv_dw_{i}``, ``conv_pw_{i}``, ...).

Thirteen depthwise-separable blocks (3x3 depthwise, 1x1 pointwise, each with batch normalization
and ReLU6); ``alpha`` thins every layer, ``depth_multiplier`` widens the depthwise ones.
ImageNet weights exist for ``alpha`` in 0.25/0.5/0.75/1.0 at 128/160/192/224 pixels.
Inputs: ``tf`` preprocessing (-1..1).

Example::

    >>> MobileNet(weights=None, include_top=False, input_shape=(32, 32, 3), alpha=0.25).output_shape
    (None, 1, 1, 256)
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
    BatchNormalization,
    Conv2D,
    DepthwiseConv2D,
    Dropout,
    GlobalAveragePooling2D,
    ReLU,
    Reshape,
    ZeroPadding2D,
)
from arignote.models import Model

__all__ = ["MobileNet", "preprocess_input", "decode_predictions"]

_BASE = _weights.FCHOLLET + "v0.6/"
_SIZES = (128, 160, 192, 224)
_ALPHAS = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0", 0.25: "2_5"}
# (pointwise filters, stride) of the 13 depthwise-separable blocks
_BLOCKS = (
    (64, 1),
    (128, 2),
    (128, 1),
    (256, 2),
    (256, 1),
    (512, 2),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (1024, 2),
    (1024, 1),
)


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """MobileNet's input preparation: ``tf`` mode (pixels scaled to -1..1)."""
    return _preprocess(x, data_format, mode="tf", **kwargs)


def square_side(input_shape: Any, sizes: tuple, default: int = 224) -> int:
    """The side of a square ``input_shape`` that ImageNet weights exist for, else ``default``."""
    if input_shape is None:
        return default
    rows, cols = input_shape[1:3] if backend.image_data_format() == "channels_first" else input_shape[:2]
    return rows if rows == cols and rows in sizes else default


def imagenet_side(shape: tuple, sizes: tuple, where: str) -> int:
    """The side of ``shape``, which must be square and one of ``sizes`` for the ImageNet weights."""
    rows, cols = shape[1:3] if backend.image_data_format() == "channels_first" else shape[:2]
    if rows != cols or rows not in sizes:
        raise ValueError(
            f"{where}: ImageNet weights exist for square inputs of {', '.join(map(str, sizes))} "
            f"pixels; got {rows}x{cols}. Use weights=None for other sizes."
        )
    return rows


def _depthwise_block(
    x: Any, filters: int, alpha: float, depth_multiplier: int, strides: int, block: int
) -> Any:
    axis = channel_axis()
    if strides == 2:
        x = ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block}")(x)
    x = DepthwiseConv2D(
        (3, 3),
        padding="same" if strides == 1 else "valid",
        depth_multiplier=depth_multiplier,
        strides=(strides, strides),
        use_bias=False,
        name=f"conv_dw_{block}",
    )(x)
    x = ReLU(6.0, name=f"conv_dw_{block}_relu")(BatchNormalization(axis=axis, name=f"conv_dw_{block}_bn")(x))
    x = Conv2D(int(filters * alpha), (1, 1), padding="same", use_bias=False, name=f"conv_pw_{block}")(x)
    return ReLU(6.0, name=f"conv_pw_{block}_relu")(
        BatchNormalization(axis=axis, name=f"conv_pw_{block}_bn")(x)
    )


def MobileNet(
    input_shape: Any = None,
    alpha: float = 1.0,
    depth_multiplier: int = 1,
    dropout: float = 1e-3,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """MobileNet (4,253,864 parameters at alpha 1.0 with the top), Keras 2's arguments and defaults."""
    reject_unknown("MobileNet", kwargs)
    _weights.check_weights_argument(weights, include_top, classes)
    shape = obtain_input_shape(
        input_shape, square_side(input_shape, _SIZES), 32, backend.image_data_format(), include_top, weights
    )
    rows = shape[1] if backend.image_data_format() == "channels_first" else shape[0]
    if weights == "imagenet":
        if depth_multiplier != 1:
            raise ValueError("MobileNet: depth_multiplier must be 1 with the ImageNet weights")
        if alpha not in _ALPHAS:
            raise ValueError(f"MobileNet: ImageNet weights exist for alpha in {sorted(_ALPHAS)}; got {alpha}")
        rows = imagenet_side(shape, _SIZES, "MobileNet")
    inputs = image_input(input_tensor, shape)
    x = ZeroPadding2D(padding=((0, 1), (0, 1)), name="conv1_pad")(inputs)
    x = Conv2D(int(32 * alpha), (3, 3), padding="valid", use_bias=False, strides=(2, 2), name="conv1")(x)
    x = ReLU(6.0, name="conv1_relu")(BatchNormalization(axis=channel_axis(), name="conv1_bn")(x))
    for block, (filters, strides) in enumerate(_BLOCKS, start=1):
        x = _depthwise_block(x, filters, alpha, depth_multiplier, strides, block)
    if include_top:
        first = backend.image_data_format() == "channels_first"
        width = int(1024 * alpha)
        x = GlobalAveragePooling2D()(x)
        x = Reshape((width, 1, 1) if first else (1, 1, width), name="reshape_1")(x)
        x = Dropout(dropout, name="dropout")(x)
        x = Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = Reshape((classes,), name="reshape_2")(x)
        x = Activation("softmax", name="act_softmax")(x)
    else:
        x = classifier_or_pooling(x, False, pooling, classes)
    model = Model(source_inputs(inputs), x, name=f"mobilenet_{alpha:0.2f}_{rows}")
    file = None
    if weights == "imagenet":
        fname = f"mobilenet_{_ALPHAS[alpha]}_{rows}_tf{'' if include_top else '_no_top'}.h5"
        file = _weights.WeightFile(fname, _BASE + fname, None)
    return _weights.load(model, weights, file)
