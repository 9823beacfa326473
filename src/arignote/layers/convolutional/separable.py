"""``SeparableConv1D``, ``SeparableConv2D``, ``DepthwiseConv2D`` (Keras 2 ``keras.layers.convolutional``).

Weights (torch tensor -> Keras weight, in ``layer.weights`` order):

* ``depthwise_kernel`` ``(in, depth_multiplier, *k)`` -> ``depthwise_kernel`` ``(*k, in, depth_multiplier)``
  (output channel ``i * depth_multiplier + m`` reads input channel ``i``, as TensorFlow);
* ``pointwise_kernel`` ``(filters, in * depth_multiplier, *1)`` -> ``pointwise_kernel``
  ``(*1, in * depth_multiplier, filters)`` (separable only);
* ``bias`` ``(filters,)`` (``(in * depth_multiplier,)`` for depthwise).

Example::

    >>> DepthwiseConv2D(3, depth_multiplier=2).compute_output_shape((None, 8, 8, 4))
    (None, 6, 6, 8)
"""

from __future__ import annotations

from typing import Any

import torch

from arignote.layers._util import constraint_arg, initializer_arg, regularizer_arg, spatial_of, with_spatial
from arignote.layers.base import positive_int
from arignote.layers.convolutional.conv import _CONV, _Conv

__all__ = ["SeparableConv1D", "SeparableConv2D", "DepthwiseConv2D"]


class _Depthwise(_Conv):
    """Shared: a grouped convolution with ``depth_multiplier`` outputs per input channel."""

    def _depthwise_args(
        self, depth_multiplier: Any, initializer: Any, regularizer: Any, constraint: Any
    ) -> None:
        self.depth_multiplier = positive_int(
            depth_multiplier, "depth_multiplier", f"{type(self).__name__} '{self.name}'"
        )
        self.depthwise_initializer = initializer_arg(initializer)
        self.depthwise_regularizer = regularizer_arg(regularizer)
        self.depthwise_constraint = constraint_arg(constraint)

    def _build_depthwise(self, input_shape: tuple) -> int:
        cin = self._in_channels(input_shape)
        n = self.rank
        # torch (in, dm, *k) -> Keras (*k, in, dm)
        perm = (*range(2, n + 2), 0, 1)
        self.new_weight(
            "depthwise_kernel",
            (*self.kernel_size, cin, self.depth_multiplier),
            self.depthwise_initializer,
            perm,
            self.depthwise_regularizer,
            self.depthwise_constraint,
        )
        self._plan(spatial_of(tuple(input_shape), self.data_format))
        self._cin = cin
        return cin

    def _depthwise(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        if self._pad is not None:
            x = torch.nn.functional.pad(x, self._pad)
        w = self.depthwise_kernel.reshape(self._cin * self.depth_multiplier, 1, *self.kernel_size)
        return _CONV[self.rank](x, w, bias, self.strides, self._op_pad, self.dilation_rate, self._cin)


class _SeparableConv(_Depthwise):
    _config_keys = (
        *(
            k
            for k in _Conv._config_keys
            if k not in ("kernel_initializer", "kernel_regularizer", "kernel_constraint")
        ),
        "depth_multiplier",
        "depthwise_initializer",
        "pointwise_initializer",
        "depthwise_regularizer",
        "pointwise_regularizer",
        "depthwise_constraint",
        "pointwise_constraint",
    )

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any,
        padding: str,
        data_format: str | None,
        dilation_rate: Any,
        depth_multiplier: int = 1,
        activation: Any = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        pointwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        pointwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        depthwise_constraint: Any = None,
        pointwise_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            filters,
            kernel_size,
            strides,
            padding,
            data_format,
            dilation_rate,
            activation=activation,
            use_bias=use_bias,
            bias_initializer=bias_initializer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            bias_constraint=bias_constraint,
            **kwargs,
        )
        self._depthwise_args(
            depth_multiplier, depthwise_initializer, depthwise_regularizer, depthwise_constraint
        )
        self.pointwise_initializer = initializer_arg(pointwise_initializer)
        self.pointwise_regularizer = regularizer_arg(pointwise_regularizer)
        self.pointwise_constraint = constraint_arg(pointwise_constraint)

    def build_keras(self, input_shape: tuple) -> None:
        cin = self._build_depthwise(input_shape)
        n = self.rank
        self.new_weight(
            "pointwise_kernel",
            (*([1] * n), cin * self.depth_multiplier, self.filters),
            self.pointwise_initializer,
            (*range(2, n + 2), 1, 0),
            self.pointwise_regularizer,
            self.pointwise_constraint,
        )
        if self.use_bias:
            self.new_weight(
                "bias",
                (self.filters,),
                self.bias_initializer,
                None,
                self.bias_regularizer,
                self.bias_constraint,
            )

    def _conv(self, x: torch.Tensor) -> torch.Tensor:
        return _CONV[self.rank](self._depthwise(x, None), self.pointwise_kernel, self.bias)


class SeparableConv1D(_SeparableConv):
    """Depthwise then pointwise 1-D convolution (``data_format='channels_last'`` by default)."""

    rank = 1

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = "channels_last",
        dilation_rate: Any = 1,
        depth_multiplier: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            filters, kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier, **kwargs
        )


class SeparableConv2D(_SeparableConv):
    """Depthwise then pointwise 2-D convolution (Keras 2 ``SeparableConv2D``)."""

    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        depth_multiplier: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            filters, kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier, **kwargs
        )


class DepthwiseConv2D(_Depthwise):
    """One ``kernel_size`` filter per input channel (times ``depth_multiplier``), no channel mixing."""

    rank = 2
    _config_keys = (
        *(
            k
            for k in _Conv._config_keys
            if k not in ("filters", "kernel_initializer", "kernel_regularizer", "kernel_constraint")
        ),
        "depth_multiplier",
        "depthwise_initializer",
        "depthwise_regularizer",
        "depthwise_constraint",
    )

    def __init__(
        self,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        depth_multiplier: int = 1,
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        activation: Any = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        depthwise_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            None,
            kernel_size,
            strides,
            padding,
            data_format,
            dilation_rate,
            activation=activation,
            use_bias=use_bias,
            bias_initializer=bias_initializer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            bias_constraint=bias_constraint,
            **kwargs,
        )
        self._depthwise_args(
            depth_multiplier, depthwise_initializer, depthwise_regularizer, depthwise_constraint
        )

    def build_keras(self, input_shape: tuple) -> None:
        cin = self._build_depthwise(input_shape)
        if self.use_bias:
            self.new_weight(
                "bias",
                (cin * self.depth_multiplier,),
                self.bias_initializer,
                None,
                self.bias_regularizer,
                self.bias_constraint,
            )

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        out = super().output_shape_keras(shape)
        channels = shape[1] if self.data_format == "channels_first" else shape[-1]
        filters = None if channels is None else channels * self.depth_multiplier
        return with_spatial(
            shape[0],
            filters,
            out[2:] if self.data_format == "channels_first" else out[1:-1],
            self.data_format,
        )

    def _conv(self, x: torch.Tensor) -> torch.Tensor:
        return self._depthwise(x, self.bias)
