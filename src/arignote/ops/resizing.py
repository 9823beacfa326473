"""Keras 2 ``K.resize_images`` and ``K.resize_volumes`` on torch: spatial axes times integer factors
(``'nearest'`` repeats, or TensorFlow 1's ``'bilinear'`` for images).

Example::

    >>> import torch
    >>> resize_images(torch.ones(1, 2, 3, 1), 2, 2, "channels_last").shape
    torch.Size([1, 4, 6, 1])
"""

from __future__ import annotations

import numbers
from typing import Any

import torch

from arignote.backend.common import normalize_data_format
from arignote.layers.convolutional.reshaping import _bilinear_axis
from arignote.layers.op_layer import symbolic
from arignote.ops.image_arguments import _image

__all__ = ["resize_images", "resize_volumes"]


def _factor(value: Any, name: str, where: str) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"K.{where}: {name} must be a positive int, got {value!r}")
    return int(value)


@symbolic
def resize_images(x: Any, height_factor: int, width_factor: int, data_format: Any,
                  interpolation: str = "nearest") -> torch.Tensor:
    """Keras 2 ``K.resize_images``: rows and columns times integer factors, ``'nearest'`` (repeats) or
    ``'bilinear'`` (TensorFlow 1's ``resize_bilinear``: no half-pixel shift, edges clamped).

    >>> resize_images(torch.tensor([[[[0.], [1.]]]]), 1, 2, "channels_last", "bilinear").flatten().tolist()
    [0.0, 0.5, 1.0, 1.0]
    """
    data_format = normalize_data_format(data_format, "K.resize_images")
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f'K.resize_images: interpolation should be one of "nearest" or "bilinear", '
                         f"got {interpolation!r}")
    factors = (_factor(height_factor, "height_factor", "resize_images"),
               _factor(width_factor, "width_factor", "resize_images"))
    t = _image(x, 2, "resize_images")
    first = 2 if data_format == "channels_first" else 1
    for i, f in enumerate(factors):
        if interpolation == "nearest":
            t = torch.repeat_interleave(t, f, dim=first + i)
        else:
            t = _bilinear_axis(t, first + i, f)
    return t


@symbolic
def resize_volumes(x: Any, depth_factor: int, height_factor: int, width_factor: int,
                   data_format: Any) -> torch.Tensor:
    """Keras 2 ``K.resize_volumes``: each spatial axis of a 5-D tensor repeated ``*_factor`` times.

    >>> resize_volumes(torch.ones(1, 1, 2, 3, 4), 2, 1, 2, "channels_first").shape
    torch.Size([1, 1, 4, 3, 8])
    """
    data_format = normalize_data_format(data_format, "K.resize_volumes")
    t = _image(x, 3, "resize_volumes")
    first = 2 if data_format == "channels_first" else 1
    for i, (f, name) in enumerate(zip((depth_factor, height_factor, width_factor),
                                      ("depth_factor", "height_factor", "width_factor"))):
        t = torch.repeat_interleave(t, _factor(f, name, "resize_volumes"), dim=first + i)
    return t
