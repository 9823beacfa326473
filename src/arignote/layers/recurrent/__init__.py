"""Recurrent layers (Keras 2 ``keras.layers.recurrent``): ``RNN``, ``SimpleRNN``, ``GRU``, ``LSTM``
and their cells (:mod:`arignote.layers.recurrent.cells`), ``StackedRNNCells``.

Keras 2 arguments and defaults (``recurrent_activation='sigmoid'``, GRU ``reset_after=False``,
LSTM ``unit_forget_bias=True``), ``dropout``, ``recurrent_dropout``, ``return_sequences``,
``return_state``, ``stateful`` (``reset_states()``), ``go_backwards``, ``unroll`` (accepted; the
result is the same), ``initial_state=``, masks (a masked step keeps the previous output and
states, as Keras 2).

Speed: a sequence runs through torch's fused kernel (cuDNN on a GPU) when the cell has one for its
configuration and no mask is given: LSTM with tanh/sigmoid, GRU with ``reset_after=True`` and
tanh/sigmoid, SimpleRNN with tanh/relu; input ``dropout`` keeps the fused path (one mask per
sequence, as Keras 2's). Other activations, ``reset_after=False``, ``recurrent_dropout`` in
training, masks and user cells take the general path: the input projection of all steps in one
product, then a loop over the recurrent step.

Weights are the cell's (see :mod:`arignote.layers.recurrent.cells`): ``[kernel, recurrent_kernel, bias]``.

Example::

    >>> import torch
    >>> lstm = LSTM(8, return_sequences=True, return_state=True)
    >>> y, h, c = lstm(torch.zeros(2, 5, 3))
    >>> tuple(y.shape), tuple(h.shape), tuple(c.shape)
    ((2, 5, 8), (2, 8), (2, 8))
"""

from __future__ import annotations

import warnings
from typing import Any

from arignote import backend as K
from arignote.layers._left_out import legacy_getattr
from arignote.layers._util import regularizer_arg, serial
from arignote.layers.recurrent.cells import GRUCell, LSTMCell, SimpleRNNCell
from arignote.layers.recurrent.rnn import RNN, StackedRNNCells
from arignote.layers.recurrent.rnn import delegate as _delegate

__getattr__ = legacy_getattr("arignote.layers.recurrent", ["Recurrent"])

__all__ = ["RNN", "SimpleRNN", "GRU", "LSTM", "SimpleRNNCell", "GRUCell", "LSTMCell", "StackedRNNCells"]



_CELL_ONLY = ("name", "trainable", "dtype", "batch_input_shape")


class _Wrapped(RNN):
    """A layer that owns its cell (SimpleRNN, GRU, LSTM): cell arguments are layer arguments."""

    _cell_cls: type = SimpleRNNCell
    _rnn_args = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll")

    def __init__(self, units: int, **kwargs: Any) -> None:
        rnn = {k: kwargs.pop(k) for k in self._rnn_args if k in kwargs}
        layer = {
            k: kwargs.pop(k)
            for k in (
                "name",
                "input_shape",
                "input_dim",
                "batch_input_shape",
                "batch_size",
                "dtype",
                "trainable",
                "weights",
                "input_dtype",
                "activity_regularizer",
            )
            if k in kwargs
        }
        activity = layer.pop("activity_regularizer", None)
        cell = self._cell_cls(units, dtype=layer.get("dtype"), **kwargs)
        super().__init__(cell, **rnn, **layer)
        self.activity_regularizer = regularizer_arg(activity)

    def get_config(self) -> dict:
        cfg = super().get_config()
        cell_cfg = {k: v for k, v in self.cell.get_config().items() if k not in _CELL_ONLY}
        cfg.update(cell_cfg, activity_regularizer=serial("regularizer", self.activity_regularizer))
        return cfg


def _implementation_zero(implementation: Any) -> None:
    """Keras 2.3.1's note on ``implementation=0`` (Keras 1's ``consume_less='cpu'``), which runs as 1."""
    if implementation == 0:
        warnings.warn("`implementation=0` has been deprecated, and now defaults to `implementation=1`.Please "
                      "update your layer call.", stacklevel=3)


_COMMON = (
    "units",
    "activation",
    "use_bias",
    "kernel_initializer",
    "recurrent_initializer",
    "bias_initializer",
    "kernel_regularizer",
    "recurrent_regularizer",
    "bias_regularizer",
    "kernel_constraint",
    "recurrent_constraint",
    "bias_constraint",
    "dropout",
    "recurrent_dropout",
)


@_delegate(*_COMMON)
class SimpleRNN(_Wrapped):
    """Fully connected RNN, ``SimpleRNN(units, activation='tanh', ...)`` (Keras 2)."""

    _cell_cls = SimpleRNNCell

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        **kwargs: Any,
    ) -> None:
        if "implementation" in kwargs:  # Keras 1's consume_less lands here (arignote.legacy.conversions)
            kwargs.pop("implementation")
            warnings.warn("The `implementation` argument in `SimpleRNN` has been deprecated. Please remove "
                          "it from your layer call.", stacklevel=2)
        super().__init__(
            units,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            unroll=unroll,
            **kwargs,
        )


@_delegate(*_COMMON, "recurrent_activation", "implementation", "reset_after")
class GRU(_Wrapped):
    """Gated recurrent unit, ``GRU(units, activation='tanh', recurrent_activation='sigmoid',
    reset_after=False, ...)`` (Keras 2.3); ``reset_after=True`` is CuDNNGRU's formula (fused)."""

    _cell_cls = GRUCell

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        implementation: int = 2,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        reset_after: bool = False,
        **kwargs: Any,
    ) -> None:
        _implementation_zero(implementation)
        super().__init__(
            units,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            unroll=unroll,
            recurrent_activation=recurrent_activation,
            implementation=implementation,
            reset_after=reset_after,
            **kwargs,
        )


@_delegate(*_COMMON, "recurrent_activation", "implementation", "unit_forget_bias")
class LSTM(_Wrapped):
    """Long short-term memory, ``LSTM(units, activation='tanh', recurrent_activation='sigmoid',
    unit_forget_bias=True, ...)`` (Keras 2.3)."""

    _cell_cls = LSTMCell

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
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
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        implementation: int = 2,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        **kwargs: Any,
    ) -> None:
        _implementation_zero(implementation)
        super().__init__(
            units,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            unroll=unroll,
            recurrent_activation=recurrent_activation,
            unit_forget_bias=unit_forget_bias,
            implementation=implementation,
            **kwargs,
        )


def _generate_dropout_mask(ones: Any, rate: float, training: Any = None, count: int = 1) -> Any:
    """Keras 2's helper that custom cells copied from its ``LSTMCell`` import: ``count`` dropout masks
    shaped like ``ones`` (``K.ones_like(inputs)``) while training, ``ones`` itself otherwise
    (``training=None``: the learning phase). One mask when ``count`` is 1, else a list.

    Example::

        >>> import torch
        >>> _generate_dropout_mask(torch.ones(2, 3), 0.5, training=False).tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    def dropped() -> Any:
        return K.dropout(ones, rate)

    masks = [K.in_train_phase(dropped, ones, training=training) for _ in range(count)]
    return masks if count > 1 else masks[0]
