"""The ResNet and ResNetV2 builders shared by :mod:`.resnet` and :mod:`.resnet_v2` (keras_applications'
``resnet_common``), with Keras 2's layer names (``conv1_conv``, ``conv2_block1_0_conv``, ``post_bn``).

* ResNet (He et al. 2015), :func:`block1` / :func:`stack1`: post-activation bottleneck blocks
  (1x1 -> 3x3 -> 1x1 convolutions, each followed by batch normalization), ReLU after the sum;
  the first block of a stack projects the shortcut (``_0_conv``) and carries the stride.
* ResNetV2 (He et al. 2016), :func:`block2` / :func:`stack2`: pre-activation blocks (``_preact_bn``
  before the convolutions, no ReLU after the sum, ``post_bn`` after the last stack); the *last*
  block of a stack carries the stride, its identity shortcut subsampled by a 1x1 max pooling.

Each network is a stem (7x7 stride-2 convolution and 3x3 max pooling), four stacks of
64/128/256/512-filter blocks and the top; only the number of blocks per stack differs.

Example::

    >>> model = ResNet(stacks_v2((2, 2, 2, 2)), True, True, "resnet18v2", weights=None,
    ...                include_top=False, input_shape=(32, 32, 3), pooling="avg")
    >>> model.output_shape, model.layers[-1].name
    ((None, 2048), 'avg_pool')
"""

from __future__ import annotations

from collections.abc import Callable
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
from arignote.layers import Activation, Add, BatchNormalization, Conv2D, MaxPooling2D, ZeroPadding2D
from arignote.models import Model

__all__ = ["ResNet", "block1", "stack1", "block2", "stack2", "stacks_v1", "stacks_v2", "BLOCKS"]

_BASE = "https://github.com/keras-team/keras-applications/releases/download/resnet/"
_HASHES = {  # model name -> MD5 of Keras 2's file (with the top, without)
    "resnet50": ("2cb95161c43110f7111970584f804107", "4d473c1dd8becc155b73f8504c6f6626"),
    "resnet101": ("f1aeb4b969a6efcfb50fad2f0c20cfc5", "88cf7a10940856eca736dc7b7e228a21"),
    "resnet152": ("100835be76be38e30d865e96f2aaae62", "ee4c566cf9a93f14d82f913c2dc6dd0c"),
    "resnet50v2": ("3ef43a0b657b3be2300d5770ece849e0", "fac2f116257151a9d068a22e544a4917"),
    "resnet101v2": ("6343647c601c52e1368623803854d971", "c0ed64b8031c3730f411d2eb4eea35b5"),
    "resnet152v2": ("a49b44d1979771252814e80f8ec446f9", "ed17cf2e0169df9d443503ef94b23b33"),
}
# blocks in the four stacks of each depth (the same for ResNet and ResNetV2)
BLOCKS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}
_FILTERS = (64, 128, 256, 512)
_EPS = 1.001e-5


def _bn(x: Any, name: str) -> Any:
    return BatchNormalization(axis=channel_axis(), epsilon=_EPS, name=name)(x)


def block1(
    x: Any, filters: int, kernel_size: int = 3, stride: int = 1, conv_shortcut: bool = True, name: str = ""
) -> Any:
    """A ResNet bottleneck block: ``filters`` wide inside, ``4 * filters`` out; ``stride`` on the first
    1x1 convolution; ``conv_shortcut``: project the shortcut (else it is ``x`` as is)."""
    if conv_shortcut:
        shortcut = Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(x)
        shortcut = _bn(shortcut, name + "_0_bn")
    else:
        shortcut = x
    x = Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
    x = Activation("relu", name=name + "_1_relu")(_bn(x, name + "_1_bn"))
    x = Conv2D(filters, kernel_size, padding="same", name=name + "_2_conv")(x)
    x = Activation("relu", name=name + "_2_relu")(_bn(x, name + "_2_bn"))
    x = Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    x = _bn(x, name + "_3_bn")
    x = Add(name=name + "_add")([shortcut, x])
    return Activation("relu", name=name + "_out")(x)


