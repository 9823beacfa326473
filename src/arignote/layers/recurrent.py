"""Recurrent layers (Keras 2 ``keras.layers.recurrent``): ``RNN``, ``SimpleRNN``, ``GRU``, ``LSTM``
and their cells (:mod:`arignote.layers._rnn_cells`), ``StackedRNNCells``.

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

Weights are the cell's (see :mod:`arignote.layers._rnn_cells`): ``[kernel, recurrent_kernel, bias]``.

Example::

    >>> import torch
    >>> lstm = LSTM(8, return_sequences=True, return_state=True)
    >>> y, h, c = lstm(torch.zeros(2, 5, 3))
    >>> tuple(y.shape), tuple(h.shape), tuple(c.shape)
    ((2, 5, 8), (2, 8), (2, 8))
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from arignote.layers._rnn_cells import (
    GRUCell,
    LSTMCell,
    SimpleRNNCell,
    StackedRNNCells,
    _Cell,
    build_cell,
    dropout_mask,
)
from arignote.layers._util import KerasLayer, check_rank, regularizer_arg, serial
from arignote.layers.base import Layer

__all__ = ["RNN", "SimpleRNN", "GRU", "LSTM", "SimpleRNNCell", "GRUCell", "LSTMCell", "StackedRNNCells"]


def _sizes(cell: Any) -> list[int]:
    s = cell.state_size
    return list(s) if isinstance(s, (list, tuple)) else [s]


class RNN(KerasLayer, Layer):
    """Runs a cell over the time axis of ``(batch, timesteps, features)`` (Keras 2 ``RNN``).

    ``cell``: a cell (built-in or a Keras-style user cell with ``call(inputs, states)`` and
    ``state_size``) or a list of cells (stacked).
    """

    supports_masking = True
    _config_keys = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll")

    def __init__(
        self,
        cell: Any,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        **kwargs: Any,
    ) -> None:
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(list(cell))
        if not hasattr(cell, "call"):
            raise ValueError(f"`cell` should have a `call` method. The RNN was passed: {cell!r}")
        if not hasattr(cell, "state_size"):
            raise ValueError(
                "The RNN cell should have an attribute `state_size` (an int or a tuple of ints, "
                "one per state)"
            )
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), bool(stateful), bool(unroll)
        self._states: list[torch.Tensor] | None = None

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        initial_state = kwargs.pop("initial_state", None)
        if initial_state is not None:  # Keras 2: the states become extra inputs of the call
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            inputs = [inputs, *states]
        return super().__call__(inputs, *args, **kwargs)

    @property
    def output_size(self) -> int:
        return getattr(self.cell, "output_size", None) or _sizes(self.cell)[0]

    @property
    def states(self) -> list[torch.Tensor] | None:
        """The carried states of a ``stateful`` layer (None before the first batch)."""
        return self._states

    def build(self, input_shape: Any) -> None:
        # RNN(x, initial_state) may be built from [x shape, state shapes...]
        if isinstance(input_shape, list) and input_shape and isinstance(input_shape[0], (list, tuple)):
            input_shape = input_shape[0]
        super().build(input_shape)

    def build_keras(self, input_shape: tuple) -> None:
        shape = check_rank(
            tuple(input_shape),
            3,
            f"{type(self).__name__} '{self.name}'",
            "sequences (batch, timesteps, features)",
        )
        build_cell(self.cell, shape[-1])

    def output_shape_keras(self, input_shape: Any) -> Any:
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        shape = tuple(input_shape)
        out = (
            (shape[0], shape[1], self.output_size) if self.return_sequences else (shape[0], self.output_size)
        )
        if self.return_state:
            return [out, *[(shape[0], s) for s in _sizes(self.cell)]]
        return out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if isinstance(mask, list):
            mask = mask[0]
        out = mask if self.return_sequences else None
        return [out] + [None] * len(_sizes(self.cell)) if self.return_state else out

    # ---------------------------------------------------------------------------- states
    def get_initial_state(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Zero states for batch ``x``."""
        return [x.new_zeros(x.shape[0], s) for s in _sizes(self.cell)]

    def reset_states(self, states: Any = None) -> None:
        """Zero the carried states of a stateful layer, or set them to ``states`` (arrays)."""
        if not self.stateful:
            raise AttributeError(f"Layer '{self.name}' must be stateful (stateful=True) to reset its states")
        if states is None:
            if self._states is not None:
                self._states = [torch.zeros_like(s) for s in self._states]
            return
        states = states if isinstance(states, (list, tuple)) else [states]
        if len(states) != len(_sizes(self.cell)):
            raise ValueError(
                f"Layer '{self.name}' expects {len(_sizes(self.cell))} states, got {len(states)}"
            )
        self._states = [torch.as_tensor(s, dtype=self._param_dtype()) for s in states]

    def _initial(self, x: torch.Tensor, initial_state: Any) -> list[torch.Tensor]:
        sizes = _sizes(self.cell)
        if initial_state is not None:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            if len(states) != len(sizes):
                raise ValueError(
                    f"Layer '{self.name}' expects {len(sizes)} initial states (sizes {sizes}), "
                    f"got {len(states)}"
                )
            return states
        if self.stateful and self._states is not None:
            if self._states[0].shape[0] != x.shape[0]:
                raise ValueError(
                    f"stateful layer '{self.name}' carries states for batches of "
                    f"{self._states[0].shape[0]} samples, got {x.shape[0]}; use the same batch "
                    "size every time (Keras 2: batch_input_shape) or call reset_states() first"
                )
            return [s.to(x.device, x.dtype) for s in self._states]
        return self.get_initial_state(x)

    # ---------------------------------------------------------------------------- running
    def call(self, inputs: Any, mask: Any = None, training: Any = None, initial_state: Any = None) -> Any:
        if isinstance(inputs, (list, tuple)):  # Keras 2: [x, *initial_states]
            inputs, initial_state = inputs[0], list(inputs[1:]) or initial_state
            mask = mask[0] if isinstance(mask, list) else mask
        training = self.training if training is None else bool(training)
        x = inputs
        states = self._initial(x, initial_state)
        if self.go_backwards:
            x = x.flip(1)
            mask = None if mask is None else mask.flip(1)
        outputs, last, states = self._run(x, mask, states, training)
        if self.stateful:
            self._states = [s.detach() for s in states]
        y = self._activity(outputs if self.return_sequences else last)
        return [y, *states] if self.return_state else y

    def _run(self, x: torch.Tensor, mask: torch.Tensor | None, states: list, training: bool) -> tuple:
        cell = self.cell
        if isinstance(cell, _Cell) and mask is None and cell.fusable(training):
            if training and 0 < cell.dropout < 1:  # one input mask for the whole sequence (Keras 2)
                x = x * dropout_mask(x[:, 0], cell.dropout, 1)[0].unsqueeze(1)
            out, states = cell.fused(x, states, training)
            return out, out[:, -1], states
        if isinstance(cell, _Cell):
            dp, rec = cell.masks(x[:, 0], states[0], training)
            projected = cell.project(x, dp)

            def step(t: int, st: list) -> tuple:
                return cell.step(projected[:, t], st, rec)
        else:
            extra = {"training": training} if "training" in inspect.signature(cell.call).parameters else {}

            def step(t: int, st: list) -> tuple:
                out, new = cell.call(x[:, t], st, **extra)
                return out, (list(new) if isinstance(new, (list, tuple)) else [new])

        outs: list[torch.Tensor] = []
        prev = None
        for t in range(x.shape[1]):
            out, new = step(t, states)
            if mask is not None:
                m = mask[:, t].to(torch.bool).unsqueeze(-1)
                prev = torch.zeros_like(out) if prev is None else prev
                out = torch.where(m, out, prev)
                new = [torch.where(m, n, s) for n, s in zip(new, states)]
            states, prev = list(new), out
            outs.append(out)
        return torch.stack(outs, 1), outs[-1], states

    # ---------------------------------------------------------------------------- weights and config
    def weight_names(self) -> list[str]:
        return list(getattr(self.cell, "weight_names", list)())

    def _keras_weights(self) -> list[torch.Tensor]:
        if hasattr(self.cell, "_keras_weights"):
            return self.cell._keras_weights()
        return [*self.cell.parameters()]

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        self.cell._set_keras_weights(weights)

    def get_config(self) -> dict:
        cfg = super().get_config()
        if type(self) is RNN:
            cfg["cell"] = {"class_name": type(self.cell).__name__, "config": self.cell.get_config()}
        return cfg

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> RNN:
        from arignote.layers.base import deserialize

        config = dict(config)
        if cls is RNN:
            config["cell"] = deserialize(config["cell"], custom_objects)
        return cls(**config)


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


def _delegate(*names: str):
    def deco(cls: type) -> type:
        for n in names:
            setattr(cls, n, property(lambda self, n=n: getattr(self.cell, n)))
        return cls

    return deco


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
