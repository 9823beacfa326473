"""Image layers: ``Conv2D``, ``MaxPooling2D``, ``AveragePooling2D``, ``GlobalAveragePooling2D``,
``GlobalMaxPooling2D``, ``ZeroPadding2D``.

Tensors are Keras channels-last batches ``(N, H, W, C)``; each layer views them as NCHW for torch's
kernels (``permute(0, 3, 1, 2)`` of a contiguous NHWC tensor is NCHW in channels_last memory, and
the result permuted back is contiguous NHWC again: no copies). ``padding='same'`` pads like
TensorFlow (extra row/column at the bottom/right when odd), computed once in ``build`` when the
image size is known, per call otherwise.

Example::

    >>> c = Conv2D(32, (3, 3), padding="same", input_shape=(32, 32, 3))
    >>> c.compute_output_shape((None, 32, 32, 3))
    (None, 32, 32, 32)
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from arignote.layers import activations
from arignote.layers.activations import check_initializer, initialize
from arignote.layers.base import Layer, positive_int

__all__ = [
    "Conv2D",
    "MaxPooling2D",
    "AveragePooling2D",
    "GlobalAveragePooling2D",
    "GlobalMaxPooling2D",
    "ZeroPadding2D",
    "Convolution2D",
    "MaxPool2D",
    "AvgPool2D",
]


def _pair(value: Any, what: str, layer: str) -> tuple[int, int]:
    try:
        pair = (value, value) if isinstance(value, numbers.Integral) else tuple(value)
        if len(pair) != 2:
            raise ValueError
        return positive_int(pair[0], what, layer), positive_int(pair[1], what, layer)
    except (TypeError, ValueError):
        raise ValueError(f"{layer}: {what} must be a positive int or a pair of them, got {value!r}") from None


def _padding(value: Any, layer: str) -> str:
    if not isinstance(value, str) or value.lower() not in ("valid", "same"):
        raise ValueError(f"{layer}: padding must be 'valid' or 'same', got {value!r}")
    return value.lower()


def _data_format(value: Any, layer: str) -> None:
    if value not in (None, "channels_last"):
        raise ValueError(
            f"{layer}: data_format={value!r} is not supported; arignote layers take Keras's default "
            "channels_last images (N, H, W, C): transpose channels-first data with x.transpose(0, 2, 3, 1)"
        )


def _image_shape(input_shape: tuple, layer: str) -> tuple:
    if len(input_shape) != 4:
        raise ValueError(
            f"{layer} expects images (batch, height, width, channels), got input shape {tuple(input_shape)}; "
            "reshape flat data to e.g. (28, 28, 1) per sample"
        )
    return tuple(input_shape)


def _out_len(n: int | None, k: int, s: int, d: int, padding: str) -> int | None:
    if n is None:
        return None
    if padding == "same":
        return math.ceil(n / s)
    out = (n - d * (k - 1) - 1) // s + 1
    return out


def _same_pad(n: int, k: int, s: int, d: int) -> tuple[int, int]:
    """TensorFlow 'same' padding for one axis: (before, after), the extra one after."""
    total = max((math.ceil(n / s) - 1) * s + d * (k - 1) + 1 - n, 0)
    return total // 2, total - total // 2


def _nchw(x: torch.Tensor) -> torch.Tensor:
    return x.permute(0, 3, 1, 2)


def _nhwc(y: torch.Tensor) -> torch.Tensor:
    return y.permute(0, 2, 3, 1)


class _Spatial(Layer):
    """Shared 'same'/'valid' padding bookkeeping for convolution and pooling."""

    def _plan(self, h: int, w: int, kernel: tuple, strides: tuple, dilation: tuple) -> tuple:
        """(op padding, explicit F.pad or None) for an h x w image."""
        if self.padding != "same":
            return (0, 0), None
        ph = _same_pad(h, kernel[0], strides[0], dilation[0])
        pw = _same_pad(w, kernel[1], strides[1], dilation[1])
        if ph[0] == ph[1] and pw[0] == pw[1]:
            return (ph[0], pw[0]), None  # symmetric padding goes to the op itself
        return (0, 0), (pw[0], pw[1], ph[0], ph[1])

    def _plan_padding(self, input_shape: tuple, kernel: tuple, strides: tuple, dilation: tuple) -> None:
        self._geometry = (kernel, strides, dilation)
        h, w = input_shape[1], input_shape[2]
        self._dynamic = self.padding == "same" and (h is None or w is None)
        if self._dynamic:
            self._op_padding, self._pad = (0, 0), None
        else:
            self._op_padding, self._pad = self._plan(h, w, kernel, strides, dilation)

    def _padding_for(self, x: torch.Tensor) -> tuple:
        if self._dynamic:
            return self._plan(x.shape[2], x.shape[3], *self._geometry)
        return self._op_padding, self._pad

    def _spatial_out(self, input_shape: Any, kernel: tuple, strides: tuple, dilation: tuple) -> tuple:
        shape = _image_shape(tuple(input_shape), type(self).__name__)
        return tuple(_out_len(shape[i + 1], kernel[i], strides[i], dilation[i], self.padding)
                     for i in range(2))


class Conv2D(_Spatial):
    """2-D convolution over channels-last images (Keras 2 ``Conv2D``).

    Arguments: ``filters``, ``kernel_size``, ``strides=(1, 1)``, ``padding='valid'``,
    ``dilation_rate=(1, 1)``, ``activation=None``, ``use_bias=True``,
    ``kernel_initializer='glorot_uniform'``, ``bias_initializer='zeros'``. Kernels are stored as
    torch's ``(filters, in, kh, kw)``; ``get_weights()`` returns Keras's ``(kh, kw, in, filters)``.
    """

    _config_keys = (
        "filters",
        "kernel_size",
        "strides",
        "padding",
        "dilation_rate",
        "activation",
        "use_bias",
        "kernel_initializer",
        "bias_initializer",
    )

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        where = f"Conv2D '{self.name}'"
        self.filters = positive_int(filters, "filters", where)
        self.kernel_size = _pair(kernel_size, "kernel_size", where)
        self.strides = _pair(strides, "strides", where)
        self.padding = _padding(padding, where)
        _data_format(data_format, where)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate", where)
        if self.dilation_rate != (1, 1) and self.strides != (1, 1):
            raise ValueError(f"{where}: dilation_rate != 1 with strides != 1 is not supported (as in Keras)")
        self.activation = activation if activation is not None else "linear"
        self._act = activations.get(self.activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer")
        self.bias_initializer = check_initializer(bias_initializer, "bias_initializer")

    def build(self, input_shape: Any) -> None:
        input_shape = _image_shape(input_shape, f"Conv2D '{self.name}'")
        channels = input_shape[3]
        dtype = self._param_dtype()
        self.weight = nn.Parameter(
            initialize(
                torch.empty(self.filters, channels, *self.kernel_size, dtype=dtype), self.kernel_initializer
            )
        )
        self.bias = (
            nn.Parameter(initialize(torch.empty(self.filters, dtype=dtype), self.bias_initializer))
            if self.use_bias
            else None
        )
        self._plan_padding(input_shape, self.kernel_size, self.strides, self.dilation_rate)
        super().build(input_shape)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        h, w = self._spatial_out(input_shape, self.kernel_size, self.strides, self.dilation_rate)
        return (input_shape[0], h, w, self.filters)

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        x = _nchw(inputs)
        op_padding, pad = self._padding_for(x)
        if pad is not None:
            x = F.pad(x, pad)
        y = _nhwc(F.conv2d(x, self.weight, self.bias, self.strides, op_padding, self.dilation_rate))
        return y if self._act is None else self._act(y)

    def _keras_weights(self) -> list[torch.Tensor]:
        return [self.weight.permute(2, 3, 1, 0)] + ([self.bias] if self.bias is not None else [])

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        self.weight.copy_(weights[0].permute(3, 2, 0, 1))
        if self.bias is not None:
            self.bias.copy_(weights[1])


class _Pooling2D(_Spatial):
    _config_keys = ("pool_size", "strides", "padding")

    def __init__(
        self,
        pool_size: Any = (2, 2),
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        where = f"{type(self).__name__} '{self.name}'"
        self.pool_size = _pair(pool_size, "pool_size", where)
        self.strides = self.pool_size if strides is None else _pair(strides, "strides", where)
        self.padding = _padding(padding, where)
        _data_format(data_format, where)

    def build(self, input_shape: Any) -> None:
        input_shape = _image_shape(input_shape, f"{type(self).__name__} '{self.name}'")
        self._plan_padding(input_shape, self.pool_size, self.strides, (1, 1))
        if self._pad is not None:
            self.register_buffer("_count", self._window_count(input_shape[1], input_shape[2], self._pad),
                                 persistent=False)
        super().build(input_shape)

    def _window_count(self, h: int, w: int, pad: tuple) -> torch.Tensor:
        # average over the real pixels only (TensorFlow 'same'): divide by the per-window count
        ones = F.pad(torch.ones(1, 1, h, w), pad)
        return F.avg_pool2d(ones, self.pool_size, self.strides) * (self.pool_size[0] * self.pool_size[1])

    def compute_output_shape(self, input_shape: Any) -> tuple:
        h, w = self._spatial_out(input_shape, self.pool_size, self.strides, (1, 1))
        return (input_shape[0], h, w, tuple(input_shape)[3])


class MaxPooling2D(_Pooling2D):
    """Max pooling (Keras 2): ``pool_size=(2, 2)``, ``strides=None`` (= pool_size), ``padding='valid'``."""

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        x = _nchw(inputs)
        op_padding, pad = self._padding_for(x)
        if pad is not None:
            x = F.pad(x, pad, value=float("-inf"))
        return _nhwc(F.max_pool2d(x, self.pool_size, self.strides, op_padding))


class AveragePooling2D(_Pooling2D):
    """Average pooling (Keras 2); with ``padding='same'`` padded pixels are not counted (as in TF)."""

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        x = _nchw(inputs)
        op_padding, pad = self._padding_for(x)
        if pad is not None:
            summed = F.avg_pool2d(F.pad(x, pad), self.pool_size, self.strides, divisor_override=1)
            count = self._count if not self._dynamic else self._window_count(x.shape[2], x.shape[3], pad)
            return _nhwc(summed / count.to(summed))
        return _nhwc(F.avg_pool2d(x, self.pool_size, self.strides, op_padding, count_include_pad=False))


class GlobalAveragePooling2D(Layer):
    """Mean over height and width: ``(N, H, W, C) -> (N, C)``."""

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _data_format(data_format, f"GlobalAveragePooling2D '{self.name}'")

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = _image_shape(tuple(input_shape), type(self).__name__)
        return (shape[0], shape[3])

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        return inputs.mean(dim=(1, 2))


class GlobalMaxPooling2D(GlobalAveragePooling2D):
    """Max over height and width: ``(N, H, W, C) -> (N, C)``."""

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        return inputs.amax(dim=(1, 2))


class ZeroPadding2D(Layer):
    """Pads images with zeros: ``padding=1``, ``(ph, pw)`` or ``((top, bottom), (left, right))``."""

    _config_keys = ("padding",)

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        where = f"ZeroPadding2D '{self.name}'"
        _data_format(data_format, where)
        try:
            if isinstance(padding, numbers.Integral):
                pads = ((padding, padding), (padding, padding))
            elif all(isinstance(p, numbers.Integral) for p in padding):
                ph, pw = padding
                pads = ((ph, ph), (pw, pw))
            else:
                (t, b), (l, r) = padding
                pads = ((int(t), int(b)), (int(l), int(r)))
        except (TypeError, ValueError):
            raise ValueError(
                f"{where}: padding must be an int, (ph, pw) or ((top, bottom), (left, right)), "
                f"got {padding!r}"
            ) from None
        if any(p < 0 for pair in pads for p in pair):
            raise ValueError(f"{where}: padding must be >= 0, got {padding!r}")
        self.padding = pads
        self._pad = (0, 0, pads[1][0], pads[1][1], pads[0][0], pads[0][1])  # F.pad order: C, W, H

    def get_config(self) -> dict:
        cfg = super().get_config()
        cfg["padding"] = [list(p) for p in self.padding]
        return cfg

    def compute_output_shape(self, input_shape: Any) -> tuple:
        n, h, w, c = _image_shape(tuple(input_shape), "ZeroPadding2D")
        (t, b), (l, r) = self.padding
        return (n, None if h is None else h + t + b, None if w is None else w + l + r, c)

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        return F.pad(inputs, self._pad)


# Keras 2 aliases
Convolution2D = Conv2D
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