def stack1(x: Any, filters: int, blocks: int, stride1: int = 2, name: str = "") -> Any:
    """``blocks`` ResNet blocks named ``{name}_block1``...; the first projects and strides by ``stride1``."""
    x = block1(x, filters, stride=stride1, name=name + "_block1")
    for i in range(2, blocks + 1):
        x = block1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def block2(
    x: Any, filters: int, kernel_size: int = 3, stride: int = 1, conv_shortcut: bool = False, name: str = ""
) -> Any:
    """A ResNetV2 (pre-activation) bottleneck block; ``stride`` on the 3x3 convolution and, without
    ``conv_shortcut``, on the shortcut too (a 1x1 max pooling)."""
    preact = _bn(x, name + "_preact_bn")
    preact = Activation("relu", name=name + "_preact_relu")(preact)
    if conv_shortcut:
        shortcut = Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(preact)
    else:
        shortcut = MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = Conv2D(filters, 1, strides=1, use_bias=False, name=name + "_1_conv")(preact)
    x = Activation("relu", name=name + "_1_relu")(_bn(x, name + "_1_bn"))
    x = ZeroPadding2D(padding=((1, 1), (1, 1)), name=name + "_2_pad")(x)
    x = Conv2D(filters, kernel_size, strides=stride, use_bias=False, name=name + "_2_conv")(x)
    x = Activation("relu", name=name + "_2_relu")(_bn(x, name + "_2_bn"))
    x = Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    return Add(name=name + "_out")([shortcut, x])


def stack2(x: Any, filters: int, blocks: int, stride1: int = 2, name: str = "") -> Any:
    """``blocks`` ResNetV2 blocks: the first projects the shortcut, the last strides by ``stride1``."""
    x = block2(x, filters, conv_shortcut=True, name=name + "_block1")
    for i in range(2, blocks):
        x = block2(x, filters, name=f"{name}_block{i}")
    return block2(x, filters, stride=stride1, name=f"{name}_block{blocks}")


def stacks_v1(blocks: tuple) -> Callable[[Any], Any]:
    """ResNet's four stacks ``conv2``..``conv5`` with ``blocks`` blocks each (``conv2`` keeps the size)."""

    def stack_fn(x: Any) -> Any:
        for i, (filters, n) in enumerate(zip(_FILTERS, blocks)):
            x = stack1(x, filters, n, stride1=1 if i == 0 else 2, name=f"conv{i + 2}")
        return x

    return stack_fn


def stacks_v2(blocks: tuple) -> Callable[[Any], Any]:
    """ResNetV2's four stacks ``conv2``..``conv5`` with ``blocks`` blocks each (``conv5`` keeps the size)."""

    def stack_fn(x: Any) -> Any:
        for i, (filters, n) in enumerate(zip(_FILTERS, blocks)):
            x = stack2(x, filters, n, stride1=1 if i == len(_FILTERS) - 1 else 2, name=f"conv{i + 2}")
        return x

    return stack_fn


def _imagenet_file(model_name: str, include_top: bool) -> _weights.WeightFile | None:
    if model_name not in _HASHES:
        return None
    fname = f"{model_name}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
    return _weights.WeightFile(fname, _BASE + fname, _HASHES[model_name][0 if include_top else 1])


def ResNet(
    stack_fn: Callable[[Any], Any],
    preact: bool,
    use_bias: bool,
    model_name: str = "resnet",
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """A ResNet (``preact=False``) or ResNetV2 (``preact=True``) whose stacks ``stack_fn`` builds.

    ``use_bias``: biases in the stem convolution. ``weights='imagenet'`` loads Keras 2's file for
    ``model_name`` (``resnet50`` ... ``resnet152v2``); the other arguments are the applications' own.
    """
    reject_unknown(model_name, kwargs)
    _weights.check_weights_argument(weights, include_top, classes)
    shape = obtain_input_shape(input_shape, 224, 32, backend.image_data_format(), include_top, weights)
    inputs = image_input(input_tensor, shape)
    x = ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(inputs)
    x = Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = Activation("relu", name="conv1_relu")(_bn(x, "conv1_bn"))
    x = ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = Activation("relu", name="post_relu")(_bn(x, "post_bn"))
    x = classifier_or_pooling(
        x, include_top, pooling, classes, top_name="probs", pooling_names=("avg_pool", "max_pool")
    )
    model = Model(source_inputs(inputs), x, name=model_name)
    return _weights.load(model, weights, _imagenet_file(model_name, include_top))
