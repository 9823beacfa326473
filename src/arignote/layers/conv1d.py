"""1-D (temporal) layers: ``Conv1D``, ``MaxPooling1D``, ``AveragePooling1D``, ``GlobalMaxPooling1D``,
``GlobalAveragePooling1D``, on Keras's ``(steps, channels)`` sequences.

Sequences stay in Keras layout ``(N, steps, channels)`` between layers (what ``LSTM``/``Dense``
take); these layers view them as ``(N, channels, steps)`` for torch's kernels (a transpose, no
copy on the way in). ``padding`` is ``'valid'``, ``'same'`` (TF style) or ``'causal'`` (left
padding, as in WaveNet / Keras). Kernels are torch's ``(filters, in, k)``; ``get_weights()``
returns Keras's ``(k, in, filters)``.

Example::

    >>> Conv1D(8, 3, padding="causal").compute_output_shape((None, 100, 16))
    (None, 100, 8)
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from arignote.layers import activations
from arignote.layers.activations import check_initializer, initialize
from arignote.layers.base import Layer, positive_int

__all__ = ["Conv1D", "MaxPooling1D", "AveragePooling1D", "GlobalMaxPooling1D", "GlobalAveragePooling1D",
           "Convolution1D", "MaxPool1D", "AvgPool1D"]  # fmt: skip


def _int1(value: Any, what: str, where: str) -> int:
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ValueError(f"{where}: {what} must be an int or a 1-tuple, got {value!r}")
        value = value[0]
    return positive_int(value, what, where)


def _sequence(input_shape: Any, where: str) -> tuple:
    """(steps, channels) of a ``(batch, steps, channels)`` input shape."""
    if len(input_shape) != 3:
        raise ValueError(f"{where} expects sequences (batch, steps, channels), got input shape "
                         f"{tuple(input_shape)}")
    return tuple(input_shape)[1:]


def _pads(n: int | None, k: int, s: int, d: int, padding: str) -> tuple[int, int]:
    span = d * (k - 1)
    if padding == "causal":
        return span, 0
    if padding == "same":
        if n is None:
            raise ValueError("padding='same' needs a known number of steps")
        total = max((math.ceil(n / s) - 1) * s + span + 1 - n, 0)
        return total // 2, total - total // 2
    return 0, 0


def _out_len(n: int | None, k: int, s: int, d: int, padding: str) -> int | None:
    if n is None:
        return None
    if padding == "same":
        return math.ceil(n / s)
    extra = d * (k - 1) if padding == "causal" else 0
    return (n + extra - d * (k - 1) - 1) // s + 1


class Conv1D(Layer):
    """Temporal convolution (Keras 2 ``Conv1D``): ``filters``, ``kernel_size``, ``strides=1``,
    ``padding='valid'``, ``dilation_rate=1``, ``activation=None``, ``use_bias=True``, glorot_uniform
    kernels and zero biases."""

    _config_keys = ("filters", "kernel_size", "strides", "padding", "dilation_rate", "activation", "use_bias",
                    "kernel_initializer", "bias_initializer")  # fmt: skip

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 dilation_rate: Any = 1, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        where = f"Conv1D '{self.name}'"
        self.filters = positive_int(filters, "filters", where)
        self.kernel_size = _int1(kernel_size, "kernel_size", where)
        self.strides = _int1(strides, "strides", where)
        self.dilation_rate = _int1(dilation_rate, "dilation_rate", where)
        if padding not in ("valid", "same", "causal"):
            raise ValueError(f"{where}: padding must be 'valid', 'same' or 'causal', got {padding!r}")
        self.padding = padding
        self.activation = activation if activation is not None else "linear"
        self._act = activations.get(self.activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer")
        self.bias_initializer = check_initializer(bias_initializer, "bias_initializer")

    def build(self, input_shape: Any) -> None:
        steps, channels = _sequence(input_shape, f"Conv1D '{self.name}'")
        dtype = self._param_dtype()
        kernel = torch.empty(self.filters, channels, self.kernel_size, dtype=dtype)
        self.weight = nn.Parameter(initialize(kernel, self.kernel_initializer))
        self.bias = (nn.Parameter(initialize(torch.empty(self.filters, dtype=dtype), self.bias_initializer))
                     if self.use_bias else None)  # fmt: skip
        self._dynamic = steps is None and self.padding == "same"
        self._pad = (0, 0) if self._dynamic else _pads(steps, self.kernel_size, self.strides,
                                                        self.dilation_rate, self.padding)
        super().build(input_shape)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        steps, _ = _sequence(input_shape, "Conv1D")
        steps = _out_len(steps, self.kernel_size, self.strides, self.dilation_rate, self.padding)
        return (input_shape[0], steps, self.filters)

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        x = inputs.transpose(1, 2)
        pad = _pads(x.shape[2], self.kernel_size, self.strides, self.dilation_rate, "same") \
            if self._dynamic else self._pad
        if pad != (0, 0):
            x = F.pad(x, pad)
        y = F.conv1d(x, self.weight, self.bias, self.strides, 0, self.dilation_rate).transpose(1, 2)
        return y if self._act is None else self._act(y)

    def _keras_weights(self) -> list[torch.Tensor]:
        return [self.weight.permute(2, 1, 0)] + ([self.bias] if self.bias is not None else [])

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        self.weight.copy_(weights[0].permute(2, 1, 0))
        if self.bias is not None:
            self.bias.copy_(weights[1])


class _Pooling1D(Layer):
    _config_keys = ("pool_size", "strides", "padding")

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        where = f"{type(self).__name__} '{self.name}'"
        self.pool_size = _int1(pool_size, "pool_size", where)
        self.strides = self.pool_size if strides is None else _int1(strides, "strides", where)
        if padding not in ("valid", "same"):
            raise ValueError(f"{where}: padding must be 'valid' or 'same', got {padding!r}")
        self.padding = padding

    def build(self, input_shape: Any) -> None:
        steps, _ = _sequence(input_shape, f"{type(self).__name__} '{self.name}'")
        if steps is None and self.padding == "same":
            raise ValueError(f"{type(self).__name__} '{self.name}': padding='same' needs a known number of "
                             f"steps, got input shape {tuple(input_shape)}")
        self._pad = _pads(steps, self.pool_size, self.strides, 1, self.padding)
        if self._pad != (0, 0):
            # TF 'same' averages over the real steps only
            ones = F.pad(torch.ones(1, 1, steps), self._pad)
            self.register_buffer("_count", F.avg_pool1d(ones, self.pool_size, self.strides) * self.pool_size,
                                 persistent=False)  # fmt: skip
        super().build(input_shape)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        steps, channels = _sequence(input_shape, type(self).__name__)
        return (input_shape[0], _out_len(steps, self.pool_size, self.strides, 1, self.padding), channels)


class MaxPooling1D(_Pooling1D):
    """Max over windows of ``pool_size`` steps (Keras 2 ``MaxPooling1D``)."""

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        x = inputs.transpose(1, 2)
        if self._pad != (0, 0):
            x = F.pad(x, self._pad, value=float("-inf"))
        return F.max_pool1d(x, self.pool_size, self.strides).transpose(1, 2)


class AveragePooling1D(_Pooling1D):
    """Mean over windows of ``pool_size`` steps (Keras 2 ``AveragePooling1D``)."""

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        x = inputs.transpose(1, 2)
        if self._pad != (0, 0):
            summed = F.avg_pool1d(F.pad(x, self._pad), self.pool_size, self.strides) * self.pool_size
            return (summed / self._count).transpose(1, 2)
        return F.avg_pool1d(x, self.pool_size, self.strides).transpose(1, 2)


class GlobalMaxPooling1D(Layer):
    """Max over steps: ``(N, steps, channels) -> (N, channels)``."""

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (input_shape[0], _sequence(input_shape, type(self).__name__)[1])

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        return inputs.amax(dim=1)


class GlobalAveragePooling1D(GlobalMaxPooling1D):
    """Mean over steps: ``(N, steps, channels) -> (N, channels)``."""

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        return inputs.mean(dim=1)


Convolution1D = Conv1D
MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
