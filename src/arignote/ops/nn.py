"""Keras 2 ``keras.backend`` neural-network operations on torch: convolutions, pooling, padding,
resizing and batch normalization (re-exported by :mod:`arignote.backend`).

Arguments, defaults and layouts are Keras 2.3.1's: images are ``channels_last`` ``(N, H, W, C)`` or
``channels_first`` ``(N, C, H, W)`` (``data_format=None`` is :func:`~arignote.backend.image_data_format`),
kernels are Keras's ``(*kernel_size, in, out)`` whatever the data format (depthwise kernels
``(*kernel_size, in, multiplier)``, transposed ones ``(*kernel_size, out, in)``). Results are those of
Keras's TensorFlow backend: cross-correlation (Theano's backend flips kernels), and ``padding='same'``
pads as TensorFlow does, the odd pixel after (Theano's differs for even kernels and strides).
Each function also takes the functional API's symbolic tensors (it records an operation node).

Example::

    >>> import torch
    >>> from arignote import backend as K
    >>> x = torch.ones(1, 4, 4, 1); kernel = torch.ones(3, 3, 1, 2)
    >>> K.conv2d(x, kernel, padding="same").shape
    torch.Size([1, 4, 4, 2])
    >>> K.pool2d(x, (2, 2), strides=(2, 2), pool_mode="avg").shape
    torch.Size([1, 2, 2, 1])
"""

from __future__ import annotations

import numbers
from typing import Any

import torch
import torch.nn.functional as F

from arignote.backend.common import normalize_data_format
from arignote.backend.names import NN_FUNCTIONS
from arignote.layers._util import (
    conv_output_length,
    from_torch,
    normalize_padding,
    pad_arg,
    same_pads,
    to_torch,
)
from arignote.layers.convolutional.conv import deconv_length
from arignote.layers.convolutional.reshaping import _bilinear_axis
from arignote.layers.op_layer import symbolic
from arignote.ops.tensor import _t

__all__ = list(NN_FUNCTIONS)

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX = {2: F.max_pool2d, 3: F.max_pool3d}
_AVG = {2: F.avg_pool2d, 3: F.avg_pool3d}


def _tuple(value: Any, n: int, name: str, where: str) -> tuple[int, ...]:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * n
    try:
        values = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        values = ()
    if len(values) != n or any(v < 1 for v in values):
        raise ValueError(f"K.{where}: {name} must be an int or a tuple of {n} ints >= 1, got {value!r}")
    return values


def _image(x: Any, rank: int, where: str) -> torch.Tensor:
    t = _t(x)
    if t.dim() != rank + 2:
        raise ValueError(f"K.{where}: x must be a {rank + 2}-D tensor (batch, {rank} spatial axes and "
                         f"channels), got shape {tuple(t.shape)}")
    return t


def _kernel(kernel: Any, dims: int, where: str, name: str = "kernel") -> torch.Tensor:
    k = _t(kernel)
    if k.dim() != dims:
        raise ValueError(f"K.{where}: {name} must be {dims}-D in Keras's layout, got shape {tuple(k.shape)}")
    return k


def _padded(x: torch.Tensor, padding: str, ks: tuple, strides: tuple, dilation: tuple,
            value: float = 0.0) -> torch.Tensor:
    """``x`` (channels first) padded for a 'valid' kernel call: TensorFlow's 'same' (the odd one after)
    or 'causal' (all before)."""
    if padding == "valid":
        return x
    if padding == "causal":
        pads = [((k - 1) * d, 0) for k, d in zip(ks, dilation)]
    else:
        pads = [same_pads(int(n), k, s, d) for n, k, s, d in zip(x.shape[2:], ks, strides, dilation)]
    if all(p == (0, 0) for p in pads):
        return x
    return F.pad(x, pad_arg(pads), value=value)


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


