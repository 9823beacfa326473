"""MobileNetV2 (Sandler et al. 2018) with Keras 2's layer names (``block_{i}_expand``, ``..._project``).

Seventeen inverted residual blocks (1x1 expansion, 3x3 depthwise, 1x1 linear projection, a
shortcut when shapes allow), widths rounded to multiples of 8. ImageNet weights exist for
``alpha`` in 0.35/0.5/0.75/1.0/1.3/1.4 at 96/128/160/192/224 pixels. Inputs: ``tf`` preprocessing.

Example::

    >>> MobileNetV2(weights=None, include_top=False, input_shape=(32, 32, 3), alpha=0.35).output_shape
    (None, 1, 1, 1280)
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
from arignote.applications.mobilenet import imagenet_side, square_side
from arignote.layers import Add, BatchNormalization, Conv2D, DepthwiseConv2D, ReLU, ZeroPadding2D
from arignote.models import Model

__all__ = ["MobileNetV2", "preprocess_input", "decode_predictions", "correct_pad"]

_BASE = "https://github.com/JonathanCMitchell/mobilenet_v2_keras/releases/download/v1.1/"
_SIZES = (96, 128, 160, 192, 224)
_ALPHAS = (0.35, 0.5, 0.75, 1.0, 1.3, 1.4)
# (filters, stride, expansion) of the 17 inverted residual blocks
_BLOCKS = (
    (16, 1, 1),
    (24, 2, 6),
    (24, 1, 6),
    (32, 2, 6),
    (32, 1, 6),
    (32, 1, 6),
    (64, 2, 6),
    (64, 1, 6),
    (64, 1, 6),
    (64, 1, 6),
    (96, 1, 6),
    (96, 1, 6),
    (96, 1, 6),
    (160, 2, 6),
    (160, 1, 6),
    (160, 1, 6),
    (320, 1, 6),
)
_BN = {"epsilon": 1e-3, "momentum": 0.999}


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """MobileNetV2's input preparation: ``tf`` mode (pixels scaled to -1..1)."""
    return _preprocess(x, data_format, mode="tf", **kwargs)


def make_divisible(v: float, divisor: int = 8) -> int:
    """``v`` rounded to a multiple of ``divisor`` (at least ``divisor``), never more than 10 % down."""
    rounded = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


def correct_pad(inputs: Any, kernel_size: int | tuple) -> tuple:
    """The zero padding that makes a strided ``kernel_size`` convolution 'same' as TensorFlow pads it
    (more at the bottom/right): ``((top, bottom), (left, right))``."""
    first = backend.image_data_format() == "channels_first"
    size = int_shape(inputs)[2:4] if first else int_shape(inputs)[1:3]
    k = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
    half = (k[0] // 2, k[1] // 2)
    return ((half[0] - adjust[0], half[0]), (half[1] - adjust[1], half[1]))


def _inverted_residual(x: Any, filters: int, stride: int, expansion: int, alpha: float, block: int) -> Any:
    axis = channel_axis()
    in_channels = int_shape(x)[axis]
    out_channels = make_divisible(int(filters * alpha))
    prefix = f"block_{block}_" if block else "expanded_conv_"
    y = x
    if block:
        y = Conv2D(
            expansion * in_channels, kernel_size=1, padding="same", use_bias=False, name=prefix + "expand"
        )(y)
        y = ReLU(6.0, name=prefix + "expand_relu")(
            BatchNormalization(axis=axis, **_BN, name=prefix + "expand_BN")(y)
        )
    if stride == 2:
        y = ZeroPadding2D(padding=correct_pad(y, 3), name=prefix + "pad")(y)
    y = DepthwiseConv2D(
        kernel_size=3,
        strides=stride,
        use_bias=False,
        padding="same" if stride == 1 else "valid",
        name=prefix + "depthwise",
    )(y)
    y = ReLU(6.0, name=prefix + "depthwise_relu")(
        BatchNormalization(axis=axis, **_BN, name=prefix + "depthwise_BN")(y)
    )
    y = Conv2D(out_channels, kernel_size=1, padding="same", use_bias=False, name=prefix + "project")(y)
    y = BatchNormalization(axis=axis, **_BN, name=prefix + "project_BN")(y)
    if in_channels == out_channels and stride == 1:
        return Add(name=prefix + "add")([x, y])
    return y


def MobileNetV2(
    input_shape: Any = None,
    alpha: float = 1.0,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """MobileNetV2 (3,538,984 parameters at alpha 1.0 with the top), Keras 2's arguments and defaults."""
    reject_unknown("MobileNetV2", kwargs)
    _weights.check_weights_argument(weights, include_top, classes)
    if input_shape is None and input_tensor is not None:
        input_shape = int_shape(input_tensor)[1:]
    shape = obtain_input_shape(
        input_shape, square_side(input_shape, _SIZES), 32, backend.image_data_format(), include_top, weights
    )
    rows = shape[1] if backend.image_data_format() == "channels_first" else shape[0]
    if weights == "imagenet":
        if alpha not in _ALPHAS:
            raise ValueError(f"MobileNetV2: ImageNet weights exist for alpha in {list(_ALPHAS)}; got {alpha}")
        rows = imagenet_side(shape, _SIZES, "MobileNetV2")
    inputs = image_input(input_tensor, shape)
    axis = channel_axis()
    x = ZeroPadding2D(padding=correct_pad(inputs, 3), name="Conv1_pad")(inputs)
    x = Conv2D(
        make_divisible(32 * alpha),
        kernel_size=3,
        strides=(2, 2),
        padding="valid",
        use_bias=False,
        name="Conv1",
    )(x)
    x = ReLU(6.0, name="Conv1_relu")(BatchNormalization(axis=axis, **_BN, name="bn_Conv1")(x))
    for block, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = _inverted_residual(x, filters, stride, expansion, alpha, block)
    last = make_divisible(1280 * alpha) if alpha > 1.0 else 1280
    x = Conv2D(last, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = ReLU(6.0, name="out_relu")(BatchNormalization(axis=axis, **_BN, name="Conv_1_bn")(x))
    x = classifier_or_pooling(x, include_top, pooling, classes, top_name="Logits", pool_name=None)
    model = Model(source_inputs(inputs), x, name=f"mobilenetv2_{alpha:0.2f}_{rows}")
    file = None
    if weights == "imagenet":
        fname = (
            f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{alpha}_{rows}"
            f"{'' if include_top else '_no_top'}.h5"
        )
        file = _weights.WeightFile(fname, _BASE + fname, None)
    return _weights.load(model, weights, file)
