"""Recurrent cells (Keras 2 ``SimpleRNNCell``, ``GRUCell``, ``LSTMCell``; stacking is in ``stacked_cells``).

A cell holds the weights and computes one step, ``call(inputs, states, training=None) ->
(output, new_states)``, as in Keras 2. The ``RNN`` layer runs a whole sequence either through
torch's fused kernel (``torch.lstm`` / ``torch.gru`` / ``torch.rnn_tanh``: cuDNN on a GPU) when the
cell has one for its configuration, or through a loop over :meth:`step` with the input projection
of all time steps done in one matrix product first.

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

from arignote import activations, initializers
from arignote.devices import cuda
from arignote.layers._util import KerasLayer, constraint_arg, initializer_arg, regularizer_arg
from arignote.layers.base import Layer, positive_int

__all__ = ["SimpleRNNCell", "GRUCell", "LSTMCell", "dropout_mask"]


def _on_cudnn(weight: torch.Tensor) -> bool:
    """Whether torch's fused RNN kernel runs cuDNN for ``weight`` (a CUDA tensor; cuDNN's own checks
    are in ``cuda.flatten_rnn_weights``)."""
    return weight.is_cuda


def _prob(value: Any, what: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: {what} must be a number in [0, 1), got {value!r}")
    return min(1.0, max(0.0, float(value)))


# Keras activations that act on each element alone: one call on a block of gates equals one per gate
ELEMENTWISE = frozenset({activations.sigmoid, activations.hard_sigmoid, activations.tanh, activations.relu,
                         activations.elu, activations.selu, activations.softplus, activations.softsign,
                         activations.linear, activations.exponential})


def dropout_mask(like: torch.Tensor, rate: float, count: int) -> list[torch.Tensor]:
    """Keras 2's per-batch dropout masks (kept the same at every time step), scaled by 1/(1-rate)."""
    keep = 1.0 - rate
    return [torch.empty_like(like).bernoulli_(keep) / keep for _ in range(count)]


class _Cell(KerasLayer, Layer):
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

    def _fused_params(self, mode: str) -> list[torch.Tensor]:
        """``[weight, recurrent_weight(, input bias, recurrent bias)]`` for torch's fused kernel. On a
        GPU they are kept in one contiguous chunk cuDNN reads in place (flattened once, and again
        when a move or a load gives a weight new memory): separate tensors made cuDNN copy every
        weight at every forward (issue 28 S3). The CPU path is unchanged."""
        params = [self.weight, self.recurrent_weight, *self._fused_biases()]
        if not _on_cudnn(self.weight):
            return params
        ptrs = tuple(p.data_ptr() for p in params)
        if ptrs != self.__dict__.get("_flat_ptrs") and not torch.compiler.is_compiling():
            if self._flatten(params, mode):
                params = [self.weight, self.recurrent_weight, *self._fused_biases()]
                self.__dict__["_flat_ptrs"] = tuple(p.data_ptr() for p in params)
        return params

    def _fused_biases(self) -> list[torch.Tensor]:
        """One Keras bias: itself and a zero recurrent bias (kept on a GPU, fresh on a CPU)."""
        if not self.use_bias:
            return []
        if not _on_cudnn(self.weight):
            return [self.bias, torch.zeros_like(self.bias)]
        zero = self.__dict__.get("_zero_recurrent_bias")
        if zero is None or zero.device != self.bias.device or zero.dtype != self.bias.dtype:
            zero = self.__dict__["_zero_recurrent_bias"] = torch.zeros_like(self.bias)
        return [self.bias, zero]

    def _flatten(self, params: list[torch.Tensor], mode: str) -> bool:
        return self._flatten_weights(params, mode)

    def _flatten_weights(self, params: list[torch.Tensor], mode: str) -> bool:
        return cuda.flatten_rnn_weights(params, mode, self.weight.shape[1], self.units)

    def _bias_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A bias holding input then recurrent bias (GRU ``reset_after``, CuDNN layers): the two rows."""
        b = self.bias
        return (b[0], b[1]) if b.dim() == 2 else (b[: b.numel() // 2], b[b.numel() // 2:])

    def _flatten_split_bias(self, params: list[torch.Tensor], mode: str) -> bool:
        """:meth:`_flatten` where both biases are rows of one parameter: torch re-points the tensors it
        is given, so it gets stand-ins for the rows, and the bias parameter is then re-pointed onto
        them (rows ``gap`` apart in the buffer: cuDNN checks only where each tensor starts)."""
        if not self.use_bias:
            return self._flatten_weights(params, mode)
        b_ih, b_hh = (b.detach().clone() for b in params[2:])
        if not self._flatten_weights([*params[:2], b_ih, b_hh], mode):
            return False
        n = b_ih.numel()
        gap = (b_hh.data_ptr() - b_ih.data_ptr()) // b_ih.element_size()
        if self.bias.dim() == 2 and gap >= n:
            size, stride = (2, n), (gap, 1)
        elif gap == n:
            size, stride = (2 * n,), (1,)
        else:  # not seen in cuDNN's layout; the bias then stays apart (cuDNN copies, and warns)
            return True
        with torch.no_grad():
            self.bias.set_(b_ih.untyped_storage(), b_ih.storage_offset(), size, stride)
        return True


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
