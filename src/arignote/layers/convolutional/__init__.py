"""Keras 2's ``keras.layers.convolutional`` module path: convolutions (:mod:`._conv`,
:mod:`._conv_extra`), padding, cropping and up-sampling (:mod:`._reshaping`), and the pooling layers
Keras 2 also re-exported here.

Example::

    >>> from arignote.layers.convolutional import Conv2D, UpSampling2D
    >>> UpSampling2D().compute_output_shape((None, 4, 4, 3))
    (None, 8, 8, 3)
"""

import warnings
from typing import Any

from arignote._lazy import lazy_namespace
from arignote.layers.convolutional.conv import (
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    Convolution1D,
    Convolution2D,
    Convolution3D,
    Deconvolution2D,
    Deconvolution3D,
)
from arignote.layers.convolutional.separable import DepthwiseConv2D, SeparableConv1D, SeparableConv2D

# padding, cropping and up-sampling, and the pooling layers Keras 2 re-exported here, load on first use
# (`from arignote.layers import Conv2D` needs neither, issue 32); arignote.layers's table names their
# modules, so a config naming one of their classes loads it first
_NAMES = {
    **dict.fromkeys([f"{kind}{n}D" for kind in ("Cropping", "UpSampling", "ZeroPadding") for n in (1, 2, 3)],
                    "arignote.layers.convolutional.reshaping"),
    **dict.fromkeys([f"{kind}{n}D" for kind in ("AveragePooling", "AvgPool", "MaxPool", "MaxPooling")
                     for n in (1, 2, 3)], "arignote.layers.pooling"),
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES, globals())

# Keras 2.3.1's other aliases in this module (keras.layers exports only the Convolution*/Deconvolution* ones)
SeparableConvolution1D = SeparableConv1D
SeparableConvolution2D = SeparableConv2D
Convolution2DTranspose = Conv2DTranspose
Deconv2D = Conv2DTranspose
Deconv3D = Conv3DTranspose


def _atrous(conv: type, name: str, args: tuple, kwargs: dict) -> Any:
    kwargs["dilation_rate"] = kwargs.pop("atrous_rate", 1)
    warnings.warn(f"The `{name}` layer has been deprecated. Use instead the `{conv.__name__}` layer with "
                  "the `dilation_rate` argument.", stacklevel=3)
    return conv(*args, **kwargs)


def AtrousConvolution1D(*args: Any, **kwargs: Any) -> Conv1D:  # noqa: N802 (Keras's name)
    """Keras 2.3.1's legacy ``AtrousConvolution1D``: ``Conv1D(..., dilation_rate=atrous_rate)``, with
    its deprecation warning."""
    return _atrous(Conv1D, "AtrousConvolution1D", args, kwargs)


def AtrousConvolution2D(*args: Any, **kwargs: Any) -> Conv2D:  # noqa: N802 (Keras's name)
    """Keras 2.3.1's legacy ``AtrousConvolution2D``: ``Conv2D(..., dilation_rate=atrous_rate)``, with
    its deprecation warning."""
    return _atrous(Conv2D, "AtrousConvolution2D", args, kwargs)


AtrousConv1D = AtrousConvolution1D
AtrousConv2D = AtrousConvolution2D

__all__ = [
    "AtrousConvolution1D",
    "AtrousConvolution2D",
    "AtrousConv1D",
    "AtrousConv2D",
    "SeparableConvolution1D",
    "SeparableConvolution2D",
    "Convolution2DTranspose",
    "Deconv2D",
    "Deconv3D",
    "Conv1D",
    "Conv2D",
    "Conv3D",
    "Conv2DTranspose",
    "Conv3DTranspose",
    "SeparableConv1D",
    "SeparableConv2D",
    "DepthwiseConv2D",
    "Cropping1D",
    "Cropping2D",
    "Cropping3D",
    "UpSampling1D",
    "UpSampling2D",
    "UpSampling3D",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
    "Convolution1D",
    "Convolution2D",
    "Convolution3D",
    "Deconvolution2D",
    "Deconvolution3D",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
]
