"""Keras 2 ``K`` convolutions on torch: ``conv1d/2d/3d``, ``conv2d/3d_transpose``, ``separable_conv1d/2d``,
``depthwise_conv2d`` and the unshared ``local_conv1d/2d`` (re-exported by :mod:`arignote.ops.nn`).

Kernels are Keras's ``(*kernel_size, in, out)`` whatever the data format (depthwise ``(*kernel_size,
in, multiplier)``, transposed ``(*kernel_size, out, in)``), permuted to torch's layout per call; the
result is TensorFlow's cross-correlation, ``'same'`` padded as TensorFlow pads.

Example::

    >>> import torch
    >>> conv2d(torch.ones(1, 4, 4, 1), torch.ones(3, 3, 1, 2), padding="same").shape
    torch.Size([1, 4, 4, 2])
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote.backend.common import normalize_data_format
from arignote.layers._util import (
    conv_output_length,
    from_torch,
    normalize_padding,
    pad_arg,
    same_pads,
    to_torch,
)
from arignote.layers.convolutional.conv import deconv_length
from arignote.layers.op_layer import symbolic
from arignote.ops.arguments import _t
from arignote.ops.image_arguments import _image, _padded, _tuple

__all__ = ["conv1d", "conv2d", "conv3d", "conv2d_transpose", "conv3d_transpose", "separable_conv1d",
           "separable_conv2d", "depthwise_conv2d", "local_conv1d", "local_conv2d"]

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _kernel(kernel: Any, dims: int, where: str, name: str = "kernel") -> torch.Tensor:
    k = _t(kernel)
    if k.dim() != dims:
        raise ValueError(f"K.{where}: {name} must be {dims}-D in Keras's layout, got shape {tuple(k.shape)}")
    return k


def _conv(x: torch.Tensor, weight: torch.Tensor, rank: int, strides: tuple, padding: str, data_format: str,
          dilation: tuple, groups: int = 1) -> torch.Tensor:
    xt = to_torch(x, data_format)
    ks = tuple(weight.shape[2:])
    xt = _padded(xt, padding, ks, strides, dilation)
    y = _CONV[rank](xt, weight.to(xt.dtype), None, strides, 0, dilation, groups)
    return from_torch(y, data_format)


def _check_channels(x: torch.Tensor, data_format: str, expected: int, where: str, name: str) -> None:
    channels = x.shape[1] if data_format == "channels_first" else x.shape[-1]
    if channels != expected:
        raise ValueError(f"K.{where}: x has {channels} channels ({data_format}) but the {name} expects "
                         f"{expected}; pass data_format='channels_first' or 'channels_last' to match x")


def _nd_conv(x: Any, kernel: Any, rank: int, strides: Any, padding: str, data_format: Any,
             dilation_rate: Any, where: str, allowed: tuple = ("valid", "same")) -> torch.Tensor:
    data_format = normalize_data_format(data_format, f"K.{where}")
    padding = normalize_padding(padding, f"K.{where}", allowed)
    t = _image(x, rank, where)
    k = _kernel(kernel, rank + 2, where)
    _check_channels(t, data_format, k.shape[-2], where, f"kernel {tuple(k.shape)}")
    weight = k.permute(rank + 1, rank, *range(rank))  # Keras (*k, in, out) -> torch (out, in, *k)
    return _conv(t, weight, rank, _tuple(strides, rank, "strides", where), padding, data_format,
                 _tuple(dilation_rate, rank, "dilation_rate", where))


@symbolic
def conv1d(x: Any, kernel: Any, strides: Any = 1, padding: str = "valid", data_format: Any = None,
           dilation_rate: Any = 1) -> torch.Tensor:
    """Keras 2 ``K.conv1d``: ``x`` ``(batch, steps, in)`` (channels_last), ``kernel``
    ``(kernel_size, in, out)``; ``padding`` ``'valid'``, ``'same'`` or ``'causal'`` (left padding).

    >>> conv1d(torch.ones(1, 5, 1), torch.ones(2, 1, 1), padding="causal").flatten().tolist()
    [1.0, 2.0, 2.0, 2.0, 2.0]
    """
    return _nd_conv(x, kernel, 1, strides, padding, data_format, dilation_rate, "conv1d",
                    ("valid", "same", "causal"))


@symbolic
def conv2d(x: Any, kernel: Any, strides: Any = (1, 1), padding: str = "valid", data_format: Any = None,
           dilation_rate: Any = (1, 1)) -> torch.Tensor:
    """Keras 2 ``K.conv2d``: ``kernel`` ``(rows, cols, in, out)``.

    >>> conv2d(torch.ones(1, 4, 4, 1), torch.ones(2, 2, 1, 1), padding="same")[0, :, :, 0].tolist()[-1]
    [2.0, 2.0, 2.0, 1.0]
    """
    return _nd_conv(x, kernel, 2, strides, padding, data_format, dilation_rate, "conv2d")


@symbolic
def conv3d(x: Any, kernel: Any, strides: Any = (1, 1, 1), padding: str = "valid", data_format: Any = None,
           dilation_rate: Any = (1, 1, 1)) -> torch.Tensor:
    """Keras 2 ``K.conv3d``: ``kernel`` ``(d, rows, cols, in, out)``.

    >>> conv3d(torch.ones(1, 3, 3, 3, 1), torch.ones(3, 3, 3, 1, 1)).flatten().tolist()
    [27.0]
    """
    return _nd_conv(x, kernel, 3, strides, padding, data_format, dilation_rate, "conv3d")


def _output_spatial(output_shape: Any, rank: int, data_format: str, channels: int, where: str) -> tuple:
    if isinstance(output_shape, torch.Tensor):
        output_shape = output_shape.tolist()
    shape = tuple(output_shape)
    if len(shape) != rank + 2:
        raise ValueError(f"K.{where}: output_shape must be the full {rank + 2}-D output shape (batch "
                         f"included, {data_format}), got {output_shape!r}")
    got = shape[1] if data_format == "channels_first" else shape[-1]
    if got is not None and int(got) != channels:
        raise ValueError(f"K.{where}: output_shape {output_shape!r} has {got} channels but the kernel makes "
                         f"{channels} (kernel layout (*kernel_size, out, in))")
    spatial = shape[2:] if data_format == "channels_first" else shape[1:-1]
    return tuple(int(n) for n in spatial)


def _nd_conv_transpose(x: Any, kernel: Any, output_shape: Any, rank: int, strides: Any, padding: str,
                       data_format: Any, dilation_rate: Any, where: str) -> torch.Tensor:
    data_format = normalize_data_format(data_format, f"K.{where}")
    padding = normalize_padding(padding, f"K.{where}")
    t = _image(x, rank, where)
    k = _kernel(kernel, rank + 2, where)
    _check_channels(t, data_format, k.shape[-1], where, f"kernel {tuple(k.shape)} (layout (*k, out, in))")
    strides = _tuple(strides, rank, "strides", where)
    dilation = _tuple(dilation_rate, rank, "dilation_rate", where)
    lengths = _output_spatial(output_shape, rank, data_format, k.shape[-2], where)
    xt = to_torch(t, data_format)
    weight = k.permute(rank + 1, rank, *range(rank)).to(xt.dtype)  # (*k, out, in) -> torch (in, out, *k)
    full = _CONV_T[rank](xt, weight, None, strides, 0, 0, 1, dilation)
    pads = []
    for i, (n, length) in enumerate(zip(xt.shape[2:], lengths)):
        ks, s, d = k.shape[i], strides[i], dilation[i]
        if conv_output_length(length, ks, padding, s, d) != int(n):
            raise ValueError(f"K.{where}: output_shape {tuple(output_shape)} does not fit: a '{padding}' "
                             f"convolution of length {length} (kernel {ks}, stride {s}) gives "
                             f"{conv_output_length(length, ks, padding, s, d)}, x has {int(n)}; one "
                             f"that fits is {deconv_length(int(n), s, ks, padding, None, d)}")
        start = same_pads(length, ks, s, d)[0] if padding == "same" else 0
        pads.append((-start, start + length - full.shape[2 + i]))  # TensorFlow's crop (or zero fill)
    return from_torch(F.pad(full, pad_arg(pads)), data_format)


@symbolic
def conv2d_transpose(x: Any, kernel: Any, output_shape: Any, strides: Any = (1, 1), padding: str = "valid",
                     data_format: Any = None, dilation_rate: Any = (1, 1)) -> torch.Tensor:
    """Keras 2 ``K.conv2d_transpose``: ``kernel`` ``(rows, cols, out, in)``, ``output_shape`` the full
    output shape in ``data_format`` (its batch may be ``None``).

    >>> conv2d_transpose(torch.ones(1, 2, 2, 1), torch.ones(3, 3, 1, 1), (None, 4, 4, 1), strides=(2, 2),
    ...                  padding="same")[0, :, :, 0].tolist()[0]
    [1.0, 1.0, 2.0, 1.0]
    """
    return _nd_conv_transpose(x, kernel, output_shape, 2, strides, padding, data_format, dilation_rate,
                              "conv2d_transpose")


@symbolic
def conv3d_transpose(x: Any, kernel: Any, output_shape: Any, strides: Any = (1, 1, 1), padding: str = "valid",
                     data_format: Any = None) -> torch.Tensor:
    """Keras 2 ``K.conv3d_transpose``: ``kernel`` ``(d, rows, cols, out, in)``.

    >>> conv3d_transpose(torch.ones(1, 1, 1, 1, 1), torch.ones(2, 2, 2, 1, 1), (1, 2, 2, 2, 1)).shape
    torch.Size([1, 2, 2, 2, 1])
    """
    return _nd_conv_transpose(x, kernel, output_shape, 3, strides, padding, data_format, 1,
                              "conv3d_transpose")


def _depthwise(t: torch.Tensor, depthwise_kernel: Any, rank: int, strides: tuple, padding: str,
               data_format: str, dilation: tuple, where: str) -> torch.Tensor:
    k = _kernel(depthwise_kernel, rank + 2, where, "depthwise_kernel")
    _check_channels(t, data_format, k.shape[-2], where, f"depthwise_kernel {tuple(k.shape)}")
    cin, mult = k.shape[-2], k.shape[-1]
    # Keras (*k, in, mult) -> torch (in * mult, 1, *k): output channel c * mult + m, as TensorFlow's
    weight = k.permute(rank, rank + 1, *range(rank)).reshape(cin * mult, 1, *k.shape[:rank])
    return _conv(t, weight, rank, strides, padding, data_format, dilation, groups=cin)


def _separable(x: Any, depthwise_kernel: Any, pointwise_kernel: Any, rank: int, strides: Any, padding: str,
               data_format: Any, dilation_rate: Any, where: str) -> torch.Tensor:
    data_format = normalize_data_format(data_format, f"K.{where}")
    padding = normalize_padding(padding, f"K.{where}")
    t = _image(x, rank, where)
    deep = _depthwise(t, depthwise_kernel, rank, _tuple(strides, rank, "strides", where), padding,
                      data_format, _tuple(dilation_rate, rank, "dilation_rate", where), where)
    p = _kernel(pointwise_kernel, rank + 2, where, "pointwise_kernel")
    if tuple(p.shape[:rank]) != (1,) * rank:
        raise ValueError(f"K.{where}: pointwise_kernel must be {(1,) * rank + ('in * multiplier', 'out')}, "
                         f"got shape {tuple(p.shape)}")
    _check_channels(deep, data_format, p.shape[-2], where, f"pointwise_kernel {tuple(p.shape)}")
    weight = p.permute(rank + 1, rank, *range(rank))
    return _conv(deep, weight, rank, (1,) * rank, "valid", data_format, (1,) * rank)


@symbolic
def separable_conv1d(x: Any, depthwise_kernel: Any, pointwise_kernel: Any, strides: Any = 1,
                     padding: str = "valid", data_format: Any = None, dilation_rate: Any = 1) -> torch.Tensor:
    """Keras 2 ``K.separable_conv1d``: ``depthwise_kernel`` ``(k, in, multiplier)``, ``pointwise_kernel``
    ``(1, in * multiplier, out)``.

    >>> separable_conv1d(torch.ones(1, 4, 2), torch.ones(3, 2, 1), torch.ones(1, 2, 1)).flatten().tolist()
    [6.0, 6.0]
    """
    return _separable(x, depthwise_kernel, pointwise_kernel, 1, strides, padding, data_format, dilation_rate,
                      "separable_conv1d")


@symbolic
def separable_conv2d(x: Any, depthwise_kernel: Any, pointwise_kernel: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: Any = None,
                     dilation_rate: Any = (1, 1)) -> torch.Tensor:
    """Keras 2 ``K.separable_conv2d``: ``depthwise_kernel`` ``(rows, cols, in, multiplier)``,
    ``pointwise_kernel`` ``(1, 1, in * multiplier, out)``.

    >>> separable_conv2d(torch.ones(1, 3, 3, 1), torch.ones(3, 3, 1, 2), torch.ones(1, 1, 2, 1)).item()
    18.0
    """
    return _separable(x, depthwise_kernel, pointwise_kernel, 2, strides, padding, data_format, dilation_rate,
                      "separable_conv2d")


@symbolic
def depthwise_conv2d(x: Any, depthwise_kernel: Any, strides: Any = (1, 1), padding: str = "valid",
                     data_format: Any = None, dilation_rate: Any = (1, 1)) -> torch.Tensor:
    """Keras 2 ``K.depthwise_conv2d``: ``depthwise_kernel`` ``(rows, cols, in, multiplier)``; output
    channel ``c * multiplier + m``.

    >>> depthwise_conv2d(torch.ones(1, 3, 3, 2), torch.ones(3, 3, 2, 2)).shape
    torch.Size([1, 1, 1, 4])
    """
    data_format = normalize_data_format(data_format, "K.depthwise_conv2d")
    padding = normalize_padding(padding, "K.depthwise_conv2d")
    t = _image(x, 2, "depthwise_conv2d")
    return _depthwise(t, depthwise_kernel, 2, _tuple(strides, 2, "strides", "depthwise_conv2d"), padding,
                      data_format, _tuple(dilation_rate, 2, "dilation_rate", "depthwise_conv2d"),
                      "depthwise_conv2d")


@symbolic
def local_conv1d(inputs: Any, kernel: Any, kernel_size: Any, strides: Any,
                 data_format: Any = None) -> torch.Tensor:
    """Keras 2 ``K.local_conv1d``: unshared weights; ``inputs`` ``(batch, steps, in)`` (Keras reads them
    channels-last whatever ``data_format``), ``kernel`` ``(output_length, kernel_size * in, filters)``.

    >>> local_conv1d(torch.ones(1, 4, 1), torch.ones(2, 2, 3), (2,), (2,)).shape
    torch.Size([1, 2, 3])
    """
    normalize_data_format(data_format, "K.local_conv1d")
    t = _image(inputs, 1, "local_conv1d")
    k = _kernel(kernel, 3, "local_conv1d")
    (size,), (stride,) = _tuple(kernel_size, 1, "kernel_size", "local_conv1d"), \
        _tuple(strides, 1, "strides", "local_conv1d")
    length = k.shape[0]
    # (batch, windows, in, size) -> (batch, windows, size * in): Keras flattens each window step-major
    patches = t.unfold(1, size, stride)[:, :length].permute(0, 1, 3, 2).reshape(t.shape[0], length, -1)
    if patches.shape[1] != length or patches.shape[2] != k.shape[1]:
        raise ValueError(f"K.local_conv1d: kernel {tuple(k.shape)} does not fit inputs {tuple(t.shape)} with "
                         f"kernel_size {size} and stride {stride}: windows ({patches.shape[1]}, "
                         f"{patches.shape[2]})")
    return torch.einsum("blf,lfo->blo", patches, k.to(t.dtype))


@symbolic
def local_conv2d(inputs: Any, kernel: Any, kernel_size: Any, strides: Any, output_shape: Any,
                 data_format: Any = None) -> torch.Tensor:
    """Keras 2 ``K.local_conv2d``: ``kernel`` ``(rows * cols of the output, feature_dim, filters)``,
    ``output_shape`` ``(output_rows, output_cols)``; a window flattens as ``(rows, cols, in)``
    (channels_last) or ``(in, rows, cols)`` (channels_first), as Keras's.

    >>> local_conv2d(torch.ones(1, 3, 3, 1), torch.ones(4, 4, 2), (2, 2), (1, 1), (2, 2)).shape
    torch.Size([1, 2, 2, 2])
    """
    data_format = normalize_data_format(data_format, "K.local_conv2d")
    t = _image(inputs, 2, "local_conv2d")
    k = _kernel(kernel, 3, "local_conv2d")
    (kh, kw), (sh, sw) = _tuple(kernel_size, 2, "kernel_size", "local_conv2d"), \
        _tuple(strides, 2, "strides", "local_conv2d")
    rows, cols = (int(v) for v in output_shape)
    if data_format == "channels_first":  # (b, in, oh, ow, kh, kw) -> (b, oh, ow, in, kh, kw)
        patches = t.unfold(2, kh, sh).unfold(3, kw, sw)[:, :, :rows, :cols].permute(0, 2, 3, 1, 4, 5)
    else:  # (b, oh, ow, in, kh, kw) -> (b, oh, ow, kh, kw, in)
        patches = t.unfold(1, kh, sh).unfold(2, kw, sw)[:, :rows, :cols].permute(0, 1, 2, 4, 5, 3)
    if tuple(patches.shape[1:3]) != (rows, cols) or k.shape[0] != rows * cols:
        raise ValueError(f"K.local_conv2d: output_shape {tuple(output_shape)} and kernel {tuple(k.shape)} "
                         f"do not fit inputs {tuple(t.shape)} ({data_format}) with kernel_size {(kh, kw)} "
                         f"and strides {(sh, sw)}")
    flat = patches.reshape(t.shape[0], rows * cols, -1)
    out = torch.einsum("blf,lfo->blo", flat, k.to(t.dtype)).reshape(t.shape[0], rows, cols, -1)
    return out.permute(0, 3, 1, 2) if data_format == "channels_first" else out
