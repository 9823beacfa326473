"""NASNetMobile and NASNetLarge (Zoph et al. 2017) with Keras 2's layer names and weight files.

A stem, then three stacks of normal cells separated by reduction cells; every cell combines its
input ``h`` with the previous cell's output ``p`` (adjusted to the same shape) through separable
convolutions, poolings and sums. Keras 2 builds NASNet channels-last only, and so does arignote.
Inputs: ``tf`` preprocessing (-1..1).

Example::

    >>> NASNetMobile(weights=None, input_shape=(32, 32, 3), include_top=False).output_shape
    (None, 1, 1, 1056)
"""

from __future__ import annotations

from typing import Any

from arignote import backend
from arignote.applications import _weights
from arignote.applications._common import (
    classifier_or_pooling,
    image_input,
    int_shape,
    obtain_input_shape,
    reject_unknown,
    source_inputs,
)
from arignote.applications.imagenet_utils import decode_predictions
from arignote.applications.imagenet_utils import preprocess_input as _preprocess
from arignote.applications.mobilenet_v2 import correct_pad
from arignote.layers import (
    Activation,
    AveragePooling2D,
    BatchNormalization,
    Conv2D,
    Cropping2D,
    MaxPooling2D,
    SeparableConv2D,
    ZeroPadding2D,
    add,
    concatenate,
)
from arignote.models import Model

__all__ = ["NASNet", "NASNetMobile", "NASNetLarge", "preprocess_input", "decode_predictions"]

_BASE = "https://github.com/titu1994/Keras-NASNet/releases/download/v1.2/"
_FILES = {
    ("mobile", True): _weights.WeightFile(
        "nasnet_mobile.h5", _BASE + "NASNet-mobile.h5", "020fb642bf7360b370c678b08e0adf61"
    ),
    ("mobile", False): _weights.WeightFile(
        "nasnet_mobile_no_top.h5", _BASE + "NASNet-mobile-no-top.h5", "1ed92395b5b598bdda52abe5c0dbfd63"
    ),
    ("large", True): _weights.WeightFile(
        "nasnet_large.h5", _BASE + "NASNet-large.h5", "11577c9a518f0070763c2b964a382f17"
    ),
    ("large", False): _weights.WeightFile(
        "nasnet_large_no_top.h5", _BASE + "NASNet-large-no-top.h5", "d81d89dc07e6e56530c4e77faddd61b5"
    ),
}
_BN = {"axis": -1, "momentum": 0.9997, "epsilon": 1e-3}


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """NASNet's input preparation: ``tf`` mode (pixels scaled to -1..1)."""
    return _preprocess(x, data_format, mode="tf", **kwargs)


def _conv1x1(x: Any, filters: int, name: str) -> Any:
    return Conv2D(
        filters,
        (1, 1),
        strides=(1, 1),
        padding="same",
        use_bias=False,
        name=name,
        kernel_initializer="he_normal",
    )(x)


def _separable(x: Any, filters: int, kernel: tuple = (3, 3), strides: tuple = (1, 1), block: str = "") -> Any:
    """ReLU-separable-BN twice; a strided first one is padded as TensorFlow pads."""
    x = Activation("relu")(x)
    pad = "same"
    if strides == (2, 2):
        x = ZeroPadding2D(padding=correct_pad(x, kernel), name=f"separable_conv_1_pad_{block}")(x)
        pad = "valid"
    x = SeparableConv2D(
        filters,
        kernel,
        strides=strides,
        name=f"separable_conv_1_{block}",
        padding=pad,
        use_bias=False,
        kernel_initializer="he_normal",
    )(x)
    x = BatchNormalization(**_BN, name=f"separable_conv_1_bn_{block}")(x)
    x = Activation("relu")(x)
    x = SeparableConv2D(
        filters,
        kernel,
        name=f"separable_conv_2_{block}",
        padding="same",
        use_bias=False,
        kernel_initializer="he_normal",
    )(x)
    return BatchNormalization(**_BN, name=f"separable_conv_2_bn_{block}")(x)


