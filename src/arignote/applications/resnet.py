"""ResNet50/101/152 as ``keras.applications.resnet`` has them (keras_applications 1.0.8's
``resnet_common``): layer names ``conv1_conv``, ``conv2_block1_0_conv``, ..., top ``probs``.

This ``ResNet50`` is not :func:`arignote.applications.ResNet50` (Keras 2's older ``resnet50``
module, names ``res2a_branch2a``, top ``fc1000``): the two have the same parameters but different
layer names, batch-normalization epsilon and weight files. Inputs: ``caffe`` preprocessing
(RGB -> BGR, ImageNet means subtracted).

Example::

    >>> from arignote.applications.resnet import ResNet101, preprocess_input
    >>> model = ResNet101(weights=None, include_top=False, input_shape=(64, 64, 3), pooling="avg")
    >>> model.output_shape, model.layers[2].name
    ((None, 2048), 'conv1_conv')
"""

from __future__ import annotations

from typing import Any

from arignote.applications._resnet_common import BLOCKS, ResNet, stacks_v1
from arignote.applications.imagenet_utils import decode_predictions
from arignote.applications.imagenet_utils import preprocess_input as _preprocess
from arignote.models import Model

__all__ = ["ResNet50", "ResNet101", "ResNet152", "preprocess_input", "decode_predictions"]


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """ResNet's input preparation: ``caffe`` mode (RGB -> BGR, ImageNet means subtracted)."""
    return _preprocess(x, data_format, mode="caffe", **kwargs)


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
    return ResNet(stacks_v1(BLOCKS[50]), False, True, "resnet50", include_top, weights, input_tensor,
                  input_shape, pooling, classes, **kwargs)


def ResNet101(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """ResNet101 (44,707,176 parameters with the top), Keras 2's arguments and defaults."""
    return ResNet(stacks_v1(BLOCKS[101]), False, True, "resnet101", include_top, weights, input_tensor,
                  input_shape, pooling, classes, **kwargs)


def ResNet152(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """ResNet152 (60,419,944 parameters with the top), Keras 2's arguments and defaults."""
    return ResNet(stacks_v1(BLOCKS[152]), False, True, "resnet152", include_top, weights, input_tensor,
                  input_shape, pooling, classes, **kwargs)
