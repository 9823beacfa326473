"""What the built-in recurrent cells share (``_Cell``, the base of ``SimpleRNNCell``, ``GRUCell``,
``LSTMCell`` in :mod:`arignote.layers.recurrent.cells`): Keras 2's cell arguments, the Keras-layout
weights ``[kernel, recurrent_kernel, bias]``, dropout masks, and the loop path's input projection of
all time steps at once; the fused kernel's weights are :mod:`~arignote.layers.recurrent.fused_weights`.

Example::

    >>> import torch
    >>> from arignote.layers.recurrent.cells import SimpleRNNCell
    >>> cell = SimpleRNNCell(2, dropout=0.5); cell.build((3,))
    >>> cell.state_size, tuple(cell.recurrent_kernel.shape), cell.fusable(training=False)
    (2, (2, 2), True)
    >>> [tuple(m.shape) for m in dropout_mask(torch.ones(4, 3), 0.5, 2)]
    [(4, 3), (4, 3)]
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote import activations, initializers
from arignote.layers._util import KerasLayer, constraint_arg, initializer_arg, regularizer_arg
from arignote.layers.base import Layer, positive_int
from arignote.layers.recurrent.fused_weights import FusedWeights

__all__ = ["dropout_mask"]


def _prob(value: Any, what: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: {what} must be a number in [0, 1), got {value!r}")
    return min(1.0, max(0.0, float(value)))


def dropout_mask(like: torch.Tensor, rate: float, count: int) -> list[torch.Tensor]:
    """Keras 2's per-batch dropout masks (kept the same at every time step), scaled by 1/(1-rate)."""
    keep = 1.0 - rate
    return [torch.empty_like(like).bernoulli_(keep) / keep for _ in range(count)]


class _Cell(FusedWeights, KerasLayer, Layer):
    """Shared arguments and weights of the built-in cells."""

    gates = 1
    _config_keys = (
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
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        implementation: int = 2,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        where = f"{type(self).__name__} '{self.name}'"
        self.units = positive_int(units, "units", where)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializer_arg(kernel_initializer)
        self.recurrent_initializer = initializer_arg(recurrent_initializer)
        self.bias_initializer = initializer_arg(bias_initializer)
        self.kernel_regularizer = regularizer_arg(kernel_regularizer)
        self.recurrent_regularizer = regularizer_arg(recurrent_regularizer)
        self.bias_regularizer = regularizer_arg(bias_regularizer)
        self.kernel_constraint = constraint_arg(kernel_constraint)
        self.recurrent_constraint = constraint_arg(recurrent_constraint)
        self.bias_constraint = constraint_arg(bias_constraint)
        self.dropout = _prob(dropout, "dropout", where)
        self.recurrent_dropout = _prob(recurrent_dropout, "recurrent_dropout", where)
        if implementation not in (0, 1, 2):
            raise ValueError(f"{where}: implementation must be 1 or 2, got {implementation!r}")
        self.implementation = 1 if implementation == 0 else int(implementation)
        self.bias = None

    @property
    def state_size(self) -> Any:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    @property
    def _order(self) -> tuple:
        """Torch block ``i`` of a gated weight holds Keras gate ``_order[i]``."""
        return tuple(range(self.gates))

    @property
    def recurrent_kernel(self) -> torch.Tensor:
        """The Keras-layout view ``(units, gates * units)`` of the recurrent kernel."""
        return self.keras_view("recurrent_kernel")

    def _recurrent_init(self) -> Any:
        init = self.recurrent_initializer
        if isinstance(init, initializers.Identity):  # Keras 2: one identity block per gate
            gain, n = init.gain, self.gates

            def init(shape: tuple, dtype: Any = None) -> torch.Tensor:
                return gain * torch.eye(shape[0], dtype=dtype).repeat(1, n)

        return init

    def build_keras(self, input_shape: tuple) -> None:
        input_dim = tuple(input_shape)[-1]
        if input_dim is None:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': the input feature size must be known, "
                f"got input shape {tuple(input_shape)}"
            )
        g, u = self.gates, self.units
        self.new_weight(
            "kernel",
            (input_dim, g * u),
            self.kernel_initializer,
            (1, 0),
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        self.new_weight(
            "recurrent_kernel",
            (u, g * u),
            self._recurrent_init(),
            (1, 0),
            self.recurrent_regularizer,
            self.recurrent_constraint,
            attr="recurrent_weight",
        )
        if self.use_bias:
            self.new_weight(
                "bias",
                self._bias_shape(),
                self._bias_init(),
                None,
                self.bias_regularizer,
                self.bias_constraint,
            )

    def _bias_shape(self) -> tuple:
        return (self.gates * self.units,)

    def _bias_init(self) -> Any:
        return self.bias_initializer

    # the loop path ----------------------------------------------------------------------------
    def masks(self, x: torch.Tensor, h: torch.Tensor, training: bool) -> tuple[list | None, list | None]:
        """Input and recurrent dropout masks for one batch (None outside training or at rate 0)."""
        count = self.gates if self.implementation == 1 else 1
        dp = dropout_mask(x, self.dropout, count) if training and 0 < self.dropout < 1 else None
        rec = (
            dropout_mask(h, self.recurrent_dropout, count)
            if training and 0 < self.recurrent_dropout < 1
            else None
        )
        return dp, rec

    def project(self, x: torch.Tensor, dp: list | None) -> torch.Tensor:
        """Input contribution of every time step at once: ``(N, T, gates * units)`` (bias included)."""
        bias = self._input_bias()
        if dp is None:
            return F.linear(x, self.weight, bias)
        if len(dp) == 1:
            return F.linear(x * dp[0].unsqueeze(1), self.weight, bias)
        blocks = self.weight.split(self.units, 0)
        biases = bias.split(self.units, 0) if bias is not None else [None] * self.gates
        masks = [dp[k] for k in self._order]  # one mask per Keras gate, whatever the torch block order
        return torch.cat([F.linear(x * m.unsqueeze(1), w, b) for m, w, b in zip(masks, blocks, biases)], -1)

    def _input_bias(self) -> torch.Tensor | None:
        return self.bias

    def _rec(self, h: torch.Tensor, rec: list | None, gate: int) -> torch.Tensor:
        if rec is None:
            return h
        return h * rec[gate if len(rec) > 1 else 0]

    def call(self, inputs: torch.Tensor, states: Any, training: Any = None) -> tuple[torch.Tensor, list]:
        """One step, Keras 2's cell API (``states`` a list; returns ``(output, new_states)``)."""
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        dp, rec = self.masks(inputs, states[0], bool(training))
        return self.step(self.project(inputs.unsqueeze(1), dp)[:, 0], states, rec)

    def fused(self, x: torch.Tensor, states: list, training: bool) -> tuple[torch.Tensor, list] | None:
        """The whole sequence through torch's fused kernel, or None when this configuration has none."""
        return None

    def fusable(self, training: bool) -> bool:
        """Whether :meth:`fused` applies (no recurrent dropout in training, per-gate masks...)."""
        if training and (
            0 < self.recurrent_dropout < 1 or (self.implementation == 1 and 0 < self.dropout < 1)
        ):
            return False
        return self._fused_activations()

    def _fused_activations(self) -> bool:
        return False