def _adjust(p: Any, ip: Any, filters: int, block: str) -> Any:
    """The previous cell's output ``p`` shaped as ``ip``: halved (two offset 1x1 paths) or projected."""
    if p is None:
        return ip
    p_shape, ip_shape = int_shape(p), int_shape(ip)
    if p_shape[-2] != ip_shape[-2]:
        p = Activation("relu", name=f"adjust_relu_1_{block}")(p)
        p1 = AveragePooling2D((1, 1), strides=(2, 2), padding="valid", name=f"adjust_avg_pool_1_{block}")(p)
        p1 = _conv1x1(p1, filters // 2, f"adjust_conv_1_{block}")
        p2 = Cropping2D(cropping=((1, 0), (1, 0)))(ZeroPadding2D(padding=((0, 1), (0, 1)))(p))
        p2 = AveragePooling2D((1, 1), strides=(2, 2), padding="valid", name=f"adjust_avg_pool_2_{block}")(p2)
        p2 = _conv1x1(p2, filters // 2, f"adjust_conv_2_{block}")
        p = concatenate([p1, p2], axis=-1)
        return BatchNormalization(**_BN, name=f"adjust_bn_{block}")(p)
    if p_shape[-1] != filters:
        p = _conv1x1(Activation("relu")(p), filters, f"adjust_conv_projection_{block}")
        return BatchNormalization(**_BN, name=f"adjust_bn_{block}")(p)
    return p


def _squeeze(ip: Any, filters: int, kind: str, block: str) -> Any:
    h = _conv1x1(Activation("relu")(ip), filters, f"{kind}_conv_1_{block}")
    return BatchNormalization(**_BN, name=f"{kind}_bn_1_{block}")(h)


def _avg3(x: Any, strides: int, name: str, padding: str = "same") -> Any:
    return AveragePooling2D((3, 3), strides=(strides, strides), padding=padding, name=name)(x)


def _normal_cell(ip: Any, p: Any, filters: int, block: str) -> tuple:
    p = _adjust(p, ip, filters, block)
    h = _squeeze(ip, filters, "normal", block)
    x1 = add(
        [
            _separable(h, filters, (5, 5), block=f"normal_left1_{block}"),
            _separable(p, filters, block=f"normal_right1_{block}"),
        ],
        name=f"normal_add_1_{block}",
    )
    x2 = add(
        [
            _separable(p, filters, (5, 5), block=f"normal_left2_{block}"),
            _separable(p, filters, (3, 3), block=f"normal_right2_{block}"),
        ],
        name=f"normal_add_2_{block}",
    )
    x3 = add([_avg3(h, 1, f"normal_left3_{block}"), p], name=f"normal_add_3_{block}")
    x4 = add(
        [_avg3(p, 1, f"normal_left4_{block}"), _avg3(p, 1, f"normal_right4_{block}")],
        name=f"normal_add_4_{block}",
    )
    x5 = add([_separable(h, filters, block=f"normal_left5_{block}"), h], name=f"normal_add_5_{block}")
    return concatenate([p, x1, x2, x3, x4, x5], axis=-1, name=f"normal_concat_{block}"), ip


def _reduction_cell(ip: Any, p: Any, filters: int, block: str) -> tuple:
    p = _adjust(p, ip, filters, block)
    h = _squeeze(ip, filters, "reduction", block)
    h3 = ZeroPadding2D(padding=correct_pad(h, 3), name=f"reduction_pad_1_{block}")(h)
    x1 = add(
        [
            _separable(h, filters, (5, 5), (2, 2), f"reduction_left1_{block}"),
            _separable(p, filters, (7, 7), (2, 2), f"reduction_right1_{block}"),
        ],
        name=f"reduction_add_1_{block}",
    )
    x2 = add(
        [
            MaxPooling2D((3, 3), strides=(2, 2), padding="valid", name=f"reduction_left2_{block}")(h3),
            _separable(p, filters, (7, 7), (2, 2), f"reduction_right2_{block}"),
        ],
        name=f"reduction_add_2_{block}",
    )
    x3 = add(
        [
            _avg3(h3, 2, f"reduction_left3_{block}", padding="valid"),
            _separable(p, filters, (5, 5), (2, 2), f"reduction_right3_{block}"),
        ],
        name=f"reduction_add3_{block}",
    )
    x4 = add([x2, _avg3(x1, 1, f"reduction_left4_{block}")])
    x5 = add(
        [
            _separable(x1, filters, (3, 3), block=f"reduction_left4_{block}"),
            MaxPooling2D((3, 3), strides=(2, 2), padding="valid", name=f"reduction_right5_{block}")(h3),
        ],
        name=f"reduction_add4_{block}",
    )
    return concatenate([x2, x3, x4, x5], axis=-1, name=f"reduction_concat_{block}"), ip


def NASNet(
    input_shape: Any = None,
    penultimate_filters: int = 4032,
    num_blocks: int = 6,
    stem_block_filters: int = 96,
    skip_reduction: bool = True,
    filter_multiplier: int = 2,
    include_top: bool = True,
    weights: Any = None,
    input_tensor: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    default_size: int | None = None,
    **kwargs: Any,
) -> Model:
    """A NASNet (Keras 2's generic builder; NASNetMobile and NASNetLarge are its two published sizes)."""
    reject_unknown("NASNet", kwargs)
    _weights.check_weights_argument(weights, include_top, classes)
    if backend.image_data_format() != "channels_last":
        raise ValueError(
            "NASNet is built channels_last only (as in Keras 2, which switched the data format "
            "for it); set image_data_format('channels_last') and transpose the images"
        )
    if isinstance(input_shape, tuple) and None in input_shape and weights == "imagenet":
        raise ValueError(f"NASNet with the ImageNet weights needs a fixed input_shape; got {input_shape}")
    if penultimate_filters % (24 * filter_multiplier**2):
        raise ValueError(
            f"penultimate_filters must be a multiple of 24 * filter_multiplier ** 2 = "
            f"{24 * filter_multiplier**2}; got {penultimate_filters}"
        )
    default_size = default_size or 331
    shape = obtain_input_shape(input_shape, default_size, 32, "channels_last", True, weights)
    inputs = image_input(input_tensor, shape)
    filters = penultimate_filters // 24
    x = Conv2D(
        stem_block_filters,
        (3, 3),
        strides=(2, 2),
        padding="valid",
        use_bias=False,
        name="stem_conv1",
        kernel_initializer="he_normal",
    )(inputs)
    x = BatchNormalization(**_BN, name="stem_bn1")(x)
    p = None
    x, p = _reduction_cell(x, p, filters // filter_multiplier**2, "stem_1")
    x, p = _reduction_cell(x, p, filters // filter_multiplier, "stem_2")
    for stack in range(3):
        width = filters * filter_multiplier**stack
        if stack:
            x, p0 = _reduction_cell(x, p, width, f"reduce_{stack * num_blocks}")
            p = p if skip_reduction else p0
        for i in range(num_blocks):
            x, p = _normal_cell(x, p, width, str(stack * num_blocks + i + (1 if stack else 0)))
    x = Activation("relu")(x)
    x = classifier_or_pooling(x, include_top, pooling, classes, pool_name=None)
    model = Model(source_inputs(inputs), x, name="NASNet")
    file = None
    if weights == "imagenet":
        size = {224: "mobile", 331: "large"}.get(default_size)
        if size is None:
            raise ValueError(
                "NASNet: ImageNet weights exist for NASNetMobile (224) and NASNetLarge (331) only"
            )
        file = _FILES[(size, include_top)]
    return _weights.load(model, weights, file)


def NASNetMobile(
    input_shape: Any = None,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """NASNetMobile (5,326,716 parameters with the top)."""
    return NASNet(
        input_shape,
        penultimate_filters=1056,
        num_blocks=4,
        stem_block_filters=32,
        skip_reduction=False,
        filter_multiplier=2,
        include_top=include_top,
        weights=weights,
        input_tensor=input_tensor,
        pooling=pooling,
        classes=classes,
        default_size=224,
        **kwargs,
    )


def NASNetLarge(
    input_shape: Any = None,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """NASNetLarge (88,949,818 parameters with the top)."""
    return NASNet(
        input_shape,
        penultimate_filters=4032,
        num_blocks=6,
        stem_block_filters=96,
        skip_reduction=True,
        filter_multiplier=2,
        include_top=include_top,
        weights=weights,
        input_tensor=input_tensor,
        pooling=pooling,
        classes=classes,
        default_size=331,
        **kwargs,
    )
