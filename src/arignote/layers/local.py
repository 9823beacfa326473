"""Locally connected layers (Keras 2 ``keras.layers.local``): like convolutions with unshared weights.

Weights are Keras's own layout (no permutation): ``kernel`` ``(output_positions, k * in, filters)``
with each patch flattened as Keras 2 flattens it (``(k, in)`` for 1-D; ``(kh, kw, in)`` for
channels_last and ``(in, kh, kw)`` for channels_first 2-D), ``bias`` ``(output_length, filters)`` or
``(out_rows, out_cols, filters)``. Only ``padding='valid'``, as in Keras 2. A channels_first
``LocallyConnected2D`` adds its bias as Keras 2's ``bias_add`` does, reshaped (not transposed) to
``(filters, out_rows, out_cols)``; ``LocallyConnected1D`` reads ``(steps, channels)`` whatever its
``data_format`` says, as Keras 2.3.1's (which neither uses nor saves it).

Example::

    >>> LocallyConnected1D(4, 3).compute_output_shape((None, 10, 2))
    (None, 8, 4)
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from arignote.layers._util import conv_output_length, normalize_data_format, spatial_of, with_spatial
from arignote.layers.convolutional.conv import _Conv

__all__ = ["LocallyConnected1D", "LocallyConnected2D"]


class _Local(_Conv):
    _config_keys = tuple(k for k in _Conv._config_keys if k != "dilation_rate")

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any,
        padding: str,
        data_format: str | None,
        **kwargs: Any,
    ) -> None:
        if str(padding).lower() != "valid":
            raise ValueError(
                f'Invalid border mode for {type(self).__name__} (only "valid" is supported): {padding!r}'
            )
        super().__init__(filters, kernel_size, strides, padding, data_format, 1, **kwargs)

    def build_keras(self, input_shape: tuple) -> None:
        cin = self._in_channels(input_shape)
        spatial = spatial_of(tuple(input_shape), self.data_format)
        if None in spatial:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': the spatial dimensions of the inputs should be "
                f"fully defined, got input shape {tuple(input_shape)}"
            )
        self._out = tuple(
            conv_output_length(n, self.kernel_size[i], "valid", self.strides[i])
            for i, n in enumerate(spatial)
        )
        self.new_weight(
            "kernel",
            (math.prod(self._out), math.prod(self.kernel_size) * cin, self.filters),
            self.kernel_initializer,
            None,
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        if self.use_bias:
            self.new_weight(
                "bias",
                (*self._out, self.filters),
                self.bias_initializer,
                None,
                self.bias_regularizer,
                self.bias_constraint,
            )

    def _patches(self, x: torch.Tensor) -> torch.Tensor:
        """``(N, positions, features)`` in Keras's feature order."""
        if self.rank == 1:  # (N, steps, C) -> (N, L, C, k) -> (N, L, k, C)
            p = x.unfold(1, self.kernel_size[0], self.strides[0]).permute(0, 1, 3, 2)
            return p.reshape(x.shape[0], p.shape[1], -1)
        t = x if self.data_format == "channels_first" else x.permute(0, 3, 1, 2)
        cols = F.unfold(t, self.kernel_size, stride=self.strides)  # (N, C*kh*kw, L), C outermost
        n, _, positions = cols.shape
        if self.data_format == "channels_first":
            return cols.transpose(1, 2)
        c = t.shape[1]
        return cols.view(n, c, -1, positions).permute(0, 3, 2, 1).reshape(n, positions, -1)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.einsum("nlf,lfo->nlo", self._patches(x), self.weight)
        y = y.reshape(x.shape[0], *self._out, self.filters)
        if self.rank == 2 and self.data_format == "channels_first":
            y = y.permute(0, 3, 1, 2)
            if self.bias is not None:  # Keras 2's bias_add: the (rows, cols, filters) array reshaped
                y = y + self.bias.reshape(self.filters, *self._out)
        elif self.bias is not None:
            y = y + self.bias
        return self._activity(self.activation(y))

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        out = tuple(
            conv_output_length(n, self.kernel_size[i], "valid", self.strides[i])
            for i, n in enumerate(spatial_of(shape, self.data_format))
        )
        return with_spatial(shape[0], self.filters, out, self.data_format)


class LocallyConnected1D(_Local):
    """Unshared-weight 1-D convolution over ``(steps, channels)`` (``data_format`` is accepted and
    ignored, as in Keras 2.3.1)."""

    rank = 1
    _config_keys = tuple(k for k in _Local._config_keys if k != "data_format")

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        normalize_data_format(data_format, f"LocallyConnected1D '{kwargs.get('name', '?')}'")  # checked only
        super().__init__(filters, kernel_size, strides, padding, "channels_last", **kwargs)


class LocallyConnected2D(_Local):
    """Unshared-weight 2-D convolution over images."""

    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, **kwargs)
