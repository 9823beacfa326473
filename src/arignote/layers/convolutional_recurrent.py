"""``ConvLSTM2D`` and ``ConvLSTM2DCell`` (Keras 2 ``keras.layers.convolutional_recurrent``).

An LSTM whose input and recurrent transformations are 2-D convolutions, over sequences of images
``(batch, time, rows, cols, channels)`` (``channels_first``: ``(batch, time, channels, rows, cols)``).
Keras 2 defaults (``recurrent_activation='hard_sigmoid'``, ``unit_forget_bias=True``); the recurrent
convolution is ``'same'`` with stride 1; ``dropout`` / ``recurrent_dropout`` draw one mask per gate
and sequence, as Keras 2. The input convolution of all time steps is one batched convolution.

Weights (torch tensor -> Keras weight, Keras order ``[kernel, recurrent_kernel, bias]``, gates
``i, f, c, o``): ``weight`` ``(4f, in, kh, kw)`` -> ``kernel`` ``(kh, kw, in, 4f)``;
``recurrent_weight`` ``(4f, f, kh, kw)`` -> ``recurrent_kernel`` ``(kh, kw, f, 4f)``; ``bias`` ``(4f,)``.

Example::

    >>> ConvLSTM2D(4, 3, padding="same", return_sequences=True).compute_output_shape((None, 5, 8, 8, 2))
    (None, 5, 8, 8, 4)
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote import activations
from arignote.errors import keras_names_missing
from arignote.layers._conv import pad_arg
from arignote.layers._left_out import legacy_getattr
from arignote.layers._rnn_base import RNN
from arignote.layers._rnn_cells import _prob, dropout_mask
from arignote.layers._util import (
    KerasLayer,
    check_rank,
    constraint_arg,
    conv_output_length,
    initializer_arg,
    normalize_data_format,
    normalize_padding,
    normalize_tuple,
    regularizer_arg,
    same_pads,
)
from arignote.layers.base import Layer, positive_int

_legacy = legacy_getattr("arignote.layers.convolutional_recurrent", ["Recurrent", "ConvRecurrent2D"])
_not_yet = keras_names_missing("arignote.layers.convolutional_recurrent", {
    "ConvRNN2D": "ConvLSTM2D (a ConvRNN2D around a cell of your own is not provided)"})


def __getattr__(name: str) -> object:
    return _not_yet(name) if name == "ConvRNN2D" else _legacy(name)


__all__ = ["ConvLSTM2D", "ConvLSTM2DCell", "RNN"]


class ConvLSTM2DCell(KerasLayer, Layer):
    """One ConvLSTM step on ``(batch, rows, cols, channels)`` images (Keras 2 ``ConvLSTM2DCell``)."""

    _config_keys = (
        "filters",
        "kernel_size",
        "strides",
        "padding",
        "data_format",
        "dilation_rate",
        "activation",
        "recurrent_activation",
        "use_bias",
        "kernel_initializer",
        "recurrent_initializer",
        "bias_initializer",
        "unit_forget_bias",
        "kernel_regularizer",
        "recurrent_regularizer",
        "bias_regularizer",
        "kernel_constraint",
        "recurrent_constraint",
        "bias_constraint",
        "dropout",
        "recurrent_dropout",
    )

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        activation: Any = "tanh",
        recurrent_activation: Any = "hard_sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        unit_forget_bias: bool = True,
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        where = f"{type(self).__name__} '{self.name}'"
        self.filters = positive_int(filters, "filters", where)
        self.kernel_size = normalize_tuple(kernel_size, 2, "kernel_size", where)
        self.strides = normalize_tuple(strides, 2, "strides", where)
        self.padding = normalize_padding(padding, where)
        self.data_format = normalize_data_format(data_format, where)
        self.dilation_rate = normalize_tuple(dilation_rate, 2, "dilation_rate", where)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializer_arg(kernel_initializer)
        self.recurrent_initializer = initializer_arg(recurrent_initializer)
        self.bias_initializer = initializer_arg(bias_initializer)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.kernel_regularizer = regularizer_arg(kernel_regularizer)
        self.recurrent_regularizer = regularizer_arg(recurrent_regularizer)
        self.bias_regularizer = regularizer_arg(bias_regularizer)
        self.kernel_constraint = constraint_arg(kernel_constraint)
        self.recurrent_constraint = constraint_arg(recurrent_constraint)
        self.bias_constraint = constraint_arg(bias_constraint)
        self.dropout = _prob(dropout, "dropout", where)
        self.recurrent_dropout = _prob(recurrent_dropout, "recurrent_dropout", where)
        self.bias = None

    @property
    def state_size(self) -> tuple:
        return (self.filters, self.filters)

    def build_keras(self, input_shape: tuple) -> None:
        shape = tuple(input_shape)
        channels = shape[1] if self.data_format == "channels_first" else shape[-1]
        if channels is None:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': the channel dimension of the inputs should "
                "be defined. Found `None`."
            )
        f, (kh, kw) = self.filters, self.kernel_size
        perm = (2, 3, 1, 0)
        self.new_weight(
            "kernel",
            (kh, kw, channels, 4 * f),
            self.kernel_initializer,
            perm,
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        self.new_weight(
            "recurrent_kernel",
            (kh, kw, f, 4 * f),
            self.recurrent_initializer,
            perm,
            self.recurrent_regularizer,
            self.recurrent_constraint,
            attr="recurrent_weight",
        )
        if self.use_bias:
            init = self.bias_initializer
            if self.unit_forget_bias:
                base = self.bias_initializer

                def init(shape: tuple, dtype: Any = None) -> torch.Tensor:
                    return torch.cat([base((f,), dtype), torch.ones(f, dtype=dtype), base((2 * f,), dtype)])

            self.new_weight("bias", (4 * f,), init, None, self.bias_regularizer, self.bias_constraint)

    # all on torch's (N, C, H, W) tensors ----------------------------------------------------------
    def input_conv(self, x: torch.Tensor, masks: list | None) -> torch.Tensor:
        """The input convolution of ``(M, C, H, W)`` images (all time steps at once): ``(M, 4f, H', W')``."""
        if self.padding == "same":
            pads = [
                same_pads(int(n), self.kernel_size[i], self.strides[i], self.dilation_rate[i])
                for i, n in enumerate(x.shape[2:])
            ]
            x = F.pad(x, pad_arg(pads))
        if masks is None:
            return F.conv2d(x, self.weight, self.bias, self.strides, 0, self.dilation_rate)
        if self.padding == "same":
            masks = [F.pad(m, pad_arg(pads)) for m in masks]
        biases = self.bias.split(self.filters) if self.bias is not None else [None] * 4
        return torch.cat(
            [
                F.conv2d(x * m, w, b, self.strides, 0, self.dilation_rate)
                for m, w, b in zip(masks, self.weight.split(self.filters), biases)
            ],
            1,
        )

    def step(self, xc: torch.Tensor, h: torch.Tensor, c: torch.Tensor, rec: list | None) -> tuple:
        kh, kw = self.kernel_size
        pad = pad_arg([((kh - 1) // 2, kh - 1 - (kh - 1) // 2), ((kw - 1) // 2, kw - 1 - (kw - 1) // 2)])
        if rec is None:
            hc = F.conv2d(F.pad(h, pad), self.recurrent_weight)
        else:
            hc = torch.cat(
                [
                    F.conv2d(F.pad(h * m, pad), w)
                    for m, w in zip(rec, self.recurrent_weight.split(self.filters))
                ],
                1,
            )
        i, f, g, o = (xc + hc).split(self.filters, 1)
        i, f, o = self.recurrent_activation(i), self.recurrent_activation(f), self.recurrent_activation(o)
        c = f * c + i * self.activation(g)
        return o * self.activation(c), c

    def output_spatial(self, rows: int | None, cols: int | None) -> tuple:
        return tuple(
            conv_output_length(n, self.kernel_size[i], self.padding, self.strides[i], self.dilation_rate[i])
            for i, n in enumerate((rows, cols))
        )


class ConvLSTM2D(KerasLayer, Layer):
    """Convolutional LSTM (Keras 2 ``ConvLSTM2D``): the cell's arguments plus ``return_sequences``,
    ``go_backwards``, ``stateful``; masks keep the previous output and states on masked steps."""

    supports_masking = True
    _config_keys = (
        *ConvLSTM2DCell._config_keys,
        "return_sequences",
        "go_backwards",
        "stateful",
        "activity_regularizer",
    )
    _layer_kwargs = (
        "name",
        "input_shape",
        "input_dim",
        "batch_input_shape",
        "batch_size",
        "dtype",
        "trainable",
        "weights",
        "input_dtype",
    )

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        return_sequences: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        activity_regularizer: Any = None,
        **kwargs: Any,
    ) -> None:
        layer = {k: kwargs.pop(k) for k in self._layer_kwargs if k in kwargs}
        cell = ConvLSTM2DCell(filters, kernel_size, dtype=layer.get("dtype"), **kwargs)
        super().__init__(**layer)
        self.cell = cell
        self.return_sequences, self.go_backwards, self.stateful = (
            bool(return_sequences),
            bool(go_backwards),
            bool(stateful),
        )
        self.activity_regularizer = regularizer_arg(activity_regularizer)
        self._states: list[torch.Tensor] | None = None

    def __getattr__(self, name: str) -> Any:
        if name in ConvLSTM2DCell._config_keys:
            return getattr(self.cell, name)
        return super().__getattr__(name)

    def build_keras(self, input_shape: tuple) -> None:
        shape = check_rank(
            tuple(input_shape),
            5,
            f"ConvLSTM2D '{self.name}'",
            "sequences of images (batch, time, rows, cols, channels)",
        )
        self.cell._build_once((shape[0], *shape[2:]))

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        first = self.cell.data_format == "channels_first"
        rows, cols = (shape[3], shape[4]) if first else (shape[2], shape[3])
        r, c = self.cell.output_spatial(rows, cols)
        f = self.cell.filters
        one = (f, r, c) if first else (r, c, f)
        return (shape[0], shape[1], *one) if self.return_sequences else (shape[0], *one)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return mask if self.return_sequences else None

    def reset_states(self, states: Any = None) -> None:
        """Zero the carried states of a stateful layer (or set them to ``[h, c]`` in Keras layout)."""
        if not self.stateful:
            raise AttributeError(f"Layer '{self.name}' must be stateful (stateful=True) to reset its states")
        if states is None:
            self._states = None if self._states is None else [torch.zeros_like(s) for s in self._states]
            return
        self._states = [self._to_torch_image(torch.as_tensor(s, dtype=self._param_dtype())) for s in states]

    def _to_torch_image(self, t: torch.Tensor) -> torch.Tensor:
        return t if self.cell.data_format == "channels_first" else t.permute(0, 3, 1, 2)

    def _from_torch_image(self, t: torch.Tensor) -> torch.Tensor:
        return t if self.cell.data_format == "channels_first" else t.movedim(-3, -1)

    def call(self, inputs: torch.Tensor, mask: Any = None, training: Any = None) -> torch.Tensor:
        cell = self.cell
        training = self.training if training is None else bool(training)
        x = inputs if cell.data_format == "channels_first" else inputs.permute(0, 1, 4, 2, 3)
        if self.go_backwards:
            x = x.flip(1)
            mask = None if mask is None else mask.flip(1)
        n, t = x.shape[0], x.shape[1]
        first = x[:, 0]
        dp = dropout_mask(first, cell.dropout, 4) if training and 0 < cell.dropout < 1 else None
        xc = cell.input_conv(
            x.reshape(n * t, *x.shape[2:]), None if dp is None else [m.repeat_interleave(t, 0) for m in dp]
        )
        xc = xc.reshape(n, t, *xc.shape[1:])
        if self.stateful and self._states is not None:
            h, c = (s.to(x.device, x.dtype) for s in self._states)
        else:
            h = xc.new_zeros(n, cell.filters, *xc.shape[3:])
            c = torch.zeros_like(h)
        rec = (
            dropout_mask(h, cell.recurrent_dropout, 4)
            if training and 0 < cell.recurrent_dropout < 1
            else None
        )
        outs = []
        for s in range(t):
            h_new, c_new = cell.step(xc[:, s], h, c, rec)
            if mask is not None:
                m = mask[:, s].to(torch.bool).view(n, 1, 1, 1)
                h_new, c_new = torch.where(m, h_new, h), torch.where(m, c_new, c)
            h, c = h_new, c_new
            outs.append(h)
        if self.stateful:
            self._states = [h.detach(), c.detach()]
        y = torch.stack(outs, 1) if self.return_sequences else h
        return self._activity(self._from_torch_image(y))

    def _keras_weights(self) -> list[torch.Tensor]:
        return self.cell._keras_weights()

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        self.cell._set_keras_weights(weights)

    def weight_names(self) -> list[str]:
        return self.cell.weight_names()
