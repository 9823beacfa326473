"""``CuDNNLSTM`` and ``CuDNNGRU`` (Keras 2 ``keras.layers.cudnn_recurrent``): torch's cuDNN kernels.

As in Keras 2 they run only on a GPU: called on CPU tensors they raise an error naming the
portable layer that computes the same function (``LSTM`` / ``GRU(reset_after=True)``). No masks,
no dropout, tanh/sigmoid only (cuDNN's fixed formulas).

Weights (Keras order ``[kernel, recurrent_kernel, bias]``; torch tensors as in
:mod:`arignote.layers.recurrent.cells`: gate blocks in Keras order, CuDNNGRU's in cuDNN's ``r, z, n``, one
flat buffer on the GPU): ``kernel`` ``(in, gates * units)`` and ``recurrent_kernel``
``(units, gates * units)`` hold, per gate, cuDNN's memory as Keras 2's CuDNN
layers do (torch block ``(units, n)`` read row-major as ``(n, units)``; not a transpose), and one flat
``bias``: CuDNNLSTM ``(8 * units,)`` = input bias then
recurrent bias (gates ``i, f, c, o``), CuDNNGRU ``(6 * units,)`` = input bias then recurrent bias
(gates ``z, r, h``).

Example::

    >>> CuDNNLSTM(8, return_sequences=True).compute_output_shape((None, 5, 3))
    (None, 5, 8)
"""

from __future__ import annotations

from typing import Any

import torch

from arignote.layers._util import regularizer_arg
from arignote.layers.recurrent.cells import GRUCell, LSTMCell
from arignote.layers.recurrent.rnn import RNN
from arignote.layers.recurrent.rnn import delegate as _delegate

__all__ = ["CuDNNLSTM", "CuDNNGRU"]


def _keras_blocks(w: torch.Tensor, gates: int) -> torch.Tensor:
    """torch ``(gates * units, n)`` -> Keras CuDNN ``(n, gates * units)``: each gate block's memory read
    row-major as ``(n, units)`` (Keras 2 hands cuDNN each ``(n, units)`` kernel block flattened)."""
    n, u = w.shape[1], w.shape[0] // gates
    return w.reshape(gates, n, u).permute(1, 0, 2).reshape(n, gates * u)


def _torch_blocks(k: torch.Tensor, gates: int) -> torch.Tensor:
    """The inverse of :func:`_keras_blocks`."""
    n, u = k.shape[0], k.shape[1] // gates
    return k.reshape(n, gates, u).permute(1, 0, 2).reshape(gates * u, n)


class _CuDNNLayout:
    """Keras 2's CuDNN kernels are cuDNN's own memory (not transposed LSTM kernels): the weights a
    ``CuDNNLSTM``/``CuDNNGRU`` file holds load as they are (the HDF5 loader converts them for
    ``LSTM``/``GRU``, as Keras 2 does)."""

    gates = 4

    def _keras_weights(self) -> list[torch.Tensor]:
        g, gates = self.gates, self.keras_gates
        out = [_keras_blocks(gates("kernel").to_keras(self.weight), g),
               _keras_blocks(gates("recurrent_kernel").to_keras(self.recurrent_weight), g)]
        return out + ([gates("bias").to_keras(self.bias)] if self.bias is not None else [])

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        pairs = zip(("kernel", "recurrent_kernel"), (self.weight, self.recurrent_weight), weights[:2])
        for name, t, w in pairs:
            t.copy_(self.keras_gates(name).to_torch(_torch_blocks(w.to(t.dtype), self.gates)))
        if self.bias is not None:
            self.bias.copy_(self.keras_gates("bias").to_torch(weights[2].to(self.bias.dtype)))


