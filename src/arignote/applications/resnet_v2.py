"""ResNet50V2/101V2/152V2 as ``keras.applications.resnet_v2`` has them (keras_applications 1.0.8's
``resnet_common``): pre-activation blocks, layer names ``conv2_block1_preact_bn``, ...,
``post_bn``, top ``probs``. Inputs: ``tf`` preprocessing (scaled to -1..1), unlike ResNet's ``caffe``.

Example::

    >>> from arignote.applications.resnet_v2 import ResNet50V2, preprocess_input
    >>> model = ResNet50V2(weights=None, include_top=False, input_shape=(64, 64, 3), pooling="avg")
    >>> model.output_shape, model.layers[-2].name
    ((None, 2048), 'post_relu')
"""

from __future__ import annotations

from typing import Any

from arignote.applications._resnet_common import BLOCKS, ResNet, stacks_v2
from arignote.applications.imagenet_utils import decode_predictions
from arignote.applications.imagenet_utils import preprocess_input as _preprocess
from arignote.models import Model

__all__ = ["ResNet50V2", "ResNet101V2", "ResNet152V2", "preprocess_input", "decode_predictions"]


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """ResNetV2's input preparation: ``tf`` mode (pixels 0..255 scaled to -1..1)."""
    return _preprocess(x, data_format, mode="tf", **kwargs)


def ResNet50V2(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """ResNet50V2 (25,613,800 parameters with the top), Keras 2's arguments and defaults."""
    return ResNet(stacks_v2(BLOCKS[50]), True, True, "resnet50v2", include_top, weights, input_tensor,
                  input_shape, pooling, classes, **kwargs)


def ResNet101V2(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """ResNet101V2 (44,675,560 parameters with the top), Keras 2's arguments and defaults."""
    return ResNet(stacks_v2(BLOCKS[101]), True, True, "resnet101v2", include_top, weights, input_tensor,
                  input_shape, pooling, classes, **kwargs)


def ResNet152V2(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """ResNet152V2 (60,380,648 parameters with the top), Keras 2's arguments and defaults."""
    return ResNet(stacks_v2(BLOCKS[152]), True, True, "resnet152v2", include_top, weights, input_tensor,
                  input_shape, pooling, classes, **kwargs)