def _pool(x: Any, pool_size: Any, strides: Any, padding: str, data_format: Any, pool_mode: str,
          rank: int, where: str) -> torch.Tensor:
    data_format = normalize_data_format(data_format, f"K.{where}")
    padding = normalize_padding(padding, f"K.{where}")
    if pool_mode not in ("max", "avg"):
        raise ValueError(f"K.{where}: Invalid pool_mode: {pool_mode!r}; use 'max' or 'avg'")
    size = _tuple(pool_size, rank, "pool_size", where)
    strides = _tuple(strides, rank, "strides", where)
    xt = to_torch(_image(x, rank, where), data_format)
    ones = (1,) * rank
    if pool_mode == "max":
        y = _MAX[rank](_padded(xt, padding, size, strides, ones, float("-inf")), size, strides)
    else:  # TensorFlow's 'same' averages over the real elements of each window only
        summed = _AVG[rank](_padded(xt, padding, size, strides, ones), size, strides, divisor_override=1)
        ones_t = torch.ones((1, 1, *xt.shape[2:]), dtype=xt.dtype, device=xt.device)
        count = _AVG[rank](_padded(ones_t, padding, size, strides, ones), size, strides, divisor_override=1)
        y = summed / count
    return from_torch(y, data_format)


@symbolic
def pool2d(x: Any, pool_size: Any, strides: Any = (1, 1), padding: str = "valid", data_format: Any = None,
           pool_mode: str = "max") -> torch.Tensor:
    """Keras 2 ``K.pool2d``: ``pool_mode`` ``'max'`` or ``'avg'`` (``'same'`` averages exclude padding).

    >>> pool2d(torch.arange(9.).reshape(1, 3, 3, 1), (2, 2), (2, 2), "same")[0, :, :, 0].tolist()
    [[4.0, 5.0], [7.0, 8.0]]
    """
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 2, "pool2d")


@symbolic
def pool3d(x: Any, pool_size: Any, strides: Any = (1, 1, 1), padding: str = "valid", data_format: Any = None,
           pool_mode: str = "max") -> torch.Tensor:
    """Keras 2 ``K.pool3d``.

    >>> pool3d(torch.ones(1, 4, 4, 4, 2), (2, 2, 2), (2, 2, 2), pool_mode="avg").shape
    torch.Size([1, 2, 2, 2, 2])
    """
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 3, "pool3d")


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


def _pad_pairs(padding: Any, rank: int, where: str) -> list[tuple[int, int]]:
    try:
        pairs = [tuple(int(v) for v in p) for p in padding] if rank > 1 else [tuple(int(v) for v in padding)]
    except (TypeError, ValueError):
        pairs = []
    if len(pairs) != rank or any(len(p) != 2 or min(p) < 0 for p in pairs):
        form = "(before, after)" if rank == 1 else "(" + ", ".join(["(before, after)"] * rank) + ")"
        raise ValueError(f"K.{where}: padding must be {form} of ints >= 0, got {padding!r}")
    return pairs


def _zero_pad(x: Any, padding: Any, rank: int, data_format: str, where: str) -> torch.Tensor:
    t = _image(x, rank, where)
    pairs = _pad_pairs(padding, rank, where)
    if data_format == "channels_last":
        pairs = [*pairs, (0, 0)]  # F.pad's pairs start from the last axis
    return F.pad(t, pad_arg(pairs))


@symbolic
def temporal_padding(x: Any, padding: Any = (1, 1)) -> torch.Tensor:
    """Keras 2 ``K.temporal_padding``: zeros before and after the steps of ``(batch, steps, features)``.

    >>> temporal_padding(torch.ones(1, 2, 1), (1, 2)).flatten().tolist()
    [0.0, 1.0, 1.0, 0.0, 0.0]
    """
    return _zero_pad(x, padding, 1, "channels_last", "temporal_padding")


@symbolic
def spatial_2d_padding(x: Any, padding: Any = ((1, 1), (1, 1)), data_format: Any = None) -> torch.Tensor:
    """Keras 2 ``K.spatial_2d_padding``: ``((top, bottom), (left, right))`` zeros around the images.

    >>> spatial_2d_padding(torch.ones(1, 2, 2, 1), ((1, 0), (0, 2))).shape
    torch.Size([1, 3, 4, 1])
    """
    fmt = normalize_data_format(data_format, "K.spatial_2d_padding")
    return _zero_pad(x, padding, 2, fmt, "spatial_2d_padding")


