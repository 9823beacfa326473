"""``ConvRNN2D``, ``ConvLSTM2D`` and ``ConvLSTM2DCell`` (Keras 2 ``keras.layers.convolutional_recurrent``).

``ConvRNN2D(cell)`` (:mod:`arignote.layers.recurrent.conv_rnn`) runs a convolutional cell over sequences of
images ``(batch, time, rows, cols, channels)`` (``channels_first``: ``(batch, time, channels, rows,
cols)``); ``ConvLSTM2D`` is a ConvRNN2D around ``ConvLSTM2DCell``, as in Keras 2.3.1: an LSTM whose
input and recurrent transformations are 2-D convolutions. Keras 2 defaults
(``recurrent_activation='hard_sigmoid'``, ``unit_forget_bias=True``); the recurrent convolution is
``'same'`` with stride 1; ``dropout`` / ``recurrent_dropout`` draw one mask per gate and sequence,
as Keras 2. The input convolution of all time steps is one batched convolution; with
``channels_last`` the convolutions run on channels-last memory (torch views of the Keras layout).

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
from arignote.layers._left_out import legacy_getattr
from arignote.layers._util import (
    KerasLayer,
    constraint_arg,
    conv_output_length,
    initializer_arg,
    normalize_data_format,
    normalize_padding,
    normalize_tuple,
    pad_arg,
    regularizer_arg,
    same_pads,
)
from arignote.layers.base import Layer, positive_int
from arignote.layers.recurrent import conv_lstm_joint as joined
from arignote.layers.recurrent import conv_lstm_sequence as recurrence
from arignote.layers.recurrent.cells import _prob, dropout_mask
from arignote.layers.recurrent.conv_rnn import ConvRNN2D, ZeroStates
from arignote.layers.recurrent.rnn import RNN, delegate, run_steps

__getattr__ = legacy_getattr("arignote.layers.convolutional_recurrent", ["Recurrent", "ConvRecurrent2D"])

__all__ = ["ConvLSTM2D", "ConvLSTM2DCell", "ConvRNN2D", "RNN"]


class ConvLSTM2DCell(KerasLayer, Layer):
    """One ConvLSTM step on ``(batch, rows, cols, channels)`` images (Keras 2 ``ConvLSTM2DCell``).

    ``call(inputs, states, training=None)`` is Keras's cell API (one step, ``states = [h, c]``);
    :class:`ConvRNN2D` runs a whole sequence through :meth:`run_sequence` instead.
    """

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
        # 'same' padding of an even kernel puts the odd row/column before the image, as Keras 2's Theano
        # backend did (set when loading a Theano file: saving.layouts.theano_same_padding)
        self.theano_same_padding = False

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
        self.kernel_shape = (kh, kw, channels, 4 * f)
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

    # all on torch's (N, C, H, W) tensors (channels_last memory when the data format is) -------------
    @staticmethod
    def _conv(x: torch.Tensor, w: torch.Tensor, b: Any, pads: list, strides: Any, dilation: Any) -> Any:
        """``F.conv2d`` after ``(before, after)`` pads per axis: the convolution pads a symmetric
        margin itself (no padded copy of the images, nor its backward)."""
        if all(a == z for a, z in pads):
            return F.conv2d(x, w, b, strides, tuple(a for a, _ in pads), dilation)
        return F.conv2d(F.pad(x, pad_arg(pads)), w, b, strides, 0, dilation)

    def input_conv(self, x: torch.Tensor, masks: list | None, weights: tuple | None = None) -> torch.Tensor:
        """The input convolution of ``(M, C, H, W)`` images (all time steps at once): ``(M, 4f, H', W')``;
        ``weights``: ``(kernel, bias)`` to use instead of the layer's."""
        kernel, bias = (self.weight, self.bias) if weights is None else weights
        pads = [(0, 0), (0, 0)]
        if self.padding == "same":
            pads = [
                self._same(same_pads(int(n), self.kernel_size[i], self.strides[i], self.dilation_rate[i]))
                for i, n in enumerate(x.shape[2:])
            ]
        if masks is None:
            return self._conv(x, kernel, bias, pads, self.strides, self.dilation_rate)
        biases = bias.split(self.filters) if bias is not None else [None] * 4
        return torch.cat(
            [
                self._conv(x * m, w, b, pads, self.strides, self.dilation_rate)
                for m, w, b in zip(masks, kernel.split(self.filters), biases)
            ],
            1,
        )

    def _same(self, pads: tuple) -> tuple:
        return pads[::-1] if self.theano_same_padding else pads

    def step(
        self, xc: torch.Tensor, h: torch.Tensor, c: torch.Tensor, rec: list | None, zero_h: bool = False
    ) -> tuple:
        """One step from the step's input convolution ``xc``; ``zero_h``: ``h`` is known to be zeros
        (a fresh sequence's first step), so its convolution, exactly zero, is skipped."""
        pads = [self._same(((k - 1) // 2, k - 1 - (k - 1) // 2)) for k in self.kernel_size]
        if zero_h:
            hc = None
        elif rec is None:
            hc = self._conv(h, self.recurrent_weight, None, pads, 1, 1)
        else:
            hc = torch.cat(
                [
                    self._conv(h * m, w, None, pads, 1, 1)
                    for m, w in zip(rec, self.recurrent_weight.split(self.filters))
                ],
                1,
            )
        i, f, g, o = (xc if hc is None else xc + hc).split(self.filters, 1)
        i, f, o = self.recurrent_activation(i), self.recurrent_activation(f), self.recurrent_activation(o)
        c = f * c + i * self.activation(g)
        return o * self.activation(c), c

    def output_spatial(self, rows: int | None, cols: int | None) -> tuple:
        return tuple(
            conv_output_length(n, self.kernel_size[i], self.padding, self.strides[i], self.dilation_rate[i])
            for i, n in enumerate((rows, cols))
        )

    # Keras 2's cell API and the whole-sequence path of ConvRNN2D ---------------------------------
    def _to_torch(self, t: torch.Tensor) -> torch.Tensor:
        return t if self.data_format == "channels_first" else t.movedim(-1, -3)

    def _to_keras(self, t: torch.Tensor) -> torch.Tensor:
        return t if self.data_format == "channels_first" else t.movedim(-3, -1)

    def _masks(self, x: torch.Tensor, h: torch.Tensor, training: bool) -> tuple:
        def draw(like: torch.Tensor, rate: float) -> list | None:
            return dropout_mask(like, rate, 4) if training and 0 < rate < 1 else None

        return draw(x, self.dropout), draw(h, self.recurrent_dropout)

    def call(self, inputs: torch.Tensor, states: list, training: Any = None) -> tuple:
        """One step on Keras-layout images: ``(h, [h, c])``. Dropout draws fresh masks at each call
        (ConvRNN2D keeps one per sequence)."""
        training = self.training if training is None else bool(training)
        x, h, c = self._to_torch(inputs), self._to_torch(states[0]), self._to_torch(states[1])
        dp, rec = self._masks(x, h, training)
        h, c = self.step(self.input_conv(x, dp), h, c, rec)
        h = self._to_keras(h)
        return h, [h, self._to_keras(c)]

    def _frames(self, xc: torch.Tensor, n: int, t: int) -> list:
        """The ``t`` steps of the input convolution ``(n * t, 4f, H, W)`` as torch-layout views, unbound
        once (one stack in the backward, not a zero-filled copy per step); in channels_last the
        views are taken of its Keras layout, so the gradients stack back into channels-last memory."""
        k = self._to_keras(xc)
        return [self._to_torch(f) for f in k.reshape(n, t, *k.shape[1:]).unbind(1)]

    def _recurrence(self, mask: Any, rec: Any, fresh: bool) -> recurrence.Recurrence | None:
        """The hand-differentiated recurrence's settings when it applies: no mask, no recurrent
        dropout, activations it knows, symmetric 'same' margins (odd kernel sizes), not under an export's
        trace (which records the per-operator graph); else None."""
        known = recurrence.ACTIVATIONS
        if recurrence.tracing() or mask is not None or rec is not None or self.activation not in known or any(
                k % 2 == 0 for k in self.kernel_size) or self.recurrent_activation not in known:
            return None
        pads = tuple((k - 1) // 2 for k in self.kernel_size)
        return recurrence.Recurrence(self.filters, pads, self.activation, self.recurrent_activation, fresh,
                                     self.data_format == "channels_first")

    def _joins_convolutions(self) -> bool:
        """True when the input convolution has the recurrent one's geometry (stride 1, 'same', no
        dilation), so a step can be one convolution of the frame and the previous output side by side
        (:mod:`arignote.layers.recurrent.conv_lstm_joint`)."""
        ones = (1, 1)
        return self.padding == "same" and tuple(self.strides) == ones and tuple(self.dilation_rate) == ones

    @property
    def runs_sequences(self) -> bool:
        """True unless a subclass replaces :meth:`call` (then ConvRNN2D steps through its call)."""
        return type(self).call is ConvLSTM2DCell.call

    def run_sequence(
        self, x: torch.Tensor, mask: torch.Tensor | None, states: list, training: bool, sequence: bool = True
    ) -> tuple:
        """A whole Keras-layout sequence ``(batch, time, ...)`` from Keras-layout ``states``: the input
        convolution of all steps at once, then the recurrent steps; ``(outputs, last, [h, c])``
        (outputs None unless ``sequence``)."""
        # channels_last: torch's (N, C, H, W) views of contiguous Keras-layout memory, so the
        # convolutions run on channels-last images and the outputs stack into Keras layout unmoved
        fresh = isinstance(states, ZeroStates)
        x = self._to_torch(x.contiguous())
        h, c = (self._to_torch(s.contiguous()) for s in states)
        n, t = x.shape[0], x.shape[1]
        dp, rec = self._masks(x[:, 0], h, training)
        spec = self._recurrence(mask, rec, fresh)
        weights = None
        if spec is not None:  # hard_sigmoid's affine in the convolutions: the steps clamp
            spec, *weights, recurrent = recurrence.fold(spec, self.weight, self.bias, self.recurrent_weight)
            if dp is None and self._joins_convolutions():
                out, c = joined.run(x, h, c, torch.cat([weights[0], recurrent], 1), weights[1], spec)
                last = out[:, -1]
                return (out if sequence else None), last, [last, self._to_keras(c)]
        xc = self.input_conv(
            x.reshape(n * t, *x.shape[2:]), None if dp is None else [m.repeat_interleave(t, 0) for m in dp],
            weights,
        )
        if spec is not None:
            out, c = recurrence.run(xc, h, c, recurrent, spec)
            last = out[:, -1]
            return (out if sequence else None), last, [last, self._to_keras(c)]
        frames = self._frames(xc, n, t)

        def step(s: int, st: list) -> tuple:
            h, c = self.step(frames[s], st[0], st[1], rec, zero_h=fresh and s == 0)
            return self._to_keras(h), [h, c]

        outs, last, states = run_steps(step, t, mask, [h, c], sequence)
        return outs, last, [self._to_keras(s) for s in states]


_CELL_KEYS = ConvLSTM2DCell._config_keys


@delegate(*_CELL_KEYS)
class ConvLSTM2D(ConvRNN2D):
    """Convolutional LSTM (Keras 2 ``ConvLSTM2D``): a :class:`ConvRNN2D` around a
    :class:`ConvLSTM2DCell`, the cell's arguments plus ``return_sequences``, ``go_backwards``,
    ``stateful`` (and ``return_state`` by keyword, as Keras 2); masks keep the previous output and
    states on masked steps."""

    # Keras 2.3.1's get_config order: the RNN's flags, then the cell's arguments
    _config_keys = (
        *RNN._config_keys,
        *_CELL_KEYS[: _CELL_KEYS.index("bias_regularizer") + 1],
        "activity_regularizer",
        *_CELL_KEYS[_CELL_KEYS.index("bias_regularizer") + 1:],
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
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        return_sequences: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        **kwargs: Any,
    ) -> None:
        cell = ConvLSTM2DCell(
            filters,
            kernel_size,
            strides=strides,
            padding=padding,
            data_format=data_format,
            dilation_rate=dilation_rate,
            activation=activation,
            recurrent_activation=recurrent_activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            unit_forget_bias=unit_forget_bias,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            dtype=kwargs.get("dtype"),
        )
        super().__init__(
            cell, return_sequences=return_sequences, go_backwards=go_backwards, stateful=stateful, **kwargs
        )
        self.activity_regularizer = regularizer_arg(activity_regularizer)

