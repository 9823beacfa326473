"""Recurrent cells (Keras 2 ``SimpleRNNCell``, ``GRUCell``, ``LSTMCell``; stacking is in ``stacked_cells``).

A cell holds the weights and computes one step, ``call(inputs, states, training=None) ->
(output, new_states)``, as in Keras 2. The ``RNN`` layer runs a whole sequence either through
torch's fused kernel (``torch.lstm`` / ``torch.gru`` / ``torch.rnn_tanh``: cuDNN on a GPU) when the
cell has one for its configuration, or through a loop over :meth:`step` with the input projection
of all time steps done in one matrix product first. What the three cells share (arguments, weights,
dropout masks, the input projection) is :mod:`.cell_base`; the fused kernel's weights
:mod:`.fused_weights`.

Weights (torch tensor -> Keras weight, Keras order ``[kernel, recurrent_kernel, bias]``), gates in
Keras order in both (LSTM ``i, f, c, o``; GRU ``z, r, h``), except GRU ``reset_after=True``, whose
torch tensors hold cuDNN's ``r, z, n`` (one flat buffer on a GPU; its Keras weights are reordered
copies, written back by ``set_weights`` and ``K.set_value``):

* ``weight`` ``(gates * units, input_dim)`` -> ``kernel`` ``(input_dim, gates * units)`` (transposed);
* ``recurrent_weight`` ``(gates * units, units)`` -> ``recurrent_kernel`` ``(units, gates * units)``;
* ``bias`` ``(gates * units,)`` as is; GRU ``reset_after=True``: ``(2, 3 * units)`` as is (input bias,
  recurrent bias).

Example::

    >>> cell = LSTMCell(4); cell.build((3,))
    >>> [tuple(w.shape) for w in cell.get_weights()]
    [(3, 16), (4, 16), (16,)]
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote import activations
from arignote.layers.recurrent.cell_base import (  # noqa: F401 - re-exported (rnn, convolutional_recurrent)
    _Cell,
    _prob,
    dropout_mask,
)

__all__ = ["SimpleRNNCell", "GRUCell", "LSTMCell", "dropout_mask"]


# Keras activations that act on each element alone: one call on a block of gates equals one per gate
ELEMENTWISE = frozenset({activations.sigmoid, activations.hard_sigmoid, activations.tanh, activations.relu,
                         activations.elu, activations.selu, activations.softplus, activations.softsign,
                         activations.linear, activations.exponential})


class SimpleRNNCell(_Cell):
    """``h = activation(x @ kernel + h @ recurrent_kernel + bias)``; fused for tanh and relu."""

    def step(self, xp: torch.Tensor, states: list, rec: list | None) -> tuple[torch.Tensor, list]:
        h = self.activation(xp + F.linear(self._rec(states[0], rec, 0), self.recurrent_weight))
        return h, [h]

    def _fused_activations(self) -> bool:
        return self.activation in (activations.tanh, activations.relu)

    def fused(self, x: torch.Tensor, states: list, training: bool) -> tuple[torch.Tensor, list] | None:
        tanh = self.activation is activations.tanh
        fn = torch.rnn_tanh if tanh else torch.rnn_relu
        params = self._fused_params("RNN_TANH" if tanh else "RNN_RELU")
        out, h = fn(x, states[0].unsqueeze(0), params, self.use_bias, 1, 0.0, training, False, True)
        return out, [h[0]]


class GRUCell(_Cell):
    """Gated recurrent unit step (Keras 2 ``GRUCell``): ``reset_after=False`` (Keras 2's default, the
    reset gate applied before the recurrent product) or ``True`` (after it: CuDNNGRU's formula, one
    input and one recurrent bias, fused with ``torch.gru``). ``reset_after=True`` keeps its torch
    tensors in cuDNN's gate order ``r, z, n`` (Keras's blocks 1, 0, 2), so that on a GPU they are one
    flat buffer cuDNN reads in place; every Keras view (``get_weights``, files, constraints,
    optimizer slots) stays in Keras's ``z, r, h``."""

    gates = 3
    _config_keys = (*_Cell._config_keys, "recurrent_activation", "implementation", "reset_after")
    CUDNN_ORDER = (1, 0, 2)  # cuDNN's (torch.nn.GRU's) r, z, n: Keras's z, r, h blocks 1, 0, 2

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        reset_after: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(units, activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    @property
    def _order(self) -> tuple:
        return self.CUDNN_ORDER if self.reset_after else (0, 1, 2)

    def build_keras(self, input_shape: tuple) -> None:
        super().build_keras(input_shape)
        if self.reset_after:
            self.keep_gate_order("kernel", 0, self.CUDNN_ORDER)
            self.keep_gate_order("recurrent_kernel", 0, self.CUDNN_ORDER)
            if self.use_bias:  # (2, 3 units) rows, or CuDNNGRU's flat (6 units,)
                rows = self.bias.dim() == 2
                both = self.CUDNN_ORDER + tuple(3 + i for i in self.CUDNN_ORDER)
                self.keep_gate_order("bias", int(rows), self.CUDNN_ORDER if rows else both)

    def _bias_shape(self) -> tuple:
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _input_bias(self) -> torch.Tensor | None:
        if self.bias is None:
            return None
        return self._bias_rows()[0] if self.reset_after else self.bias

    def _keras_gates(self, t: torch.Tensor, dim: int = -1) -> tuple:
        """``t``'s gate blocks along ``dim`` as Keras's ``z, r, h``."""
        parts = t.split(self.units, dim)
        return tuple(parts[i] for i in _inverse(self._order))

    def step(self, xp: torch.Tensor, states: list, rec: list | None) -> tuple[torch.Tensor, list]:
        h = states[0]
        xz, xr, xh = self._keras_gates(xp)
        wz, wr, wh = self._keras_gates(self.recurrent_weight, 0)
        if self.reset_after:
            rb = self._keras_gates(self._bias_rows()[1]) if self.bias is not None else (None, None, None)
            z = self.recurrent_activation(xz + F.linear(self._rec(h, rec, 0), wz, rb[0]))
            r = self.recurrent_activation(xr + F.linear(self._rec(h, rec, 1), wr, rb[1]))
            hh = self.activation(xh + r * F.linear(self._rec(h, rec, 2), wh, rb[2]))
        else:
            z = self.recurrent_activation(xz + F.linear(self._rec(h, rec, 0), wz))
            r = self.recurrent_activation(xr + F.linear(self._rec(h, rec, 1), wr))
            hh = self.activation(xh + F.linear(r * self._rec(h, rec, 2), wh))
        out = z * h + (1 - z) * hh
        return out, [out]

    def _fused_activations(self) -> bool:
        return (
            self.reset_after
            and self.activation is activations.tanh
            and self.recurrent_activation is activations.sigmoid
        )

    def _fused_biases(self) -> list[torch.Tensor]:
        return list(self._bias_rows()) if self.use_bias else []

    def _flatten(self, params: list[torch.Tensor], mode: str) -> bool:
        return self._flatten_split_bias(params, mode)

    def fused(self, x: torch.Tensor, states: list, training: bool) -> tuple[torch.Tensor, list] | None:
        params = self._fused_params("GRU")  # already in cuDNN's r, z, n
        if not torch.is_grad_enabled():  # torch's CPU kernel takes another path for weights that need no
            params = [p.detach() for p in params]  # gradient: the one the reordered copies used to take
        out, h = torch.gru(x, states[0].unsqueeze(0), params, self.use_bias, 1, 0.0, training, False, True)
        return out, [h[0]]


def _inverse(order: tuple) -> tuple:
    return tuple(sorted(range(len(order)), key=lambda i: order[i]))


class LSTMCell(_Cell):
    """Long short-term memory step (Keras 2 ``LSTMCell``), gates ``i, f, c, o``;
    ``unit_forget_bias=True`` starts the forget-gate bias at 1. Fused with ``torch.lstm`` for
    tanh / sigmoid."""

    gates = 4
    _config_keys = (*_Cell._config_keys, "recurrent_activation", "unit_forget_bias", "implementation")

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        unit_forget_bias: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(units, activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self) -> Any:
        return [self.units, self.units]

    def _bias_init(self) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, u = self.bias_initializer, self.units

        def init(shape: tuple, dtype: Any = None) -> torch.Tensor:
            return torch.cat([base((u,), dtype), torch.ones(u, dtype=dtype), base((2 * u,), dtype)])

        return init

    def step(self, xp: torch.Tensor, states: list, rec: list | None) -> tuple[torch.Tensor, list]:
        h, c = states[0], states[1]
        if rec is None or len(rec) == 1:
            z = xp + F.linear(self._rec(h, rec, 0), self.recurrent_weight)
        else:
            z = xp + torch.cat(
                [F.linear(h * m, w) for m, w in zip(rec, self.recurrent_weight.split(self.units))], -1
            )
        if self.recurrent_activation in ELEMENTWISE:  # one call on all gates: a third of the operators
            i, f, _, o = self.recurrent_activation(z).split(self.units, -1)
            g = z[..., 2 * self.units:3 * self.units]
        else:
            i, f, g, o = z.split(self.units, -1)
            i, f, o = self.recurrent_activation(i), self.recurrent_activation(f), self.recurrent_activation(o)
        c = f * c + i * self.activation(g)
        h = o * self.activation(c)
        return h, [h, c]

    def _fused_activations(self) -> bool:
        return self.activation is activations.tanh and self.recurrent_activation is activations.sigmoid

    def fused(self, x: torch.Tensor, states: list, training: bool) -> tuple[torch.Tensor, list] | None:
        params = self._fused_params("LSTM")
        hx = (states[0].unsqueeze(0), states[1].unsqueeze(0))
        out, h, c = torch.lstm(x, hx, params, self.use_bias, 1, 0.0, training, False, True)
        return out, [h[0], c[0]]