@symbolic
def spatial_3d_padding(x: Any, padding: Any = ((1, 1), (1, 1), (1, 1)),
                       data_format: Any = None) -> torch.Tensor:
    """Keras 2 ``K.spatial_3d_padding``: ``((d0, d1), (h0, h1), (w0, w1))`` zeros around the volumes.

    >>> spatial_3d_padding(torch.ones(1, 1, 2, 2, 2), data_format="channels_first").shape
    torch.Size([1, 1, 4, 4, 4])
    """
    fmt = normalize_data_format(data_format, "K.spatial_3d_padding")
    return _zero_pad(x, padding, 3, fmt, "spatial_3d_padding")


def _along(p: Any, x: torch.Tensor, axis: int) -> Any:
    """A 1-D parameter reshaped to broadcast along ``axis`` of ``x``; others as they are."""
    if p is None:
        return None
    p = _t(p).to(x.dtype)
    if p.dim() == 1 and x.dim() > 1:
        shape = [1] * x.dim()
        shape[axis] = -1
        return p.reshape(shape)
    return p


@symbolic
def batch_normalization(x: Any, mean: Any, var: Any, beta: Any, gamma: Any, axis: int = -1,
                        epsilon: float = 1e-3) -> torch.Tensor:
    """Keras 2 ``K.batch_normalization``: ``(x - mean) / sqrt(var + epsilon) * gamma + beta``; 1-D
    parameters lie along ``axis`` (``beta``/``gamma`` may be ``None``).

    >>> batch_normalization(torch.tensor([[1., 3.]]), torch.tensor([1., 1.]), torch.tensor([4., 4.]),
    ...                     None, None, epsilon=0.0).tolist()
    [[0.0, 1.0]]
    """
    t = _t(x)
    axis = int(axis) % t.dim()
    y = (t - _along(mean, t, axis)) * torch.rsqrt(_along(var, t, axis) + epsilon)
    if gamma is not None:
        y = y * _along(gamma, t, axis)
    if beta is not None:
        y = y + _along(beta, t, axis)
    return y


@symbolic
def normalize_batch_in_training(x: Any, gamma: Any, beta: Any, reduction_axes: Any,
                                epsilon: float = 1e-3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Keras 2 ``K.normalize_batch_in_training``: ``(normed, mean, var)`` with the batch's mean and
    (biased) variance over ``reduction_axes``; ``mean``/``var`` have the other axes only.

    >>> normed, mean, var = normalize_batch_in_training(torch.tensor([[1.], [3.]]), None, None, [0], 0.0)
    >>> normed.flatten().tolist(), mean.tolist(), var.tolist()
    ([-1.0, 1.0], [2.0], [1.0])
    """
    t = _t(x)
    axes = sorted({int(a) % t.dim() for a in reduction_axes})
    kept = [a for a in range(t.dim()) if a not in axes]
    mean = t.mean(dim=axes, keepdim=True)
    var = t.var(dim=axes, unbiased=False, keepdim=True)
    target = [1 if a in axes else t.shape[a] for a in range(t.dim())]
    y = (t - mean) * torch.rsqrt(var + epsilon)
    if gamma is not None:
        y = y * _t(gamma).to(t.dtype).reshape(target)
    if beta is not None:
        y = y + _t(beta).to(t.dtype).reshape(target)
    out_shape = [t.shape[a] for a in kept]
    return y, mean.reshape(out_shape), var.reshape(out_shape)


def moving_average_update(x: torch.Tensor, value: Any, momentum: float) -> torch.Tensor:
    """Keras 2 ``K.moving_average_update``: in place ``x = x * momentum + value * (1 - momentum)``
    (torch runs the update at once; it returns ``x``).

    >>> moving_average_update(torch.zeros(2), torch.ones(2), 0.9).tolist()
    [0.10000000149011612, 0.10000000149011612]
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"K.moving_average_update: x must be a tensor updated in place (K.variable or a "
                        f"layer's weight), got a {type(x).__name__}")
    with torch.no_grad():
        x.sub_((x - _t(value).to(x.dtype)) * (1.0 - momentum))
    return x
