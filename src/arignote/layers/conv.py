"""Image layers: ``Conv2D``, ``MaxPooling2D``, ``AveragePooling2D``, ``GlobalAveragePooling2D``,
``GlobalMaxPooling2D``, ``ZeroPadding2D``.

The API speaks Keras channels-last shapes; tensors are internal logical NCHW in channels_last
memory (see :mod:`arignote.layers.base`), so ``forward`` is a plain ``F.conv2d`` / pooling call.
``padding='same'`` pads like TensorFlow (extra row/column at the bottom/right when odd), with
the padding computed once in ``build``.

Example::

    >>> c = Conv2D(32, (3, 3), padding="same", input_shape=(32, 32, 3))
    >>> c.compute_output_shape((32, 32, 3))
    (32, 32, 32)
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
    if len(input_shape) != 3:
        raise ValueError(
            f"{layer} expects images (height, width, channels), got per-sample input shape {input_shape}; "
            "reshape flat data to e.g. (28, 28, 1)"
        )
    return input_shape


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


class _Spatial(Layer):
    """Shared 'same'/'valid' padding bookkeeping for convolution and pooling."""

    image_layer = True

    def _plan_padding(self, input_shape: tuple, kernel: tuple, strides: tuple, dilation: tuple) -> None:
        # symmetric padding goes to the op itself; asymmetric needs an explicit F.pad
        self._op_padding: tuple[int, int] = (0, 0)
        self._pad: tuple[int, int, int, int] | None = None
        if self.padding != "same":
            return
        h, w = input_shape[0], input_shape[1]
        if h is None or w is None:
            raise ValueError(
                f"{self.name}: padding='same' needs known image height and width, got {input_shape}"
            )
        ph, pw = (
            _same_pad(h, kernel[0], strides[0], dilation[0]),
            _same_pad(w, kernel[1], strides[1], dilation[1]),
        )
        if ph[0] == ph[1] and pw[0] == pw[1]:
            self._op_padding = (ph[0], pw[0])
        else:
            self._pad = (pw[0], pw[1], ph[0], ph[1])

    def _spatial_out(self, input_shape: Any, kernel: tuple, strides: tuple, dilation: tuple) -> tuple:
        shape = _image_shape(tuple(input_shape), type(self).__name__)
        return tuple(_out_len(shape[i], kernel[i], strides[i], dilation[i], self.padding) for i in range(2))


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
        self._act = activations.get(self.activation, image=True)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer")
        self.bias_initializer = check_initializer(bias_initializer, "bias_initializer")

    def _build(self, input_shape: tuple) -> None:
        _image_shape(input_shape, f"Conv2D '{self.name}'")
        channels = input_shape[2]
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

    def compute_output_shape(self, input_shape: Any) -> tuple:
        h, w = self._spatial_out(input_shape, self.kernel_size, self.strides, self.dilation_rate)
        return (h, w, self.filters)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._pad is not None:
            x = F.pad(x, self._pad)
        y = F.conv2d(x, self.weight, self.bias, self.strides, self._op_padding, self.dilation_rate)
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

    def _build(self, input_shape: tuple) -> None:
        _image_shape(input_shape, f"{type(self).__name__} '{self.name}'")
        self._plan_padding(input_shape, self.pool_size, self.strides, (1, 1))
        if self._pad is not None:
            # average over the real pixels only (TensorFlow 'same'): divide by the per-window count
            ones = F.pad(torch.ones(1, 1, input_shape[0], input_shape[1]), self._pad)
            count = F.avg_pool2d(ones, self.pool_size, self.strides) * (self.pool_size[0] * self.pool_size[1])
            self.register_buffer("_count", count, persistent=False)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        h, w = self._spatial_out(input_shape, self.pool_size, self.strides, (1, 1))
        return (h, w, tuple(input_shape)[2])


class MaxPooling2D(_Pooling2D):
    """Max pooling (Keras 2): ``pool_size=(2, 2)``, ``strides=None`` (= pool_size), ``padding='valid'``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._pad is not None:
            x = F.pad(x, self._pad, value=float("-inf"))
        return F.max_pool2d(x, self.pool_size, self.strides, self._op_padding)


class AveragePooling2D(_Pooling2D):
    """Average pooling (Keras 2); with ``padding='same'`` padded pixels are not counted (as in TF)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._pad is not None:
            summed = F.avg_pool2d(
                F.pad(x, self._pad),
                self.pool_size,
                self.strides,
                divisor_override=1,
            )
            return summed / self._count
        return F.avg_pool2d(x, self.pool_size, self.strides, self._op_padding, count_include_pad=False)


class GlobalAveragePooling2D(Layer):
    """Mean over height and width: ``(H, W, C) -> (C,)``."""

    image_layer = True

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _data_format(data_format, f"GlobalAveragePooling2D '{self.name}'")

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (_image_shape(tuple(input_shape), "GlobalAveragePooling2D")[2],)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=(2, 3))


class GlobalMaxPooling2D(GlobalAveragePooling2D):
    """Max over height and width: ``(H, W, C) -> (C,)``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.amax(dim=(2, 3))


class ZeroPadding2D(Layer):
    """Pads images with zeros: ``padding=1``, ``(ph, pw)`` or ``((top, bottom), (left, right))``."""

    image_layer = True
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
        self._pad = (pads[1][0], pads[1][1], pads[0][0], pads[0][1])

    def get_config(self) -> dict:
        cfg = super().get_config()
        cfg["padding"] = [list(p) for p in self.padding]
        return cfg

    def compute_output_shape(self, input_shape: Any) -> tuple:
        h, w, c = _image_shape(tuple(input_shape), "ZeroPadding2D")
        (t, b), (l, r) = self.padding
        return (None if h is None else h + t + b, None if w is None else w + l + r, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x, self._pad)


# Keras 2 aliases
Convolution2D = Conv2D
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
