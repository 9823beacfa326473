"""DenseNet121/169/201 (Huang et al. 2016) with Keras 2's layer names (``conv2_block1_1_conv``, ...).

Four dense blocks (each layer: BN-ReLU-1x1 conv to 128, BN-ReLU-3x3 conv to 32, concatenated
to its input) joined by transition blocks that halve the channels and the image.
Inputs: ``torch`` preprocessing (0..1, then ImageNet mean and deviation).

Example::

    >>> DenseNet121(weights=None, include_top=False, input_shape=(32, 32, 3)).output_shape
    (None, 1, 1, 1024)
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
    MaxPooling2D,
    ZeroPadding2D,
)
from arignote.models import Model

__all__ = ["DenseNet", "DenseNet121", "DenseNet169", "DenseNet201", "preprocess_input", "decode_predictions"]

_BASE = "https://github.com/keras-team/keras-applications/releases/download/densenet/"
_HASHES = {  # (blocks, include_top) -> MD5 of Keras 2's file
    (121, True): "9d60b8095a5708f2dcce2bca79d332c7",
    (169, True): "d699b8f76981ab1b30698df4c175e90b",
    (201, True): "1ceb130c1ea1b78c3bf6114dbdfd8807",
    (121, False): "30ee3e1110167f948a6b9946edeeb738",
    (169, False): "b8c4d4c20dd625c148057b9ff1c1176b",
    (201, False): "c13680b51ded0fb44dff2d8f86ac8bb1",
}
_DEPTHS = {(6, 12, 24, 16): 121, (6, 12, 32, 32): 169, (6, 12, 48, 32): 201}
_EPS = 1.001e-5


def preprocess_input(x: Any, data_format: str | None = None, **kwargs: Any) -> Any:
    """DenseNet's input preparation: ``torch`` mode (0..1, ImageNet mean and deviation)."""
    return _preprocess(x, data_format, mode="torch", **kwargs)


def _bn_relu(x: Any, name: str, sep: str = "_") -> Any:
    x = BatchNormalization(axis=channel_axis(), epsilon=_EPS, name=f"{name}{sep}bn")(x)
    return Activation("relu", name=f"{name}{sep}relu")(x)


def _dense_layer(x: Any, growth_rate: int, name: str) -> Any:
    y = Conv2D(4 * growth_rate, 1, use_bias=False, name=name + "_1_conv")(_bn_relu(x, name + "_0"))
    y = Conv2D(growth_rate, 3, padding="same", use_bias=False, name=name + "_2_conv")(
        _bn_relu(y, name + "_1")
    )
    return Concatenate(axis=channel_axis(), name=name + "_concat")([x, y])


def _transition(x: Any, reduction: float, name: str) -> Any:
    x = _bn_relu(x, name)
    x = Conv2D(int(int_shape(x)[channel_axis()] * reduction), 1, use_bias=False, name=name + "_conv")(
        x
    )
    return AveragePooling2D(2, strides=2, name=name + "_pool")(x)


def DenseNet(
    blocks: Any,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """A DenseNet with ``blocks`` layers in its four dense blocks (Keras 2's generic builder)."""
    reject_unknown("DenseNet", kwargs)
    _weights.check_weights_argument(weights, include_top, classes)
    blocks = tuple(blocks)
    depth = _DEPTHS.get(blocks)
    if weights == "imagenet" and depth is None:
        raise ValueError(f"DenseNet: ImageNet weights exist for blocks {sorted(_DEPTHS)}; got {blocks}")
    shape = obtain_input_shape(input_shape, 224, 32, backend.image_data_format(), include_top, weights)
    inputs = image_input(input_tensor, shape)
    x = ZeroPadding2D(padding=((3, 3), (3, 3)))(inputs)
    x = Conv2D(64, 7, strides=2, use_bias=False, name="conv1/conv")(x)
    x = _bn_relu(x, "conv1", sep="/")
    x = ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = MaxPooling2D(3, strides=2, name="pool1")(x)
    for stage, n in enumerate(blocks, start=2):
        for i in range(1, n + 1):
            x = _dense_layer(x, 32, f"conv{stage}_block{i}")
        if stage < 5:
            x = _transition(x, 0.5, f"pool{stage}")
    x = BatchNormalization(axis=channel_axis(), epsilon=_EPS, name="bn")(x)
    x = Activation("relu", name="relu")(x)
    x = classifier_or_pooling(
        x, include_top, pooling, classes, top_name="fc1000", pooling_names=("avg_pool", "max_pool")
    )
    model = Model(source_inputs(inputs), x, name=f"densenet{depth}" if depth else "densenet")
    file = None
    if weights == "imagenet":
        fname = f"densenet{depth}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
        file = _weights.WeightFile(fname, _BASE + fname, _HASHES[(depth, include_top)])
    return _weights.load(model, weights, file)


def DenseNet121(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """DenseNet121 (8,062,504 parameters with the top)."""
    return DenseNet(
        (6, 12, 24, 16), include_top, weights, input_tensor, input_shape, pooling, classes, **kwargs
    )


def DenseNet169(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """DenseNet169 (14,307,880 parameters with the top)."""
    return DenseNet(
        (6, 12, 32, 32), include_top, weights, input_tensor, input_shape, pooling, classes, **kwargs
    )


def DenseNet201(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """DenseNet201 (20,242,984 parameters with the top)."""
    return DenseNet(
        (6, 12, 48, 32), include_top, weights, input_tensor, input_shape, pooling, classes, **kwargs
    )
