"""``LSTM`` and ``GRU`` on torch's fused (cuDNN-backed on GPU) ``nn.LSTM`` / ``nn.GRU``.

What matches Keras: ``units``, ``return_sequences``, ``use_bias``, glorot_uniform input kernels,
orthogonal recurrent kernels, zero biases, ``unit_forget_bias=True`` (LSTM forget-gate bias 1),
``activation='tanh'`` and ``recurrent_activation='sigmoid'`` (the Keras >= 2.3 default; older
Keras 2 used hard_sigmoid, which the fused kernels do not offer). ``GRU`` is Keras's
``reset_after=True`` variant (CuDNNGRU, the Keras 3 default); Keras 2's default
``reset_after=False`` is not available in torch's fused kernel and is refused.
``get_weights()`` returns Keras layouts: LSTM ``[kernel (in, 4u), recurrent (u, 4u), bias (4u,)]``
with gates i, f, c, o; GRU ``[kernel (in, 3u), recurrent (u, 3u), bias (2, 3u)]`` with gates z, r, h.

Example::

    >>> lstm = LSTM(8, input_shape=(5, 3))
    >>> seq = LSTM(8, return_sequences=True)
    >>> lstm.compute_output_shape((None, 5, 3)), seq.compute_output_shape((None, 5, 3))
    ((None, 8), (None, 5, 8))
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from arignote.layers.activations import check_initializer, initialize
from arignote.layers.base import Layer, positive_int

__all__ = ["LSTM", "GRU"]


class _RNN(Layer):
    _gates = 4
    _torch_cls: type = nn.LSTM
    _config_keys = (
        "units",
        "activation",
        "recurrent_activation",
        "use_bias",
        "return_sequences",
        "kernel_initializer",
        "recurrent_initializer",
        "bias_initializer",
    )

    def __init__(
        self,
        units: int,
        activation: str = "tanh",
        recurrent_activation: str = "sigmoid",
        use_bias: bool = True,
        return_sequences: bool = False,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        where = f"{type(self).__name__} '{self.name}'"
        units = positive_int(units, "units", where)
        if activation != "tanh" or recurrent_activation != "sigmoid":
            raise ValueError(
                f"{where}: the fused kernels support only activation='tanh' and "
                f"recurrent_activation='sigmoid', got {activation!r} / {recurrent_activation!r}"
            )
        for flag, value in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if value:
                raise ValueError(
                    f"{where}: {flag} is not supported by the fused kernels; put a Dropout layer "
                    "before or after the recurrent layer instead"
                )
        for flag, value in (
            ("return_state", return_state),
            ("go_backwards", go_backwards),
            ("stateful", stateful),
        ):
            if value:
                raise ValueError(f"{where}: {flag}=True is not supported")
        self.units = units
        self.activation = activation
        self.recurrent_activation = recurrent_activation
        self.use_bias = bool(use_bias)
        self.return_sequences = bool(return_sequences)
        self.kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer")
        self.recurrent_initializer = check_initializer(recurrent_initializer, "recurrent_initializer")
        self.bias_initializer = check_initializer(bias_initializer, "bias_initializer")

    def build(self, input_shape: Any) -> None:
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(
                f"{type(self).__name__} '{self.name}' expects sequences (batch, timesteps, features), "
                f"got input shape {tuple(input_shape)}"
            )
        self.rnn = self._torch_cls(
            input_shape[-1], self.units, bias=self.use_bias, batch_first=True, dtype=self._param_dtype()
        )
        initialize(self.rnn.weight_ih_l0, self.kernel_initializer)
        # Keras's orthogonal recurrent kernel is one (units, gates*units) matrix
        initialize(self.rnn.weight_hh_l0, self.recurrent_initializer)
        if self.use_bias:
            initialize(self.rnn.bias_ih_l0, self.bias_initializer)
            initialize(self.rnn.bias_hh_l0, "zeros")
            self._init_bias_extra()
        super().build(input_shape)

    def _init_bias_extra(self) -> None:
        """Hook for LSTM's unit_forget_bias."""

    def compute_output_shape(self, input_shape: Any) -> tuple:
        batch, steps = tuple(input_shape)[:2]
        return (batch, steps, self.units) if self.return_sequences else (batch, self.units)

    def call(self, inputs: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(inputs)
        return out if self.return_sequences else out[:, -1]

    # torch gate order -> Keras gate order (a permutation of blocks of `units` rows)
    _to_keras_blocks: tuple[int, ...] = (0, 1, 2, 3)

    def _reorder(self, t: torch.Tensor, blocks: tuple[int, ...]) -> torch.Tensor:
        parts = t.split(self.units, dim=0)
        return torch.cat([parts[i] for i in blocks], dim=0)


class LSTM(_RNN):
    """Long short-term memory layer (Keras 2 ``LSTM``, ``unit_forget_bias=True``)."""

    _gates = 4
    _torch_cls = nn.LSTM
    _config_keys = (*_RNN._config_keys, "unit_forget_bias")

    def __init__(self, units: int, unit_forget_bias: bool = True, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    def _init_bias_extra(self) -> None:
        if self.unit_forget_bias:
            with torch.no_grad():
                self.rnn.bias_ih_l0[self.units : 2 * self.units].fill_(1.0)

    def _keras_weights(self) -> list[torch.Tensor]:
        out = [self.rnn.weight_ih_l0.t(), self.rnn.weight_hh_l0.t()]
        if self.use_bias:
            out.append(self.rnn.bias_ih_l0 + self.rnn.bias_hh_l0)
        return out

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        self.rnn.weight_ih_l0.copy_(weights[0].t())
        self.rnn.weight_hh_l0.copy_(weights[1].t())
        if self.use_bias:
            self.rnn.bias_ih_l0.copy_(weights[2])
            self.rnn.bias_hh_l0.zero_()


class GRU(_RNN):
    """Gated recurrent unit (Keras ``GRU(reset_after=True)``, i.e. CuDNNGRU)."""

    _gates = 3
    _torch_cls = nn.GRU
    _config_keys = (*_RNN._config_keys, "reset_after")
    _perm = (1, 0, 2)  # torch r, z, n <-> Keras z, r, h (its own inverse)

    def __init__(self, units: int, reset_after: bool = True, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        if not reset_after:
            raise ValueError(
                f"GRU '{self.name}': reset_after=False (Keras 2's default) has no fused kernel; "
                "arignote's GRU is the reset_after=True (CuDNNGRU) variant"
            )
        self.reset_after = True

    def _keras_weights(self) -> list[torch.Tensor]:
        out = [
            self._reorder(self.rnn.weight_ih_l0, self._perm).t(),
            self._reorder(self.rnn.weight_hh_l0, self._perm).t(),
        ]
        if self.use_bias:
            out.append(
                torch.stack(
                    [
                        self._reorder(self.rnn.bias_ih_l0, self._perm),
                        self._reorder(self.rnn.bias_hh_l0, self._perm),
                    ]
                )
            )
        return out

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        self.rnn.weight_ih_l0.copy_(self._reorder(weights[0].t(), self._perm))
        self.rnn.weight_hh_l0.copy_(self._reorder(weights[1].t(), self._perm))
        if self.use_bias:
            self.rnn.bias_ih_l0.copy_(self._reorder(weights[2][0], self._perm))
            self.rnn.bias_hh_l0.copy_(self._reorder(weights[2][1], self._perm))