class _CuDNNLSTMCell(_CuDNNLayout, LSTMCell):
    def _bias_shape(self) -> tuple:
        return (8 * self.units,)

    def _bias_init(self) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, u = self.bias_initializer, self.units

        def init(shape: tuple, dtype: Any = None) -> torch.Tensor:  # Keras 2: ones on the recurrent f gate
            return torch.cat([base((5 * u,), dtype), torch.ones(u, dtype=dtype), base((2 * u,), dtype)])

        return init

    def _input_bias(self) -> torch.Tensor | None:
        if self.bias is None:
            return None
        return self.bias[: 4 * self.units] + self.bias[4 * self.units :]

    def _fused_biases(self) -> list[torch.Tensor]:
        return list(self._bias_rows())

    def _flatten(self, params: list[torch.Tensor], mode: str) -> bool:
        return self._flatten_split_bias(params, mode)

    def fused(self, x: torch.Tensor, states: list, training: bool) -> tuple[torch.Tensor, list]:
        params = self._fused_params("LSTM")
        hx = (states[0].unsqueeze(0), states[1].unsqueeze(0))
        out, h, c = torch.lstm(x, hx, params, True, 1, 0.0, training, False, True)
        return out, [h[0], c[0]]


class _CuDNNGRUCell(_CuDNNLayout, GRUCell):
    gates = 3

    def _bias_shape(self) -> tuple:
        return (6 * self.units,)


@_delegate(
    "units",
    "kernel_initializer",
    "recurrent_initializer",
    "bias_initializer",
    "kernel_regularizer",
    "recurrent_regularizer",
    "bias_regularizer",
    "kernel_constraint",
    "recurrent_constraint",
    "bias_constraint",
)
class _CuDNNRNN(RNN):
    _cell_cls: type = _CuDNNLSTMCell
    _portable = ""
    _config_keys = (
        "units",
        "kernel_initializer",
        "recurrent_initializer",
        "bias_initializer",
        "kernel_regularizer",
        "recurrent_regularizer",
        "bias_regularizer",
        "activity_regularizer",
        "kernel_constraint",
        "recurrent_constraint",
        "bias_constraint",
        "return_sequences",
        "return_state",
        "stateful",
    )

    def __init__(
        self,
        units: int,
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
        return_sequences: bool = False,
        return_state: bool = False,
        stateful: bool = False,
        go_backwards: bool = False,
        **kwargs: Any,
    ) -> None:
        extra = {"unit_forget_bias": kwargs.pop("unit_forget_bias")} if "unit_forget_bias" in kwargs else {}
        if self._cell_cls is _CuDNNGRUCell:
            extra["reset_after"] = True
        cell = self._cell_cls(
            units,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dtype=kwargs.get("dtype"),
            **extra,
        )
        super().__init__(
            cell,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            **kwargs,
        )
        self.activity_regularizer = regularizer_arg(activity_regularizer)
        self.supports_masking = False

    def call(self, inputs: Any, mask: Any = None, training: Any = None, initial_state: Any = None) -> Any:
        x = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        if x.device.type != "cuda":
            raise RuntimeError(
                f"{type(self).__name__} '{self.name}' runs on cuDNN, i.e. on a CUDA GPU, but its "
                f"input is on {x.device} (Keras 2 has the same limit). On CPU use {self._portable}: "
                "the same formula, and it still uses cuDNN when it runs on a GPU"
            )
        return super().call(inputs, mask=None, training=training, initial_state=initial_state)


@_delegate("unit_forget_bias")
class CuDNNLSTM(_CuDNNRNN):
    """cuDNN LSTM (Keras 2 ``CuDNNLSTM``, ``unit_forget_bias=True``); GPU only."""

    _cell_cls = _CuDNNLSTMCell
    _portable = "LSTM(units) (set its bias to the sum of the two CuDNNLSTM biases)"
    _config_keys = (*_CuDNNRNN._config_keys, "unit_forget_bias")

    def __init__(self, units: int, unit_forget_bias: bool = True, **kwargs: Any) -> None:
        super().__init__(units, unit_forget_bias=unit_forget_bias, **kwargs)


class CuDNNGRU(_CuDNNRNN):
    """cuDNN GRU (Keras 2 ``CuDNNGRU``: the reset gate after the recurrent product); GPU only."""

    _cell_cls = _CuDNNGRUCell
    _portable = "GRU(units, reset_after=True, recurrent_activation='sigmoid')"
